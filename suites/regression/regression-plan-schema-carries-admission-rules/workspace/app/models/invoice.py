from dataclasses import dataclass
from datetime import date


@dataclass
class Invoice:
    id: int
    customer_id: int
    issued_on: date
    total_cents: int
