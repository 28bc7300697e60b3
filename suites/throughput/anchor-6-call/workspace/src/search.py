"""/api/search handler."""

SEARCH_SQL = """
SELECT id, title, created_at
FROM search_events
WHERE query = %(q)s
ORDER BY created_at DESC
LIMIT 50
"""


def search(db, q):
    return db.execute(SEARCH_SQL, {"q": q}).fetchall()
