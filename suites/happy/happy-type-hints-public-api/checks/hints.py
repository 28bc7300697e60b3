#!/usr/bin/env python3
# Each public top-level function of src/gateway/bucket.py annotates every
# parameter and its return, and the returns say what the functions return
# (pinned here); the module's tests still pass.
import ast, subprocess, sys
RETURNS = {"parse_rate": {"tuple[int, float]", "Tuple[int, float]"},
           "refill": {"float"},
           "try_acquire": {"bool"},
           "retry_after": {"float | None", "Optional[float]", "Union[float, None]"}}
tree = ast.parse(open("src/gateway/bucket.py").read())
funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")}
bad = []
if set(funcs) != set(RETURNS):
    bad.append(f"public functions changed: {sorted(funcs)}")
for name, f in funcs.items():
    args = f.args.posonlyargs + f.args.args + f.args.kwonlyargs
    bad += [f"{name}: parameter {a.arg} has no type" for a in args if a.annotation is None]
    ret = ast.unparse(f.returns).replace("typing.", "") if f.returns else None
    if ret not in RETURNS.get(name, set()):
        bad.append(f"{name}: return annotation {ret!r}, want one of {sorted(RETURNS.get(name, []))}")
t = subprocess.run([sys.executable, "-B", "-m", "unittest", "discover", "-s", "tests", "-q"], capture_output=True, text=True)
if t.returncode != 0:
    bad.append("tests fail:\n" + t.stderr[-1500:])
print("\n".join(bad) or "public API typed, tests pass")
sys.exit(1 if bad else 0)
