FLAGS = ''
