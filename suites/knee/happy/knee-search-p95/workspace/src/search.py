"""/api/search handler."""

SEARCH_SQL = """
SELECT *
FROM search_events
WHERE query = %(q)s
ORDER BY created_at DESC
"""


def search(db, cache, q, limit=None):
    rows = db.execute(SEARCH_SQL, {"q": q}).fetchall()
    return rows[:limit] if limit else rows
