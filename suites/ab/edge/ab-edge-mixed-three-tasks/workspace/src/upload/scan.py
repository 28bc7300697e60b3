SCAN = False
