"""Benchmark: a JSON Lines file of every hostile kind issue #70 found, ingested at two sizes: time linear in size;
then cleaned and tokenized, without a stage failure.

The file cycles through the kinds (tests/test_ingest_adversarial.py's lines): JSON nested 5,000 deep, a tool schema
51 levels deep, tool-call arguments 10,000 deep, a `$schema` that is a list, a `$ref` to a document not there, an
integer of 5,000 digits, lone surrogates (JSON escapes in the text, in meta, in a turn and in tool-call arguments;
as bytes), bytes that are not UTF-8, broken JSON, a record that is not an object, blank lines; and good records
beside them: plain text with NUL, RTL and combining marks and the templates' special tokens, brackets inside a
string, a conversation that calls a tool (schema 17 deep) and one with reasoning. One line in 1,000 holds tool-call
arguments of 1.1 M characters (over `ingest.limits.argument_chars`). The file is read by two sources (one file
under two names: each reads it, as asked). `run_ingest` is timed in-process, after one warm-up ingest (jsonschema's
import), the median of `--repeat` runs at each size.

Targets, written before measuring (exit status 1 when one is missed):
  * time linear in size: seconds per line at `--lines` (10,000) / seconds per line at a tenth of it <= 1.5;
  * no stage failure, and every planted bad line dead-lettered by line: the dead letters' lines are the planted ones,
    for each source, each with a reason;
  * the counts match the parts: each source's part holds its kept rows, and kept + quarantined = read;
  * the stages after ingest take what it kept without failing: clean, model (the tiny one, not pretrained) and
    tokenize run on the full-size run (`run_pipeline`), each stage's seconds printed.

    python bench/hostile_ingest.py [--lines 10000] [--repeat 3] [--smoke]

`--smoke`: 2,000 and 200 lines, one run each, nothing judged (tools/bench_smoke.sh).
"""
import argparse, json, random, statistics, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]/"tests"))
from _data import Targets, add_smoke_arg
import pyarrow.parquet as pq
from llm_nb.config import demo_config
from llm_nb.ingest import run_ingest
from llm_nb.pipeline import run_pipeline
from llm_nb.run import Run
import test_ingest_adversarial as hostile

TARGET_RATIO = 1.5  # seconds per line at the full size / at a tenth of it
HUGE_EVERY = 1000  # one line in this many holds arguments over ingest.limits.argument_chars

def kinds() -> list[tuple[bytes, bool]]:
    "(line, kept) for each kind of line the file cycles through."
    deep = hostile.hostile_lines()  # 1, 9 and 10 are kept; the 1.1 M-character arguments (5) are placed apart
    good = [json.dumps({"text": "{words} RTL \u202e mark, e\u0301 combined, NUL \u0000, <|im_end|> <|im_start|>assistant"}),
            json.dumps(hostile.tool_record({"type": "object"}, '{"a": 1}')),
            json.dumps({"messages": [{"role": "user", "content": "q"},
                                     {"role": "assistant", "content": "<think>why</think>because"}]})]
    bad = [b'{"text": "broken', b'{"text": 12}', b'["not", "an", "object"]', b'{"text": "bad \xff\xfe utf8"}']
    surrogates = hostile.SURROGATE_LINES  # all bad under quarantine but the last, a pair
    return ([(l.encode(), i in (0, 8, 9)) for i, l in enumerate(deep) if i != 4] + [(l.encode(), True) for l in good]
            + [(l, False) for l in bad] + [(l, i == len(surrogates) - 1) for i, l in enumerate(surrogates)]
            + [(b"", None)])  # a blank line: neither kept nor dead-lettered

WORDS = ("lamp desk river cloud stone maple amber violet harbor lantern meadow copper falcon willow ember quartz "
         "canyon orchid glacier saffron tundra cobalt juniper marble thistle").split()

def varied(line:bytes, no:int) -> bytes:
    "`line` with its `{words}` replaced by eight words drawn for line `no`: kept texts apart, for clean's dedup."
    return line.replace(b"{words}", " ".join(random.Random(no).sample(WORDS, 8)).encode())

def write_hostile(path:Path, n:int) -> set[int]:
    "Write `n` lines cycling through `kinds()` (and the huge arguments every `HUGE_EVERY`); the bad lines' numbers."
    ks, huge, bad = kinds(), hostile.hostile_lines()[4].encode(), set()
    with open(path, "wb") as f:
        for no in range(1, n + 1):
            line, kept = (huge, False) if no % HUGE_EVERY == 0 else ks[no % len(ks)]
            if kept is False: bad.add(no)
            f.write(varied(line, no) + b"\n")
    return bad

def ingest_once(root:Path, data:Path) -> tuple[float, dict, Run]:
    "(seconds, counts, run) of one run_ingest of `data` read by two sources, in a fresh run under `root`."
    srcs = [{"name": "one", "path": str(data)}, {"name": "two", "path": str(data)}]
    cfg = demo_config(**{"run.root": str(root), "run.name": f"r{time.monotonic_ns()}", "synth.n_records": 0,
                         "ingest.sources": srcs})
    run = Run.create(cfg)
    t = time.perf_counter()
    c = run_ingest(cfg, run)
    return time.perf_counter() - t, c, run

def accounted(run:Run, c:dict, bad:set[int]) -> tuple[bool, bool]:
    "(every planted bad line dead-lettered with a reason, for each source; each source's part holds its kept rows)."
    dead = [json.loads(l) for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text(encoding="utf-8").splitlines()]
    lettered = all({x["line"] for x in dead if x["source"] == s} == bad for s in ("one", "two"))
    parts = pq.read_table(run.dir/"ingest"/"parts").to_pandas().source.value_counts().to_dict()
    counts = all(parts.get(s, 0) == c["sources"][s]["kept"] for s in ("one", "two"))
    return lettered and all(x["reason"] for x in dead), counts and c["invariant_ok"]

def downstream(run:Run) -> tuple[bool, str]:
    "(no stage failed, what each did) of clean, model (tiny, not pretrained) and tokenize on `run`'s ingest."
    cfg = run.cfg.model_copy(update={"model": run.cfg.model.model_copy(update={"tiny": run.cfg.model.tiny.model_copy(
        update={"pretrain_steps": 0})})})
    try: done = run_pipeline(cfg, stages=["clean", "model", "tokenize"], seeds=[])
    except Exception as e: return False, f"{type(e).__name__}: {str(e)[:300]}"
    rep = json.loads((done.dir/"report.json").read_text())
    return True, ", ".join(f"{s} {t:.1f}s" for s, t in rep["summary"]["seconds"].items())

def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10_000, help="the full size; the small one is a tenth of it")
    ap.add_argument("--repeat", type=int, default=3, help="runs at each size; medians are compared")
    add_smoke_arg(ap, "--lines 2000 --repeat 1")
    a = ap.parse_args(argv)
    if a.smoke: a.lines, a.repeat = 2000, 1
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        write_hostile(d/"warm.jsonl", 50)
        ingest_once(d/"runs", d/"warm.jsonl")  # jsonschema's import and the first schema checks: not timed
        rows, ok = {}, []
        for n in (a.lines // 10, a.lines):
            bad = write_hostile(d/f"hostile-{n}.jsonl", n)
            runs = [ingest_once(d/"runs", d/f"hostile-{n}.jsonl") for _ in range(a.repeat)]
            secs = statistics.median(s for s, _, _ in runs)
            _, c, run = runs[-1]
            ok.append(accounted(run, c, bad))
            rows[n] = secs
            print(f"hostile_ingest: {n:,} lines x 2 sources in {secs:.2f}s (median of {a.repeat}: "
                  + ", ".join(f"{s:.2f}" for s, _, _ in runs) + f"), {2 * n / secs:,.0f} lines/s; "
                  f"read {c['read']:,} = kept {c['kept']:,} + quarantined {c['quarantined']:,}, {c['blank']:,} blank, "
                  f"{len(bad):,} planted bad lines per source")
        later, what = downstream(run)  # the full-size run's
        print(f"hostile_ingest: after ingest, {'ran' if later else 'FAILED'}: {what}")
    small, full = a.lines // 10, a.lines
    ratio = (rows[full] / full) / (rows[small] / small)
    print(f"seconds per line at {full:,} / at {small:,}: {ratio:.2f}")
    t = Targets("hostile_ingest", a.smoke)
    t.check(f"seconds per line at {full:,} / at {small:,} lines", ratio, "<=", TARGET_RATIO)
    t.check("every planted bad line dead-lettered, by line, with a reason", all(l for l, _ in ok), "==", True)
    t.check("each source's part holds its kept rows", all(p for _, p in ok), "==", True)
    t.check("clean, model and tokenize ran on what ingest kept", later, "==", True)
    return t.finish()

if __name__ == "__main__": sys.exit(main())
