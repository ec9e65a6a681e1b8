"The served model as a subprocess: API key, secrets kept out of files, and a server that dies mid-benchmark."
import os, signal, httpx, pytest
from llm_nb.serve import serve_exported
from llm_nb.bench import run_bench

def test_api_key_required_and_never_written(exported_run, monkeypatch):
    run = exported_run
    cfg = run.cfg.model_copy(deep=True); cfg.serve.api_key_env = "LLM_NB_TEST_KEY"
    secret = "sk-test-7f3a9c"
    monkeypatch.setenv("LLM_NB_TEST_KEY", secret)
    srv = serve_exported(cfg, run)
    assert secret not in " ".join(srv.cmd)
    with srv.start(cfg.serve.startup_timeout):
        assert httpx.get(srv.base_url + "/v1/models").status_code == 401
        assert httpx.get(srv.base_url + "/v1/models", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(srv.base_url + "/v1/models", headers=srv.headers).status_code == 200
        cfg.bench.n_requests = 2
        m = run_bench(cfg, run, srv)
        assert m["completed"] == 2
    for f in run.dir.rglob("*"):
        if f.is_file() and f.stat().st_size < 50_000_000:
            assert secret.encode() not in f.read_bytes(), f"API key leaked into {f}"

def test_missing_key_env_is_an_error(exported_run, monkeypatch):
    cfg = exported_run.cfg.model_copy(deep=True); cfg.serve.api_key_env = "LLM_NB_UNSET_KEY"
    monkeypatch.delenv("LLM_NB_UNSET_KEY", raising=False)
    with pytest.raises(KeyError, match="LLM_NB_UNSET_KEY"): serve_exported(cfg, exported_run)

def test_server_killed_mid_benchmark_gives_a_report(exported_run):
    run = exported_run
    cfg = run.cfg.model_copy(deep=True); cfg.bench.n_requests = 4
    srv = serve_exported(cfg, run)
    with srv.start(cfg.serve.startup_timeout):
        os.killpg(srv.proc.pid, signal.SIGKILL); srv.proc.wait()
        m = run_bench(cfg, run, srv)
    assert m["completed"] == 0 and m["failed"] == 4
    assert sum(m["errors"].values()) == 4 and all(k.startswith("transport") for k in m["errors"])

def test_binds_loopback_by_default(exported_run):
    srv = serve_exported(exported_run.cfg, exported_run)
    assert srv.cmd[srv.cmd.index("--host") + 1] == "127.0.0.1"
