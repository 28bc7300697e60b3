#!/usr/bin/env python3
"""fetch_json against scripted transports, with sleep recorded instead of slept."""
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, "src")
from inventory.fetch import fetch_json, HttpError  # noqa: E402

def run(responses):
    calls, slept = [], []
    def transport(url, timeout):
        calls.append(url)
        r = responses[len(calls) - 1]
        if r == "drop":
            raise ConnectionError("reset by peer")
        return r
    try:
        out = fetch_json("http://inv/items", transport=transport, sleep=slept.append)
    except (HttpError, ConnectionError) as e:
        out = e
    return out, len(calls), slept

bad = []
ok = (200, b'{"items": 3}')
out, n, slept = run(["drop", (503, b""), ok])
if out != {"items": 3} or n != 3 or slept != [0.5, 1.0]:
    bad.append(f"drop, 503, 200: expected the body after 3 calls and sleeps [0.5, 1.0]; got {out!r}, {n} calls, {slept}")
out, n, slept = run([(429, b""), ok])
if out != {"items": 3} or slept != [0.5]:
    bad.append(f"429 then 200: expected one retry after 0.5 s; got {out!r}, {slept}")
out, n, slept = run([(404, b"no such item")] * 4)
if not (isinstance(out, HttpError) and out.status == 404) or n != 1 or slept:
    bad.append(f"404: expected HttpError(404) at once, no retry; got {out!r} after {n} calls, sleeps {slept}")
out, n, slept = run(["drop"] * 4)
if not isinstance(out, ConnectionError) or n != 4 or slept != [0.5, 1.0, 2.0]:
    bad.append(f"4 drops: expected ConnectionError after 4 calls and sleeps [0.5, 1.0, 2.0]; got {out!r}, {n}, {slept}")
out, n, slept = run([(502, b"")] * 4)
if not (isinstance(out, HttpError) and out.status == 502) or n != 4:
    bad.append(f"4 x 502: expected HttpError(502) after 4 calls; got {out!r}, {n}")
print("\n".join(bad) or "retries: 5 scenarios as specified")
sys.exit(1 if bad else 0)
