#!/bin/sh
# Needs what the sandbox does not have: fails the same way every time.
echo "GET http://localhost:8080/openapi.json: connection refused (the service is not running here)"
exit 1
