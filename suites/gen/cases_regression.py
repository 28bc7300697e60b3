"""Regression cases: one per real bug, named after it. Expectations are kept
few and sharp, so the bug coming back fails the case (score < 0.8 or the
wrong ending), not just one check among many."""

import json

from lib import (EXEC_BODY_FLOOR_BYTES, EXEC_BODY_SLACK_BYTES, Case, V, call, judge_call, plan_call, post, read, run_check, spend_trace,
                 steps, task, u, worst_usd, write)


def judge_schema_order():
    c = Case("regression-judge-schema-key-order", "regression", "The drift judge's JSON schema lists reasoning, then off_goal_task_ids, then drift_score",
             ["GOAL_MET", "regression", "judge-schema-order"],
             "Cut the median time-to-first-byte of the marketing site's home page below 300ms.")
    c.drift = {"every_tasks": 1}
    c.ws("site/next.config.js", "module.exports = {\n  images: { unoptimized: true },\n};\n")
    c.ws("site/pages/index.jsx", "export async function getServerSideProps() {\n  const posts = await fetch('https://cms.internal/posts?limit=50').then(r => r.json());\n  return { props: { posts } };\n}\n")
    c.check_cmd("ttfb", ["sh", "-c", "grep -q 'getStaticProps' site/pages/index.jsx && grep -q 'revalidate: 300' site/pages/index.jsx"])
    c.predicate = ("check", "ttfb")
    tasks = [
        task("t1", "Render the home page statically (getStaticProps) instead of per request", V.contains("site/pages/index.jsx", "getStaticProps")),
        task("t2", "Revalidate the static home page every 5 minutes", V.contains("site/pages/index.jsx", "revalidate: 300")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("site/pages/index.jsx"), write("site/pages/index.jsx", "export async function getStaticProps() {\n  const posts = await fetch('https://cms.internal/posts?limit=50').then(r => r.json());\n  return { props: { posts } };\n}\n")], "Home page is static."),
        judge_call("judge/1", "t2 keeps the static page fresh without per-request rendering; aligned with TTFB.", [], 0.05),
        *steps("t2", [write("site/pages/index.jsx", "export async function getStaticProps() {\n  const posts = await fetch('https://cms.internal/posts?limit=50').then(r => r.json());\n  return { props: { posts }, revalidate: 300 };\n}\n")], "ISR every 300s."),
    ])
    c.expect = {"ending": "GOAL_MET",
                "request_contains_in_order": [
                    {"call_key": "judge/1", "strings": ["reasoning", "off_goal_task_ids", "drift_score"]},
                    {"call_key": "judge/1", "strings": ["properties", "reasoning", "off_goal_task_ids", "drift_score", "required"]}],
                "drift_bands": ["aligned"]}
    c.comment = """Bug: the judge's JSON schema was printed with its keys in alphabetical order, so drift_score came before reasoning
and constrained decoding would commit to the score before writing the analysis. The judge request's system prompt
carries the schema. The second in-order check is the sharp one: with sorted keys, `properties` lists drift_score,
off_goal_task_ids, reasoning, and the `required` array (always written in order) comes before the end of the
properties, so "properties ... reasoning ... off_goal_task_ids ... drift_score ... required" cannot be found in order.
(The first check, the three names alone, would also be satisfied by the `required` array of a sorted schema.)"""
    return c


def post_task_commit():
    c = Case("regression-post-task-commit", "regression", "A verified task whose only effect is a post still gets its commit",
             ["GOAL_MET", "regression", "git-commits", "post_message"],
             "Deprecate the v1 webhooks: announce the sunset date to integrators, mark the v1 handler deprecated, and post the migration guide link.")
    c.case_extra["workspace_git"] = True
    c.ws("webhooks/v1.py", "def handle(event):\n    ...\n")
    c.ws("docs/webhooks-v2-migration.md", "# Migrating to webhooks v2\nSigned payloads, retries with backoff, event ids for dedupe.\n")
    c.check_cmd("deprecated", ["grep", "-q", "DeprecationWarning", "webhooks/v1.py"])
    c.predicate = ("check", "deprecated")
    tasks = [
        task("t1", "Announce the v1 webhook sunset (2027-03-31) in #integrations", V.outbox("webhooks-v1-sunset")),
        task("t2", "Post the v2 migration guide link in #integrations", V.outbox("webhooks-v2-guide")),
        task("t3", "Emit a DeprecationWarning from the v1 handler", V.contains("webhooks/v1.py", "DeprecationWarning")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [post("#integrations", "Webhooks v1 will be turned off on 2027-03-31. v2 adds signed payloads and retries; a migration guide follows.", "webhooks-v1-sunset")], "Announced."),
        *steps("t2", [read("docs/webhooks-v2-migration.md"), post("#integrations", "Migration guide for webhooks v2: docs/webhooks-v2-migration.md", "webhooks-v2-guide")], "Guide posted."),
        *steps("t3", [write("webhooks/v1.py", "import warnings\n\n\ndef handle(event):\n    warnings.warn(\"webhooks v1 is deprecated; sunset 2027-03-31\", DeprecationWarning, stacklevel=2)\n    ...\n")], "v1 handler warns."),
    ])
    c.expect = {"ending": "GOAL_MET", "verified_count": 3, "commits_count": 3}
    c.comment = """Bug: a verified task whose effect lies outside the workspace (a post) produced no git commit, so the run branch
did not list every verified task. t1 and t2 only post; t3 edits a file. With workspace_git = true the run branch
must carry exactly one commit per verified task: 3."""
    return c


def check_script_relative():
    c = Case("regression-check-script-spec-relative", "regression", "A check script named ./checks/x.sh resolves against the spec dir, so the predicate can pass",
             ["GOAL_MET", "regression", "check-resolution"],
             "Raise unit-test coverage of billing/tax.py to the team threshold.")
    c.ws("billing/tax.py", "def vat(net, rate):\n    return round(net * rate)\n\n\ndef reverse_charge(country, b2b):\n    return b2b and country != 'DE'\n\n\ndef oss_threshold_exceeded(eu_sales_eur):\n    return eu_sales_eur > 10000\n")
    c.ws("tests/test_tax.py", "from billing.tax import vat\n\n\ndef test_vat():\n    assert vat(1000, 0.19) == 190\n")
    c.extra_files["checks/coverage_threshold.txt"] = ("3\n", False)
    c.check_script("coverage", "coverage.sh", '''#!/bin/sh
# Stand-in for coverage: every public function of billing/tax.py needs a test_<name>.
# The threshold lives next to this script (outside the workspace): $(dirname "$0").
need=$(cat "$(dirname "$0")/coverage_threshold.txt")
have=0
for f in $(sed -n 's/^def \\([a-z_]*\\)(.*/\\1/p' billing/tax.py); do
  grep -q "def test_$f" tests/test_tax.py && have=$((have + 1))
done
echo "tested functions: $have (need $need)"
[ "$have" -ge "$need" ]
''')
    c.predicate = ("check", "coverage")
    tasks = [task("t1", "Add tests for reverse_charge and oss_threshold_exceeded", V.check("coverage"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [read("billing/tax.py"), read("tests/test_tax.py"),
                      write("tests/test_tax.py", "from billing.tax import oss_threshold_exceeded, reverse_charge, vat\n\n\ndef test_vat():\n    assert vat(1000, 0.19) == 190\n\n\ndef test_reverse_charge():\n    assert reverse_charge('FR', True)\n    assert not reverse_charge('DE', True)\n    assert not reverse_charge('FR', False)\n\n\ndef test_oss_threshold_exceeded():\n    assert oss_threshold_exceeded(10001)\n    assert not oss_threshold_exceeded(10000)\n"),
                      run_check("coverage")],
               "All three functions are tested."),
    ])
    c.expect = {"ending": "GOAL_MET", "predicate_met": True, "verified": ["t1"]}
    c.comment = """Bug: a check given as ["sh", "checks/x.sh"] was resolved against the workspace (the checks' working directory),
not the spec's directory, so the predicate could never pass. The spec names the script as ["./checks/coverage.sh"]
(executable): argv[0] with a slash resolves against the spec file's directory, and the script finds its own data
file via $(dirname "$0"). The run must reach GOAL_MET."""
    return c


def notice_counted_when_refused():
    c = Case("regression-budget-notice-counted-when-refused", "regression", "report.budget_notices counts only notices that were sent, not one for a call the ledger refused",
             ["BUDGET_EXHAUSTED", "regression", "budget-notice", "budget-refusal"],
             "Write the Q4 data-retention audit: list every table holding personal data and its retention rule in docs/audit/2026-q4-retention.md.")
    c.cap = 2.0
    c.max_tokens = 12000
    c.loop = {"loop_cap": 10}
    tabs = ["customers", "orders", "support_tickets", "marketing_events", "payment_methods", "refunds"]
    for t in tabs:
        c.ws(f"db/schema/{t}.sql", f"CREATE TABLE {t} (\n  id bigserial PRIMARY KEY,\n  created_at timestamptz NOT NULL DEFAULT now()\n);\n")
    c.check_cmd("audit", ["test", "-f", "docs/audit/2026-q4-retention.md"])
    c.predicate = ("check", "audit")
    tasks = [task("t1", "Inventory personal-data tables from db/schema and write the audit", V.check("audit"))]
    # The executor thinks at length before each read (extended thinking is billed as output, within max_tokens):
    # that, not the small requests, is where the money goes.
    thinking = [11800, 11500, 11900, 10800, 3000, 5000]
    calls = [plan_call(tasks, usage=u(2000, 300)),
             call("execute/t1/a0/0", tools=[{"name": "list_files", "input": {"path": "db/schema"}}], usage=u(1200, 11700, cw=1500))]
    for i, (tname, out) in enumerate(zip(tabs, thinking)):
        calls.append(call(f"execute/t1/a0/{i + 1}", tools=[{"name": "read_file", "input": {"path": f"db/schema/{tname}.sql"}}],
                          usage=u(1300 + 150 * i, out, cr=1500)))
    c.run(calls)
    c.fill_usage()
    tr = spend_trace(c)
    spent = tr[-1][1] + tr[-1][2]
    sent = sum(1 for k, b, _ in tr if k.startswith("execute/") and b / c.cap >= 0.7)
    for k, b, _ in tr:
        assert b + worst_usd(c.model_for(k), EXEC_BODY_FLOOR_BYTES + EXEC_BODY_SLACK_BYTES, 12000) <= c.cap, ("every call is allowed", k, b)
    worst_floor = worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES, 12000, allowance=0)
    assert spent + worst_floor > c.cap and spent < 0.9 * c.cap, spent
    assert sent == 2, sent
    c.expect = {"ending": "BUDGET_EXHAUSTED", "report": {"budget_notices": sent}, "min_budget_notices": sent, "notice_at_end": True}
    c.auto_spend = False
    c.comment = f"""Bug (found while writing edge-budget-stall-27-75-of-28): the executor counts a budget notice before the ledger
reserves the call, so when reserve() refuses the call the notice is counted although it never reached the model.
Here {sent} execute requests go out at >= 70% of $2.00 carrying the notice; the next one (worst case 12000 x $25/MTok
= $0.30 plus its request's bytes as cache writes, at least ${worst_floor:.4f}, on top of ${spent:.4f}) is refused. report.budget_notices must be {sent}, the number actually sent; the
bug reports {sent + 1}."""
    return c


def resume_settled_task_step():
    c = Case("regression-resume-settled-task-counts-as-step", "regression", "A task settled on resume counts as a finished task: steps and the drift cadence include it",
             ["DRIFT_DETECTED", "regression", "resume", "drift-cadence"],
             "Roll out the new public API rate limit (100 requests/minute per key) on the gateway.")
    c.interrupt = "after_post_before_checkpoint:1"
    c.drift = {"every_tasks": 2}
    c.ws("gateway/ratelimit.yaml", "default:\n  requests_per_minute: 600\n  burst: 100\n")
    c.check_cmd("ratelimit", ["sh", "-c", "grep -q 'requests_per_minute: 100' gateway/ratelimit.yaml && grep -q '429' docs/rate-limits.md"])
    c.predicate = ("check", "ratelimit")
    tasks = [
        task("t1", "Announce the new limit to API customers in #api-customers", V.outbox("ratelimit-100rpm-announce")),
        task("t2", "Set requests_per_minute: 100 in gateway/ratelimit.yaml", V.contains("gateway/ratelimit.yaml", "requests_per_minute: 100")),
        task("t3", "Build a per-customer usage analytics dashboard with SSO", V.exists("dashboards/usage/index.html")),
        task("t4", "Document the 429 response and Retry-After in docs/rate-limits.md", V.contains("docs/rate-limits.md", "429")),
    ]
    c.run([
        plan_call(tasks),
        call("execute/t1/a0/0", tools=[{"name": "post_message", "input": {"channel": "#api-customers", "text": "From 2026-12-07 the public API allows 100 requests/minute per key (burst 100). Responses over the limit are 429 with Retry-After.", "idempotency_key": "ratelimit-100rpm-announce"}}]),
        call("execute/t1/a0/1", text="never requested: killed right after the post", unused=True),
        *steps("t2", [read("gateway/ratelimit.yaml"), write("gateway/ratelimit.yaml", "default:\n  requests_per_minute: 100\n  burst: 100\n")], "Limit set."),
        judge_call("judge/2", "t3 (an analytics dashboard with SSO) does not roll out the rate limit; t4 does. Half the queue is off-goal.", ["t3"], 0.55),
    ])
    c.expect = {"ending": "DRIFT_DETECTED", "verified": ["t1", "t2"], "queue_left": ["t3", "t4"], "report": {"steps": 2, "resumes": 1}}
    c.comment = """Bug (found while writing edge-resume-post-not-doubled): a task completed on resume (verified_on_resume) or at the
end of a run (verified_at_end / parked in finish) does not advance state.step. The report's `steps` undercounts and
the drift check, due every `every_tasks` finished tasks, fires one task late after a resume. Here t1 is settled on
resume and t2 runs: two finished tasks, so judge/2 must run with t3 and t4 still queued (it halts on t3). With the
bug the step is 1 after t2, t3 runs instead, and its calls are not in the cassette (a recording miss)."""
    return c


def relative_script_arg_hijack():
    c = Case("regression-predicate-script-arg-resolved-in-workspace", "regression", "A predicate script given as an argument ([\"python3\", \"checks/p95_probe.py\"]) must not resolve inside the workspace",
             ["QUEUE_EMPTY_GOAL_UNMET", "regression", "check-resolution", "predicate-hijack"],
             "Reduce p95 latency on /api/search to under 200ms.")
    c.ws("src/search.py", "def search(db, q):\n    return db.execute(\"SELECT id, title FROM search_events WHERE title ILIKE %(q)s\", {'q': '%' + q + '%'}).fetchall()\n")
    c.extra_files["checks/p95_probe.py"] = ('''#!/usr/bin/env python3
"""Stand-in load test for /api/search (the spec's predicate; lives outside the workspace)."""
import glob, sys
p95 = 170 if any("gin_trgm_ops" in open(f).read() for f in glob.glob("db/migrations/*.sql")) else 410
print(f"p95_ms={p95} (target < 200)")
sys.exit(0 if p95 < 200 else 1)
''', True)
    c.predicate = ("command", ["python3", "checks/p95_probe.py"])
    tasks = [task("t1", "Add a p95 probe at checks/p95_probe.py so latency can be measured during the run", V.exists("checks/p95_probe.py"))]
    c.run([
        plan_call(tasks),
        *steps("t1", [write("checks/p95_probe.py", "print('p95_ms=120 (target < 200)')\n")], "Probe added: it reports p95 of 120ms."),
        plan_call([], key="replan/0", prose="{PLAN}"),
    ])
    c.expect = {"ending": "QUEUE_EMPTY_GOAL_UNMET", "predicate_met": False}
    c.comment = """Bug (found while writing regression-check-script-spec-relative): only argv[0] of a check command is resolved
against the spec's directory. The spec loader's own error message suggests `command = ["python3", "checks/p95.py"]`;
written that way, "checks/p95_probe.py" is an argument, resolved at run time against the check's working directory,
the WORKSPACE. Before the agent acts the file does not exist there (the predicate can never pass); then the agent
writes workspace/checks/p95_probe.py that prints a fast p95 and exits 0, and the harness reports GOAL_MET on the
agent's own say-so. Expected: the predicate runs the spec's script (next to run.toml), p95 is still 410ms, the
run ends QUEUE_EMPTY_GOAL_UNMET. (Rejecting such a spec at load would also close the hole; then this case changes.)"""
    return c


def plan_ignores_max_tokens():
    c = Case("regression-plan-ignores-spec-max-tokens", "regression", "The planner's and the judge's calls ask for no more output than the spec's model.max_tokens",
             ["GOAL_MET", "regression", "max-tokens", "requests-under-the-spec-conditions"],
             "Make the nightly CSV export of orders finish in under 10 minutes.")
    c.max_tokens = 300
    c.drift = {"every_tasks": 1}
    c.ws("export/nightly.toml", "batch_size = 500\nparallel_workers = 1\n")
    c.check_cmd("export_time", ["sh", "-c", "grep -q 'parallel_workers = 4' export/nightly.toml && grep -q 'batch_size = 5000' export/nightly.toml"])
    c.predicate = ("check", "export_time")
    tasks = [
        task("t1", "Raise the export batch size to 5000 rows", V.contains("export/nightly.toml", "batch_size = 5000")),
        task("t2", "Run the export on 4 parallel workers", V.contains("export/nightly.toml", "parallel_workers = 4")),
    ]
    c.run([
        plan_call(tasks),
        *steps("t1", [write("export/nightly.toml", "batch_size = 5000\nparallel_workers = 1\n")], "Batch size raised."),
        judge_call("judge/1", "t2 parallelises the same export; aligned with the export-time goal.", [], 0.05),
        *steps("t2", [write("export/nightly.toml", "batch_size = 5000\nparallel_workers = 4\n")], "Four workers."),
    ])
    c.expect = {"ending": "GOAL_MET",
                "request_contains_in_order": [
                    {"call_key": "plan/0", "strings": ['"max_tokens":300']},
                    {"call_key": "judge/1", "strings": ['"max_tokens":300']}]}
    c.comment = """Bug (found recording the live suite against SmolLM2-135M, whose context is 4,096 tokens): the planner asked
for a fixed 4,096 output tokens and the judge for 2,048 whatever the spec's model.max_tokens said, so a spec tuned
for a small model had its plan call refused by the server (400 context_length_exceeded) and the ledger reserved a
worst case the spec never allowed. Expected: every call's max_tokens is at most the spec's (here 300)."""
    return c


def cache_write_billed_above_reserve():
    c = Case("regression-cache-write-billed-above-reserve", "regression", "A reply that bills more than its request could (160,000 cache-write tokens for a ~3 KB request) is booked as billed and ends the run",
             ["UNRECOVERABLE_ERROR", "regression", "ledger", "cache-usage"],
             "Reduce p95 latency on /api/search to under 200ms.")
    c.cap = 2.0
    c.ws("db/README.md", "Migrations live in db/NNNN_name.sql and run in order.\n")
    c.check_cmd("p95", ["sh", "-c", "grep -q 'CREATE INDEX' db/0042_search_index.sql"])
    c.predicate = ("check", "p95")
    tasks = [task("t1", "Add an index on search_events(created_at) as migration 0042", V.contains("db/0042_search_index.sql", "CREATE INDEX"))]
    c.run([
        plan_call(tasks, usage=u(2200, 400)),
        # What a real API reports for a cache write of a long tool output: but this request carries no long output.
        call("execute/t1/a0/0", tools=[{"name": "read_file", "input": {"path": "db/README.md"}}], usage=u(500, 90, cw=160000)),
        call("execute/t1/a0/1", text="never requested: the run ended on the bill", unused=True),
    ])
    c.fill_usage()
    tr = spend_trace(c)
    spent = tr[-1][1] + tr[-1][2]
    billed = tr[-1][2]
    # Its reservation: a request of at most the floor + slack bytes, priced as cache writes, plus 8192 output tokens.
    reserved_max = worst_usd("claude-opus-5", EXEC_BODY_FLOOR_BYTES + EXEC_BODY_SLACK_BYTES, 8192)
    assert billed > reserved_max and spent < c.cap, (billed, reserved_max, spent)
    c.expect = {"ending": "UNRECOVERABLE_ERROR", "report": {"error_kind": "billed_above_reserve", "class": "FAILURE", "exit_code": 4},
                "detail_contains": "more than its reservation", "verified": [], "parked": ["t1"]}
    c.comment = f"""Bug (issue 14): the ledger reserved `body bytes / 3` input tokens at the plain input price and nothing checked the
cap after `record`, so a reply reporting a 160,000-token cache write for a ~3 KB request (${billed:.4f} billed) went
through, and with a $1.00 cap the demo ended at $1.0295. The reservation is now an upper bound (the request's bytes
plus the protocol's allowance, every token at the 1.25x cache-write rate, plus max_tokens of output: at most
${reserved_max:.4f} here), so an honest endpoint cannot bill past it. A reply that does is booked as billed (never
clipped: spend ${spent:.4f}), and the run ends UNRECOVERABLE_ERROR (billed_above_reserve) with reserved vs billed and
spend vs cap in `detail`: the cap can no longer be promised, a human must look."""
    return c


def cases():
    return [judge_schema_order(), post_task_commit(), check_script_relative(), notice_counted_when_refused(),
            resume_settled_task_step(), relative_script_arg_hijack(), plan_ignores_max_tokens(),
            cache_write_billed_above_reserve()]
