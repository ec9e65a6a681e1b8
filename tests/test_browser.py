"""A real browser runs a notebook in JupyterLab, as a user does: Debian's Chromium, driven by Playwright, opens
JupyterLab (on 127.0.0.1, started here and stopped by PID) and runs all cells of a notebook that shows the config
form of `06_editor` and trains the tiny model with the live dashboard of `23_track`. It fails on "Error displaying
widget", a widget stuck at "Loading widget...", an error output, a dashboard drawn more than once (it must update
one picture in place) or never updated while training runs, and on a form that does not show a wrong value's error
next to its field, or a dashboard that shows fewer than 5 distinct steps of a 30-step training at the default
settings. Screenshots of the form (before and after), of the live plot at three moments while training runs and of
the notebook go to `runs/browser-check/` (or `$LLM_NB_ARTIFACTS`), for people to look at."""
import json, os, re, secrets, shutil, signal, socket, subprocess, sys, tempfile, time, urllib.parse
from pathlib import Path
import httpx

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CELLS = [  # the notebook the browser runs
    "from llm_nb.config import demo_config\nfrom llm_nb.editor import ConfigEditor\n"
    "editor = ConfigEditor(demo_config())\neditor",
    "from llm_nb.testing import run_until\nfrom llm_nb.train import run_train\n"
    "run = run_until('train', **{'train.max_steps': 30, 'train.logging_steps': 1, 'track.sample_s': 0.5,\n"
    "                            'track.wandb': 'disabled'})",
    "import time\ntime.sleep(2)  # the first redraw of the next cell must come after the page has settled\n"
    "counts = run_train(run.cfg, run)",
    "assert counts['steps'] == 30\nprint('done')",
]

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

def write_notebook(folder:Path) -> Path:
    "The notebook of CELLS, for the python3 kernel."
    cells = [dict(cell_type="code", execution_count=None, id=f"c{i}", metadata={}, outputs=[], source=src)
             for i, src in enumerate(CELLS)]
    nb = dict(cells=cells, metadata=dict(kernelspec=dict(name="python3", display_name="Python 3", language="python")),
              nbformat=4, nbformat_minor=5)
    p = folder/"browser_check.ipynb"
    p.write_text(json.dumps(nb))
    return p

def start_lab(folder:Path, port:int, token:str) -> subprocess.Popen:
    "JupyterLab on 127.0.0.1:`port` serving `folder`, in its own process group; returns once it answers."
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}", "--allow-root",
           f"--ServerApp.root_dir={folder}", f"--IdentityProvider.token={token}", "--LabApp.news_url=None",
           "--LabApp.extension_manager=readonly", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    settings = folder/"lab-settings"/"@jupyterlab"/"notebook-extension"
    settings.mkdir(parents=True)
    (settings/"tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))  # render every cell
    (folder/"lab-settings"/"@jupyterlab"/"apputils-extension").mkdir()
    (folder/"lab-settings"/"@jupyterlab"/"apputils-extension"/"notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))  # no news pop-up over the outputs
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(folder/"lab-settings"))
    log = open(folder/"jupyterlab.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, cwd=folder, env=env)
    deadline = time.time() + 90
    while time.time() < deadline:
        assert proc.poll() is None, (folder/"jupyterlab.log").read_text()[-3000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/status", params={"token": token}, timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError: pass
        time.sleep(0.5)
    raise TimeoutError("JupyterLab did not answer in 90 s:\n" + (folder/"jupyterlab.log").read_text()[-3000:])

def stop(proc:subprocess.Popen) -> None:
    "Stop a process group by its leader's PID (JupyterLab and its kernels)."
    try: os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError: return
    try: proc.wait(20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

def drive(page, url:str, art:Path) -> None:
    "Open the notebook at `url`, Run All, check the form and the live dashboard, take the screenshots."
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    time.sleep(3)  # the kernel is idle; let the page settle before using the menu
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    cells = page.locator(".jp-Notebook .jp-Cell")
    prompt = lambda i: cells.nth(i).locator(".jp-InputPrompt").inner_text()
    page.wait_for_function("() => /\\[[0-9*]+\\]/.test(document.querySelector('.jp-Notebook .jp-InputPrompt')"
                           ".textContent)", timeout=30_000)  # Run All started
    cells.nth(0).locator(".jp-OutputArea-output .widget-toggle-buttons").first.wait_for(timeout=120_000)
    time.sleep(1)
    cells.nth(0).locator(".jp-OutputArea").screenshot(path=str(art/"config_form.png"))
    assert page.get_by_text("Error displaying widget").count() == 0
    plot = cells.nth(2).locator(".jp-OutputArea-output img")
    plot.first.wait_for(timeout=300_000)
    steps, shots, t0 = set(), 0, time.time()  # the step each picture says, while the training cell runs
    while "*" in prompt(2) and time.time() - t0 < 300:
        src = plot.first.get_attribute("src") or ""
        if src.startswith("data:image/svg+xml"):
            seen = re.findall(r"step (\d+) of 30", urllib.parse.unquote(src))
            if seen and int(seen[0]) not in steps and shots < 3:  # a few moments, for people to look at
                cells.nth(2).locator(".jp-OutputArea").screenshot(path=str(art/f"live_dashboard_{shots + 1}.png"))
                shots += 1
            steps.update(map(int, seen))
        time.sleep(0.05)
    assert len(steps) >= 5, f"the dashboard showed steps {sorted(steps)} of a 30-step training: not live"
    cells.nth(2).scroll_into_view_if_needed()
    cells.nth(3).locator(".jp-OutputArea-output", has_text="done").wait_for(timeout=300_000)
    page.screenshot(path=str(art/"notebook.png"))
    assert plot.count() == 1, f"the dashboard left {plot.count()} pictures: it must update one in place"
    rows = cells.nth(2).locator(".jp-OutputArea-output table tr").count()
    assert rows <= 3, f"{rows} table rows under the training: the Trainer's loss table is back"  # final eval table
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    assert errors.count() == 0, errors.first.inner_text()[:3000]
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.get_by_text("Loading widget...").count() == 0, "a widget never rendered"
    check_form(page, cells.nth(0), art)

def check_form(page, cell, art:Path) -> None:
    "In the form: a wrong number on the train page, Check, and the error next to the field, naming the key."
    cell.scroll_into_view_if_needed()
    cell.get_by_role("button", name="train", exact=True).click()
    row = cell.locator(".widget-hbox").filter(has=page.locator("code", has_text=re.compile(r"^max_steps$")))
    row.locator("input").fill("0")
    row.locator("input").press("Enter")
    cell.get_by_role("button", name="Check").click()
    cell.get_by_text("train.max_steps: Input should be greater than 0 (got 0)").first.wait_for(timeout=30_000)
    cell.locator(".jp-OutputArea").screenshot(path=str(art/"config_form_error.png"))

def test_notebook_in_a_real_browser():
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium")
    assert chromium, "Chromium is missing: apt-get install chromium (tools/install.sh --dev does, as root)"
    art = Path(os.environ.get("LLM_NB_ARTIFACTS", ROOT/"runs"/"browser-check"))
    art.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="llm_nb-browser-"))
    write_notebook(folder)
    port, token = free_port(), secrets.token_hex(16)
    lab = start_lab(folder, port, token)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            try: drive(page, f"http://127.0.0.1:{port}/lab/tree/browser_check.ipynb?token={token}", art)
            except Exception:
                page.screenshot(path=str(art/"failure.png"))
                raise
            finally: browser.close()
    finally: stop(lab)
    for name in ("config_form.png", "config_form_error.png", "live_dashboard_1.png", "notebook.png"):
        assert (art/name).stat().st_size > 10_000, name  # a real picture, not an empty box
