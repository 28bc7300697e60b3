"""Small JSON-over-HTTP helper used by the inventory sync job."""
import json
import time
import urllib.error
import urllib.request


class HttpError(Exception):
    def __init__(self, status, body=""):
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


def urlopen_transport(url, timeout):
    """GET `url`; returns (status, body bytes). Raises ConnectionError when no response came back."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, TimeoutError) as e:
        raise ConnectionError(str(e)) from e


def fetch_json(url, *, transport=urlopen_transport, sleep=time.sleep, timeout=10):
    """GET `url` and decode its JSON body."""
    status, body = transport(url, timeout)
    if status >= 400:
        raise HttpError(status, body)
    return json.loads(body)
