"""Seeds as an axis from the command line: `--seeds` (or `run.seeds`) runs the cheap stages once per seed, each in its own
folder, and summarizes every number of their reports over the seeds (`llm_nb.stats`, `llm_nb.pipeline.run_seeds`)."""
import json
from conftest import llm_nb_cmd

def test_seeds_run_apart_and_summarize(tmp_path):
    args = ("demo", "--root", tmp_path, "--name", "s", "--stages", "synth,ingest,clean")
    r = llm_nb_cmd(*args, "--seeds", "0,1")
    assert r.returncode == 0, r.stderr
    top = tmp_path/"s"
    assert sorted(p.name for p in top.glob("seed-*")) == ["seed-0", "seed-1"]
    reports = [json.loads((top/f"seed-{k}"/"report.json").read_text()) for k in (0, 1)]
    rows = [rep["stages"]["clean"]["rows_out"] for rep in reports]
    assert rows[0] != rows[1], rows  # the seed reaches the synthetic data, so the rows clean keeps differ
    summary = json.loads((top/"summary.json").read_text())
    assert summary["seeds"] == [0, 1]
    s = summary["scores"]["stages.clean.rows_out"]
    assert (s["mean"], s["n"], s["values"]) == (sum(rows)/2, 2, {"0": rows[0], "1": rows[1]})
    half = 12.706*s["sd"]/2**0.5  # t(0.975, 1 df) * sd / sqrt(2)
    assert abs(s["sd"] - abs(rows[0] - rows[1])/2**0.5) < 1e-9 and abs(s["hi"] - s["mean"] - half) < 1e-2, s
    same = summary["scores"]["stages.synth.records"]  # planted counts do not move with the seed: a zero-width interval
    assert (same["sd"], same["lo"], same["hi"]) == (0.0, same["mean"], same["mean"])
    assert "| `stages.clean.rows_out` |" in (top/"summary.md").read_text()
    assert (top/"summary.png").read_bytes()[:4] == b"\x89PNG"
    assert "seeds: 2 runs ([0, 1])" in r.stdout and f"-> {top/'summary.md'}" in r.stdout
    # the same seeds from the config: every stage of each seed still holds, so nothing runs and the summary is the same
    again = llm_nb_cmd(*args, "--set", "run.seeds=[0, 1]")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipped: code, config, inputs and outputs unchanged") == 6, again.stdout
    assert json.loads((top/"summary.json").read_text())["scores"] == summary["scores"]
