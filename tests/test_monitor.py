"""Monitoring for real: Debian's Prometheus (tools/install.sh --dev installs it) scrapes the exporter and llama-server
during the serve_bench stage; every dashboard panel of those sources returns data; promtool passes the generated rules."""
import json, shutil
import pytest, yaml
from llm_nb.config import load_config
from llm_nb.env import nvml_devices
from llm_nb.monitor import panels_for, promtool
from llm_nb.pipeline import run_serve_bench

@pytest.fixture(scope="module")
def monitored(exported_run):
    "The serve_bench stage with `monitor.prometheus` on, llama-server alone."
    assert shutil.which("prometheus") and shutil.which("promtool"), "Prometheus is missing: apt-get install prometheus"
    run = exported_run
    cfg = load_config(run.cfg.model_dump(), **{"monitor.prometheus": True, "monitor.scrape_interval": "1s",
                                                "serve.engine": "llama_server",
                                                "serve.compare": [], "bench.num_prompts": 16, "bench.output_len": 64})
    run_serve_bench(cfg, run)
    return run

def test_every_panel_of_the_sources_that_ran_returns_data(monitored):
    panels = json.loads((monitored.dir/"monitor"/"panels.json").read_text())
    sources = {"host", "llama_server"} | ({"gpu"} if nvml_devices()[1] else set())  # GPU panels where NVML answers
    assert {p["title"] for p in panels} == {t for t, _, _ in panels_for(sources)}
    assert all(p["series"] > 0 for p in panels), [p for p in panels if not p["series"]]
    assert monitored.report()["stages"]["monitor"]["empty_panels"] == []

def test_the_run_folder_holds_checked_prometheus_files(monitored):
    d = monitored.dir/"monitor"
    for args in (("check", "config", d/"prometheus.yml"), ("test", "rules", d/"alerts_test.yml")):
        r = promtool(*args)
        assert r.returncode == 0, r.stdout + r.stderr
    jobs = [j["job_name"] for j in yaml.safe_load((d/"prometheus.yml").read_text())["scrape_configs"]]
    assert jobs == ["llm_nb", "llama_server"]
    assert json.loads((d/"grafana"/"dashboards"/"llm_nb.json").read_text())["panels"]
