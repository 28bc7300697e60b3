#!/usr/bin/env python3
"""A tiny F401: imported names never used in the module."""
import ast, pathlib, sys
bad = []
for p in sorted(pathlib.Path("src").glob("*.py")):
    tree = ast.parse(p.read_text())
    imported = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                imported[(a.asname or a.name).split(".")[0]] = n.lineno
        elif isinstance(n, ast.ImportFrom):
            for a in n.names:
                imported[a.asname or a.name] = n.lineno
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    bad += [f"{p}:{line}: F401 {name} imported but unused" for name, line in imported.items() if name not in used]
print("\n".join(bad) or "no unused imports")
sys.exit(1 if bad else 0)
