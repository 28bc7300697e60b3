# no cache yet
