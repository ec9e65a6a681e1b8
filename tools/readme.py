"""Write README.md from nbs/index.ipynb (nbdev_readme needs Quarto, which cannot be installed everywhere): its cells
up to the one that starts with `<!-- README.md stops here` (what a first user needs; the docs site's index goes on).
Markdown cells are copied, with links to notebooks pointed into nbs/ (README.md sits at the root); code cells become
```python blocks without their `#|` directives."""
import json, pathlib, re, sys
root = pathlib.Path(__file__).resolve().parent.parent
nb = json.loads((root/"nbs"/"index.ipynb").read_text(encoding="utf-8"))
parts = ["<!-- generated from nbs/index.ipynb by tools/readme.py: edit the notebook, not this file -->"]
for c in nb["cells"]:
    src = "".join(c["source"]).strip("\n")
    if c["cell_type"] == "markdown" and src.startswith("<!-- README.md stops here"): break
    if c["cell_type"] == "markdown": parts.append(re.sub(r"\]\(([\w.-]+\.ipynb)\)", r"](nbs/\1)", src))
    elif c["cell_type"] == "code":
        code = "\n".join(l for l in src.splitlines() if not l.startswith("#|")).strip("\n")
        if code: parts.append(f"```python\n{code}\n```")
text = "\n\n".join(parts) + "\n"
out = root/"README.md"
if "--check" in sys.argv:
    if out.read_text(encoding="utf-8") != text: sys.exit("README.md is not what tools/readme.py makes of nbs/index.ipynb: run it and commit")
else: out.write_text(text, encoding="utf-8")
