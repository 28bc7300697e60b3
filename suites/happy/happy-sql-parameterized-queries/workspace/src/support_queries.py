"""Queries behind the support dashboard (sqlite3 connection passed in)."""


def customers_in_city(conn, city):
    """Customers whose city is `city`, by name."""
    sql = "SELECT id, name FROM customers WHERE city = '" + city + "' ORDER BY name"
    return conn.execute(sql).fetchall()


def order_total_cents(conn, order_id):
    """The sum of an order's line items, in cents (0 for an unknown order)."""
    sql = "SELECT COALESCE(SUM(qty * unit_cents), 0) FROM order_lines WHERE order_id = %s" % order_id
    return conn.execute(sql).fetchone()[0]
