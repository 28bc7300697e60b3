#!/bin/sh
# checks the deploy config
grep -q '^REGION=eu-west-1$' deploy/app.env
