#!/usr/bin/env python3
# summarize and render exist and build_report is just render(account, summarize(rows));
# the output is byte for byte what the original returned (pinned here); the tests pass.
import ast, subprocess, sys
sys.dont_write_bytecode = True  # leave no __pycache__ in the workspace
sys.path.insert(0, "src")
bad = []
tree = ast.parse(open("src/reports/monthly.py").read())
funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
for name in ("summarize", "render", "build_report"):
    if name not in funcs:
        bad.append(f"no top-level {name}()")
if "build_report" in funcs:
    body = [s for s in funcs["build_report"].body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    calls = {n.func.id for n in ast.walk(funcs["build_report"]) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    if len(body) > 2 or not {"summarize", "render"} <= calls:
        bad.append("build_report must only call summarize and render")
if not bad:
    from reports.monthly import build_report, summarize
    rows = [("2026-10-01", "compute", 10, 999), ("2026-10-09", "egress", 7, 999), ("2026-10-09", "compute", 1, 1)]
    want = ("Usage report for zed\n\nPeriod: 2026-10-01 to 2026-10-09 (2 active days)\n\n"
            "  compute            11 units  $    10.00\n  egress              7 units  $     9.99\n\n"
            "Total: $19.99\nLargest cost: compute\n")
    got = build_report("zed", rows)
    if got != want:
        bad.append(f"output changed:\n{got}")
    summary = summarize(rows)
    if not isinstance(summary, dict) or summary.get("total_cents") != 1999:
        bad.append("summarize(rows) must return the totals (a dict with total_cents)")
t = subprocess.run([sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests", "-q"], capture_output=True, text=True)
if t.returncode != 0:
    bad.append("tests fail:\n" + t.stderr[-1500:])
print("\n".join(bad) or "split, same output, tests pass")
sys.exit(1 if bad else 0)
