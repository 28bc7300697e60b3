MAX_MB = None
