#!/bin/sh
exec python3 -B "$(dirname "$0")/queries.py" customers_in_city
