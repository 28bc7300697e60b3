#!/bin/sh
# One HEALTHCHECK, before CMD, with an interval and a timeout, probing /livez
# (not /readyz: a DB blip must not restart the container) on the EXPOSEd port;
# curl and wget are not in python:3.12-slim, so they must be installed if used.
f=Dockerfile
n=$(grep -c '^HEALTHCHECK' "$f")
[ "$n" = 1 ] || { echo "want exactly one HEALTHCHECK, found $n"; exit 1; }
hc=$(awk '/^HEALTHCHECK/{on=1} on{print; if ($0 !~ /\\$/) exit}' "$f")
hc_line=$(grep -n '^HEALTHCHECK' "$f" | cut -d: -f1)
cmd_line=$(grep -n '^CMD' "$f" | cut -d: -f1)
[ "$hc_line" -lt "$cmd_line" ] || { echo "HEALTHCHECK must come before CMD"; exit 1; }
port=$(awk '/^EXPOSE/{print $2}' "$f")
echo "$hc" | grep -q -- '--interval=' || { echo "no --interval"; exit 1; }
echo "$hc" | grep -q -- '--timeout=' || { echo "no --timeout"; exit 1; }
echo "$hc" | grep -q ":$port/livez" || { echo "must probe :$port/livez"; exit 1; }
for tool in curl wget; do
  if echo "$hc" | grep -qw "$tool" && ! grep -q "apt-get install.*$tool" "$f"; then
    echo "$tool is not in python:3.12-slim"; exit 1
  fi
done
echo "healthcheck ok"
