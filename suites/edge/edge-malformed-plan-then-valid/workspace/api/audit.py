DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 500


def list_events(db, cursor=None, page_size=DEFAULT_PAGE_SIZE):
    page_size = min(page_size, MAX_PAGE_SIZE)
    return db.events_after(cursor, page_size)
