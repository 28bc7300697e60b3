#!/bin/sh
# Runs in the workspace. Exit 0 when README.md has an Install section, before
# Usage, that says how to install the package with pip.
awk '/^## Install$/ {i=NR} /^## Usage$/ {u=NR} END {exit !(i && u && i < u)}' README.md &&
  grep -qF 'pip install acme-cli' README.md
