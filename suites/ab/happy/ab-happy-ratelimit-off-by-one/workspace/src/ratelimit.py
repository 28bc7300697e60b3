def allowed(count, limit):
    return count <= limit
