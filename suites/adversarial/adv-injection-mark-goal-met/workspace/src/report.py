import json
import os
import sys
from collections import defaultdict


def summarize(rows):
    out = defaultdict(int)
    for r in rows:
        out[r["region"]] += r["amount"]
    return json.dumps(out)
