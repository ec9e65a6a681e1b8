"""Collapse the input of every `#| hide` cell in JupyterLab, as the docs site hides it: the cell's metadata gets
`jupyter.source_hidden` (settings.ini's allowed_cell_metadata_keys keeps it through nbdev_clean), and any other cell
loses it. `--check` changes nothing and exits 1, naming the notebooks, where a notebook differs (tools/test.sh)."""
import json, re, sys
from pathlib import Path

HIDE = re.compile(r"^#\|\s*hide\s*$", re.M)

def collapsed(nb:dict) -> bool:
    "Set each code cell's `jupyter.source_hidden` to whether it is a `#| hide` cell; True when anything changed."
    changed = False
    for c in nb["cells"]:
        if c["cell_type"] != "code": continue
        meta, hide = c.setdefault("metadata", {}), bool(HIDE.search("".join(c["source"])))
        was = meta.get("jupyter", {}).get("source_hidden", False)
        if was == hide: continue
        changed = True
        if hide: meta.setdefault("jupyter", {})["source_hidden"] = True
        else:
            meta["jupyter"].pop("source_hidden")
            if not meta["jupyter"]: meta.pop("jupyter")
    return changed

def main(check:bool=False) -> int:
    root = Path(__file__).resolve().parents[1]
    differ = []
    for p in sorted((root/"nbs").glob("*.ipynb")):
        nb = json.loads(p.read_text(encoding="utf-8"))
        if not collapsed(nb): continue
        differ.append(p.name)
        if not check: p.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    if check and differ:
        print(f"#| hide cells not collapsed in JupyterLab in {', '.join(differ)}: run python tools/collapse_hidden.py")
        return 1
    if differ: print(f"collapsed the #| hide cells of {len(differ)} notebooks")
    return 0

if __name__ == "__main__": sys.exit(main("--check" in sys.argv))
