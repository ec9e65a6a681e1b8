"The served model as a subprocess: engines, API key, secrets kept out of files, concurrency without truncation, a server killed mid-benchmark."
import json, os, signal, threading, time
from pathlib import Path
import httpx, pytest
from llm_nb.config import ConfigError, load_config
from llm_nb.serve import Server, llama_server_cmd, serve_exported
from llm_nb.env import free_port
from llm_nb.llama_cpp import llama_server_bin
from llm_nb.load_test import BenchFailed, run_bench
from llm_nb.load import parse_prometheus
from llm_nb.testing import FakeOpenAI
from conftest import CHAT, training_ids

def cfg_of(run, **sets):
    "The run's config with dotted-key overrides, validated like any other config."
    return load_config(run.cfg.model_dump(), **sets)

def test_api_key_required_and_never_written(exported_run, monkeypatch):
    run = exported_run
    cfg = cfg_of(run, **{"serve.api_key_env": "LLM_NB_TEST_KEY", "bench.num_prompts": 2})
    secret = "sk-test-7f3a9c"
    monkeypatch.setenv("LLM_NB_TEST_KEY", secret)
    srv = serve_exported(cfg, run)
    assert secret not in " ".join(srv.cmd)  # whichever engine `auto` chose here
    with srv.start(cfg.serve.startup_timeout):
        assert httpx.get(srv.base_url + "/v1/models").status_code == 401
        assert httpx.get(srv.base_url + "/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(srv.base_url + "/v1/models", headers=srv.headers).status_code == 200
        m = run_bench(cfg, run, srv)
        assert m["completed"] == 2
    for f in run.dir.rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert secret.encode() not in f.read_bytes(), f"API key leaked into {f}"

def test_missing_key_env_is_an_error(exported_run, monkeypatch):
    cfg = cfg_of(exported_run, **{"serve.api_key_env": "LLM_NB_UNSET_KEY"})
    monkeypatch.delenv("LLM_NB_UNSET_KEY", raising=False)
    with pytest.raises(ConfigError, match="LLM_NB_UNSET_KEY"): serve_exported(cfg, exported_run)

def test_concurrent_streams_are_complete_and_metrics_scraped(exported_run):
    "4 streams at once on 4 slots: every one gets all its tokens, and /metrics shows them decoded together."
    run = exported_run
    cfg = cfg_of(run, **{"serve.engine": "llama_server", "bench.num_prompts": 8, "bench.max_concurrency": 4,
                         "bench.output_len": 192, "bench.metrics_interval": 0.1})  # llama-server's slots and metrics
    with serve_exported(cfg, run).start(cfg.serve.startup_timeout) as srv:
        m = run_bench(cfg, run, srv)
    assert (m["completed"], m["failed"]) == (8, 0), m["errors"]
    res = json.loads((run.dir/"bench"/"results.json").read_text())
    assert [r["output_tokens"] for r in res["requests"]] == [192] * 8         # from the streamed usage, no cut streams
    assert m["server_metrics"]["llamacpp:n_busy_slots_per_decode"]["last"] > 1, m["server_metrics"]  # slots decoded together
    assert m["server_metrics"]["llamacpp:tokens_predicted_total"]["last"] >= 8 * 192

def test_llama_cpp_python_engine_does_not_cut_streams(exported_run):
    """llama-cpp-python's server with interrupt_requests off: two concurrent streams both complete, each as it does
    alone (greedy: the same text and the same reason to stop, which may be an end of turn: this server ignores
    ignore_eos)."""
    run = exported_run
    cfg = cfg_of(run, **{"serve.engine": "llama_cpp_python", "bench.num_prompts": 2, "bench.output_len": 48})
    requests = lambda: json.loads((run.dir/"bench"/"results.json").read_text())["requests"]
    with serve_exported(cfg, run).start(cfg.serve.startup_timeout) as srv:
        assert srv.engine == "llama_cpp_python"
        alone = run_bench(load_config(cfg.model_dump(), **{"bench.max_concurrency": 1}), run, srv), requests()
        together = run_bench(load_config(cfg.model_dump(), **{"bench.max_concurrency": 2}), run, srv), requests()
    assert alone[0]["completed"] == together[0]["completed"] == 2, (alone[0], together[0])
    ended = lambda res: sorted((r["text"], r["finish_reason"]) for r in res)
    assert ended(together[1]) == ended(alone[1]), (together[1], alone[1])
    assert all(r["finish_reason"] in ("stop", "length") and r["text"] for r in together[1]), together[1]

def test_server_killed_mid_benchmark_gives_a_report(exported_run):
    "SIGKILL while streams are in flight: the benchmark returns, every request is accounted for, errors by kind."
    run = exported_run
    cfg = cfg_of(run, **{"serve.engine": "llama_server", "bench.num_prompts": 12, "bench.max_concurrency": 2,
                         "bench.output_len": 400, "bench.timeout": 10.0})  # killed when llama-server's metrics say busy
    srv = serve_exported(cfg, run)
    def kill_when_busy():
        while True:
            try: s = parse_prometheus(httpx.get(srv.base_url + "/metrics", timeout=2).text)
            except httpx.HTTPError: return
            if s.get("llamacpp:tokens_predicted_total", 0) >= 600 and s.get("llamacpp:requests_processing", 0) >= 1:
                os.killpg(srv.proc.pid, signal.SIGKILL); return
            time.sleep(0.02)
    with srv.start(cfg.serve.startup_timeout):
        killer = threading.Thread(target=kill_when_busy); killer.start()
        with pytest.raises(BenchFailed) as failed: run_bench(cfg, run, srv)  # past bench.max_error_rate (0)
        killer.join()
    m = json.loads((run.dir/"bench"/"results.json").read_text())["summary"]  # written before it failed
    assert str(failed.value) == f"{m['failure']} (above bench.max_error_rate=0)"
    assert str(failed.value).startswith(f"{m['failed']} of 12 requests failed: "), failed.value
    assert srv.proc.returncode == -signal.SIGKILL
    assert m["completed"] + m["failed"] == 12 and m["failed"] >= 1, m
    assert sum(m["errors"].values()) == m["failed"]
    # streams open at the kill are "truncated" (unless the client had already read them whole from the socket
    # buffers: the tiny model outruns the client); later sends find no server. Nothing else, and no exception.
    assert set(m["errors"]) <= {"truncated", "transport: ConnectError", "transport: RemoteProtocolError", "transport: ReadError"}, m["errors"]

def test_launcher_stops_only_its_own_server(exported_run):
    run = exported_run
    a, b = serve_exported(run.cfg, run), serve_exported(run.cfg, run)
    b.log_path = b.log_path.with_name("server-b.log")
    with a.start(run.cfg.serve.startup_timeout), b.start(run.cfg.serve.startup_timeout):
        a.stop()
        assert a.proc.returncode is not None
        assert b.proc.poll() is None and httpx.get(b.base_url + "/health").status_code == 200
    assert b.proc.returncode is not None

def test_binds_loopback_by_default(exported_run):
    srv = serve_exported(exported_run.cfg, exported_run)
    assert srv.cmd[srv.cmd.index("--host") + 1] == "127.0.0.1"

def test_all_interfaces_without_a_key_is_refused():
    "Refused when the config is loaded, naming the key, long before any server starts; allowed with a key or on purpose."
    with pytest.raises(ConfigError, match=r"^<yaml>:1: serve.host='0.0.0.0' listens beyond this machine "
                                          r"without an API key"):
        load_config("serve: {host: 0.0.0.0}\n")
    assert load_config({"serve": {"host": "0.0.0.0", "api_key_env": "LLM_NB_TEST_KEY"}}).serve.host == "0.0.0.0"
    assert load_config({"serve": {"host": "0.0.0.0", "allow_no_key": True}}).serve.allow_no_key

def test_all_interfaces_on_purpose_is_served_and_said(exported_run, capsys):
    srv = serve_exported(cfg_of(exported_run, **{"serve.host": "0.0.0.0", "serve.allow_no_key": True}), exported_run)
    assert srv.cmd[srv.cmd.index("--host") + 1] == "0.0.0.0" and srv.api_key is None
    assert "without an API key (serve.allow_no_key)" in capsys.readouterr().out

def test_bench_cli_against_a_running_server(exported_run, tmp_path):
    from conftest import llm_nb_cmd
    run = exported_run
    with serve_exported(run.cfg, run).start(run.cfg.serve.startup_timeout) as srv:
        r = llm_nb_cmd("bench", srv.base_url, "--tokenizer", run.dir/"export"/"merged", "--out", tmp_path/"b",
                       "--set", "bench.dataset=random", "--set", "bench.num_prompts=4", "--set", "bench.request_rate=20",
                       "--set", "bench.goodput={ttft: 5000}")
        assert r.returncode == 0, r.stderr[-2000:]
        bad = llm_nb_cmd("bench", srv.base_url, "--tokenizer", run.dir/"export"/"merged")
    assert "Successful requests" in r.stdout and "Request goodput" in r.stdout
    res = json.loads((tmp_path/"b"/"results.json").read_text())
    assert res["summary"]["completed"] == 4 and res["config"]["request_rate"] == 20
    assert (tmp_path/"b"/"bench.png").exists()
    assert bad.returncode == 2 and "bench.dataset=text needs a run" in bad.stderr

def test_vllm_commands_from_the_run(exported_run, monkeypatch):
    "The vLLM path is only built here (no GPU): merged folder, GGUF + tokenizer, or base + LoRA adapter; key by env."
    run = exported_run
    monkeypatch.setenv("LLM_NB_TEST_KEY", "sk-vllm")
    flag = lambda cmd, f: cmd[cmd.index(f) + 1]
    merged = serve_exported(cfg_of(run, **{"serve.engine": "vllm", "serve.model": "merged", "serve.api_key_env": "LLM_NB_TEST_KEY"}), run)
    assert merged.engine == "vllm" and merged.health == "/health" and merged.key_env == "VLLM_API_KEY"
    assert flag(merged.cmd, "--model") == str(run.dir/"export"/"merged") and "sk-vllm" not in " ".join(merged.cmd)
    gguf = serve_exported(cfg_of(run, **{"serve.engine": "vllm", "serve.model": "q8_0"}), run)
    assert flag(gguf.cmd, "--model").endswith("model-q8_0.gguf") and flag(gguf.cmd, "--tokenizer") == str(run.dir/"export"/"merged")
    lora = serve_exported(cfg_of(run, **{"serve.engine": "vllm", "serve.lora": True}), run)
    assert flag(lora.cmd, "--lora-modules") == f"model={run.dir/'train'/'adapter'}" and flag(lora.cmd, "--max-lora-rank") == "8"
    assert flag(lora.cmd, "--served-model-name") == "model-base" and lora.model_name == "model"
    with pytest.raises(FileNotFoundError, match="q5_k_m"):
        serve_exported(cfg_of(run, **{"serve.engine": "vllm", "serve.model": "q5_k_m"}), run)

def test_llama_server_answers_chat_with_the_training_template(exported_run):
    """The template the model was trained with travels into the GGUF: llama-server answers /v1/chat/completions, and the
    prompt it renders for a conversation is, token for token, the one training rendered."""
    run = exported_run
    cfg = cfg_of(run, **{"serve.engine": "llama_server", "bench.endpoint": "chat", "bench.num_prompts": 4})
    with serve_exported(cfg, run).start(cfg.serve.startup_timeout) as server:
        m = run_bench(cfg, run, server)
        props = httpx.get(server.base_url + "/props", timeout=30).json()
        prompt = httpx.post(server.base_url + "/apply-template", json={"messages": CHAT}, timeout=30).json()["prompt"]
        served = httpx.post(server.base_url + "/tokenize", json={"content": prompt, "add_special": True,
                                                                 "parse_special": True}, timeout=30).json()["tokens"]
    assert (m["completed"], m["failed"]) == (4, 0), m["errors"]
    assert "<|im_start|>" in props.get("chat_template", ""), props.get("chat_template")
    assert served == training_ids(run.dir/"train"/"adapter"), (prompt, served)

def test_bench_cli_asks_the_server_for_its_model(exported_run, tmp_path):
    "Without --model, `llm_nb bench` sends the first model name the server lists at /v1/models."
    from conftest import llm_nb_cmd
    tok = exported_run.dir/"export"/"merged"
    with FakeOpenAI(ttft=0.01, itl=0.001, model="reviews-7b") as api:
        r = llm_nb_cmd("bench", api.url, "--tokenizer", tok, "--out", tmp_path/"b", "--set", "bench.dataset=random",
                       "--set", "bench.num_prompts=3")
        assert r.returncode == 0, r.stderr[-2000:]
        assert {body["model"] for body in api.requests} == {"reviews-7b"}
    gone = llm_nb_cmd("bench", api.url, "--tokenizer", tok, "--set", "bench.dataset=random")
    assert gone.returncode == 2 and "pass --model NAME" in gone.stderr, gone.stderr

def test_export_writes_the_adapter_as_a_gguf_lora(exported_run):
    "An adapter of low-rank pairs only is also a GGUF LoRA; llama.cpp's base + LoRA gives the merged model."
    from llm_nb.gguf import LORA_KLD_LIMIT
    c = exported_run.manifest()["stages"]["export"]["counts"]["lora_gguf"]
    out = exported_run.dir/"export"
    assert (out/c["file"]).stat().st_size == c["bytes"] and (out/c["base_file"]).exists(), c
    assert c["kld"] <= LORA_KLD_LIMIT and c["top1_agreement"] > 0.98, c  # the check the stage runs, as recorded
    assert c["base_kld"] > c["kld"], c  # five steps moved the model: the base alone is further from the merge
    par = exported_run.manifest()["stages"]["export"]["counts"]["parity"]  # every form, against PEFT
    assert list(par) == ["PEFT", "merged HF", "model-f16.gguf", "base-f16.gguf + adapter-f16.gguf"], par
    assert all(r["kld"] <= LORA_KLD_LIMIT and r["verdict"] == "pass" for r in par.values()), par  # each parting a near-tie
    assert (out/"parity.md").read_text().count("\n") == 2 + 4 + sum(len(r["partings"]) for r in par.values())  # a line each

def test_llama_server_serves_the_gguf_lora_as_the_merge(exported_run):
    """`serve.lora` on llama-server: the base GGUF with the run's GGUF LoRA answers greedily as the merged f16 GGUF does,
    lists the adapter, and takes a request's own scale."""
    run = exported_run
    prompts = ["the cat sat on", "这个手机怎么样", "hello world and"]
    def answers(server, **extra):
        ask = lambda p: httpx.post(server.base_url + "/v1/completions", timeout=60, json=dict(
            model="model", prompt=p, max_tokens=16, temperature=0, **extra)).json()["choices"][0]["text"]
        return [ask(p) for p in prompts]
    merged_cfg = cfg_of(run, **{"serve.engine": "llama_server", "serve.model": "f16"})
    with serve_exported(merged_cfg, run).start(merged_cfg.serve.startup_timeout) as server: merged = answers(server)
    cfg = cfg_of(run, **{"serve.engine": "llama_server", "serve.lora": True})
    srv = serve_exported(cfg, run)
    assert srv.cmd[srv.cmd.index("--model") + 1].endswith("base-f16.gguf") and "--lora" in srv.cmd
    with srv.start(cfg.serve.startup_timeout) as server:
        adapters = httpx.get(server.base_url + "/lora-adapters", timeout=30).json()
        with_lora, unscaled = answers(server), answers(server, lora=[{"id": 0, "scale": 0.0}])
    port = free_port()
    base_cmd = llama_server_cmd(llama_server_bin(), run.dir/"export"/"base-f16.gguf", cfg.serve, port)
    with Server(base_cmd, f"http://127.0.0.1:{port}", run.dir/"serve"/"base.log", model_name="model").start(120) as server:
        base = answers(server)
    assert with_lora == merged, (with_lora, merged)  # the adapter applied, as merged
    assert [Path(a["path"]).name for a in adapters] == ["adapter-f16.gguf"], adapters
    assert unscaled == base, (unscaled, base)  # a request's own scale is taken: at 0, the base alone

def test_lora_cost_is_measured_against_the_base_alone(exported_run, tmp_path):
    "`serve.lora`'s cost: the same load on the base served alone (no --lora), and the ratios of the two."
    from llm_nb.load_test import bench_server
    from llm_nb.serve_bench import lora_cost
    run = exported_run
    cfg = cfg_of(run, **{"serve.engine": "llama_server", "serve.lora": True, "bench.num_prompts": 8})
    with serve_exported(cfg, run, log_dir=tmp_path).start(cfg.serve.startup_timeout) as server:
        res = bench_server(cfg, run, server, tmp_path/"with", table=False, answers=False)
    cost = lora_cost(cfg, run, res)
    assert (run.dir/"bench"/"base-alone"/"results.json").exists()
    alone = serve_exported(cfg, run, adapter=False).cmd  # what lora_cost served: the base GGUF, no adapter
    assert alone[alone.index("--model") + 1].endswith("base-f16.gguf") and "--lora" not in alone, alone
    assert cost["output_throughput_ratio"] > 0 and cost["ttft_ratio"] > 0 and cost["base_output_throughput"] > 0, cost
