#!/usr/bin/env bash
# The Python scripts of the bench and of these tests compile, and none defines a top-level name
# twice: a second `def wait_settled` in bench/bench.py silently replaced the first, and
# `make bench` stopped at its store row with a TypeError (from ec1f8a8 until the thirty-first session).
source "$(dirname "$0")/lib.sh"

root=$(cd "$(dirname "$0")/.." && pwd)
out=$(python3 - "$root"/bench/*.py "$root"/e2e/*.py <<'PY' 2>&1
import ast, collections, sys
bad = []
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        source = f.read()
    try:
        tree = ast.parse(source, path)
        compile(source, path, "exec")
    except SyntaxError as e:
        bad.append(f"{path}:{e.lineno}: does not compile: {e.msg}")
        continue
    seen = collections.defaultdict(list)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            seen[node.name].append(node.lineno)
    bad += [f"{path}:{lines[-1]}: {name} defined again (first at line {lines[0]}): the later one replaces it"
            for name, lines in seen.items() if len(lines) > 1]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
) || fail "bench or e2e scripts: $out"
log "bench and e2e scripts compile, no top-level name defined twice ($(ls "$root"/bench/*.py "$root"/e2e/*.py | wc -l) files)"

