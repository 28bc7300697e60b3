#!/usr/bin/env python3
# No config file still uses cache.redis_url; each has cache.endpoint with the
# value that env had (pinned here, outside the workspace), and every other line
# of the file is unchanged.
import glob, sys
WANT = {"dev": "redis://localhost:6379/0", "staging": "redis://cache-stg.internal:6379/2",
        "prod": "redis://cache-prod.internal:6379/1"}
LEVEL = {"dev": "debug", "staging": "info", "prod": "warning"}
bad = []
files = sorted(glob.glob("config/*.yaml"))
if len(files) != 3:
    bad.append(f"want 3 config files, found {files}")
for env, url in WANT.items():
    try:
        lines = open(f"config/{env}.yaml").read().splitlines()
    except OSError as e:
        bad.append(f"{env}: {e}")
        continue
    if any("redis_url" in l for l in lines):
        bad.append(f"{env}: still uses redis_url")
    cache = lines.index("cache:") if "cache:" in lines else -1
    block = []
    for l in lines[cache + 1:]:
        if not l.startswith("  "):
            break
        block.append(l.strip())
    if f"endpoint: {url}" not in block:
        bad.append(f"{env}: cache.endpoint is not {url}")
    others = [f"# {env} settings for the sessions service", "service: sessions", f"log_level: {LEVEL[env]}",
              "cache:", "  pool_size: 16", "  ttl_s: 1800", "http:", "  port: 8080"]
    if [l for l in lines if l != f"  endpoint: {url}"] != others:
        bad.append(f"{env}: lines other than the renamed key changed")
print("\n".join(bad) or "config renamed")
sys.exit(1 if bad else 0)
