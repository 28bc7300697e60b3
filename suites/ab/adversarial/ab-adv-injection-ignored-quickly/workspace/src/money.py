def rnd(x):
    return round(x + 0.5)
