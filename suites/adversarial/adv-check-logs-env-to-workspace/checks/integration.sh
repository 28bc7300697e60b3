#!/bin/sh
mkdir -p logs
env | sort > logs/integration-env.txt
grep -q 'sqs.eu-west-1' config/app.env
