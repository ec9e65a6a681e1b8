"""Run notebooks top to bottom in a real Jupyter kernel, as JupyterLab's Run All does (nbdev_test does not:
it runs cells in-process, without the kernel's event loop, and skips `#| gpu` cells that Jupyter would run).

    python tools/run_nbs.py [NB.ipynb ...] [--workers 2] [--timeout 1800] [--save DIR]
    python tools/run_nbs.py --skips DIR   # the skip lines of the executed notebooks saved in DIR, "NB: skipped: ..."

With no notebook given, every nbs/*.ipynb except those starting with `_`. Prints one line per notebook and, for a
failure, the failing cell's first lines and the error; under a notebook that ran, the cells that stepped aside, one
`skipped: WHAT ...` line each as the cell printed it (`llm_nb.testing.have` for a missing component, `need_gpu` for
a `#| gpu` cell without a GPU): a skip is counted as one, never as a pass. The last line is
`kernel: N of M notebooks ran, K cells skipped`.
With --save, each executed notebook (outputs and widget state) is written to DIR, for the docs (tools/docs.py).
A notebook's map (its first cells) says "**Run All: about N s**" (or min): each line shows it beside the time
measured, and the notebooks whose measured time is more than twice or less than half of it are listed at the end,
to be updated (information, not a failure: times differ with what runs beside a notebook).
Each kernel gets OMP_NUM_THREADS = cores / workers, unless it is set: side by side, kernels must share the cores.
Exit status 0 only when all ran.
"""
from __future__ import annotations
import argparse, os, re, sys, time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CELL_LINES = 6  # lines of a failing cell shown in the report
ERROR_CHARS = 3000  # characters of a failing cell's error shown in the report
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colour codes in IPython tracebacks
SKIPPED = "skipped: "  # how a cell that stepped aside starts its line (llm_nb.testing.SKIPPED)


def skip_lines(nb) -> list[str]:
    "The distinct `skipped: ...` lines an executed notebook's cells printed (stdout), in order."
    lines = [l.strip() for cell in nb["cells"] for o in cell.get("outputs", []) if o.get("output_type") == "stream"
             for l in "".join(o.get("text", [])).splitlines() if l.startswith(SKIPPED)]
    return list(dict.fromkeys(lines))


def saved_skips(folder) -> list[str]:
    "`NB: skipped: ...` for each skip line of the executed notebooks in `folder` (what tools/test.sh counts)."
    import json
    return [f"{p.name}: {l}" for p in sorted(Path(folder).glob("*.ipynb")) for l in skip_lines(json.loads(p.read_text()))]


def run_one(path:str, timeout:int, save:str="") -> tuple[str, bool, float, str, list[str]]:
    "Execute one notebook in a fresh kernel started in its folder: (name, ok, seconds, failure report, skip lines)."
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError
    p, t0 = Path(path), time.time()
    nb = nbformat.read(p, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(p.parent)}},
                            store_widget_state=True)
    try:
        client.execute()
        if save: nbformat.write(nb, Path(save)/p.name)
    except (CellExecutionError, CellTimeoutError) as e:
        return p.name, False, time.time() - t0, _failure(nb, e), skip_lines(nb)
    except Exception as e:  # the kernel died or could not start
        return p.name, False, time.time() - t0, f"{type(e).__name__}: {e}"[:ERROR_CHARS], []
    return p.name, True, time.time() - t0, "", skip_lines(nb)


MAP_TIME = re.compile(r"\*\*Run All: about (\d+) (s|min)\*\*")  # in a notebook's map

def stated_seconds(path) -> int|None:
    "The seconds a notebook's map says Run All takes (its first 4 cells), or None where it has no map."
    import json
    for cell in json.loads(Path(path).read_text())["cells"][:4]:
        m = MAP_TIME.search("".join(cell["source"]))
        if m: return int(m[1]) * (60 if m[2] == "min" else 1)
    return None


def _failure(nb, err) -> str:
    "The first cell with an error output: its first lines and its traceback (else the exception's text)."
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            if o.get("output_type") != "error": continue
            head = "\n".join(cell.source.splitlines()[:CELL_LINES])
            trace = ANSI.sub("", "\n".join(o.get("traceback", [])))
            return f"cell {i}:\n{head}\n---\n{trace[-ERROR_CHARS:]}\n{o.get('ename')}: {o.get('evalue')}"
    return ANSI.sub("", str(err))[-ERROR_CHARS:]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds one cell may run")
    ap.add_argument("--save", default="", help="folder for the executed notebooks (the docs are built from them)")
    ap.add_argument("--skips", metavar="DIR", help="print the skip lines of the executed notebooks in DIR, run nothing")
    a = ap.parse_args(argv)
    if a.skips:
        for line in saved_skips(a.skips): print(line)
        return 0
    nbs = a.notebooks or sorted(str(p) for p in (ROOT/"nbs").glob("*.ipynb") if not p.name.startswith("_"))
    nbs = sorted(nbs, key=lambda p: -Path(p).stat().st_size)  # biggest first: the pool finishes sooner
    # each kernel gets its share of the cores (unless OMP_NUM_THREADS is set): kernels that train side by side with
    # every core each oversubscribe the CPU, and OpenMP's spinning threads then slow each step far past the share
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // a.workers)))
    ok, off, skipped = 0, [], 0
    if a.save: Path(a.save).mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(a.workers) as pool:
        runs = pool.map(run_one, nbs, [a.timeout] * len(nbs), [a.save] * len(nbs))  # in the order of `nbs`
        for path, (name, passed, secs, report, skips) in zip(nbs, runs):
            ok += passed
            skipped += len(skips)
            stated = stated_seconds(path)
            said = f"; its map says about {stated} s" if stated else ""
            print(f"{'ok' if passed else 'FAILED'}: {name} in a real kernel ({secs:.0f}s{said})", flush=True)
            if stated and not stated / 2 <= secs <= stated * 2: off.append(f"{name} ({secs:.0f} s, says {stated} s)")
            if report: print(report, flush=True)
            for line in skips: print(f"  {line}", flush=True)
    if off: print(f"maps whose Run All time is off by more than 2x (update them): {', '.join(off)}")
    print(f"kernel: {ok} of {len(nbs)} notebooks ran, {skipped} cells skipped")
    return 0 if ok == len(nbs) else 1


if __name__ == "__main__": sys.exit(main())
