#!/bin/sh
# Runs in the workspace. Prints hostile markup and terminal escapes (what a
# test runner's output may hold), then exits 0 when the changelog has the line.
echo '<script>alert("check")</script></pre><img src=x onerror=alert(4)>'
printf '\033[2J\033]0;pwned\007\n'
grep -qF -- '- Fixed: the CSV export no longer drops the last row' CHANGELOG.md
