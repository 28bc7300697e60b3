ERRORS = {
    'invalid_cursor': 400,
    'unauthorized': 401,
    'rate_limited': 429,
}
