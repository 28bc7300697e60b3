def delay(n):
    return 2 ** n
