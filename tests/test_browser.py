"""A real browser runs the quick start in JupyterLab, as a new user does: Debian's Chromium, driven by Playwright, opens
JupyterLab (on 127.0.0.1, started here and stopped by PID) on a copy of `nbs/00_quickstart.ipynb` in a folder of its
own, runs the form's cell, types a new `max_steps` into the form and clicks Run All. It fails when the run did not
train the typed number of steps (Run All rebuilt the form from the defaults), when Run All takes more than 3 minutes
(the quick start's promise; the notebook alone takes about half that here) or leaves no run in `runs/quickstart` of
that folder (the run persists: the test command's LLM_NB_TEMP_RUNS is not passed on), on "Error displaying widget", a
widget that failed to render (ipywidgets' "Click to show javascript error": the browser console's errors are in the
message), a widget stuck at "Loading widget...", an error output, a dashboard drawn more than once (it must update one
picture in place) or showing fewer than 5 distinct steps while training runs, and on a form that does not show a wrong
value's error next to its field. Screenshots of the form (with the typed value, then with an error), of the live
dashboard at three moments while training runs and of the notebook go to `runs/browser-check/` (or
`$LLM_NB_ARTIFACTS`), with `quickstart.json` (Run All's seconds, the steps the dashboard showed), for people to look
at."""
import json, os, re, secrets, shutil, signal, subprocess, sys, tempfile, time, urllib.parse
from pathlib import Path
import httpx
from llm_nb.env import free_port

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
QUICKSTART = ROOT/"nbs"/"00_quickstart.ipynb"
RUN_ALL_S = 180  # the quick start's promise: Run All in at most 3 minutes on 2 cores
TYPED_STEPS = 240  # typed into the form's max_steps before Run All (the demo's 300 minus a fifth: it still learns)

def write_notebook(folder:Path) -> Path:
    "The quick start, copied into `folder` (its project root: runs/ goes there)."
    p = folder/"quickstart.ipynb"
    shutil.copy(QUICKSTART, p)
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
    env = {k: v for k, v in os.environ.items() if k != "LLM_NB_TEMP_RUNS"}  # the run persists, as for a user
    env["JUPYTERLAB_SETTINGS_DIR"] = str(folder/"lab-settings")
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

def code_cell(page, code:str):
    "The notebook's cell whose input holds `code`."
    return page.locator(".jp-Notebook .jp-Cell").filter(has=page.locator(".jp-InputArea", has_text=code)).first

def no_broken_widget(page, console:list) -> None:
    "Fail when a widget shows ipywidgets' error box, with the browser console's errors (the error's text is there)."
    broken = page.locator(".jupyter-widgets-error-widget").count()
    assert broken == 0, f"{broken} widget(s) failed to render; browser console errors:\n" + "\n".join(console)[-4000:]

def drive(page, url:str, art:Path) -> dict:
    "Open the quick start at `url`, Run All, check the form and the live dashboard, take the screenshots."
    console = []  # the browser's console errors, for the message when a widget breaks
    page.on("console", lambda m: console.append(m.text) if m.type == "error" and "404" not in m.text else None)
    page.goto(url)
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=90_000)
    time.sleep(3)  # the kernel is idle; let the page settle before using the menu
    form, train, last = (code_cell(page, c) for c in ("form = ConfigEditor", 'run_pipeline(cfg, ["train"])',
                                                      "for d in sorted("))
    type_steps(page, form, art)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_text("Run All Cells", exact=True).click()
    t0 = time.time()
    prompt = lambda cell: cell.locator(".jp-InputPrompt").inner_text()
    form.locator(".jp-OutputArea-output .widget-toggle-buttons").first.wait_for(timeout=120_000)
    form.get_by_text(f"→ {TYPED_STEPS}").first.wait_for(timeout=120_000)  # Run All kept the typed value
    assert page.get_by_text("Error displaying widget").count() == 0
    no_broken_widget(page, console)
    plot = train.locator(".jp-OutputArea-output img")
    plot.first.wait_for(timeout=RUN_ALL_S * 1000)
    steps, shots = set(), 0  # the step each picture says, while the training cell runs
    while "*" in prompt(train) and time.time() - t0 < RUN_ALL_S:
        src = plot.first.get_attribute("src") or ""
        if src.startswith("data:image/svg+xml"):
            seen = re.findall(r"step (\d+) of \d+", urllib.parse.unquote(src))
            if seen and int(seen[0]) not in steps and shots < 3:  # a few moments, for people to look at
                train.locator(".jp-OutputArea").screenshot(path=str(art/f"live_dashboard_{shots + 1}.png"))
                shots += 1
            steps.update(map(int, seen))
        time.sleep(0.25)  # the dashboard redraws twice a second; reading it more often takes CPU from training
    assert len(steps) >= 5, f"the dashboard showed steps {sorted(steps)} while training ran: not live"
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.error']")
    finished = last.locator(".jp-OutputArea-output", has_text="export/")  # the last cell's listing of the run
    finished.or_(errors).first.wait_for(timeout=max(1, RUN_ALL_S + 60 - (time.time() - t0)) * 1000)
    seconds = time.time() - t0
    assert errors.count() == 0, errors.first.inner_text()[:3000]
    page.screenshot(path=str(art/"notebook.png"))
    assert plot.count() == 1, f"the dashboard left {plot.count()} pictures: it must update one in place"
    rows = train.locator(".jp-OutputArea-output table tr").count()
    assert rows <= 3, f"{rows} table rows under the training: the Trainer's loss table is back"  # final eval table
    assert page.get_by_text("Error displaying widget").count() == 0
    assert page.get_by_text("Loading widget...").count() == 0, "a widget never rendered"
    no_broken_widget(page, console)
    check_form(page, form, art)
    return dict(run_all_s=round(seconds, 1), dashboard_steps=sorted(steps))

def max_steps_box(page, cell):
    "The `max_steps` input on the form's train page."
    cell.get_by_role("button", name="train", exact=True).click()
    row = cell.locator(".widget-hbox").filter(has=page.locator("code", has_text=re.compile(r"^max_steps$")))
    return row.locator("input")

def type_steps(page, cell, art:Path) -> None:
    "Run the form's cell alone, as a person opening the notebook does, and type `TYPED_STEPS` into `max_steps`."
    cell.locator(".jp-InputArea-editor").click()
    page.keyboard.press("Shift+Enter")
    cell.locator(".jp-OutputArea-output .widget-toggle-buttons").first.wait_for(timeout=120_000)
    box = max_steps_box(page, cell)
    box.fill(str(TYPED_STEPS))
    box.press("Enter")
    cell.get_by_text(f"→ {TYPED_STEPS}").first.wait_for(timeout=30_000)  # the line of changes
    cell.locator(".jp-OutputArea").screenshot(path=str(art/"config_form.png"))

def check_form(page, cell, art:Path) -> None:
    "In the form: a wrong number on the train page, Check, and the error next to the field, naming the key."
    cell.scroll_into_view_if_needed()
    box = max_steps_box(page, cell)
    box.fill("0")
    box.press("Enter")
    cell.get_by_role("button", name="Check").click()
    cell.get_by_text("train.max_steps: Input should be greater than 0 (got 0)").first.wait_for(timeout=30_000)
    cell.locator(".jp-OutputArea").screenshot(path=str(art/"config_form_error.png"))

def test_quickstart_in_a_real_browser():
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium")
    assert chromium, "Chromium is missing: apt-get install chromium (tools/install.sh --dev does, as root)"
    art = Path(os.environ.get("LLM_NB_ARTIFACTS", ROOT/"runs"/"browser-check"))
    art.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="llm_nb-browser-"))
    nb = write_notebook(folder)
    port, token = free_port(), secrets.token_hex(16)
    lab = start_lab(folder, port, token)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS, headless=True)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            try: seen = drive(page, f"http://127.0.0.1:{port}/lab/tree/{nb.name}?token={token}", art)
            except Exception:
                page.screenshot(path=str(art/"failure.png"))
                raise
            finally: browser.close()
    finally: stop(lab)
    (art/"quickstart.json").write_text(json.dumps(seen))
    print(f"quick start in Chromium: Run All {seen['run_all_s']} s, the dashboard showed {len(seen['dashboard_steps'])}"
          f" steps")
    report = json.loads((folder/"runs"/"quickstart"/"report.json").read_text())  # the run stayed where it ran
    assert {"train", "evaluate", "export"} <= set(report["stages"]), sorted(report["stages"])
    assert report["stages"]["train"]["steps"] == TYPED_STEPS, report["stages"]["train"]  # what the form showed ran
    assert seen["run_all_s"] <= RUN_ALL_S, seen
    for name in ("config_form.png", "config_form_error.png", "live_dashboard_1.png", "notebook.png"):
        assert (art/name).stat().st_size > 10_000, name  # a real picture, not an empty box
    shutil.rmtree(folder, ignore_errors=True)
