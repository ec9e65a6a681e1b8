import json, os, random, shutil, signal, subprocess, sys, time
from pathlib import Path
import pytest
from llm_nb.testing import TEXT_ONLY, run_until

def _ci_fails_skips(rep):
    "Under CI, where tools/install.sh --dev installs every real component, a skip is a failure (the reason kept)."
    if os.environ.get("CI") and rep.skipped and not hasattr(rep, "wasxfail"):
        reason = rep.longrepr[-1] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        rep.outcome, rep.longrepr = "failed", f"skipped under CI, where every real component must be there: {reason}"

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    _ci_fails_skips((yield).get_result())

@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    _ci_fails_skips((yield).get_result())  # a module that skips as a whole (pytest.importorskip)

# the test files that read the session's `exported_run` (a pipeline run through export, ~90 s)
EXPORTED_RUN_FILES = ("tests/test_serve.py", "tests/test_monitor.py", "tests/test_run_folder.py")

@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under pytest-xdist (tools/test.sh: two workers), a test file runs whole on one worker, so its module fixtures
    run once, and the files of `EXPORTED_RUN_FILES` share one worker and one `exported_run`. (xdist's own
    `--dist loadgroup` marks do not reach its scheduler under pytest 9, whose node ids xdist 3.8 cannot rename.)"""
    from xdist.scheduler import LoadFileScheduling
    class FileScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid:str) -> str:
            file = super()._split_scope(nodeid)
            return "exported_run" if file in EXPORTED_RUN_FILES else file
    return FileScheduling(config, log)

def wait_for(what, seconds:float=60, poll:float=0.1):
    "What `what()` returns once it is true, polling every `poll` s for at most `seconds` (then TimeoutError)."
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if got := what(): return got
        time.sleep(poll)
    raise TimeoutError(what)

def kill_9_once(cmd:list, done:Path, env:dict, seconds:float=600):
    "Run `cmd` in a session of its own until the file `done` exists, then SIGKILL the whole session."
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    t0 = time.time()
    while not done.exists():
        assert p.poll() is None and time.time() - t0 < seconds, f"{cmd} ended before {done} was written"
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()

def llm_nb_cmd(*args, **kw):
    "Run the `llm_nb` console script; returns the CompletedProcess."
    return subprocess.run(["llm_nb", *map(str, args)], capture_output=True, text=True, timeout=600, **kw)

def random_word_lines(n:int, seed:int) -> list[str]:
    "`n` JSONL lines of random words (no two near duplicates): raw data whose every record survives cleaning."
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8))) for _ in range(300)]
    return [json.dumps({"text": " ".join(rng.choices(words, k=20))}) for _ in range(n)]

@pytest.fixture(scope="session")
def exported_run():
    """A demo run through the export stage (short training): a GGUF to serve, and an adapter vLLM can serve as a LoRA.
    On raw text only: the serving tests need answers that run to `bench.output_len` on a server that ignores
    `ignore_eos` (llama-cpp-python), and 5 steps on the conversations teach the model to end its turn at once. The
    chat template is the tiny model's own either way; the demo's answers are asked of servers in 42_load_test."""
    return run_until("serve_bench", **{"train.max_steps": 5, "lora.modules_to_save": [], **TEXT_ONLY,
                                       "tokenize.max_length": 128})  # the demo's 192 are for tool conversations:
    # at 128 the held-out split has the 8 blocks the parity tests ask servers

SLURM = ["bash", str(Path(__file__).resolve().parents[1]/"tools"/"slurm_local.sh")]

def _slurm(cmd:str, env:dict) -> subprocess.CompletedProcess:
    "Run `tools/slurm_local.sh cmd`."
    return subprocess.run(SLURM + [cmd], env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def slurm_env():
    "The environment for Slurm's clients: a one-machine Slurm up (started here, and stopped, unless it already was)."
    if shutil.which("slurmctld") is None and (os.geteuid() != 0 or shutil.which("apt-get") is None):
        pytest.skip("Slurm is not installed, and installing it (tools/slurm_local.sh) needs root and apt-get")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # the job finds this venv
    was_up = _slurm("status", env).returncode == 0
    t0 = time.perf_counter()
    r = _slurm("start", env)
    assert r.returncode == 0, r.stdout + r.stderr
    print(f"slurm: {'already up' if was_up else 'started'} in {time.perf_counter() - t0:.1f} s")
    env["SLURM_CONF"] = r.stdout.strip().splitlines()[-1].split("=", 1)[1]
    yield env
    if not was_up: assert _slurm("stop", env).returncode == 0

# a conversation that every server must render as training did (test_serve, test_vllm)
CHAT = [{"role": "system", "content": "简洁回答"}, {"role": "user", "content": "这个手机怎么样？ The phone"},
        {"role": "assistant", "content": "很好。"}, {"role": "user", "content": "电池呢？"}]

def training_ids(tokenizer_dir, chat:list=CHAT) -> list[int]:
    "The ids the training template gives `chat`, with the prompt for the next answer (transformers' render)."
    from llm_nb.model import load_tokenizer
    return load_tokenizer(str(tokenizer_dir)).apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                                  return_dict=True)["input_ids"]
