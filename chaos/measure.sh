#!/usr/bin/env bash
# Measure `bench chaos --kills 200` wall time on this machine, per mode, with
# the release build (the performance goal: within 60 s). A script, not a timed
# test: the figure depends on the machine and its load.
#
#   chaos/measure.sh                 # trials on /dev/shm (the default work dir)
#   WORK_DIR=/var/tmp/x chaos/measure.sh   # trials on a disk file system instead
#   KILLS=200 SEED=1 HARNESS=path/to/harness chaos/measure.sh
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${KILLS:-200}
seed=${SEED:-1}
cargo build --release --quiet -p bench -p harness
extra=()
if [ -n "${WORK_DIR:-}" ]; then extra+=(--work-dir "$WORK_DIR"); fi
if [ -n "${HARNESS:-}" ]; then extra+=(--harness "$HARNESS"); fi
printf '%-11s %8s %8s %s\n' mode kills wall_s violations
for mode in sigkill power-loss both; do
  out=target/chaos-measure/$mode
  start=$(date +%s%N)
  code=0
  target/release/bench chaos --kills "$kills" --mode "$mode" --seed "$seed" --no-build --out "$out" "${extra[@]}" >/dev/null 2>&1 || code=$?
  end=$(date +%s%N)
  if [ "$code" -gt 1 ]; then echo "bench chaos --mode $mode failed (exit $code)" >&2; exit "$code"; fi
  viol=$(grep -m1 -oE '\*\*(Zero violations|[0-9]+ violation\(s\))' "$out/chaos.md" | tr -d '*')
  printf '%-11s %8s %8s %s\n' "$mode" "$kills" "$(awk "BEGIN{printf \"%.1f\", ($end - $start)/1e9}")" "$viol"
done
