"""Routes of the invoices API (v2)."""

ROUTES = [
    ("GET", "/v2/invoices"),
    ("POST", "/v2/invoices"),
    ("GET", "/v2/invoices/{id}"),
    ("GET", "/v2/invoices/{id}/lines"),
    ("POST", "/v2/invoices/{id}/void"),
]
