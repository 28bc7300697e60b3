def key(email):
    return email
