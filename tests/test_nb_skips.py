"""Notebook skips are counted as skips, with their reason, never as passes: a `#| gpu` cell run in a real kernel
(tools/run_nbs.py) on a machine without a GPU prints one `skipped:` line through llm_nb.testing.need_gpu, under CI
too (it does not raise there: no CI machine has a GPU), and `tools/run_nbs.py --skips` (what tools/test.sh counts in
its closing line) lists it under the notebook's name."""
import json, os, subprocess, sys
from pathlib import Path
import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT/"tools"))
from run_nbs import SKIPPED, saved_skips, skip_lines
from llm_nb.testing import SKIPPED as PRINTED

GPU_CELL = """#| gpu
from llm_nb.testing import need_gpu
if need_gpu("a tiny GPU check"):
    import torch
    print("ran on", torch.cuda.get_device_name())"""

def notebook(path:Path, *cells:str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nbformat.write(nb, path)
    return path

def test_the_counter_reads_what_the_cells_print():
    assert SKIPPED == PRINTED == "skipped: "
    out = lambda text, kind="stream": {"output_type": kind, "name": "stdout", "text": text}
    nb = {"cells": [{"outputs": [out(["skipped: vLLM is not installed here (x): the cells that need it step aside\n"])]},
                    {"outputs": [out("clean: skipped: code, config, inputs and outputs unchanged\n")]},  # not a cell's skip
                    {"outputs": [out("skipped: vLLM is not installed here (x): the cells that need it step aside\n")]},
                    {"outputs": [out("a\nskipped: a GPU check: no CUDA GPU here\n")]},
                    {"outputs": [{"output_type": "error", "ename": "E", "evalue": "skipped: no", "traceback": []}]}]}
    assert skip_lines(nb) == ["skipped: vLLM is not installed here (x): the cells that need it step aside",
                              "skipped: a GPU check: no CUDA GPU here"]  # one per notebook and reason

def test_a_gpu_cell_in_a_real_kernel_is_a_counted_skip(tmp_path):
    nb = notebook(tmp_path/"tiny_gpu.ipynb", 'print("hello")', GPU_CELL)
    saved = tmp_path/"executed"
    env = dict(os.environ, CI="true")  # under CI: still a skip, not a failure
    env.pop("LLM_NB_GPU", None)
    r = subprocess.run([sys.executable, str(ROOT/"tools"/"run_nbs.py"), str(nb), "--workers", "1", "--save", str(saved)],
                       capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("ok: tiny_gpu.ipynb in a real kernel"), r.stdout
    listed = subprocess.run([sys.executable, str(ROOT/"tools"/"run_nbs.py"), "--skips", str(saved)],
                            capture_output=True, text=True, cwd=ROOT).stdout.splitlines()
    ran = json.loads((saved/"tiny_gpu.ipynb").read_text())["cells"][1]["outputs"]
    import torch
    if torch.cuda.is_available():  # a GPU machine: the cell ran, and nothing is counted as skipped
        assert "ran on" in "".join(ran[0]["text"]) and listed == [], (ran, listed)
        return
    line = "skipped: a tiny GPU check: no CUDA GPU here (tools/gpu_check.sh runs the `#| gpu` cells on one): the cell steps aside"
    assert f"  {line}" in r.stdout.splitlines() and "kernel: 1 of 1 notebooks ran, 1 cells skipped" in r.stdout, r.stdout
    assert listed == [f"tiny_gpu.ipynb: {line}"] == saved_skips(saved), listed
