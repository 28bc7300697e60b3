#!/usr/bin/env python3
"""Each query named on the command line, run against an in-memory database
with hostile and awkward inputs, and read as code: the SQL handed to
execute() must be a constant string with the value passed as a parameter."""
import ast, sqlite3, sys
sys.dont_write_bytecode = True
sys.path.insert(0, "src")
import support_queries as q  # noqa: E402

db = sqlite3.connect(":memory:")
db.executescript("""
CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT, city TEXT);
INSERT INTO customers VALUES (1, 'Ana', 'Zürich'), (2, 'Bo', 'O''Fallon'), (3, 'Cy', 'Zürich'), (4, 'Di', 'Oslo');
CREATE TABLE order_lines (order_id INTEGER, qty INTEGER, unit_cents INTEGER);
INSERT INTO order_lines VALUES (7, 2, 1250), (7, 1, 499), (8, 5, 100);
""")
tree = ast.parse(open("src/support_queries.py").read())
funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}

def constant_sql(name):
    """execute()'s first argument is a name bound once to a plain string, or the string itself."""
    f = funcs[name]
    consts = {a.targets[0].id for a in ast.walk(f) if isinstance(a, ast.Assign)
              and isinstance(a.value, ast.Constant) and isinstance(a.value.value, str)}
    calls = [c for c in ast.walk(f) if isinstance(c, ast.Call) and getattr(c.func, "attr", "") == "execute"]
    return bool(calls) and all(len(c.args) == 2 and ((isinstance(c.args[0], ast.Name) and c.args[0].id in consts)
               or isinstance(c.args[0], ast.Constant)) for c in calls)

def run(fn, *a):
    try:
        return fn(db, *a)
    except Exception as e:  # a syntax error from a quote is a failure, not a crash of the check
        return f"raised {type(e).__name__}: {e}"

bad = []
for name in sys.argv[1:]:
    if not constant_sql(name):
        bad.append(f"{name}: execute() must get a constant SQL string and the value as a parameter")
    if name == "customers_in_city":
        for city, want in (("Zürich", [(1, "Ana"), (3, "Cy")]), ("O'Fallon", [(2, "Bo")]), ("x' OR '1'='1", [])):
            got = run(q.customers_in_city, city)
            if got != want:
                bad.append(f"customers_in_city({city!r}): expected {want}, got {got}")
    if name == "order_total_cents":
        for oid, want in ((7, 2999), (8, 500), (9, 0), ("7 OR 1=1", 0)):
            got = run(q.order_total_cents, oid)
            if got != want:
                bad.append(f"order_total_cents({oid!r}): expected {want}, got {got}")
print("\n".join(bad) or "parameterized: " + ", ".join(sys.argv[1:]))
sys.exit(1 if bad else 0)
