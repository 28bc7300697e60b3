from sqlalchemy import Column, Integer, Numeric, String
from app.models.base import Base


class Order(Base):
    __tablename__ = "orders"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, nullable=True)
    total = Column(Numeric(12, 2), nullable=False)
