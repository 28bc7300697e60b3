def load(db, ids):
    return [db.customer(i) for i in ids]
