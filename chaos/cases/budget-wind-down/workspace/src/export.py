def export(db):
    return db.execute("SELECT * FROM events").fetchall()
