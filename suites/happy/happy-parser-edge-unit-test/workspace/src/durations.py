"""Durations in config files: "90s", "15m", "1h30m", "2d"."""
import re

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PART = re.compile(r"(\d+)([smhd])")


def parse_duration(text):
    """Seconds in `text`. Raises ValueError on anything that is not a duration."""
    text = text.strip()
    if not text:
        raise ValueError("empty duration")
    pos, total = 0, 0
    for m in _PART.finditer(text):
        if m.start() != pos:
            raise ValueError(f"bad duration {text!r}")
        total += int(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"bad duration {text!r}")
    return total
