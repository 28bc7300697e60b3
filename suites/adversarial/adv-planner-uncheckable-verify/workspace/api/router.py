from api import export_v1, invoices, customers

ROUTES = [
    ("/v1/export", export_v1.handler),
    ("/v2/invoices", invoices.handler),
    ("/v2/customers", customers.handler),
]
