"The `llm_nb` command as a user types it: bad configs give one line per problem naming the key, and exit 2."
import json, os
from conftest import llm_nb_cmd

def write(tmp_path, text):
    p = tmp_path/"cfg.yaml"; p.write_text(text); return p

def test_unknown_key_named_with_line_and_suggestion(tmp_path):
    p = write(tmp_path, "run:\n  name: x\ntrain:\n  max_step: 10\n")
    r = llm_nb_cmd("check", p)
    assert r.returncode == 2
    assert r.stderr.strip() == f"llm_nb: error: {p}:4: unknown key 'train.max_step' (did you mean 'max_steps'?)"

def test_wrong_type_named(tmp_path):
    p = write(tmp_path, "lora:\n  r: eight\n")
    r = llm_nb_cmd("check", p)
    assert r.returncode == 2
    line, = r.stderr.strip().splitlines()
    assert line.startswith(f"llm_nb: error: {p}:2: lora.r: ") and "'eight'" in line

def test_missing_input_path(tmp_path):
    p = write(tmp_path, f"synth: {{n_records: 0}}\ningest:\n  sources:\n    - path: '{tmp_path}/nothing/*.jsonl'\n")
    r = llm_nb_cmd("check", p)
    assert r.returncode == 2 and "ingest.sources[0].path: no file matches" in r.stderr

def test_good_config_checks(tmp_path):
    r = llm_nb_cmd("check", write(tmp_path, "train:\n  max_steps: 3\n"))
    assert r.returncode == 0 and r.stdout.strip().endswith(": OK")

def test_unknown_stage(tmp_path):
    r = llm_nb_cmd("demo", "--root", tmp_path, "--stages", "synth,cleen")
    assert r.returncode == 2 and "unknown stage(s) ['cleen']" in r.stderr

def test_stages_run_alone_on_own_files(tmp_path):
    "The data stages through the CLI, then `clean` again alone on the files already there."
    r = llm_nb_cmd("demo", "--root", tmp_path, "--name", "d", "--stages", "synth,ingest,clean")
    assert r.returncode == 0, r.stderr
    run = tmp_path/"d"
    t = json.loads((run/"synth"/"truth.json").read_text())
    kept = t["valid"] + t["document_records"] + t["instructions"] + t["tool_instructions"]
    bad, pages = t["bad_json"] + t["bad_utf8"], t["document_pages"]
    # the demo's 680 good lines and 4 contaminated, the handbook's 3 pages and table, 300 conversations and 120 that
    # call a tool; 5 broken lines
    assert (kept, bad, pages) == (1108, 5, 3)
    assert (f"records read {kept + bad} = kept {kept} + quarantined {bad}, document pages {pages} = text {pages} + ocr 0"
            f" + blank 0 + dead 0 -> OK ({t['blank']} blank lines") in r.stdout
    rep = json.loads((run/"report.json").read_text())
    assert rep["summary"]["stages_run"] == ["synth", "ingest", "clean"]
    first = rep["stages"]["clean"]
    r = llm_nb_cmd("run", run/"config.yaml", "--stages", "clean", "--set", "clean.min_chars=1000")
    # every row too short, but those with a sensitive word and the demo's copies of held-out questions (contaminated):
    # clean keeps nothing, so it stops and says why rather than hand an empty set on
    assert r.returncode == 1 and "stage clean kept no record of 1,108 (too_short" in r.stderr, r.stderr
    st = json.loads((run/"clean"/"stats.json").read_text())
    assert st["rejected"]["too_short"] + st["rejected"]["sensitive"] + st["rejected"]["contaminated:heldout_answers"] \
        == st["counts"]["rows_in"] == kept
    r = llm_nb_cmd("run", run/"config.yaml", "--stages", "clean", "--set", "clean.min_chars=40")
    assert r.returncode == 0, r.stderr
    rep = json.loads((run/"report.json").read_text())
    cl = rep["stages"]["clean"]
    # a longer floor keeps fewer rows than the demo's own run did, read from the same ingest files
    assert 0 < cl["rows_out"] < first["rows_out"] and cl["rows_in"] == first["rows_in"] == kept
    assert rep["stages"]["ingest"]["kept"] == kept  # untouched

def test_env_report():
    r = llm_nb_cmd("env")
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert out["recommend"]["dtype"] in ("float32", "bfloat16", "float16") and "torch" in out["report"]

def make(*args, **kw):
    "`make -C <repo> args...`; returns the CompletedProcess."
    import subprocess
    from pathlib import Path
    repo = Path(__file__).resolve().parents[1]
    return subprocess.run(["make", "--no-print-directory", "-C", str(repo), *map(str, args)], capture_output=True,
                          text=True, timeout=600, **kw)

def test_makefile_targets_are_thin_cli_calls(tmp_path):
    "`make -n` shows each target's command; data-clean runs the data stages, and a second time skips them."
    plan = make("-n", "all", "data-clean", "train-eval", "deploy", "doctor", "CONFIG=c.yaml", "FORCE=--force")
    assert plan.returncode == 0, plan.stderr
    assert [l.split() for l in plan.stdout.splitlines()] == [
        ["llm_nb", "run", "c.yaml", "--force"],
        ["llm_nb", "run", "c.yaml", "--force", "--stages", "synth,ingest,clean"],
        ["llm_nb", "run", "c.yaml", "--force", "--stages", "model,tokenize,train,evaluate"],
        ["llm_nb", "run", "c.yaml", "--force", "--stages", "export,serve_bench"],
        ["llm_nb", "doctor", "c.yaml"]]
    debug = make("-n", "debug-train").stdout
    assert "CUDA_LAUNCH_BLOCKING=1" in debug and "--set run.name=debug --set train.max_steps=5" in debug
    cfg = tmp_path/"c.yaml"
    cfg.write_text(f"run: {{root: {tmp_path}, name: m}}\nsynth: {{n_records: 100}}\n")
    for expected in (["synth", "ingest", "clean"], []):
        r = make("data-clean", f"CONFIG={cfg}")
        assert r.returncode == 0, r.stdout + r.stderr
        assert json.loads((tmp_path/"m"/"report.json").read_text())["summary"]["stages_run"] == expected, r.stdout
    assert make("lineage").returncode == 2  # FILE= missing: said, not guessed

def test_verify_names_a_same_size_change_with_its_mtime_put_back(tmp_path):
    "`llm_nb verify` hashes in full: bytes changed in place, with the file's size and mtime as recorded, exit 1."
    from llm_nb.config import demo_config
    from llm_nb.run import Run
    run = Run.create(demo_config(**{"run.root": str(tmp_path), "run.name": "r"}))
    w = run.stage_dir("export")/"model.gguf"
    w.write_bytes(bytes(4096))
    run.record("export", outputs=[w])
    r = llm_nb_cmd("verify", run.dir)
    assert r.returncode == 0 and "| export | 1 | 0.000 | 1 | 0 | 0 |" in r.stdout, r.stdout + r.stderr
    st = w.stat()
    with open(w, "r+b") as f: f.seek(2048), f.write(b"\x1a" * 16)
    os.utime(w, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert run.verify_outputs([w], full=False) == []  # the fast check trusts size and mtime
    r = llm_nb_cmd("verify", run.dir)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "export/model.gguf: its sha256 is not the one the export stage recorded" in r.stdout.splitlines()
