DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def page(query, cursor=None, limit=DEFAULT_LIMIT):
    """Keyset pagination: `cursor` is the opaque next_cursor of the previous page."""
    limit = min(int(limit), MAX_LIMIT)
    ...
