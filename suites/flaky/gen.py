#!/usr/bin/env python3
"""Writes the flaky test suite: one deliberately flaky case per cause that
`bench flaky` names (variant, fault, timing, scorer, unstable), plus a stable
case whose known_flaky marker is stale (reported "fixed: remove the marker").

Every case is the same small goal (raise a Postgres pool from 10 to 40 and
document it), scripted; each differs from the others in the one thing its
cause is about. Run from the repository root:

    python3 suites/flaky/gen.py && target/release/bench script suites/flaky/edge/*/

`.ci/run` checks the committed cassettes against their scenarios and runs
`bench flaky --suite suites/flaky --reruns 10`, asserting every bucket
(scripts/flaky-check).
"""
import json, os, shutil, stat

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "edge")
WHEN = "2026-12-02"

CONFIG = '[database]\nurl_env = "REPORTING_DB_URL"\npool_size = 10\npool_timeout_s = 30\n\n[scheduler]\nworkers = 24\n'
CAPACITY = "# Capacity notes\n\n## api\n60 gunicorn workers, pool 20 per process.\n"
WRITTEN_CAPACITY = CAPACITY + "\n## reporting\n24 scheduler workers each hold a connection during a report; pool 40 = 24 + headroom.\n"

RUN_TOML = '''# {title}
goal = "Raise the reporting service's Postgres connection pool from 10 to 40 and document why in docs/capacity.md."
workspace = "workspace"

[predicate]
check = "pool"

[budget]
hard_cap_usd = 28.0
wall_clock_limit_s = 600
task_budget_tokens = 74700

[model]
protocol = "anthropic"
base_url = "https://api.anthropic.com"
api_key_env = "ANTHROPIC_API_KEY"
executor = "claude-opus-5"
judge = "claude-opus-5"
max_tokens = 8192
{model_extra}
[loop]
retries_per_task = 0
max_replans = 0

[prices."claude-opus-5"]
input_usd_per_mtok = 5.0
output_usd_per_mtok = 25.0

[tools]
allow = ["read_file", "write_file", "list_files", "run_check"]

[checks.pool]
command = ["./checks/pool.sh"]
timeout_s = 60
'''

POOL_SH = """#!/bin/sh
{pre}grep -q '^pool_size = 40$' services/reporting/config.toml || {{ echo "pool_size is not 40"; exit 1; }}
grep -q '## reporting' docs/capacity.md || {{ echo "capacity note missing"; exit 1; }}
echo ok
"""

# Unstable on purpose: the check's verdict depends on something no input
# names (the parity of the case-run's directory, run-<n>), so identical
# reruns disagree deterministically; a real nondeterminism (time, order,
# a race) looks the same from outside, only less reproducibly.
UNSTABLE_PRE = """case "$(pwd)" in
  */run-*[13579]/case/*) echo "the check saw an odd case-run directory"; exit 1;;
esac
"""

USAGE = {"input_tokens": 900, "output_tokens": 200, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


def call(key, text="", tools=None, latency=None):
    c = {"key": key, "usage": USAGE}
    if text:
        c["text"] = text
    if tools:
        c["tools"] = tools
    if latency is not None:
        c["latency_ms"] = latency
    return c


def write(path, content):
    return [{"name": "write_file", "input": {"path": path, "content": content}}]


PLAN = json.dumps({"tasks": [
    {"id": "t1", "description": "Set pool_size = 40 for the reporting service",
     "verify": {"kind": "file_contains", "path": "services/reporting/config.toml", "text": "pool_size = 40"}},
    {"id": "t2", "description": "Explain the new pool size in docs/capacity.md",
     "verify": {"kind": "file_contains", "path": "docs/capacity.md", "text": "## reporting"}},
]})


def pool_run(pool=40, latency=None):
    cfg = CONFIG.replace("pool_size = 10", f"pool_size = {pool}")
    return {"calls": [
        call("plan/0", PLAN, latency=latency),
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "services/reporting/config.toml"}}], latency=latency),
        call("execute/t1/a0/1", tools=write("services/reporting/config.toml", cfg), latency=latency),
        call("execute/t1/a0/2", f"pool_size 10 -> {pool}.", latency=latency),
        call("execute/t2/a0/0", tools=write("docs/capacity.md", WRITTEN_CAPACITY), latency=latency),
        call("execute/t2/a0/1", "Documented.", latency=latency),
    ]}


SCORER_PLAN = json.dumps({"tasks": [
    {"id": "t1", "description": "Raise the pool to 40, document it, and write the capacity notes 5 and 6",
     "verify": {"kind": "file_contains", "path": "docs/capacity.md", "text": "## reporting"}},
]})


def scorer_run(six):
    cfg = CONFIG.replace("pool_size = 10", "pool_size = 40")
    return {"calls": [
        call("plan/0", SCORER_PLAN),
        call("execute/t1/a0/0", tools=write("services/reporting/config.toml", cfg)),
        call("execute/t1/a0/1", tools=write("docs/capacity.md", WRITTEN_CAPACITY)),
        call("execute/t1/a0/2", tools=write("notes/5.md", "five: the pool waits are gone\n")),
        call("execute/t1/a0/3", tools=write("notes/6.md", six)),
        call("execute/t1/a0/4", "Done."),
    ]}


def case(cid, title, cause_doc, runs, expect, extra="", model_extra="", pre="", workspace_extra=None):
    d = os.path.join(ROOT, cid)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "checks"))
    ws = os.path.join(d, "workspace")
    for p, body in {"services/reporting/config.toml": CONFIG, "docs/capacity.md": CAPACITY, **(workspace_extra or {})}.items():
        os.makedirs(os.path.dirname(os.path.join(ws, p)), exist_ok=True)
        open(os.path.join(ws, p), "w").write(body)
    sh = os.path.join(d, "checks", "pool.sh")
    open(sh, "w").write(POOL_SH.format(pre=pre))
    os.chmod(sh, os.stat(sh).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    open(os.path.join(d, "run.toml"), "w").write(RUN_TOML.format(title=title, model_extra=model_extra))
    comment = "".join(f"# {l}\n" for l in cause_doc.strip().splitlines())
    open(os.path.join(d, "case.toml"), "w").write(
        f'{comment}id = "{cid}"\ncategory = "edge"\ntitle = "{title}"\ncovers = ["flaky"]\n{extra}\n[expect]\n{expect}')
    scen = {"case": cid, "protocol": "anthropic", "model": "claude-opus-5", "when": WHEN, "notes": title, "runs": runs}
    open(os.path.join(d, "scenario.json"), "w").write(json.dumps(scen, indent=1) + "\n")


GOAL_MET = 'ending = "GOAL_MET"\npredicate_met = true\nverified = ["t1", "t2"]\n'

case("flaky-variant", "Variant 1 of the recording sets the pool to 20: the verdict follows the variant",
     "Cause `variant`: two recorded variants, the second sampled pool_size = 20, so run r passes\n"
     "exactly when r is even. Marked known_flaky, so bench flaky accepts it.",
     [pool_run(), pool_run(pool=20)], GOAL_MET,
     extra='latency_cap_ms = 20000\ncost_cap_usd = 1.0\nknown_flaky = { cause = "variant", since = "2026-12-02", note = "variant 1 was sampled at temperature 0.8; pin temperature 0 and re-record" }\n')

case("flaky-fault", "500s on early attempts with only two HTTP attempts: some fault seeds break the run",
     "Cause `fault`: a seeded 40% 500-rate and http_attempts = 2, so a call whose first two attempts\n"
     "both draw a 500 fails; whether any call does depends on the seed (an error-recovery gap).",
     [pool_run()], GOAL_MET,
     extra='latency_cap_ms = 20000\ncost_cap_usd = 1.0\nfaults = "500=0.4,retry_after=0,seed=5"\n',
     model_extra="http_attempts = 2\n")

case("flaky-timing", "Replayed latency is real and the latency cap sits close above it",
     "Cause `timing`: six calls of 250 ms replayed at latency_scale 1 (1.5 s plus the harness's own\n"
     "time) against a 2.5 s latency cap: it passes as recorded and fails once latency grows by half.",
     [pool_run(latency=250)], GOAL_MET,
     extra='latency_cap_ms = 2500\ncost_cap_usd = 1.0\nlatency_scale = 1.0\n')

SCORER_EXPECT = '''ending = "GOAL_MET"
predicate_met = true
verified = ["t1"]
# Ten scored checks: notes 1-4 are fixtures, 7 and 8 are never written, so
# variant 0 scores 8/10 (at the 0.8 line, passes) and variant 1, whose note 6
# lacks the word, 7/10 (fails).
[expect.files_contain]
"notes/1.md" = "one"
"notes/2.md" = "two"
"notes/3.md" = "three"
"notes/4.md" = "four"
"docs/capacity.md" = "## reporting"
"notes/5.md" = "five"
"notes/6.md" = "six"
"notes/7.md" = "seven"
"notes/8.md" = "eight"
'''
case("flaky-scorer", "The score sits at the 0.8 line: one soft check decides the verdict",
     "Cause `scorer`: every run reaches GOAL_MET with every gate held; variant 0 scores 0.8 and passes,\n"
     "variant 1 scores 0.7 and fails. The verdict turns on one soft check at the line.",
     [scorer_run("six: the dashboards are green\n"), scorer_run("the dashboards are green\n")], SCORER_EXPECT,
     extra='latency_cap_ms = 20000\ncost_cap_usd = 1.0\n',
     workspace_extra={f"notes/{i}.md": f"{w}\n" for i, w in [(1, "one"), (2, "two"), (3, "three"), (4, "four")]})

case("flaky-unstable", "The predicate's verdict depends on something no input names",
     "Cause `unstable`: the predicate fails in every case-run directory whose number is odd, so\n"
     "identical reruns (same variant, same faults, same latency) disagree.",
     [pool_run()], GOAL_MET,
     extra='latency_cap_ms = 20000\ncost_cap_usd = 1.0\n', pre=UNSTABLE_PRE)

case("flaky-marker-fixed", "A stable case still carrying a known_flaky marker",
     "Stable: replayed instantly, far from every cap; its timing marker is stale and bench flaky\n"
     "reports it as fixed: remove the marker.",
     [pool_run()], GOAL_MET,
     extra='latency_cap_ms = 20000\ncost_cap_usd = 1.0\nknown_flaky = { cause = "timing", since = "2026-11-20", note = "failed twice on a loaded runner while replayed at latency_scale 1" }\n')
