"""The watchdog meets the failures it is there for, on a stand-in server (the shared `FakeOpenAI`, no model): a restart
that finds the port held, a server that crashes while loading, a start that never gets healthy, and a quiet period
that gives the restart budget back. Each test takes a few seconds."""
import contextlib, os, signal, socket, sys, threading, time
import httpx, pytest
from prometheus_client import CollectorRegistry, generate_latest
from llm_nb.config import demo_config
from llm_nb.monitor import Watchdog, serve_watched
from llm_nb.run import Run
from llm_nb.serve import Server
from llm_nb.env import free_port
from conftest import wait_for

FAKE = """
import pathlib, signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # stopped by SIGINT even from a job that ignores it (nohup, CI)
port, mode = sys.argv[1], pathlib.Path(sys.argv[2]).read_text().strip()
if mode == "crash": sys.exit("crashed while loading the model")  # exits 1 before it answers
if mode == "hang": time.sleep(3600)  # never answers
from llm_nb.testing import serve_fake_openai
serve_fake_openai([port])  # healthy: GET /v1/models answers 200
"""

def fake_server(d, mode:str="ok") -> tuple[Server, object]:
    "A stand-in server (healthy at /v1/models) and the file whose text (ok, crash, hang) says how its next start goes."
    (d/"fake.py").write_text(FAKE)
    (modef := d/"mode").write_text(mode)
    port = free_port()
    return Server([sys.executable, str(d/"fake.py"), str(port), str(modef)], f"http://127.0.0.1:{port}",
                  d/"fake.log", health="/v1/models", engine="fake"), modef

@contextlib.contextmanager
def watching(server, **kw):
    "A `Watchdog` (no leak limit reached: only a gone process restarts) checking `server` in a thread around the block."
    wd = Watchdog(server, limit=2**50, interval=0.05, log_path=server.log_path.parent/"watchdog.log", **kw)
    stop = threading.Event()
    wd.thread = threading.Thread(target=wd.run, args=(stop,), daemon=True)
    wd.thread.start()
    try: yield wd
    finally:
        stop.set()
        wd.thread.join(30)

def _wait(what, seconds:float=20): return wait_for(what, seconds, poll=0.02)

def _bound(s:socket.socket, port:int) -> bool:
    try: s.bind(("127.0.0.1", port))
    except OSError: return False
    return True

@contextlib.contextmanager
def holding(port:int):
    "A listener on `port` (as a leftover child or another program would be) that hangs up on whoever connects."
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    _wait(lambda: _bound(s, port), 5)  # free once the killed server is gone
    s.listen()
    s.settimeout(0.05)
    done = threading.Event()
    def hang_up():
        while not done.is_set():
            with contextlib.suppress(OSError): s.accept()[0].close()
    t = threading.Thread(target=hang_up)
    t.start()
    try: yield
    finally:
        done.set()
        t.join()
        s.close()

def _started(wd) -> int: return sum("started again" in a for a in wd.actions)

def test_a_restart_that_finds_the_port_held_is_tried_again(tmp_path):
    server, _ = fake_server(tmp_path)
    with server.start(10), watching(server, backoff=0.5, max_restarts=4) as wd:
        first = server.proc.pid
        os.kill(first, signal.SIGKILL)  # as the OOM killer would
        with holding(int(server.base_url.rsplit(":", 1)[1])):  # taken during the 0.5 s backoff
            _wait(lambda: wd.errors)
        _wait(lambda: _started(wd))  # the next restart, after the port is free again
        assert httpx.get(server.base_url + "/v1/models", timeout=5).status_code == 200
        assert (wd.restarts, wd.errors, wd.gave_up) == (2, 1, False)
    log = (tmp_path/"watchdog.log").read_text()
    assert f"pid {first}: process gone; restarting after 0.5s (restart 1)" in log
    assert "restart 1 failed: RuntimeError: server exited with 1 before it was healthy" in log
    assert "Address already in use" in log  # the server's log tail, in the watchdog's log
    assert "restarting after 1s (restart 2)" in log
    reg = CollectorRegistry()
    reg.register(wd)
    text = generate_latest(reg).decode()
    assert "llm_nb_watchdog_errors_total 1.0" in text and "llm_nb_watchdog_restarts_total 2.0" in text

def test_serve_watched_exits_1_with_the_reason_when_every_restart_crashes_while_loading(tmp_path, capsys):
    server, mode = fake_server(tmp_path)
    cfg = demo_config(**{"run.root": str(tmp_path), "monitor.watchdog": True, "monitor.watchdog_interval_s": 0.05,
                         "monitor.watchdog_backoff_s": 0.05, "monitor.watchdog_max_restarts": 3,
                         "serve.startup_timeout": 10})
    run, got = Run.create(cfg), {}
    t = threading.Thread(target=lambda: got.update(rc=serve_watched(cfg, run, threading.Event(), 60, server=server)))
    t0 = time.monotonic()
    t.start()
    _wait(lambda: "serve: fake on" in capsys.readouterr().out)
    mode.write_text("crash")
    os.kill(server.proc.pid, signal.SIGKILL)
    t.join(30)
    assert got == {"rc": 1} and time.monotonic() - t0 < 20
    out = capsys.readouterr().out
    assert ("serve: the watchdog gave up: pid " in out and "process gone; 3 restarts within 600s spent; last error: "
            "RuntimeError: server exited with 1 before it was healthy\n" in out), out
    assert "crashed while loading the model" in out  # the server's log tail
    log = (run.dir/"monitor"/"watchdog.log").read_text()
    assert [f"restarting after {w:g}s (restart {n})" in log for n, w in ((1, 0.05), (2, 0.1), (3, 0.2))] == [True] * 3
    assert log.count("failed: RuntimeError: server exited with 1 before it was healthy") == 3, log

def test_a_restart_that_never_gets_healthy_times_out_and_counts(tmp_path):
    server, mode = fake_server(tmp_path)
    with server.start(10), watching(server, backoff=0.05, max_restarts=2, start_timeout=0.5) as wd:
        mode.write_text("hang")
        os.kill(server.proc.pid, signal.SIGKILL)
        _wait(lambda: wd.gave_up)  # two starts that time out, each stopped by SIGINT
    assert (wd.restarts, wd.errors) == (2, 2)
    assert wd.reason.endswith("2 restarts within 600s spent; last error: TimeoutError: server not healthy after "
                              f"0.5s at {server.base_url}/v1/models"), wd.reason
    assert server.proc.poll() is not None  # the start that timed out stopped what it started
    assert not wd.thread.is_alive()

@pytest.mark.parametrize("quiet,gives_up", [(0.5, False), (60, True)])
def test_the_budget_is_whole_again_after_a_quiet_period(tmp_path, quiet, gives_up):
    "One restart allowed: killed twice with a quiet period between, it is restarted twice; without one, it gives up."
    server, _ = fake_server(tmp_path)
    with server.start(10), watching(server, backoff=0.05, max_restarts=1, quiet=quiet) as wd:
        os.kill(server.proc.pid, signal.SIGKILL)
        _wait(lambda: _started(wd) == 1)
        time.sleep(0.8)
        os.kill(server.proc.pid, signal.SIGKILL)
        _wait(lambda: wd.gave_up or _started(wd) == 2)
    assert (wd.gave_up, wd.restarts) == (gives_up, 1 if gives_up else 2)
    log = (tmp_path/"watchdog.log").read_text()
    assert log.count("restarting after 0.05s (restart 1)") == wd.restarts  # the first backoff again
    assert ("restarts allowed again" in log) != gives_up
