"""How literate the notebooks read, measured (information for tools/test.sh, not a gate).

    python tools/nb_metrics.py [--json]

Measures, over nbs/*.ipynb and the exported modules:
- definitions per `#| export` cell (top-level def/class; imports and constants don't count), and the share of
  export cells holding more than two;
- the share of export cells with definitions that have a demo or test under them: a code cell that is not
  exported comes before the next export cell;
- the most stage runners (`run_*`, `serve_exported`) one non-exported notebook cell imports;
- `;` statement separators and lines over 120 characters in llm_nb/*.py, and the longest function there;
- hand-made HTTP stand-in servers (classes of BaseHTTPRequestHandler / ThreadingHTTPServer handlers,
  asyncio.start_server) in nbs/, bench/ and tests/;
- `show_doc` calls in the notebooks.
"""
from __future__ import annotations
import argparse, ast, io, json, re, tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPORT = re.compile(r"^#\|\s*export", re.M)
RUNNER_IMPORT = re.compile(r"\b(run_[a-z_]+|serve_exported)\b")
STAND_IN = re.compile(r"class \w+\((?:http\.server\.)?BaseHTTPRequestHandler\)|asyncio\.start_server\(")


def code_cells(nb_path:Path) -> list[str]:
    "Sources of the code cells of a notebook."
    nb = json.loads(nb_path.read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


def n_definitions(src:str) -> int:
    "Top-level functions and classes in a cell."
    try: tree = ast.parse(src)
    except SyntaxError: return 0
    return sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body)


def runners_imported(src:str) -> int:
    "Distinct stage runners a cell imports from llm_nb."
    names = set()
    for m in re.finditer(r"from llm_nb\.\w+ import ([^\n]+)", src): names |= set(RUNNER_IMPORT.findall(m.group(1)))
    return len(names)


def notebook_measures(nbs:list[Path]) -> dict:
    "Per-notebook counts of export cells, definitions, demos and imported runners."
    per = {}
    for nb in nbs:
        cells = code_cells(nb)
        exported = [i for i, c in enumerate(cells) if EXPORT.search(c)]
        with_defs = [i for i in exported if n_definitions(cells[i])]
        demoed = 0
        for i in with_defs:
            nxt = next((j for j in exported if j > i), len(cells))
            demoed += any(cells[j].strip() for j in range(i + 1, nxt))
        per[nb.name] = dict(export_cells=len(with_defs), over_two=sum(n_definitions(cells[i]) > 2 for i in with_defs),
                            max_defs=max((n_definitions(cells[i]) for i in with_defs), default=0), demoed=demoed,
                            max_runners=max((runners_imported(c) for c in cells if not EXPORT.search(c)), default=0),
                            show_doc=sum(c.count("show_doc(") for c in cells))
    return per


def _without_all(lines:list[str]) -> list[str]:
    "`lines` without nbdev's generated `__all__` (its first line to the one that closes the list)."
    out, inside = [], False
    for line in lines:
        inside = inside or line.startswith("__all__")
        if not inside: out.append(line)
        elif line.rstrip().endswith("]"): inside = False
    return out


def module_measures(py_files:list[Path]) -> dict:
    "`;` separators, lines over 120 characters and the longest function in the modules."
    semis, long_lines, longest = 0, 0, ("", 0)
    for f in py_files:
        text = f.read_text(encoding="utf-8")
        toks = tokenize.generate_tokens(io.StringIO(text).readline)
        semis += sum(t.type == tokenize.OP and t.string == ";" for t in toks)
        # nbdev wraps its generated `__all__` at 120 characters without counting `__all__ = `: not ours to fix
        long_lines += sum(len(line) > 120 for line in _without_all(text.splitlines()))
        for n in ast.walk(ast.parse(text)):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > longest[1]:
                longest = (f"{f.stem}.{n.name}", n.end_lineno - n.lineno + 1)
    return dict(semicolons=semis, lines_over_120=long_lines, longest_function=longest[0], longest_lines=longest[1])


def stand_ins(folders:list[Path]) -> list[str]:
    "Files (and counts) that define their own HTTP stand-in server."
    out = []
    for d in folders:
        for f in sorted(d.glob("*.py")) + sorted(d.glob("*.ipynb")):
            text = "\n".join(code_cells(f)) if f.suffix == ".ipynb" else f.read_text(encoding="utf-8")
            if n := len(STAND_IN.findall(text)): out.append(f"{f.relative_to(ROOT)} ({n})")
    return out


def measure(root:Path=ROOT) -> dict:
    "All the measures, as one dict."
    nbs = sorted(p for p in (root/"nbs").glob("*.ipynb") if not p.name.startswith("_"))
    per = notebook_measures(nbs)
    tot = lambda k: sum(v[k] for v in per.values())
    mods = module_measures(sorted(p for p in (root/"llm_nb").glob("*.py") if p.name != "_modidx.py"))
    servers = stand_ins([root/d for d in ("nbs", "bench", "tests")])  # llm_nb/ is exported from nbs/
    return dict(export_cells=tot("export_cells"), export_cells_over_two_defs=tot("over_two"),
                max_defs_in_one_cell=max(v["max_defs"] for v in per.values()),
                export_cells_with_demo=tot("demoed"),
                max_runners_in_one_cell=max(v["max_runners"] for v in per.values()),
                show_doc_calls=tot("show_doc"), http_stand_ins=len(servers), http_stand_in_files=servers,
                **mods, per_notebook=per)


def report(m:dict) -> str:
    "The measures as a short text table."
    n = m["export_cells"]
    rows = [("export cells with definitions", n),
            ("  ... holding more than two", f"{m['export_cells_over_two_defs']} ({m['export_cells_over_two_defs']/n:.0%})"),
            ("  ... most definitions in one", m["max_defs_in_one_cell"]),
            ("  ... with a demo/test under them", f"{m['export_cells_with_demo']} ({m['export_cells_with_demo']/n:.0%})"),
            ("most stage runners imported by one cell", m["max_runners_in_one_cell"]),
            ("`;` separators in llm_nb/*.py", m["semicolons"]),
            ("lines over 120 chars in llm_nb/*.py", m["lines_over_120"]),
            ("longest function", f"{m['longest_function']} ({m['longest_lines']} lines)"),
            ("HTTP stand-in servers", f"{m['http_stand_ins']}: {', '.join(m['http_stand_in_files'])}"),
            ("show_doc calls", m["show_doc_calls"])]
    return "\n".join(f"{k:<42} {v}" for k, v in rows)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true", help="print every measure, per notebook too, as JSON")
    a = ap.parse_args()
    m = measure()
    print(json.dumps(m, indent=2) if a.json else report(m))
