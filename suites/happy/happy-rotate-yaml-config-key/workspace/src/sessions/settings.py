"""Settings loader for the sessions service."""
import warnings

RENAMED = {("cache", "redis_url"): ("cache", "endpoint")}  # since 3.2; the old key goes away in 4.0


def migrate(raw):
    for (sec, old), (_, new) in RENAMED.items():
        if old in raw.get(sec, {}):
            warnings.warn(f"{sec}.{old} is deprecated; use {sec}.{new}", DeprecationWarning)
            raw[sec].setdefault(new, raw[sec].pop(old))
    return raw
