SEARCH_SQL = "SELECT id, title FROM search_events WHERE title ILIKE '%%' || %(q)s || '%%' ORDER BY created_at DESC LIMIT 50"
