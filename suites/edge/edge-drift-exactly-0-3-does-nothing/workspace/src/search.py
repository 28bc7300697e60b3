def search(db, q):
    return db.execute("SELECT id, title FROM search_events WHERE title ILIKE '%%' || %(q)s || '%%' LIMIT 50", {'q': q}).fetchall()
