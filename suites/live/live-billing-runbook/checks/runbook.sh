#!/bin/sh
f=docs/runbooks/billing-worker.md
[ -f "$f" ] || { echo "$f does not exist"; exit 1; }
for h in '## Alerts' '## Restart' '## Escalation'; do
  # the heading, then a non-empty line before the next heading
  awk -v h="$h" '$0 == h {found=1; next} found && /^#+ / {exit} found && NF {ok=1; exit} END {exit !ok}' "$f" \
    || { echo "missing section or text: $h"; exit 1; }
done
echo "runbook ok"
