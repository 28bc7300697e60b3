import csv


def load(path):
    return list(csv.DictReader(open(path)))
