#!/bin/sh
# The staging smoke test: it waits for the new read replica named in
# config/db.yaml to answer. Before the replica is configured it fails at once;
# once configured it blocks (the replica never comes up in this case), as a hung
# test does, far past the run's wall clock (3 s) and well inside its own timeout_s (120 s).
grep -q '^  replica_host: db-replica-2.internal$' config/db.yaml || { echo "no replica configured"; exit 1; }
sleep 60
