"A run folder under faults: writers killed with -9 mid-update, two commands on one folder, a full disk, a damaged model."
import os, random, shutil, signal, subprocess, sys, time
import pytest
from llm_nb.cli import main
from llm_nb.config import demo_config, load_config, to_yaml
from llm_nb.pipeline import run_pipeline
from llm_nb.doctor import check_data
from llm_nb.run import LOCK_FILE, Run, describe_files, read_json

def _update_forever(run:Run, n:int):
    "A writer that updates manifest.json without pause (entries big enough that a write takes a while)."
    blob = "x" * 20_000
    for i in range(10**9): run.set_entry("manifest.json", f"s{i % n}", {"i": i, "blob": blob})

def test_kill_9_during_manifest_updates_never_leaves_bad_json(tmp_path):
    run, rng, kills = Run(tmp_path/"r", None), random.Random(0), 0
    run.set_entry("manifest.json", "first", {})
    for _ in range(60):  # two writers at once, both killed at a random instant
        pids = []
        for _ in range(2):
            if (pid := os.fork()) == 0:
                try: _update_forever(run, 8)
                finally: os._exit(0)
            pids.append(pid)
        time.sleep(rng.uniform(0.001, 0.05))
        for pid in pids: os.kill(pid, signal.SIGKILL), os.waitpid(pid, 0)
        kills += 2
        data = read_json(run.dir/"manifest.json")  # a RunError (and the test fails) if it does not parse
        assert "first" in data["stages"]
    updates = sum(1 for _ in data["stages"])
    print(f"{kills} writers killed mid-update; manifest.json parsed after each kill ({updates} stages in it)")
    assert updates > 2  # the writers did write between the kills

def test_a_killed_holder_s_lock_is_taken_over(tmp_path, capsys):
    run = Run(tmp_path/"r", None)
    if (pid := os.fork()) == 0:
        with run.lock("llm_nb run c.yaml"): time.sleep(60)
        os._exit(0)
    lock, deadline = run.dir/LOCK_FILE, time.monotonic() + 10
    while not (lock.exists() and '"llm_nb run c.yaml"' in lock.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL), os.waitpid(pid, 0)
    with run.lock(): pass
    assert f"taking over the lock left by pid {pid} on" in capsys.readouterr().out

def test_two_runs_on_one_folder_one_refused_naming_the_holder(tmp_path):
    cfg = demo_config(**{"run.root": str(tmp_path), "run.name": "two"})
    (tmp_path/"c.yaml").write_text(to_yaml(cfg))
    args = ["llm_nb", "run", str(tmp_path/"c.yaml"), "--stages", "synth,ingest,clean", "--force"]
    # the second command imports llm_nb and its stages first (the CLI imports them only when a command runs) and then
    # waits for a line, so it runs while the first holds the lock (the three stages take ~2 s, less than the imports)
    ready = f"import sys, llm_nb.pipeline; from llm_nb.cli import main; sys.stdin.readline(); sys.exit(main({args[1:]!r}))"
    second = subprocess.Popen([sys.executable, "-c", ready], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lock, deadline = tmp_path/"two"/LOCK_FILE, time.monotonic() + 120
    while not (lock.exists() and f'"pid": {first.pid}' in lock.read_text()):
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()
        time.sleep(0.01)
    _, err2 = second.communicate("go\n", timeout=600)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, out + err
    assert second.returncode == 1, err2
    assert err2.count("\n") == 1 and err2.startswith(f"llm_nb: error: {tmp_path/'two'} is in use by pid {first.pid} on "), err2
    assert "(`llm_nb run " in err2 and "one command writes a run folder at a time" in err2
    verdict = check_data(cfg)  # `llm_nb doctor`'s data check: every recorded file matches
    assert verdict.status == "ok", verdict
    print(err2.strip(), "|", verdict)

@pytest.fixture
def small_disk(tmp_path):
    "A 128 KiB tmpfs (root only): a disk that fills up."
    d = tmp_path/"disk"
    d.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", str(d)], capture_output=True, text=True)
    if r.returncode: pytest.skip(f"mounting a tmpfs needs root: {r.stderr.strip()}")  # a failure under CI (conftest)
    yield d
    subprocess.run(["umount", str(d)], check=True)

def test_a_full_disk_is_one_line_naming_the_disk(small_disk, capsys):
    cfg = small_disk/"c.yaml"
    cfg.write_text(f"run: {{root: {small_disk}, name: full}}\nsynth: {{n_records: 5000}}\n")
    assert main(["run", str(cfg), "--stages", "synth"]) == 1
    err = capsys.readouterr().err
    print(err)
    assert err.count("\n") == 1 and err.startswith(f"llm_nb: error: stage synth failed in {small_disk}/full/synth: "), err
    assert "No space left on device; its disk has 0.0 MiB free of 0.1 MiB" in err, err

def test_a_damaged_gguf_is_refused_by_serve(exported_run, tmp_path, capsys):
    gguf = exported_run.dir/"export"/"model-q8_0.gguf"
    shutil.copy2(gguf, tmp_path/"good.gguf")
    try:
        with open(gguf, "r+b") as f: f.seek(1 << 20), f.write(os.urandom(64 << 10))
        assert main(["serve", str(exported_run.dir/"config.yaml"), "--seconds", "1"]) == 1
    finally: shutil.copy2(tmp_path/"good.gguf", gguf)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("llm_nb: error: serve: refusing to serve export/model-q8_0.gguf: "
                                                   "its sha256 is not the one the export stage recorded"), err
    assert err.strip().endswith(f"`llm_nb run {exported_run.dir/'config.yaml'} --stages export`"), err

def test_a_moved_run_folder_still_holds(tmp_path, capsys):
    "Moved to another run.root, every stage's result still holds, and a stage re-run there reads the moved files."
    stages = ["synth", "ingest", "clean", "model", "tokenize"]
    cfg = demo_config(**{"run.root": str(tmp_path/"a"), "run.name": "r"})
    run_pipeline(cfg, stages)
    shutil.move(tmp_path/"a"/"r", tmp_path/"b"/"r")
    moved = load_config(cfg.model_dump(), **{"run.root": str(tmp_path/"b")})
    capsys.readouterr()
    assert run_pipeline(moved, stages).report()["summary"]["stages_run"] == [], capsys.readouterr().out
    hashes = lambda: {k: v["sha256"] for k, v in describe_files([tmp_path/"b"/"r"/"tokenize"], tmp_path/"b"/"r").items()}
    before = hashes()
    assert run_pipeline(moved, ["tokenize"], force=True).report()["summary"]["stages_run"] == ["tokenize"]
    assert hashes() == before  # byte for byte, so train, evaluate and export would still skip
    assert not (tmp_path/"a").exists() or not any((tmp_path/"a").iterdir())  # nothing written where it was
