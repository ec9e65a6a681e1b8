"""Benchmark: the clean stage on datatrove with 1 Slurm task vs 2 (and the one-process DuckDB path), same input, one run.

Input: the review corpus online_shopping_10_cats.csv ×SCALE with perturbations (bench/_data.py), as an ingest part;
the default clean config (quality filters, exact and near dedup on) with 50 sensitive words. Three runs on copies of
it: `clean.engine: duckdb` (one process, `--threads` DuckDB threads), and `clean.engine: datatrove` on the
Slurm of tools/slurm_local.sh (two nodes on this one machine) with `clean.tasks` 1 and 2 (1 DuckDB thread per task,
so 2 tasks use both cores of this machine). Prints each run's wall time (submission to outputs, Slurm's scheduling
included), each step's span (first task's start to last task's end, from datatrove's task logs), the 1-task / 2-task
ratio, and whether the three outputs are identical (llm_nb.clean_datatrove.output_diff). `--distinct` makes nearly
every row distinct (bench/_data.py), so that near dedup sees them all. Starts Slurm if it is not up (root), and stops
it.

Target: the outputs of 1 task and of 2 tasks are identical to the one-process run's (one line each; exit status 1
when either differs). The speed ratios are information: no target is stated for them.
`--smoke` runs the three on the first 500 reviews x2 and judges nothing (tools/bench_smoke.sh).

    python bench/clean_slurm.py [--scale 4] [--distinct] [--threads 2] [--rows N] [--data CSV] [--smoke]

CSV defaults to ../shared/data/online_shopping_10_cats.csv; when it is not there, pass --data.
Exit status 1 when a target is missed, 2 when the corpus is missing.
"""
import argparse, json, os, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_data_arg, add_rows_arg, add_smoke_arg, corpus, make_input_in_child, sensitive_words

SLURM_LOCAL = ["bash", str(Path(__file__).resolve().parents[1]/"tools"/"slurm_local.sh")]


def slurm_up() -> bool:
    "Start the one-machine Slurm unless it runs; set SLURM_CONF here; True when this call started it."
    was_up = subprocess.run(SLURM_LOCAL + ["status"], capture_output=True).returncode == 0
    r = subprocess.run(SLURM_LOCAL + ["start"], capture_output=True, text=True, check=True)
    os.environ["SLURM_CONF"] = r.stdout.strip().splitlines()[-1].split("=", 1)[1]
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ['PATH']}"
    return not was_up


def step_spans(work:Path) -> dict:
    "Seconds from the first task's first log line to the last task's last, per step, from datatrove's task logs."
    from datetime import datetime
    stamp = lambda line: datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f").timestamp()
    spans = {}
    for step in sorted((work/"logs").iterdir()):
        lines = [[l for l in log.splitlines() if l[:4].isdigit() and l[4:5] == "-"]  # the timestamped lines
                 for log in map(Path.read_text, (step/"logs").glob("task_*.log"))]
        spans[step.name] = max(stamp(l[-1]) for l in lines) - min(stamp(l[0]) for l in lines)
    return spans


def timed_clean(run) -> float:
    "Wall seconds of run_clean on `run`."
    from llm_nb.clean_datatrove import run_clean
    t = time.perf_counter()
    run_clean(run.cfg, run)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2, help="DuckDB threads of the one-process run")
    ap.add_argument("--distinct", action="store_true", help="copies made distinct: nearly every row reaches near dedup")
    add_data_arg(ap); add_rows_arg(ap); add_smoke_arg(ap, "--rows 500 --scale 2")
    a = ap.parse_args()
    if a.smoke: a.rows, a.scale = 500, 2
    csv = corpus(a.data, "clean_slurm")
    from llm_nb.config import load_config
    from llm_nb.run import Run
    from llm_nb.clean_datatrove import clean_twin, output_diff
    started = slurm_up()
    try:
        with tempfile.TemporaryDirectory() as root:
            info = make_input_in_child(Path(root)/"base"/"ingest"/"parts"/"input.parquet", a.scale, csv, a.distinct,
                                       a.rows)
            base = Run.create(load_config(None, **{"run.root": root, "run.name": "base",
                                                   "clean.sensitive_words": sensitive_words(50)}))
            slurm = {"clean.engine": "datatrove", "clean.executor": "slurm", "clean.threads": 1,
                     "launch.slurm.time": "01:00:00"}
            runs = {"duckdb": clean_twin(base, "duckdb", **{"clean.threads": a.threads}),
                    "slurm_1": clean_twin(base, "slurm_1", **slurm, **{"clean.tasks": 1}),
                    "slurm_2": clean_twin(base, "slurm_2", **slurm, **{"clean.tasks": 2})}
            wall = {name: timed_clean(run) for name, run in runs.items()}
            diffs = {name: output_diff(runs["duckdb"].dir/"clean", run.dir/"clean") for name, run in runs.items()}
            stats = json.loads((runs["slurm_2"].dir/"clean"/"stats.json").read_text())
            spans = {name: step_spans(runs[name].dir/"clean"/"datatrove") for name in ("slurm_1", "slurm_2")}
    finally:
        if started: subprocess.run(SLURM_LOCAL + ["stop"], capture_output=True)
    print(f"input: {info['rows']:,} rows, {info['text_bytes']/2**20:,.0f} MiB of text; "
          f"out {stats['counts']['rows_out']:,}; rejected {stats['rejected']}")
    for name in runs:
        steps = "; ".join(f"{k} {v:.1f} s" for k, v in spans.get(name, {}).items())
        tasks = f" (steps: {steps}; in tasks {sum(spans[name].values()):.1f} s)" if name in spans else ""
        print(f"{name:>8}: {wall[name]:6.1f} s{tasks}")
    print(f"slurm 1 task / 2 tasks: {wall['slurm_1'] / wall['slurm_2']:.2f}x; "
          f"slurm 2 tasks / duckdb one process: {wall['slurm_2'] / wall['duckdb']:.2f}x")
    print(f"outputs identical to the one-process run: {all(not d for d in diffs.values())} {diffs}")
    t = Targets("clean_slurm", a.smoke)
    for name, tasks in (("slurm_1", "1 Slurm task"), ("slurm_2", "2 Slurm tasks")):
        t.check(f"output of {tasks} identical to the one-process run's", not diffs[name], "==", True)
    return t.finish()


if __name__ == "__main__": sys.exit(main())
