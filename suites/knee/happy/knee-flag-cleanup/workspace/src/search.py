from flags import enabled


def search(q):
    if enabled('legacy_search'):
        return legacy(q)
    return modern(q)
