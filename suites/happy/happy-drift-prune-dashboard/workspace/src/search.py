def search(db, q):
    return db.execute(SEARCH_SQL, {'q': q}).fetchall()
