"""Benchmark: the fuzz test of ingest's JSON Lines reader (tests/test_ingest_adversarial.py), run for minutes.

The property is the test's own (`check_jsonl`): files of random JSON records (plain text, OpenAI messages with tools
and tool calls, any object, any value), random Unicode (lone surrogates as JSON escapes and as bytes, NUL, RTL marks,
combining marks, U+2028, the chat templates' special tokens), JSON nested up to 3,000 deep and random bytes, read and
written as ingest does, under `bad_utf8: quarantine` and `replace`: the reader never raises, and every line is kept
(its text and meta written to Parquet), dead-lettered with a reason, or blank, the counts adding up. The test command
runs it briefly (LLM_NB_FUZZ_EXAMPLES examples, default 150); here it runs in rounds of `--examples` examples, each
round with a seed of its own, until `--seconds` have passed. Printed: rounds, examples, lines read and what became
of them, examples per second; a falsifying example, shrunk by hypothesis, is printed whole.

Target (exit status 1 when missed): no falsifying example in the whole run. Measured 2026-12-07 (2 shared cores):
see the report of issue #70.

    python bench/fuzz_ingest.py [--seconds 600] [--examples 500] [--seed 0] [--smoke]

`--smoke` runs for 10 seconds; a falsifying example fails it too (it is a crash, not a missed figure).
"""
import argparse, sys, time, traceback
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/"tests"))
from _data import Targets, add_smoke_arg
from hypothesis import given, seed, settings, strategies as st
import test_ingest_adversarial as fuzz

def fuzz_round(examples:int, round_seed:int, totals:dict) -> str|None:
    "Run the property on `examples` examples drawn from `round_seed`, adding to `totals`; the failure, or None."
    @seed(round_seed)
    @settings(max_examples=examples, database=None, **fuzz.FUZZ_SETTINGS)
    @given(content=fuzz.jsonl_files, policy=st.sampled_from(["quarantine", "replace"]))
    def prop(content, policy):
        c = fuzz.check_jsonl(content, policy)
        totals["examples"] += 1
        for k in ("read", "kept", "quarantined", "blank", "repaired_utf8"): totals[k] += c[k]
    try: prop()
    except Exception:  # hypothesis re-raises the shrunk falsifying example, its inputs in the notes
        return traceback.format_exc()
    return None

def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600, help="how long to fuzz (rounds start until it has passed)")
    ap.add_argument("--examples", type=int, default=500, help="examples per round (each round: a seed of its own)")
    ap.add_argument("--seed", type=int, default=0, help="the first round's seed; round k has seed + k")
    add_smoke_arg(ap, "10 seconds, rounds of 100")
    a = ap.parse_args(argv)
    if a.smoke: a.seconds, a.examples = 10, 100
    totals = dict.fromkeys(("examples", "read", "kept", "quarantined", "blank", "repaired_utf8"), 0)
    t0, rounds, failure = time.perf_counter(), 0, None
    while time.perf_counter() - t0 < a.seconds and failure is None:
        failure = fuzz_round(a.examples, a.seed + rounds, totals)
        rounds += 1
    secs = time.perf_counter() - t0
    print(f"fuzz_ingest: {rounds} rounds, {totals['examples']:,} examples in {secs:.0f}s "
          f"({totals['examples'] / secs:.1f}/s); records read {totals['read']:,} = kept {totals['kept']:,} "
          f"+ quarantined {totals['quarantined']:,} ({totals['repaired_utf8']:,} repaired), {totals['blank']:,} blank")
    if failure: print(f"falsifying example in round {rounds - 1} (seed {a.seed + rounds - 1}):\n{failure}")
    t = Targets("fuzz_ingest", a.smoke)
    t.check("falsifying examples", int(failure is not None), "==", 0, "{}")
    status = t.finish()
    return 1 if failure else status

if __name__ == "__main__": sys.exit(main())
