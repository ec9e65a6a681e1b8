"""Stage caching and lineage through the `llm_nb` command, as a user runs it: a second run with nothing changed runs
nothing; an edited raw file, a new raw file or a changed config section re-runs that stage and what it feeds, each
with its reason printed; `--force` runs all; `llm_nb lineage` reaches the raw files by hash."""
import hashlib, json
from conftest import llm_nb_cmd, random_word_lines

STAGES = "synth,ingest,clean"

def reviews(n:int, seed:int) -> str:
    "`n` JSONL records of random words, as a file's text."
    return "".join(l + "\n" for l in random_word_lines(n, seed))

def setup(tmp_path):
    "A config reading tmp/raw*.jsonl (one file of 40 records), its run folder, and the raw file."
    raw = tmp_path/"raw1.jsonl"
    raw.write_text(reviews(40, 0))
    cfg = tmp_path/"cfg.yaml"
    cfg.write_text(f"run: {{root: {tmp_path/'runs'}, name: r}}\nsynth: {{n_records: 0}}\n"
                   f"ingest:\n  sources:\n    - {{name: raw, path: '{tmp_path}/raw*.jsonl'}}\n")
    return cfg, tmp_path/"runs"/"r", raw

def run(cfg, *extra) -> tuple[str, dict]:
    "`llm_nb run cfg --stages synth,ingest,clean`: (stdout, the summary of report.json)."
    r = llm_nb_cmd("run", cfg, "--stages", STAGES, *extra)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads((cfg.parent/"runs"/"r"/"report.json").read_text())
    return r.stdout, rep["summary"]

def test_second_run_skips_and_changes_rerun_what_they_feed(tmp_path):
    cfg, rdir, raw = setup(tmp_path)
    out, s = run(cfg)
    assert s["stages_run"] == ["synth", "ingest", "clean"] and ": runs:" not in out, out  # a first run is no news
    out, s = run(cfg)  # nothing changed
    assert (s["stages_run"], s["stages_skipped"]) == ([], ["synth", "ingest", "clean"]), out
    assert "clean: skipped: code, config, inputs and outputs unchanged" in out
    raw.write_text(reviews(41, 0))  # one record more in the raw file
    out, s = run(cfg)
    assert s["stages_run"] == ["ingest", "clean"], out
    assert f"ingest: runs: input changed: {raw}" in out and "clean: runs: an earlier stage's outputs changed" in out
    (tmp_path/"raw2.jsonl").write_text(reviews(5, 1))  # a new file where the source looks
    out, s = run(cfg)
    assert s["stages_run"] == ["ingest", "clean"] and "ingest: runs: the files its sources match changed" in out
    out, s = run(cfg, "--set", "clean.min_chars=30")  # a clean setting: clean only
    assert s["stages_run"] == ["clean"] and "clean: runs: config changed: clean" in out
    (rdir/"clean"/"stats.json").write_text("{}")  # an output edited by hand
    out, s = run(cfg, "--set", "clean.min_chars=30")
    assert s["stages_run"] == ["clean"] and "clean: runs: output changed: clean/stats.json" in out
    out, s = run(cfg, "--set", "clean.min_chars=30", "--force")
    assert s["stages_run"] == ["synth", "ingest", "clean"] and out.count(": runs: --force") == 3

def test_lineage_reaches_raw_files_by_hash(tmp_path):
    cfg, rdir, raw = setup(tmp_path)
    run(cfg)
    r = llm_nb_cmd("lineage", rdir/"clean"/"clean.parquet")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("clean/clean.parquet  sha256 ")
    assert lines[1].startswith("  <- clean      read ingest (") and lines[2].startswith("  <- ingest     read raw input")
    assert f"  raw: {raw}  sha256 {hashlib.sha256(raw.read_bytes()).hexdigest()[:16]}" in r.stdout
    (rdir/"clean"/"clean.parquet").write_bytes(b"not the recorded bytes")
    assert "(CHANGED since it was recorded)" in llm_nb_cmd("lineage", rdir/"clean"/"clean.parquet").stdout
    r = llm_nb_cmd("lineage", raw)  # not in a run folder
    assert r.returncode == 2 and r.stderr.startswith("llm_nb: error: lineage: ") and "not inside a run folder" in r.stderr
