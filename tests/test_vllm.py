"vLLM for real on this CPU (its CPU build, made by tools/install.sh --dev): streams, chat, a benchmark, its metrics, two adapters per request, its own client, a clean stop."
import json, os, subprocess, time
import httpx, pytest
from llm_nb.load_test import run_bench
from llm_nb.config import load_config
from llm_nb.artifacts import base_model_path
from llm_nb.monitor import watch_server
from llm_nb.serve import serve_exported, vllm_python
from llm_nb.testing import random_adapter
from conftest import CHAT, training_ids

GROUP_GONE_S = 15  # seconds the server's children may take to exit after the server itself

def group_alive(pgid:int) -> bool:
    "Whether any process of the process group `pgid` is still running."
    try: os.killpg(pgid, 0)
    except ProcessLookupError: return False
    return True

@pytest.fixture(scope="module")
def vllm_server(exported_run):
    "vLLM serving the base model with the run's adapter (as `model`) and a random one (as `other`)."
    assert vllm_python() is not None, "vLLM's CPU build is missing: run `bash tools/install.sh --dev`"
    run = exported_run
    base = base_model_path(run)
    random_adapter(base, run.dir/"other-adapter")
    cfg = load_config(run.cfg.model_dump(), **{
        "serve.engine": "auto", "serve.lora": True, "serve.lora_modules": {"other": "{run}/other-adapter"},
        "serve.startup_timeout": 600, "bench.num_prompts": 8, "bench.max_concurrency": 4, "bench.output_len": 32,
        "bench.metrics_interval": 0.2})
    server = serve_exported(cfg, run)
    assert server.engine == "vllm"  # auto: HF weights, and vLLM can run here
    with server.start(cfg.serve.startup_timeout):
        yield cfg, run, server
    deadline = time.monotonic() + GROUP_GONE_S
    while group_alive(server.proc.pid) and time.monotonic() < deadline: time.sleep(0.2)
    assert server.proc.poll() is not None and not group_alive(server.proc.pid), "vLLM left processes behind"

def test_vllm_benchmark_completions_and_chat_with_metrics(vllm_server):
    cfg, run, server = vllm_server
    done = run_bench(cfg, run, server)
    assert (done["completed"], done["failed"], done["output_tokens"]) == (8, 0, 8 * 32), done["errors"]
    assert any(k.startswith("vllm:num_requests_running") for k in done["server_metrics"]), done["server_metrics"]
    assert done["ttft_ms"]["median"] > 0, done["ttft_ms"]
    # TPOT is a number where vLLM streamed the tokens apart; where its API server sent them together, not measured
    assert (done["tpot_ms"]["median"] > 0) if not done["tpot_itl"]["not_measured"] else done["tpot_ms"]["median"] is None
    chat = run_bench(load_config(cfg.model_dump(), **{"bench.endpoint": "chat"}), run, server)
    assert (chat["completed"], chat["failed"]) == (8, 0), chat["errors"]

def test_vllm_benchmark_spread_over_two_adapters(vllm_server):
    cfg, run, server = vllm_server
    m = run_bench(load_config(cfg.model_dump(), **{"bench.models": ["model", "other"]}), run, server)
    assert (m["completed"], m["failed"]) == (8, 0), m["errors"]
    sent = json.loads((run.dir/"bench"/"results.json").read_text())["requests"]
    assert [r["model"] for r in sent] == ["model", "other"] * 4

def test_vllm_two_adapters_per_request(vllm_server):
    cfg, run, server = vllm_server
    models = [m["id"] for m in httpx.get(server.base_url + "/v1/models", timeout=30).json()["data"]]
    assert {"model", "other", "model-base"} <= set(models), models
    body = dict(prompt="这个商品", max_tokens=16, temperature=0, ignore_eos=True)
    answer = lambda m: httpx.post(server.base_url + "/v1/completions", json=dict(body, model=m),
                                  timeout=120).json()["choices"][0]["text"]
    first, second = answer("model"), answer("other")
    assert first != second, (first, second)
    assert answer("model") == first  # greedy: the same adapter gives the same answer again

def test_vllm_with_the_adapter_answers_as_peft(vllm_server):
    """The export stage's parity prompts, as token ids, asked of vLLM with the run's adapter: PEFT's greedy answers,
    or parted only where PEFT's top two tokens nearly tie, on 1 of 8 at most; the base it serves beside (the adapter
    not applied) is told apart by its log-probabilities."""
    cfg, run, server = vllm_server
    from llm_nb.model import load_tokenizer
    from llm_nb.serve_bench import served_parity, served_row
    row = served_row(cfg, run, server, "vllm + adapter")
    print(row)
    assert row["prompts"] == 8 and row["verdict"] == "pass", row  # every parting a near-tie, 7 of 8 identical at least
    assert row["max_logprob_delta"] < 0.05, row
    tok = load_tokenizer(str(run.dir/"export"/"merged"))
    base = served_parity(server, "model-base", run.dir/"export"/"parity.json", tok, "vllm, base alone", cfg.export.parity_floor)
    print(base)
    assert base["verdict"].startswith("FAIL") and not all(p["near_tie"] for p in base["partings"]), base  # beyond rounding

def test_vllm_renders_a_conversation_as_training_did(vllm_server):
    "vLLM's /tokenize of a conversation (its chat path: the tokenizer's template) gives the training ids."
    cfg, run, server = vllm_server
    r = httpx.post(server.base_url + "/tokenize", json={"model": "model", "messages": CHAT, "add_generation_prompt": True},
                   timeout=60).json()
    assert r["tokens"] == training_ids(run.dir/"train"/"adapter"), r

def test_vllm_own_client_from_the_same_install(vllm_server, tmp_path):
    "`vllm bench serve` runs from the Python that serves vLLM (the CPU venv here) and counts what llm_nb counts."
    cfg, run, server = vllm_server
    base = base_model_path(run)
    prompts = tmp_path/"prompts.jsonl"
    prompts.write_text("".join(json.dumps(dict(prompt=p)) + "\n" for p in ["这个商品", "质量很好", "物流很快", "不太满意"]))
    cmd = [str(vllm_python()), "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "openai",
           "--base-url", server.base_url, "--endpoint", "/v1/completions", "--model", "model", "--tokenizer", base,
           "--dataset-name", "custom", "--dataset-path", str(prompts), "--custom-output-len", "16",
           "--skip-chat-template", "--num-prompts", "4", "--max-concurrency", "2", "--ignore-eos",
           "--temperature", "0", "--save-result", "--result-dir", str(tmp_path), "--result-filename", "vllm.json"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads((tmp_path/"vllm.json").read_text())
    assert (got["completed"], got["failed"], got["total_output_tokens"]) == (4, 0, 4 * 16), got

def test_prometheus_scrapes_vllm_and_every_vllm_panel_has_data(vllm_server):
    "A real Prometheus (Debian's) scrapes vLLM and the exporter during a benchmark; each vLLM and host panel has data."
    cfg, run, server = vllm_server
    watched = load_config(cfg.model_dump(), **{"monitor.prometheus": True, "monitor.scrape_interval": "1s"})
    with watch_server(watched, run, server): run_bench(watched, run, server)
    panels = json.loads((run.dir/"monitor"/"panels.json").read_text())
    assert {p["source"] for p in panels} == {"host", "train", "vllm"}  # no NVML here; the run's training series
    assert all(p["series"] > 0 for p in panels), [p for p in panels if not p["series"]]
