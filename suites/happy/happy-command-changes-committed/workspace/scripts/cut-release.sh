#!/bin/sh
# usage: cut-release.sh <version>
set -e
sed -i "s/__version__ = .*/__version__ = \"$1\"/" src/app/version.py
rm -f conf/legacy.cfg
printf '# %s\n\n- first notes\n' "$1" > RELEASE_NOTES.md
