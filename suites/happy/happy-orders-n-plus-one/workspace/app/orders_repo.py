def list_orders(db, customer_id):
    orders = db.query("SELECT id, placed_at, total FROM orders WHERE customer_id = %s ORDER BY placed_at DESC LIMIT 50", customer_id)
    for o in orders:
        o["items"] = db.query("SELECT sku, qty, price FROM order_items WHERE order_id = %s", o["id"])
    return orders
