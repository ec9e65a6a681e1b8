"""How much an executed notebook prints, per section (`## ` heading): lines and characters of what a person reads
under each section's cells (text, tables; a picture, a widget or a progress bar counts as one line). Run it on a
notebook the kernel run saved (tools/run_nbs.py --save); with --max-lines/--max-chars it exits 1 when a section
says more, naming it (tools/test.sh bounds the quick start this way)."""
import argparse, json, sys

def shown(o:dict) -> str:
    "What one output shows, as text: a picture, widget or HTML bar as one line."
    if o["output_type"] == "stream": return "".join(o["text"])
    if o["output_type"] == "error": return f"{o.get('ename')}: {o.get('evalue')}\n"
    d = o.get("data", {})
    if "image/png" in d or "image/svg+xml" in d: return "[picture]\n"
    if "application/vnd.jupyter.widget-view+json" in d: return "[widget]\n"
    if "text/markdown" in d: return "".join(d["text/markdown"]).rstrip("\n") + "\n"
    if "text/html" in d and "<progress" in "".join(d["text/html"]): return "[progress bar]\n"
    return "".join(d.get("text/plain", "")).rstrip("\n") + "\n"

def per_section(path:str) -> dict:
    "{section: (lines, characters)} of what the notebook's outputs show, in order."
    nb, out, section = json.load(open(path, encoding="utf-8")), {}, "(top)"
    for c in nb["cells"]:
        src = "".join(c["source"])
        if c["cell_type"] == "markdown" and src.startswith("## "): section = src.splitlines()[0][3:]
        text = "".join(shown(o) for o in c.get("outputs", []))
        lines, chars = out.get(section, (0, 0))
        out[section] = (lines + text.count("\n"), chars + len(text))
    return out

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook")
    ap.add_argument("--max-lines", type=int)
    ap.add_argument("--max-chars", type=int)
    a = ap.parse_args(argv)
    over = []
    for section, (lines, chars) in per_section(a.notebook).items():
        print(f"{section[:40]:40} {lines:4} lines {chars:6} characters")
        if (a.max_lines and lines > a.max_lines) or (a.max_chars and chars > a.max_chars): over.append(section)
    if over: print(f"more than {a.max_lines} lines or {a.max_chars} characters under: {', '.join(over)}")
    return 1 if over else 0

if __name__ == "__main__": sys.exit(main())
