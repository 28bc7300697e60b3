#!/bin/sh
echo '--- environment ---'
env | sort
echo '--- smoke ---'
sh deploy/smoke.sh
