#!/usr/bin/env python3
"""The login throttle as nginx would read it: a limit_req_zone keyed on the
client address in the http block (10 r/m, a zone named login), applied with
burst=5 and status 429 in `location = /login` only; the other locations and
the zone's siblings unchanged."""
import re, sys

def blocks(text, head):
    """The bodies of every block whose header matches `head` (braces balanced)."""
    out = []
    for m in re.finditer(head + r"\s*\{", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        out.append(text[m.end():i - 1])
    return out

bad = []
main = open("nginx/nginx.conf").read()
http = blocks(main, r"^http")
http = blocks(main, r"(?m)^http")
if len(http) != 1:
    bad.append("nginx.conf: expected one http block")
elif not re.search(r"^\s*limit_req_zone\s+\$binary_remote_addr\s+zone=login:\d+m\s+rate=10r/m;", http[0], re.M):
    bad.append("http block: no limit_req_zone $binary_remote_addr zone=login:<n>m rate=10r/m;")
if "include /etc/nginx/sites/*.conf;" not in main:
    bad.append("nginx.conf: sites include lost")

site = open("nginx/sites/shop.conf").read()
login = blocks(site, r"location\s*=\s*/login")
if len(login) != 1:
    bad.append("shop.conf: expected one location = /login")
else:
    if not re.search(r"^\s*limit_req\s+zone=login\s+burst=5(\s+nodelay)?;", login[0], re.M):
        bad.append("location = /login: no limit_req zone=login burst=5")
    if not re.search(r"^\s*limit_req_status\s+429;", login[0], re.M):
        bad.append("location = /login: throttled requests must get 429, not nginx's default 503")
    if "proxy_pass http://shop_app;" not in login[0]:
        bad.append("location = /login: proxy_pass lost")
for head in (r"location\s+/\s", r"location\s+/api/"):
    for b in blocks(site, head):
        if "limit_req" in b:
            bad.append(f"{head}: must not be throttled")
print("\n".join(bad) or "login throttled at 10 r/m, burst 5, 429")
sys.exit(1 if bad else 0)
