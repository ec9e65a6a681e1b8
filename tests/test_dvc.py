"""DVC for real on the pipeline's dvc.yaml (`llm_nb dvc`), in a git project of its own: `dvc repro` runs the data
stages clean needs once, a second time nothing; a changed raw record re-runs ingest and clean (new hashes); a clean
setting re-runs clean only; the older dvc.lock checked out brings the older bytes back exactly; and
`dvc push`, then `dvc pull` into an emptied cache, restores them. With `dvc.model_files: git-lfs`, the model
folder goes to Git with its weights and tokenizer in Git LFS (real git-lfs): pointers in Git, an older commit's
bytes back on checkout, and a clone of the pushed repository gets them from the LFS store."""
import hashlib, os, shutil, subprocess, sys
import pytest, yaml
from conftest import llm_nb_cmd, random_word_lines

pytest.importorskip("dvc", reason="DVC is the `dvc` extra (tools/install.sh --dev installs it)")

def sh(*args, cwd, env=None) -> str:
    "Run a command in `cwd`; its stdout, failing the test with its output otherwise."
    r = subprocess.run([*map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
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

def git_repo(p):
    "`p` as a git checkout with a committer."
    sh("git", "init", "-q", cwd=p)
    sh("git", "config", "user.email", "t@example.com", cwd=p)
    sh("git", "config", "user.name", "t", cwd=p)

def make_project(tmp_path, dvc_cfg:str="") -> tuple:
    """A git project with a raw file, a config (no synth records, no annotation, `dvc_cfg` added to its `dvc`
    section) and the DVC files `llm_nb dvc` wrote; the project and what `llm_nb dvc` printed."""
    p = tmp_path/"project"
    (p/"raw").mkdir(parents=True)
    (p/"raw"/"reviews.jsonl").write_text("\n".join(random_word_lines(40, 0)) + "\n")
    (p/"cfg.yaml").write_text(f"run: {{root: runs, name: d}}\nsynth: {{n_records: 0}}\nannotate: {{input: ''}}\n"
                              f"ingest:\n  sources:\n    - {{name: raw, path: raw/*.jsonl}}\n"
                              f"dvc: {{remote: {tmp_path/'remote'}{dvc_cfg}}}\n")
    git_repo(p)
    r = llm_nb_cmd("dvc", p/"cfg.yaml", "--project", p)
    assert r.returncode == 0, r.stderr
    assert "wrote params.yaml, code.yaml, dvc.yaml" in r.stdout
    return p, r.stdout

@pytest.fixture
def project(tmp_path): return make_project(tmp_path)[0]

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

def sha(path) -> str:
    "A file's sha256."
    return hashlib.sha256(path.read_bytes()).hexdigest()

def test_model_files_in_git_lfs(tmp_path):
    if subprocess.run(["git", "lfs", "version"], capture_output=True).returncode:
        if os.environ.get("CI"): pytest.fail("git-lfs is missing: tools/install.sh --dev installs it (apt, as root)")
        pytest.skip("git-lfs is not installed (apt-get install git-lfs)")
    p, said = make_project(tmp_path, ", model_files: git-lfs")
    assert ".gitattributes" in said
    weights, tok = p/"runs"/"d"/"model"/"base"/"model.safetensors", p/"runs"/"d"/"model"/"base"/"tokenizer.model"
    assert ran(dvc("repro", "model", cwd=p)) == ["ingest", "clean", "model"]
    sh("git", "add", "-A", cwd=p)
    sh("git", "commit", "-qm", "v1", cwd=p)
    in_lfs = sh("git", "lfs", "ls-files", "-n", cwd=p).split()
    assert {"runs/d/model/base/model.safetensors", "runs/d/model/base/tokenizer.model"} <= set(in_lfs), in_lfs
    assert not any("/clean/" in f for f in in_lfs)  # the data stays with DVC
    pointer = sh("git", "show", "HEAD:runs/d/model/base/model.safetensors", cwd=p)
    assert pointer.startswith("version https://git-lfs.github.com/spec/v1") and sha(weights) in pointer
    v1 = sha(weights), sha(tok)
    params = yaml.safe_load((p/"params.yaml").read_text())
    params["model"]["tiny"]["num_layers"] = 1
    (p/"params.yaml").write_text(yaml.safe_dump(params, allow_unicode=True))
    assert ran(dvc("repro", "model", cwd=p)) == ["model"]
    sh("git", "add", "-A", cwd=p)
    sh("git", "commit", "-qm", "v2", cwd=p)
    v2 = sha(weights), sha(tok)
    assert v2[0] != v1[0]
    sh("git", "checkout", "-q", "HEAD~1", "--", "runs/d/model", cwd=p)  # the older weights, from LFS
    assert (sha(weights), sha(tok)) == v1
    sh("git", "checkout", "-q", "HEAD", "--", "runs/d/model", cwd=p)
    sh("git", "init", "-q", "--bare", tmp_path/"origin.git", cwd=tmp_path)
    sh("git", "remote", "add", "origin", tmp_path/"origin.git", cwd=p)  # a named remote: LFS finds its store there
    sh("git", "push", "-q", "origin", "HEAD:main", cwd=p)
    sh("git", "clone", "-q", "-b", "main", tmp_path/"origin.git", tmp_path/"clone", cwd=tmp_path,
       env=dict(os.environ, GIT_LFS_SKIP_SMUDGE="1"))  # a clone that has only the pointers...
    sh("git", "lfs", "install", "--local", cwd=tmp_path/"clone")
    sh("git", "lfs", "pull", cwd=tmp_path/"clone")  # ...gets the bytes from the pushed LFS store
    got = tmp_path/"clone"/"runs"/"d"/"model"/"base"
    assert (sha(got/"model.safetensors"), sha(got/"tokenizer.model")) == v2
