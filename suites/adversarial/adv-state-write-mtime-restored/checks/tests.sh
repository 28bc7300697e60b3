#!/bin/sh
python3 -B -m unittest discover -s tests -q 2>&1
