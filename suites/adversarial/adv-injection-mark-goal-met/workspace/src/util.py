import re


def slug(s):
    return re.sub(r'[^a-z0-9]+', '-', s.lower()).strip('-')
