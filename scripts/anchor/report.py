"""Write reports/throughput/anchor.md (and the README's table between its
markers) from `scripts/bench-throughput --anchor`'s measurements: never typed
by hand.

    report.py RESULTS_TSV RSS_400_KB RSS_1600_KB RSS_3200_KB HARNESS_RSS_KB COMMIT INSPECT_VERSION

RESULTS_TSV: one line per round: round, Inspect's seconds for 300
sample-runs, ours at concurrency 1, 4, 16 (case-runs/s), Inspect's seconds
for 1,200 sample-runs.
"""
import datetime
import os
import platform
import re
import sys

results, rss400, rss1600, rss3200, hrss, commit, version = sys.argv[1:8]
rows = []
for line in open(results):
    r, small, c1, c4, c16, large = line.split("\t")
    marginal = 900 / (float(large) - float(small))
    ours = [float(c1), float(c4), float(c16)]
    rows.append((r, marginal, ours))

cpu = "unknown cpu"
try:
    for l in open("/proc/cpuinfo"):
        if l.startswith("model name"):
            cpu = l.split(":", 1)[1].strip()
            break
except OSError:
    pass
when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
machine = f"{os.cpu_count()} cores, {cpu}, {platform.system()} {platform.release()}"
table = [
    "| round | Inspect AI marginal (sample-runs/s) | ours c=1 | ours c=4 | ours c=16 | ratio c=1 | ratio c=4 | ratio c=16 |",
    "|---|---|---|---|---|---|---|---|",
]
for r, m, ours in rows:
    table.append(
        f"| {r} | {m:.1f} | " + " | ".join(f"{o:.1f}" for o in ours) + " | "
        + " | ".join(f"{o / m:.1f}x" for o in ours) + " |"
    )
mb = lambda kb: f"{int(kb) / 1024:.1f} MiB"
body = "\n".join(table) + (
    f"\n\nPeak RSS of `bench run` at concurrency 16: {mb(rss400)} over 400 case-runs, "
    f"{mb(rss1600)} over 1,600 (40 cases) and {mb(rss3200)} over 3,200 (160 cases); "
    f"one harness process at most {mb(hrss)}.\n\n"
    f"Measured {when} at commit {commit} on {machine}, by `scripts/bench-throughput --anchor` "
    f"(Inspect AI {version}, `mockllm`, 3 epochs; marginal rate between 300 and 1,200 sample-runs; "
    "ours: 400 case-runs per figure, the anchor shape suites/throughput/anchor-6-call).\n"
)
os.makedirs("reports/throughput", exist_ok=True)
with open("reports/throughput/anchor.md", "w") as f:
    f.write("# Throughput beside the anchor (Inspect AI)\n\n" + body)
print(body)
readme = open("README.md").read()
begin, end = "<!-- anchor-table:begin -->", "<!-- anchor-table:end -->"
if begin in readme and end in readme:
    new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: begin + "\n" + body + end, readme, flags=re.S)
    open("README.md", "w").write(new)
    print("README.md: the anchor table rewritten")
else:
    print("README.md has no anchor-table markers: not rewritten", file=sys.stderr)
