"""The joins between modules, read from the code (AST): no module imports another's private names (bench/ included),
no import cycle at module level, each module imported once at a module's top, and a module imports the package's own
modules inside a function only where the list below says why. And every numbered notebook opens with its map: what
Run All does and how long it takes here, where it writes, how to use the result, with links to headings that exist.
And one statement a line in the package (no semicolons)."""
import ast, json, re, sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT/"tools"))
from run_nbs import stated_seconds  # the map's time, as the notebook runner reads it
MODULES = {p.stem: p for p in (ROOT/"llm_nb").glob("*.py") if p.stem not in ("__init__", "_modidx")}
CLI_LAZY = "each subcommand imports what it uses: `llm_nb check`, `env`, `lineage` and `--help` start without torch"
LAZY = {("testing", "pipeline"): "run_until needs the stage order, and the pipeline imports every stage",
        ("config", "model"): "check_paths reads a GGUF base's header with the model stage's reader, only when "
                             "model.name_or_path is a .gguf file: `llm_nb check` of any other config starts without torch",
        **{("cli", m): CLI_LAZY for m in ("doctor", "family_matrix", "load_test", "launch", "model", "monitor", "pipeline", "serve")}}

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

def test_each_module_imported_once_at_the_top():
    "A module's top-level imports name each of the package's modules once (a name joins that line, not a second one)."
    twice = [f"{m}: from .{mod} import ... {n} times" for m, p in MODULES.items()
             for mod, n in Counter(mod for mod, _, at_top in own_imports(p) if at_top).items() if n > 1]
    assert twice == [], twice

def heading_ids(cells:list) -> set[str]:
    "The anchors the docs site (pandoc) gives the notebook's markdown headings: lower case, punctuation dropped."
    heads = [l.lstrip("#").strip() for c in cells if c["cell_type"] == "markdown"
             for l in "".join(c["source"]).splitlines() if l.startswith("#")]
    return {re.sub(r"[^\w\s-]", "", h.lower()).strip().replace(" ", "-") for h in heads}

def test_every_numbered_notebook_opens_with_a_map():
    bad = []
    for nb in sorted((ROOT/"nbs").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells[:4])
        if stated_seconds(nb) is None or "**Use it**" not in text and nb.stem != "00_quickstart":
            bad.append(f"{nb.name}: no map (\"**Run All: about N s**\" ... \"**Use it**\") in its first cells")
        missing = set(re.findall(r"\]\(#([^)]+)\)", text)) - heading_ids(cells)
        if missing: bad.append(f"{nb.name}: its map links to {sorted(missing)}, which no heading is")
    assert bad == [], "\n".join(bad)

def test_no_code_cell_over_80_lines():
    "Every notebook's code cells read at a glance: 80 lines at most (a longer one splits: prose, a small export, a demo)."
    long = [f"{nb.name}: cell {c.get('id')} has {len(c['source'])} lines" for nb in sorted((ROOT/"nbs").glob("*.ipynb"))
            for c in json.loads(nb.read_text())["cells"] if c["cell_type"] == "code" and len(c["source"]) > 80]
    assert long == [], "\n".join(long)

def test_no_statements_joined_by_semicolons():
    "One statement a line in the package: `a(); b()` hides the second from a reader skimming the left edge."
    import io, tokenize
    joined = [f"{p.relative_to(ROOT)}:{t.start[0]}" for p in sorted(MODULES.values())
              for t in tokenize.generate_tokens(io.StringIO(p.read_text()).readline)
              if t.type == tokenize.OP and t.string == ";"]
    assert joined == [], "\n".join(joined)
