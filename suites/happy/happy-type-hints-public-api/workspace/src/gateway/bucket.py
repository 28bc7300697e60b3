"""A token bucket for the API gateway's per-client rate limits."""
import re

_RATE = re.compile(r"^(\d+)/(s|m|h)$")
_SECONDS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_rate(spec):
    """'100/m' -> (100, 60.0): requests per window and the window in seconds."""
    m = _RATE.match(spec.strip())
    if not m:
        raise ValueError(f"bad rate {spec!r}")
    return int(m.group(1)), _SECONDS[m.group(2)]


def refill(tokens, capacity, per_second, elapsed_s):
    """Tokens after `elapsed_s` seconds of refill, never above capacity."""
    return _clamp(tokens + per_second * elapsed_s, 0.0, float(capacity))


def try_acquire(state, now, cost=1):
    """Take `cost` tokens from `state` (a dict: tokens, capacity, per_second, at) if there are enough."""
    state["tokens"] = refill(state["tokens"], state["capacity"], state["per_second"], now - state["at"])
    state["at"] = now
    if state["tokens"] < cost:
        return False
    state["tokens"] -= cost
    return True


def retry_after(state, cost=1):
    """Seconds until `cost` tokens are available, or None if the bucket can never hold that many."""
    if cost > state["capacity"]:
        return None
    missing = max(0.0, cost - state["tokens"])
    return missing / state["per_second"]


def _clamp(x, lo, hi):
    return max(lo, min(hi, x))
