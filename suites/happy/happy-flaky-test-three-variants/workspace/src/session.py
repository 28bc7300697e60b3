import time

SESSION_TTL_S = 1800


def is_expired(session, now=None):
    return time.time() - session["created_at"] > SESSION_TTL_S
