"""Monitoring for real: Debian's Prometheus (tools/install.sh --dev installs it) scrapes the exporter (with the run's
training series) and llama-server during the serve_bench stage; every dashboard panel of those sources returns data;
promtool passes the generated rules; `llm_nb serve`'s watchdog starts a killed server again."""
import json, os, re, shutil, signal, subprocess, sys
import httpx, psutil, pytest, yaml
from llm_nb.config import load_config, to_yaml
from llm_nb.env import nvml_devices
from llm_nb.monitor import panels_for, promtool
from llm_nb.pipeline import run_serve_bench
from conftest import wait_for

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
    sources = {"host", "train", "llama_server"} | ({"gpu"} if nvml_devices()[1] else set())  # GPU: where NVML answers
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

def _metrics(addr:str) -> dict:
    "The exporter's samples: {(name, labels as a sorted tuple): value}."
    from prometheus_client.parser import text_string_to_metric_families
    fams = text_string_to_metric_families(httpx.get(f"http://{addr}/metrics", timeout=10).text)
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams for s in f.samples}

def _wait(what, seconds:float=60): return wait_for(what, seconds, poll=0.2)

def test_llm_nb_serve_restarts_a_killed_server_and_stops_on_sigterm(exported_run, tmp_path):
    "`llm_nb serve` with the watchdog and exporter on: SIGKILL the server, the watchdog starts it again, SIGTERM ends all."
    run = exported_run
    cfg = tmp_path/"serve.yaml"
    cfg.write_text(to_yaml(load_config(run.cfg.model_dump(), **{
        "serve.engine": "llama_server", "monitor.watchdog": True, "monitor.exporter": True,
        "monitor.watchdog_interval_s": 0.5, "monitor.watchdog_backoff_s": 0.1})))
    log = run.dir/"monitor"/"watchdog.log"
    log.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "llm_nb.cli", "serve", str(cfg)], stdout=subprocess.PIPE,
                            text=True)
    try:
        line = proc.stdout.readline()
        m = re.match(r"serve: llama_server on (\S+) \(pid (\d+),.*exporter on http://(\S+)/metrics", line)
        assert m, line
        base, first, addr = m.group(1), int(m.group(2)), m.group(3)
        os.kill(first, signal.SIGKILL)  # as the OOM killer would
        _wait(lambda: log.exists() and "started again" in log.read_text())
        assert f"pid {first}: process gone; restarting after 0.1s (restart 1)" in log.read_text()
        assert httpx.get(base + "/health", timeout=10).status_code == 200  # served again
        got = _metrics(addr)
        assert got[("llm_nb_watchdog_restarts_total", ())] == 1
        pids = [dict(k[1])["pid"] for k in got if k[0] == "llm_nb_process_rss_bytes"]
        assert pids and pids != [str(first)], pids  # the exporter follows the new PID
        assert ("llm_nb_train_loss", (("run", run.cfg.run.name),)) in got  # the run's training series
        new = int(pids[0])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert not psutil.pid_exists(new) or psutil.Process(new).status() == psutil.STATUS_ZOMBIE
    finally:
        if proc.poll() is None: proc.kill()

def test_the_exporter_follows_a_run_while_it_trains(exported_run, tmp_path):
    "`llm_nb exporter`'s collector scraped during training: the step it exports grows, the loss is there before the end."
    import threading
    from llm_nb.monitor import TrainingCollector, start_exporter
    from llm_nb.run import Run
    from llm_nb.train import run_train
    live = tmp_path/"live"
    later = {"train", "evaluate", "export", "serve", "bench", "monitor"}  # the stages from train on: not copied
    top = str(exported_run.dir)
    shutil.copytree(exported_run.dir, live, ignore=lambda d, names: later & set(names) if d == top else [])
    cfg = load_config(exported_run.cfg.model_dump(), **{"run.root": str(tmp_path), "run.name": "live",
                                                        "train.max_steps": 30, "train.logging_steps": 1})
    exp, addr = start_exporter({}, collectors=[TrainingCollector(live/"train"/"series.jsonl", "live")])
    steps, done = [], threading.Event()
    def scrape():
        while not done.wait(0.2):
            if (s := _metrics(addr).get(("llm_nb_train_step", (("run", "live"),)))) is not None: steps.append(s)
    t = threading.Thread(target=scrape)
    t.start()
    try: run_train(cfg, Run(live, cfg))
    finally:
        done.set()
        t.join()
        final = _metrics(addr)
        exp.shutdown()
    assert len(set(steps)) >= 3 and steps == sorted(steps), steps  # seen growing while it trained
    assert final[("llm_nb_train_step", (("run", "live"),))] == 30
    assert ("llm_nb_train_tokens_per_second", (("run", "live"),)) in final
