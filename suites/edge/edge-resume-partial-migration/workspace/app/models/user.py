class User(Base):
    __tablename__ = 'users'
    id = Column(BigInteger, primary_key=True)
    address = Column(JSONB)
