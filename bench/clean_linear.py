"""Benchmark: the clean stage's time is linear in the size of a single field, on the inputs that made a backtracking
regex quadratic (issue #70: a 1 MB tool-call argument held clean for 20+ minutes in the email pattern).

For each size S (1 KB … 10 MB), a JSON Lines file of three hostile records, each with one field of S characters:
a run of letters with no `@` after it (the email pattern's worst case), a run of digits (the phone, ID and card
patterns), and a conversation whose tool call's arguments hold such a run (redacted in Python by
`llm_nb.clean_text.redact_text`, on RE2 like DuckDB's `regexp_replace`). Each file is ingested, then cleaned
in-process with every filter on (`clean.max_chars` raised so that the long texts pass through all of them); the
clean stage's wall time is measured, `--repeats` times, the best kept, after one warm-up run (imports).

Target, written before it was measured (exit status 1 when missed): the extra time a 10 MB field costs over a 1 KB
one is at most 15x the extra time of a 1 MB field (linear is 10x; quadratic would be 100x).
`--smoke` runs 1 KB, 10 KB and 100 KB once and judges nothing (tools/bench_smoke.sh).

    python bench/clean_linear.py [--repeats 2] [--smoke]
"""
import argparse, json, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_smoke_arg
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean

SIZES = [1_000, 1_000_000, 10_000_000]
SMOKE_SIZES = [1_000, 10_000, 100_000]
TARGET = 15.0  # (t(10 MB) - t(1 KB)) / (t(1 MB) - t(1 KB)) at most

def hostile(size:int) -> list[dict]:
    "Three records of one `size`-character field each: letters with no @, digits, a tool call's arguments."
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": json.dumps({"q": "a" * size})}}
    tool = {"type": "function", "function": {"name": "search", "description": "Search.",
                                             "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}
    return [{"text": "x " + "a" * size}, {"text": "n " + "7" * size},
            {"messages": [{"role": "user", "content": "find it"}, {"role": "assistant", "content": "", "tool_calls": [call]},
                          {"role": "tool", "tool_call_id": "c1", "content": "found"},
                          {"role": "assistant", "content": "here it is"}], "tools": [tool]}]

def clean_seconds(root:Path, size:int) -> float:
    "The clean stage's wall seconds on the hostile records of `size`, ingested first (not timed)."
    root.mkdir(parents=True, exist_ok=True)
    src = root/f"hostile-{size}.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in hostile(size)))
    cfg = demo_config(**{"run.root": str(root), "run.name": f"s{size}", "synth.n_records": 0,
                         "ingest.sources": [{"name": "hostile", "path": str(src)}],
                         "ingest.limits.argument_chars": 10 * size + 100, "ingest.limits.line_bytes": 20 * size + 2**20,
                         "clean.max_chars": 10 * size + 100, "clean.decontaminate_evaluated": False})
    run = Run.create(cfg)
    ing = run_ingest(cfg, run)
    assert ing["kept"] == 3, f"ingest kept {ing['kept']} of the 3 hostile records of {size} characters"
    t = time.perf_counter()
    c = run_clean(cfg, run)
    seconds = time.perf_counter() - t
    assert c["rows_in"] == 3 and c["invariant_ok"], c
    return seconds

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    add_smoke_arg(ap, "1 KB, 10 KB and 100 KB once")
    a = ap.parse_args()
    sizes, repeats = (SMOKE_SIZES, 1) if a.smoke else (SIZES, a.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        clean_seconds(Path(tmp)/"warm-up", sizes[0])  # imports and py3langid's model: not the stage's own time
        best = {s: min(clean_seconds(Path(tmp)/f"r{r}", s) for r in range(repeats)) for s in sizes}
    for s, t in best.items(): print(f"clean of 3 records with a {s:>10,}-character field: {t:6.2f} s")
    base, mid, top = (best[s] for s in sizes)
    ratio = (top - base) / max(mid - base, 1e-3)
    print(f"extra time of {sizes[2]:,} over {sizes[0]:,} characters / extra time of {sizes[1]:,}: {ratio:.1f}x "
          f"(linear: {(sizes[2] - sizes[0]) / (sizes[1] - sizes[0]):.0f}x)")
    t = Targets("clean_linear", a.smoke)
    t.check(f"extra time at {sizes[2]:,} characters / at {sizes[1]:,}", ratio, "<=", TARGET)
    return t.finish()

if __name__ == "__main__": sys.exit(main())
