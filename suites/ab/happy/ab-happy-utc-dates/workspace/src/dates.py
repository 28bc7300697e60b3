from datetime import datetime

def parse(s):
    return datetime.fromisoformat(s)
