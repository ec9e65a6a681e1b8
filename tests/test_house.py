"""The joins between modules, read from the code (AST): no module imports another's private names (bench/ included),
no import cycle at module level, and a module imports the package's own modules inside a function only where the
list below says why."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = {p.stem: p for p in (ROOT/"llm_nb").glob("*.py") if p.stem not in ("__init__", "_modidx")}
LAZY = {("testing", "pipeline"): "run_until needs the stage order, and the pipeline imports every stage"}

def own_imports(path:Path) -> list[tuple[str, list[str], bool]]:
    "(module of llm_nb, names imported, at module level?) for each import of the package in the file."
    tree, out = ast.parse(path.read_text()), []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or not node.module: continue
        if node.level == 1: mod = node.module
        elif node.module.startswith("llm_nb."): mod = node.module.split(".", 1)[1]
        else: continue
        out.append((mod, [a.name for a in node.names], node in tree.body))
    return out

def test_no_private_names_across_modules():
    files = [*MODULES.values(), *(ROOT/"bench").glob("*.py")]
    bad = [f"{f.relative_to(ROOT)}: {mod}.{n}" for f in files for mod, names, _ in own_imports(f) for n in names
           if n.startswith("_") and mod != f.stem]
    assert bad == [], bad

def test_no_import_cycles_and_lazy_imports_only_where_listed():
    top = {m: {mod for mod, _, at_top in own_imports(p) if at_top and mod in MODULES} for m, p in MODULES.items()}
    def reaches(a, b, seen=()):
        return any(n == b or (n not in seen and reaches(n, b, (*seen, n))) for n in top[a])
    assert [m for m in MODULES if reaches(m, m)] == []
    inner = {(m, mod) for m, p in MODULES.items() for mod, _, at_top in own_imports(p) if not at_top and mod in MODULES}
    assert inner == set(LAZY), inner ^ set(LAZY)
