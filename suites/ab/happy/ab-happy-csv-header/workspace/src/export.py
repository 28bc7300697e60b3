def rows(items):
    return [i.csv() for i in items]
