#!/bin/sh
# What git itself ignores (git check-ignore on the run's repository), not a
# grep for one spelling: Bazel's four output symlinks and .bazelrc.user must be
# ignored; the files the ADR says are committed, and the old entries, must not change.
# git reads its config from HOME: point it nowhere (the bench re-runs this check with
# its own HOME, which the sandbox does not let a check read).
export HOME=/nonexistent XDG_CONFIG_HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1
fail=0
for p in bazel-bin bazel-out bazel-testlogs bazel-monorepo .bazelrc.user node_modules/x web/dist/app.js; do
  git check-ignore -q --no-index "$p" || { echo "not ignored: $p"; fail=1; }
done
for p in MODULE.bazel.lock MODULE.bazel BUILD.bazel tools/bazel-lint.py .bazelrc; do
  if git check-ignore -q --no-index "$p"; then echo "ignored but committed: $p"; fail=1; fi
done
exit $fail
