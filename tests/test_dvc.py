"""DVC for real on the pipeline's dvc.yaml (`llm_nb dvc`), in a git project of its own: `dvc repro` runs the data
stages clean needs once, a second time nothing; a changed raw record re-runs ingest and clean (new hashes); a clean
setting re-runs clean only; the older dvc.lock checked out brings the older bytes back exactly; and
`dvc push`, then `dvc pull` into an emptied cache, restores them."""
import shutil, subprocess, sys
import pytest, yaml
from conftest import llm_nb_cmd, random_word_lines

pytest.importorskip("dvc", reason="DVC is the `dvc` extra (tools/install.sh --dev installs it)")

def sh(*args, cwd) -> str:
    "Run a command in `cwd`; its stdout, failing the test with its output otherwise."
    r = subprocess.run([*map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{args}: {r.stdout}\n{r.stderr}"
    return r.stdout

def dvc(*args, cwd) -> str:
    "This Python's DVC."
    return sh(sys.executable, "-m", "dvc", *args, cwd=cwd)

def ran(out:str) -> list[str]:
    "The stages `dvc repro` ran, from its output."
    return [l.split("'")[1] for l in out.splitlines() if l.startswith("Running stage '")]

def lock_md5(project, stage:str) -> str:
    "The hash dvc.lock pins for a stage's output folder."
    return yaml.safe_load((project/"dvc.lock").read_text())["stages"][stage]["outs"][0]["md5"]

@pytest.fixture
def project(tmp_path):
    "A git project with a raw file, a config (no synth records, no annotation) and the DVC files `llm_nb dvc` wrote."
    p = tmp_path/"project"
    (p/"raw").mkdir(parents=True)
    (p/"raw"/"reviews.jsonl").write_text("\n".join(random_word_lines(40, 0)) + "\n")
    (p/"cfg.yaml").write_text(f"run: {{root: runs, name: d}}\nsynth: {{n_records: 0}}\nannotate: {{input: ''}}\n"
                              f"ingest:\n  sources:\n    - {{name: raw, path: raw/*.jsonl}}\n"
                              f"dvc: {{remote: {tmp_path/'remote'}}}\n")
    sh("git", "init", "-q", cwd=p)
    sh("git", "config", "user.email", "t@example.com", cwd=p)
    sh("git", "config", "user.name", "t", cwd=p)
    r = llm_nb_cmd("dvc", p/"cfg.yaml", "--project", p)
    assert r.returncode == 0, r.stderr
    assert "wrote params.yaml, code.yaml, dvc.yaml" in r.stdout
    return p

def test_repro_runs_what_changed_and_checkout_rolls_back(project):
    p, clean = project, project/"runs"/"d"/"clean"/"clean.parquet"
    assert ran(dvc("repro", "clean", cwd=p)) == ["ingest", "clean"]  # what clean needs (synth: not its input here)
    sh("git", "add", "-A", cwd=p)
    sh("git", "commit", "-qm", "v1", cwd=p)
    v1_bytes, v1_md5 = clean.read_bytes(), lock_md5(p, "clean")
    assert ran(dvc("repro", "clean", cwd=p)) == []  # nothing changed: nothing runs
    lines = (p/"raw"/"reviews.jsonl").read_text().splitlines()
    lines[7] = random_word_lines(1, 99)[0]  # one record changed
    (p/"raw"/"reviews.jsonl").write_text("\n".join(lines) + "\n")
    assert ran(dvc("repro", "clean", cwd=p)) == ["ingest", "clean"]  # the stages downstream of the raw file
    assert lock_md5(p, "clean") != v1_md5 and clean.read_bytes() != v1_bytes
    params = yaml.safe_load((p/"params.yaml").read_text())
    params["clean"]["min_chars"] = 50
    (p/"params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))
    assert ran(dvc("repro", "clean", cwd=p)) == ["clean"]  # a clean setting: clean only
    sh("git", "checkout", "-q", "HEAD", "--", "dvc.lock", "params.yaml", cwd=p)
    dvc("checkout", "ingest", "clean", cwd=p)  # the stages reproduced here (the others have no data yet)
    assert clean.read_bytes() == v1_bytes and lock_md5(p, "clean") == v1_md5  # version 1, byte for byte

def test_push_then_pull_into_an_empty_cache(project):
    p, clean = project, project/"runs"/"d"/"clean"/"clean.parquet"
    dvc("repro", "clean", cwd=p)
    before = clean.read_bytes()
    assert "pushed" in dvc("push", "clean", cwd=p)
    shutil.rmtree(p/".dvc"/"cache")
    shutil.rmtree(p/"runs"/"d"/"clean")
    dvc("pull", "clean", cwd=p)
    assert clean.read_bytes() == before

def test_shared_data_on_a_local_remote_is_warned_about(project):
    cfg = project/"cfg.yaml"
    cfg.write_text(cfg.read_text().replace("dvc: {remote:", "dvc: {shared: true, remote:"))
    r = llm_nb_cmd("dvc", cfg, "--project", project)
    assert r.returncode == 0 and "warning: dvc.remote:" in r.stdout and "the others cannot reach it" in r.stdout
