ROUTES = {
    'GET /v2/orders': 'list_orders',
    'GET /v2/orders/{id}': 'get_order',
    'POST /v2/orders': 'create_order',
}
PAGE_SIZE_MAX = 100
RATE_LIMIT_PER_MIN = 600
