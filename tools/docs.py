"""Build the docs site offline from notebooks run in a real kernel, and check it in Chromium.

    python tools/run_nbs.py --save _docs/executed       # every notebook run as Run All does, outputs kept
    python tools/docs.py [--executed _docs/executed] [--out _docs/site] [--check] [--screens runs/docs-check]

`nbdev_docs` needs Quarto, which cannot be installed everywhere (not here: no package, no GitHub). This route needs
neither Quarto nor a CDN:
- each executed notebook (its outputs: plots, tables, widget views with their state) becomes one HTML page
  (nbconvert's lab template); `index.ipynb` becomes `index.html`;
- after every `#| export` cell come the API docs of what it defines (nbdev's `show_doc`, rendered at build time);
- `#| hide` and `#| default_exp` cells are left out and `#|` lines dropped; links to notebooks point at pages;
- every page has a bar of links to all pages; widgets are drawn by @jupyter-widgets/html-manager with RequireJS,
  fetched once with `npm pack` (pinned versions, checked against the registry's sha1; node comes with
  tools/install.sh --dev), cached in
  ~/.cache/llm_nb/docs-js and served from the site's static/ folder; other remote scripts (MathJax) are dropped.
With --check, Chromium (Playwright, `executable_path` = `which chromium`) opens every page from an HTTP server on
127.0.0.1 and fails on a JavaScript error, a request to another host, an image that does not load, a local link to
a missing page, or a widget view that does not render; a screenshot of each page (and of its first plot and widget)
goes to runs/docs-check/ (or --screens).
"""
from __future__ import annotations
import argparse, ast, functools, hashlib, html, importlib, io, os, re, shutil, sys, tarfile, threading, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JS = {"embed-amd.js": ("@jupyter-widgets/html-manager", "1.0.15", "3d82fba512edcab82512e679be25c917f1b83fd1",
                       "package/dist/embed-amd.js"),
      "require.js": ("requirejs", "2.3.8", "bca0614b618ab2122462597e44878db7558bbba3", "package/require.js")}
CACHE = Path(os.environ.get("LLM_NB_CACHE", Path.home()/".cache"/"llm_nb"))/"docs-js"
DIRECTIVE = re.compile(r"^#\|\s*(\S+)")
REMOTE_SCRIPT = re.compile(r"<script[^>]*\ssrc=\"https?://[^\"]*\"[^>]*>\s*</script>", re.I)


def fetch_js(name:str) -> Path:
    "One of JS, from the cache or through `npm pack` (tarball checked against its sha1)."
    pkg, version, sha1, member = JS[name]
    out = CACHE/f"{version}-{name}"
    if out.exists(): return out
    import subprocess, tempfile
    with tempfile.TemporaryDirectory() as d:  # npm, the ordinary client, fetches the package's tarball
        r = subprocess.run(["npm", "pack", f"{pkg}@{version}", "--pack-destination", d, "--silent"],
                           capture_output=True, text=True, timeout=300)
        if r.returncode: raise RuntimeError(f"npm pack {pkg}@{version} failed: {r.stderr.strip()}")
        data = (Path(d)/r.stdout.strip().splitlines()[-1]).read_bytes()
    if hashlib.sha1(data).hexdigest() != sha1: raise RuntimeError(f"npm pack {pkg}@{version}: sha1 is not {sha1}")
    with tarfile.open(fileobj=io.BytesIO(data)) as t: js = t.extractfile(member).read()
    CACHE.mkdir(parents=True, exist_ok=True)
    out.write_bytes(js)
    return out


def directives(src:str) -> set[str]:
    "The `#|` directives of a cell (`export`, `hide`, ...)."
    return {m.group(1) for l in src.splitlines() if (m := DIRECTIVE.match(l))}


def api_markdown(src:str, module) -> str:
    "The show_doc Markdown of the public functions and classes an export cell defines (found in `module`)."
    from nbdev.showdoc import show_doc
    try: tree = ast.parse(src)
    except SyntaxError: return ""
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")]
    docs = [show_doc(getattr(module, n), title_level=4)._repr_markdown_() for n in names if hasattr(module, n)]
    return re.sub(r"\{target=[^}]*\}", "", "\n\n".join(docs))  # Quarto's link attributes: Markdown shows them raw


def page_notebook(nb, module):
    "The notebook as its page shows it: hidden cells out, directives dropped, API docs in, links to pages."
    import nbformat
    cells = []
    for c in nb.cells:
        d = directives(c.source)
        if "hide" in d or "default_exp" in d: continue
        if c.cell_type == "markdown":
            c.source = re.sub(r"\]\(([\w.-]+)\.ipynb(#[^)]*)?\)", r"](\1.html\2)", c.source)
        else: c.source = "\n".join(l for l in c.source.splitlines() if not DIRECTIVE.match(l)).strip("\n")
        cells.append(c)
        if c.cell_type == "code" and "export" in d and module and (md := api_markdown(c.source, module)):
            cells.append(nbformat.v4.new_markdown_cell(md))
    nb.cells = cells
    return nb


def nav_bar(names:list[str], current:str) -> str:
    "The bar of links to every page, the current one in bold."
    links = [f"<b>{html.escape(n)}</b>" if n == current else f'<a href="{n}.html">{html.escape(n)}</a>' for n in names]
    return ('<nav style="font:13px sans-serif;padding:6px 12px;border-bottom:1px solid #ddd;line-height:1.8">'
            + " · ".join(links) + "</nav>")


def build(executed:Path, out:Path) -> list[str]:
    "Write the site from the executed notebooks; returns the page names."
    import nbformat
    from nbconvert import HTMLExporter
    out.mkdir(parents=True, exist_ok=True)
    (out/"static").mkdir(exist_ok=True)
    for name in JS: shutil.copy(fetch_js(name), out/"static"/name)
    sources = sorted(p for p in (ROOT/"nbs").glob("*.ipynb") if not p.name.startswith("_"))
    missing = [p.name for p in sources if not (executed/p.name).exists()]
    if missing: raise SystemExit(f"not executed yet: {missing}: run python tools/run_nbs.py --save {executed}")
    names = ["index"] + [p.stem for p in sources if p.stem != "index"]
    ex = HTMLExporter(template_name="lab", widget_renderer_url="static/embed-amd.js",
                      require_js_url="static/require.js")
    sys.path.insert(0, str(ROOT))
    for p in sources:
        nb = nbformat.read(executed/p.name, as_version=4)
        exp = next((m.group(1) for c in nb.cells for l in c.source.splitlines()
                    if (m := re.match(r"^#\|\s*default_exp\s+(\S+)", l))), None)
        module = importlib.import_module(f"llm_nb.{exp}") if exp else None
        body, _ = ex.from_notebook_node(page_notebook(nb, module))
        body = REMOTE_SCRIPT.sub("", body)
        body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + nav_bar(names, p.stem), body, count=1)
        (out/f"{p.stem}.html").write_text(body, encoding="utf-8")
    return names


def serve(folder:Path) -> tuple:
    "A static HTTP server of `folder` on 127.0.0.1 in a thread: (server, base url)."
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args): pass  # a line per request would bury the verdicts
    srv = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


def check_page(page, base:str, name:str, out:Path, screens:Path) -> list[str]:
    "Open one page; return what is wrong with it (and save its screenshots)."
    problems, foreign = [], []
    page.on("pageerror", lambda e: problems.append(f"JavaScript error: {e}"))
    page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(base) else None)
    page.goto(f"{base}/{name}.html", wait_until="load")
    if page.locator("script[type='application/vnd.jupyter.widget-view+json']").count():
        try:
            page.wait_for_selector(".jupyter-widgets", timeout=20_000)
            page.locator(".jupyter-widgets").first.screenshot(path=str(screens/f"{name}-widget.png"))
        except Exception: problems.append("a widget view did not render")
        if page.get_by_text("Error displaying widget").count(): problems.append("Error displaying widget")
    page.wait_for_timeout(500)
    broken = page.evaluate("() => [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length")
    if broken: problems.append(f"{broken} image(s) did not load")
    hrefs = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))")
    for h in hrefs:
        target = h.split("#")[0]
        if target and not re.match(r"^[a-z]+:", target) and not (out/target).exists():
            problems.append(f"link to a missing page: {h}")
    problems += [f"request to another host: {u}" for u in foreign[:3]]
    page.screenshot(path=str(screens/f"{name}.png"))
    plots = page.locator(".jp-OutputArea-output img")
    if plots.count():
        plots.first.scroll_into_view_if_needed()
        plots.first.screenshot(path=str(screens/f"{name}-plot.png"))
    return problems


def check(out:Path, names:list[str], screens:Path) -> int:
    "Render every page in Chromium; print what is wrong; 0 when nothing is."
    from playwright.sync_api import sync_playwright
    chromium = shutil.which("chromium")
    if not chromium: return print("Chromium is missing: apt-get install chromium") or 1
    screens.mkdir(parents=True, exist_ok=True)
    srv, base = serve(out)
    bad = 0
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync"])
            for name in names:
                page = browser.new_page(viewport={"width": 1280, "height": 1600})
                problems = check_page(page, base, name, out, screens)
                page.close()
                bad += bool(problems)
                print(f"{'ok' if not problems else 'FAILED'}: docs page {name}.html" +
                      "".join(f"\n  {x}" for x in problems))
            browser.close()
    finally: srv.shutdown()
    print(f"docs: {len(names) - bad} of {len(names)} pages render; screenshots in {screens}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executed", default=str(ROOT/"_docs"/"executed"))
    ap.add_argument("--out", default=str(ROOT/"_docs"/"site"))
    ap.add_argument("--check", action="store_true", help="render every page in Chromium")
    ap.add_argument("--screens", default=str(ROOT/"runs"/"docs-check"), help="where --check saves screenshots")
    a = ap.parse_args(argv)
    t = time.time()
    names = build(Path(a.executed), Path(a.out))
    print(f"docs: {len(names)} pages in {a.out} ({time.time() - t:.0f}s)")
    return check(Path(a.out), names, Path(a.screens)) if a.check else 0


if __name__ == "__main__": sys.exit(main())
