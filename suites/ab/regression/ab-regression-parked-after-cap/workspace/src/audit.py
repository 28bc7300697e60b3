ENABLED = False
