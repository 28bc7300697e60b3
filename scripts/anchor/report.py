"""Write reports/throughput/anchor.md (and the README's table between its
markers) from `scripts/bench-throughput --anchor`'s measurements: never typed
by hand.

    report.py RESULTS_TSV RSS_400_KB RSS_1600_KB RSS_3200_KB HARNESS_RSS_KB COMMIT INSPECT_VERSION [SMALL LARGE]

RESULTS_TSV: one line per round: round, the equal-work Inspect script's
seconds for 300 sample-runs, ours at concurrency 1, 4, 16 (case-runs/s), the
equal-work script's seconds for 1,200 sample-runs, then the equal-guarantee
script's (its scorer runs the predicate through `sandbox().exec`) seconds
for 300 and for 1,200. SMALL and LARGE: Inspect's two sizes in
sample-runs, when not 300 and 1,200 (ANCHOR_SAMPLES).
"""
import datetime
import os
import platform
import re
import sys

results, rss400, rss1600, rss3200, hrss, commit, version = sys.argv[1:8]
small_n, large_n = (int(n) for n in (sys.argv[8:10] or (300, 1200)))
rows = []
# The marginal rate: the sample-runs between the two sizes over the
# seconds between them (start-up and imports cancel out).
marginal = lambda small, large: (large_n - small_n) / (float(large) - float(small))
for line in open(results):
    r, small, c1, c4, c16, large, sbx_small, sbx_large = line.rstrip("\n").split("\t")
    for anchor, a, b in (("equal work", small, large), ("equal guarantee", sbx_small, sbx_large)):
        # The larger size must take longer, or the marginal rate is void
        # (negative or unbounded): the machine's load moved more than the work.
        if float(b) <= float(a):
            sys.exit(
                f"report.py: {results}: round {r}, {anchor}: Inspect's {large_n:,} sample-runs took "
                f"{float(b):.1f} s, no longer than its {small_n:,} ({float(a):.1f} s): the load on this "
                "machine swamped the marginal rate; nothing written, measure again when it is quieter"
            )
    ours = [float(c1), float(c4), float(c16)]
    rows.append((r, marginal(small, large), marginal(sbx_small, sbx_large), ours))

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
    "| round | anchor | Inspect AI marginal (sample-runs/s) | ours c=1 | ours c=4 | ours c=16 | ratio c=1 | ratio c=4 | ratio c=16 |",
    "|---|---|---|---|---|---|---|---|---|",
]
anchors = ("equal work", "equal guarantee")
for r, work, guarantee, ours in rows:
    for name, m in zip(anchors, (work, guarantee)):
        table.append(
            f"| {r} | {name} | {m:.1f} | " + " | ".join(f"{o:.1f}" for o in ours) + " | "
            + " | ".join(f"{o / m:.1f}x" for o in ours) + " |"
        )
mb = lambda kb: f"{int(kb) / 1024:.1f} MiB"
body = "\n".join(table) + (
    f"\n\nPeak RSS of `bench run` at concurrency 16: {mb(rss400)} over 400 case-runs, "
    f"{mb(rss1600)} over 1,600 (40 cases) and {mb(rss3200)} over 3,200 (160 cases); "
    f"one harness process at most {mb(hrss)}.\n\n"
    f"Measured {when} at commit {commit} on {machine}, by `scripts/bench-throughput --anchor` "
    f"(Inspect AI {version}, `mockllm`, 3 epochs; marginal rate between {small_n:,} and {large_n:,} sample-runs; "
    "ours: 400 case-runs per figure, the anchor shape suites/throughput/anchor-6-call). "
    "Equal work: scripts/anchor/inspect_anchor.py with its scorer reading the files in-process. "
    "Equal guarantee: the same script with `--verify sandbox`, its scorer running the goal predicate "
    "(`grep -q idx_search_ts src/search.py`) as a process through Inspect's local sandbox "
    "(`sandbox().exec`), once per sample, unconfined; ours runs it confined 3 times in the harness "
    "and once more in the bench's audit.\n"
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
