ALLOWED = '*'
