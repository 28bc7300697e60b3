TTL_S = 0
