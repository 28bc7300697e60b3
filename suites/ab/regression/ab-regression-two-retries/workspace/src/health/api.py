PATH = '/health'
