"""The real Doccano 1.8.4 (its own venv, made by tools/install_doccano.sh), offline on 127.0.0.1: the demo's export
and the files our annotate stage writes import into it, in both span shapes (a relation project: `entities`; plain
sequence labeling: `label`), and what it exports back reads with our reader: no findings, the same texts and spans,
and a lossless Doccano → HF → Doccano round trip of its own file."""
import io, json, os, signal, subprocess, time, zipfile
from dataclasses import replace
from pathlib import Path
import httpx, pytest
from llm_nb.annotate import from_dataset, hf_rows, run_annotate, write_doccano
from llm_nb.doccano import ner_dataset, prepare, read_doccano
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.synth import run_synth
from llm_nb.env import free_port

DOCCANO_VERSION = "1.8.4"
VENV = Path(os.environ.get("LLM_NB_CACHE") or Path.home()/".cache"/"llm_nb")/f"doccano-{DOCCANO_VERSION}"
START_TIMEOUT_S = 90  # seconds for the web server and the task queue to answer /v1/health/
STOP_TIMEOUT_S = 20  # seconds a process group may take to exit after SIGTERM, before SIGKILL
TASK_TIMEOUT_S = 60  # seconds for an import or export task
USER, PASSWORD = "admin", "llm-nb-test"

# Doccano's settings, but for filepond's upload folder, which is otherwise inside Doccano's own package (filepond
# refuses a folder outside the project's unless told it may)
SETTINGS = """from config.settings.production import *  # noqa: F401,F403
DJANGO_DRF_FILEPOND_UPLOAD_TMP = {tmp!r}
DJANGO_DRF_FILEPOND_ALLOW_EXTERNAL_UPLOAD_DIR = True
"""
# `doccano webserver` as its console script runs it, but bound to 127.0.0.1: its CLI binds gunicorn to 0.0.0.0
LOCAL_WEBSERVER = """import sys
import gunicorn.config
from backend.cli import main
_set = gunicorn.config.Config.set
def set_local(self, name, value):
    _set(self, name, value.replace("0.0.0.0:", "127.0.0.1:") if name == "bind" else value)
gunicorn.config.Config.set = set_local
sys.exit(main())
"""


def group_alive(pgid:int) -> bool:
    "Whether any process of the process group `pgid` is still running."
    try: os.killpg(pgid, 0)
    except ProcessLookupError: return False
    return True


def stop_group(proc:subprocess.Popen):
    "Stop `proc` and its process group: SIGTERM, then SIGKILL after STOP_TIMEOUT_S."
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try: os.killpg(proc.pid, sig)
        except ProcessLookupError: pass
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            proc.poll()  # reaps the leader: a zombie still counts as alive
            if proc.returncode is not None and not group_alive(proc.pid): return
            time.sleep(0.2)


def wait_for_line(proc:subprocess.Popen, log:Path, text:bytes, deadline:float, logs:list[Path]):
    "Wait until `log` holds `text`; fail if `proc` exits first or time.monotonic() passes `deadline`."
    while text not in log.read_bytes():
        assert proc.poll() is None, f"{proc.args[1:2]} exited on start\n{tails(logs)}"
        if time.monotonic() > deadline: pytest.fail(f"no {text!r} in {log} in time\n{tails(logs)}")
        time.sleep(0.2)


def processes_with(env_entry:str) -> list[str]:
    "The command lines of the processes whose environment holds `env_entry` (NAME=value)."
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit(): continue
        try:
            if env_entry.encode() in (d/"environ").read_bytes().split(b"\0"):
                found.append(f"{d.name}: " + (d/"cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
        except OSError: pass  # gone, or not ours to read
    return found


def listeners(port:int) -> set[str]:
    "The local addresses (hex, as /proc/net/tcp* writes them) that listen on TCP `port`."
    out = set()
    for f in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(f).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port: out.add(local.rsplit(":", 1)[0])
    return out



def tails(logs:list[Path], n:int=4000) -> str:
    "The last `n` characters of each log, under its name."
    return "\n".join(f"--- {p.name}\n" + (p.read_text(errors="replace")[-n:] if p.exists() else "(none)") for p in logs)


class Doccano:
    "A logged-in client of a Doccano server, with its logs for the messages of failures."
    def __init__(self, base_url:str, logs:list[Path]):
        self.logs = logs
        self.http = httpx.Client(base_url=base_url, timeout=60, trust_env=False)
        self.http.get("/v1/projects")  # sets the CSRF cookie
        r = self.http.post("/v1/auth/login/", json=dict(username=USER, password=PASSWORD))
        assert r.status_code == 200, r.text
        self.http.headers["X-CSRFToken"] = self.http.cookies.get("csrftoken", "")

    def wait(self, task_id:str) -> dict:
        "The result of a Celery task once it is ready."
        deadline = time.monotonic() + TASK_TIMEOUT_S
        while time.monotonic() < deadline:
            s = self.http.get(f"/v1/tasks/status/{task_id}").json()
            if s["ready"]:
                assert s["error"] is None, f"{s['error']}\n{tails(self.logs)}"
                return s["result"]
            time.sleep(0.3)
        raise AssertionError(f"Doccano task {task_id} not done in {TASK_TIMEOUT_S} s\n{tails(self.logs)}")

    def project(self, name:str, relation:bool) -> int:
        "A new sequence-labeling project (with relations: Doccano's `entities` shape); its id."
        r = self.http.post("/v1/projects", json=dict(
            name=name, description="llm_nb test", project_type="SequenceLabeling",
            resourcetype="SequenceLabelingProject", use_relation=relation, allow_overlapping=True, guideline=""))
        assert r.status_code == 201, r.text
        return r.json()["id"]

    def upload(self, pid:int, path:Path, relation:bool) -> dict:
        "Import the JSONL file `path` into project `pid`, as Doccano's upload page does; the task's result."
        up = self.http.post("/v1/fp/process/", files={"filepond": (path.name, path.read_bytes(), "application/json")})
        assert up.status_code == 200, up.text
        r = self.http.post(f"/v1/projects/{pid}/upload", json=dict(
            uploadIds=[up.text], format="JSONL", task="RelationExtraction" if relation else "SequenceLabeling",
            column_data="text", column_label="label"))
        assert r.status_code == 200, r.text
        return self.wait(r.json()["task_id"])

    def examples(self, pid:int) -> int:
        "How many examples project `pid` holds."
        return self.http.get(f"/v1/projects/{pid}/examples", params=dict(limit=1)).json()["count"]

    def download(self, pid:int) -> dict[str, bytes]:
        "Export project `pid` as JSONL, as Doccano's export page does: {file name in the zip: its bytes}."
        r = self.http.post(f"/v1/projects/{pid}/download", json=dict(format="JSONL", exportApproved=False))
        assert r.status_code == 200, r.text
        task_id = r.json()["task_id"]
        self.wait(task_id)
        z = self.http.get(f"/v1/projects/{pid}/download", params=dict(taskId=task_id))
        assert z.status_code == 200, z.text[:500]
        with zipfile.ZipFile(io.BytesIO(z.content)) as zf: return {n: zf.read(n) for n in zf.namelist()}


@pytest.fixture(scope="module")
def doccano(tmp_path_factory):
    "Doccano's web server and task queue on a free port of 127.0.0.1, its database and files in a temp folder."
    if not (VENV/".llm_nb-ok").exists():
        why = (f"Doccano {DOCCANO_VERSION} is not installed in {VENV}: run `bash tools/install_doccano.sh` "
               "(tools/install.sh --dev runs it)")
        if os.environ.get("CI"): pytest.fail(why)  # CI installs it: missing there is a failed install, not a skip
        pytest.skip(why)
    tmp = tmp_path_factory.mktemp("doccano")
    (tmp/"settings").mkdir()
    (tmp/"settings"/"llm_nb_doccano_settings.py").write_text(SETTINGS.format(tmp=str(tmp/"uploads")))
    (tmp/"webserver.py").write_text(LOCAL_WEBSERVER)
    home = tmp/"home"  # DOCCANO_HOME: db.sqlite3 (also the task queue's broker) and media/
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "DATABASE_URL", "MEDIA_ROOT")}
    env.update(DOCCANO_HOME=str(home), HOME=str(home), PYTHONPATH=str(tmp/"settings"),
               DJANGO_SETTINGS_MODULE="llm_nb_doccano_settings", PYTHONDONTWRITEBYTECODE="1")
    doccano_cli = str(VENV/"bin"/"doccano")
    for args in (["init"], ["createuser", "--username", USER, "--password", PASSWORD]):
        r = subprocess.run([doccano_cli, *args], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, f"doccano {args[0]}:\n{(r.stdout + r.stderr)[-4000:]}"
    port = free_port()
    names, logs = ("task", "webserver"), [tmp/"task.log", tmp/"webserver.log"]
    cmds = [[doccano_cli, "task", "--concurrency", "1"],
            [str(VENV/"bin"/"python"), str(tmp/"webserver.py"), "webserver", "--port", str(port), "--workers", "2"]]
    procs, t0 = [], time.monotonic()
    try:
        for cmd, log in zip(cmds, logs):
            with open(log, "wb") as f:
                procs.append(subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=tmp,
                                              start_new_session=True))  # a process group of its own
            # the queue's row in the broker's database is made by whoever declares it first: the web server and the
            # task queue both doing so at once failed on its unique name (sqlite), so the web server starts after
            if log == logs[0]: wait_for_line(procs[0], log, b" ready.", t0 + START_TIMEOUT_S, logs)
        base_url = f"http://127.0.0.1:{port}"
        while True:  # /v1/health/ checks the database, the media storage and a round trip through the task queue
            dead = [n for n, p in zip(names, procs) if p.poll() is not None]
            assert not dead, f"Doccano's {dead} exited on start\n{tails(logs)}"
            try:
                if httpx.get(base_url + "/v1/health/", headers={"Accept": "application/json"}, timeout=10,
                             trust_env=False).status_code == 200: break
            except httpx.TransportError: pass
            if time.monotonic() - t0 > START_TIMEOUT_S:
                pytest.fail(f"Doccano not healthy in {START_TIMEOUT_S} s\n{tails(logs)}")
            time.sleep(0.5)
        print(f"doccano: up in {time.monotonic() - t0:.1f} s on {base_url}")
        assert listeners(port) == {"0100007F"}, f"Doccano listens on {listeners(port)}, not only 127.0.0.1"
        yield Doccano(base_url, logs)
    finally:
        for p in procs: stop_group(p)
    left = [p.pid for p in procs if p.returncode is None or group_alive(p.pid)]
    left += processes_with(f"DOCCANO_HOME={home}")
    assert not left, f"Doccano left processes behind: {left}"


@pytest.fixture(scope="module")
def ours(tmp_path_factory) -> dict[str, Path]:
    "Our Doccano files: the demo's export (synth), what the annotate stage writes back, and the latter as `label`s."
    root = tmp_path_factory.mktemp("runs")
    cfg = demo_config(**{"run.root": str(root)})
    run = Run.create(cfg)
    run_synth(cfg, run)
    assert run_annotate(cfg, run)["findings"] == 0
    back = run.dir/"annotate"/"roundtrip.jsonl"
    # the `label` shape, written by our writer: the same records without `entities` (and `relations`)
    plain = lambda fields: {k: v for k, v in fields.items() if k not in ("entities", "relations")} | {"label": None}
    recs = [replace(r, fields=plain(r.fields), entity_keys=[{} for _ in r.spans]) for r in read_doccano(back).records]
    labels = write_doccano(recs, root/"label.jsonl")
    assert all("label" in json.loads(l) and "entities" not in json.loads(l) for l in labels.read_text().splitlines())
    files = {"synth": run.dir/"synth"/"doccano"/"admin.jsonl", "roundtrip": back, "label": labels}
    truth = json.loads((run.dir/"synth"/"doccano"/"truth.json").read_text())
    for f in files.values():
        export = read_doccano(f)
        assert export.task == "sequence_labeling" and not export.findings, export.findings[:5]
        assert (len(export.records), sum(len(r.spans) for r in export.records)) == (truth["records"], truth["spans"])
    return files


def key(rec) -> tuple:
    "What Doccano must keep of a record: its text, its spans (sorted) and our `record` field."
    return rec.fields.get("record"), rec.text, sorted(rec.spans)


@pytest.mark.parametrize("name,relation", [("synth", True), ("roundtrip", True), ("label", False)],
                         ids=["synth-admin-entities", "annotate-roundtrip-entities", "label-shape"])
def test_doccano_imports_our_file_and_exports_what_we_read(doccano, ours, tmp_path, name, relation):
    src = ours[name]
    mine = read_doccano(src)
    pid = doccano.project(f"llm_nb {name}", relation)
    assert doccano.upload(pid, src, relation) == {"error": []}
    assert doccano.examples(pid) == len(mine.records)
    files = doccano.download(pid)
    assert len(files) == 1, list(files)
    exported = tmp_path/"exported.jsonl"
    exported.write_bytes(next(iter(files.values())))
    theirs = read_doccano(exported)
    # our reader on Doccano's export: no findings, the same records, texts and spans, in the shape of the project
    assert theirs.task == "sequence_labeling" and theirs.findings == [], theirs.findings[:5]
    assert len(theirs.records) == len(mine.records)
    assert sorted(map(key, theirs.records)) == sorted(map(key, mine.records))
    shape = "entities" if relation else "label"
    assert all(shape in r.fields for r in theirs.records), theirs.records[0].fields
    # Doccano's export → prepare → dataset → Doccano records: its own file back, field for field
    exs, found = prepare(theirs)
    assert not found and len(exs) == len(theirs.records), found[:5]
    ds = ner_dataset(exs)
    back, found = from_dataset(ds)
    assert not found, found[:5]
    assert back == [json.loads(l) for l in exported.read_text(encoding="utf-8").splitlines() if l.strip()]
    # and the same training rows as our own file gives
    rows = lambda d: sorted((r["text"], tuple(r["tokens"]), tuple(r["ner_tags"])) for r in hf_rows(d))
    assert rows(ds) == rows(ner_dataset(prepare(mine)[0]))
