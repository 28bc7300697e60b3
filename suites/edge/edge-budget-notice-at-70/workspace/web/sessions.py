from pymemcache.client.base import Client

_client = Client(("memcached.internal", 11211))


def get_session(sid):
    return _client.get(f"sess:{sid}")


def put_session(sid, blob, ttl_s=1800):
    _client.set(f"sess:{sid}", blob, expire=ttl_s)
