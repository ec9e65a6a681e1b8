"""Bench input: the review corpus online_shopping_10_cats.csv (`--data PATH`, default ../shared/data/) scaled up with
perturbations, written by DuckDB as an ingest part (the Parquet schema llm_nb.ingest writes), so both sides of a
benchmark read the same file. Also what every bench shares: `timed` (one call's seconds), `Targets` (each stated
target judged on its measured figure, one line each, exit status 1 when one is missed) and `--smoke` (the same code
paths at the smallest scale, targets not judged: tools/bench_smoke.sh)."""
import gc, operator, random, sys, tempfile, time
from pathlib import Path

def timed(f, *args, **kw):
    "(seconds, result) of one call, after a garbage collection (so that it does not pay for the last one's)."
    gc.collect()
    t = time.perf_counter()
    res = f(*args, **kw)
    return time.perf_counter() - t, res

SMOKE_LINE = "smoke run: targets are judged at full scale only"

def add_smoke_arg(ap, what:str=""):
    "Add `--smoke` to the argparse parser `ap`; `what` says what it sets."
    ap.add_argument("--smoke", action="store_true",
                    help="the same code paths at the smallest scale that runs them (seconds): figures printed, targets "
                         "not judged, exit status 0 unless something failed (tools/bench_smoke.sh)" + (f"; {what}" if what else ""))

def add_seed_args(ap, default:str):
    "Add `--seeds` (comma-separated, default `default`: seeds no notebook uses) and `--keep DIR` to the parser `ap`."
    ap.add_argument("--seeds", default=default, help=f"comma-separated seeds (default: {default}, which no notebook uses)")
    ap.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder (default: a temporary one)")

def seeds_and_root(a, prog:str) -> tuple[list[int], Path]:
    "The seeds `add_seed_args` parsed (only the first in a smoke run) and the folder the runs go in."
    seeds = [int(s) for s in a.seeds.split(",")]
    return seeds[:1] if a.smoke else seeds, a.keep or Path(tempfile.mkdtemp(prefix=f"{prog}-"))

class Targets:
    """A bench's stated targets, each judged on its measured figure. `check` records one; `finish` prints one line per
    target, "target: WHAT <= BOUND: VALUE — met" (or MISSED), and returns the exit status: 1 when any is missed.
    In a smoke run (`smoke`) the lines end "not judged", one line says why, and the status is 0."""
    OPS = {"<=": (operator.le, "≤"), ">=": (operator.ge, "≥"), "==": (operator.eq, "="), "<": (operator.lt, "<"), ">": (operator.gt, ">")}
    def __init__(self, prog:str, smoke:bool=False): self.prog, self.smoke, self.rows = prog, smoke, []

    @staticmethod
    def show(v, fmt:str) -> str:
        if isinstance(v, bool): return "yes" if v else "no"
        return fmt.format(v) if isinstance(v, (int, float)) else str(v)

    def check(self, what:str, value, op:str, bound, fmt:str="{:.2f}") -> bool:
        "Record the target `value op bound` (op: <=, >=, ==, <, >); whether it is met."
        test, sym = self.OPS[op]
        ok = bool(test(value, bound))
        self.rows.append((f"{what} {sym} {self.show(bound, '{}')}: {self.show(value, fmt)}", ok))
        return ok

    def finish(self) -> int:
        "Print a line per target (and the smoke line, or the count missed); the exit status."
        for line, ok in self.rows:
            print(f"target: {line} — {'not judged' if self.smoke else 'met' if ok else 'MISSED'}")
        if self.smoke:
            print(SMOKE_LINE)
            return 0
        missed = sum(not ok for _, ok in self.rows)
        print(f"{self.prog}: {len(self.rows) - missed} of {len(self.rows)} targets met" + (f", {missed} MISSED" if missed else ""))
        return 1 if missed else 0

# the smallest demo run that trains (bench/trainer_step.py, dashboard_overhead.py, zero_table.py in --smoke): few
# generated records, a one-layer model of width 64, blocks of 32 tokens
SMOKE_RUN = {"synth.n_records": 60, "synth.n_document_pages": 1, "model.tiny.vocab_size": 400,
             "model.tiny.hidden_size": 64, "model.tiny.intermediate_size": 128, "model.tiny.num_layers": 1,
             "model.tiny.num_heads": 2, "tokenize.max_length": 32, "synth.n_tool_instructions": 8,
             "synth.n_heldout_tool_calls": 4}

CORPUS = "online_shopping_10_cats.csv"
CSV = Path(__file__).resolve().parents[2]/"shared"/"data"/CORPUS  # the default, beside the repo

def add_data_arg(ap):
    "Add `--data PATH` (the corpus) to the argparse parser `ap`."
    ap.add_argument("--data", type=Path, default=None, metavar="PATH",
                    help=f"the review corpus {CORPUS} (a CSV with a `review` column); default: {CSV} when it exists")

def corpus(data:Path|None, prog:str) -> Path:
    "The corpus to read: `data`, else CSV when it exists; otherwise one line saying what to pass, and exit status 2."
    path = data or CSV
    if path.is_file(): return path
    why = f"{data} is not a file" if data else f"{CSV} does not exist"
    print(f"{prog}: no corpus: pass --data PATH to {CORPUS} (a CSV with a `review` column; {why})", file=sys.stderr)
    raise SystemExit(2)

def sensitive_words(n:int, seed:int=0) -> list[str]:
    "`n` words: the demo's four plus random 3-4 character CJK strings (mostly absent from the corpus)."
    r = random.Random(seed)
    words = ["赌博网站", "代开发票", "casino-bonus", "miracle-cure"]
    while len(words) < n: words.append("".join(chr(r.randint(0x4E00, 0x9FA5)) for _ in range(r.randint(3, 4))))
    return words

def add_rows_arg(ap):
    "Add `--rows N` (the corpus' first N reviews only) to the argparse parser `ap`."
    ap.add_argument("--rows", type=int, default=None, metavar="N", help="use the corpus' first N reviews only (default: all)")

def make_input(out:Path, scale:int=20, threads:int=2, csv:Path=CSV, distinct:bool=False, rows:int|None=None) -> dict:
    """Copy 0 is the corpus as is; copy k>0 perturbs each review deterministically: 1/5 get a character inserted
    (near duplicates), 1/20 a phone number, 1/50 an email, 1/100 a sensitive word, 1/10 extra spaces and a CRLF
    (exact duplicates after normalization); the rest are exact copies. With `distinct`, copy k>0 of review i is
    instead review i with every CJK character shifted by k*397 code points (within U+4E00..U+9FFF): nearly every row
    is distinct, and each copy has the corpus's own near duplicates, no more. (Appending another review to each
    copy, as this once did, made clusters of ~40 near duplicates around every long review: tens of millions of
    candidate pairs, a test of the input rather than of the stage.) `rows`: the corpus' first `rows` reviews only."""
    import duckdb
    out.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(config=dict(threads=threads))
    con.execute("SET enable_progress_bar = false")
    con.execute(f"""COPY (
      WITH src AS (SELECT row_number() OVER () AS i, coalesce(review, '') AS review FROM (SELECT * FROM read_csv('{csv}', header=true, all_varchar=true){f' LIMIT {int(rows)}' if rows else ''})),
      x AS (SELECT i, k, review, hash(i * 1000003 + k) % 100 AS h FROM src, range({scale}) t(k))
      SELECT CASE WHEN k = 0 THEN x.review
                  WHEN {distinct} THEN array_to_string(list_transform(string_split(x.review, ''), lambda c:
                       CASE WHEN unicode(c) BETWEEN 19968 AND 40959 THEN chr((19968 + (unicode(c) - 19968 + k * 397) % 20992)::INTEGER)
                            ELSE c END), '')
                  WHEN h < 20 THEN substr(x.review, 1, length(x.review) // 2) || '的' || substr(x.review, length(x.review) // 2 + 1)
                  WHEN h < 25 THEN x.review || ' 电话1' || (3 + h % 7)::VARCHAR || lpad(((x.i * 7919 + k) % 1000000000)::VARCHAR, 9, '0')
                  WHEN h < 27 THEN x.review || ' 邮箱 user' || x.i::VARCHAR || '@example.com'
                  WHEN h = 27 THEN x.review || ' 代开发票'
                  WHEN h < 38 THEN '  ' || replace(x.review, '，', ' ，  ') || chr(13) || chr(10)
                  ELSE x.review END AS text,
             'shop' AS source, 'shop_x{scale}.csv' AS file, (k * 100000 + x.i)::BIGINT AS line,
             TIMESTAMPTZ '2026-01-01 00:00:00+00' AS ingest_time, '{{}}' AS meta
      FROM x
      ORDER BY k, x.i) TO '{out}' (FORMAT parquet, ROW_GROUP_SIZE 100000)""")
    n, chars = con.execute(f"SELECT count(*), sum(strlen(text)) FROM read_parquet('{out}')").fetchone()
    return dict(rows=n, text_bytes=chars, file_bytes=out.stat().st_size)


# appended to a measured child's code: its own peak RSS. /proc's VmHWM starts afresh at exec, while ru_maxrss from
# wait4 keeps the high-water mark of the (large) parent that forked the child, which inflated early measurements.
PEAK = "\nprint('PEAK', next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')) / 1024)\n"

def run_measured(code:str, *args) -> dict:
    "Run `code` in a fresh Python: wall seconds, its own peak RSS (MiB) and the JSON after its RESULT marker."
    import subprocess, sys, time, json
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code + PEAK, *map(str, args)], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0: raise RuntimeError(p.stderr[-3000:])
    res = json.loads(p.stdout.split("RESULT", 1)[1].split("\nPEAK", 1)[0])
    return dict(wall_s=wall, rss_mib=float(p.stdout.rsplit("PEAK", 1)[1]), result=res)

def make_input_in_child(out, scale:int, csv:Path=CSV, distinct:bool=False, rows:int|None=None) -> dict:
    "`make_input` in a subprocess, so this process stays small (its children start from its image)."
    import subprocess, json
    code = (f"import sys, json; sys.path.insert(0, {str(Path(__file__).parent)!r}); from _data import make_input; "
            f"from pathlib import Path; print(json.dumps(make_input(Path({str(out)!r}), {scale}, csv=Path({str(csv)!r}), "
            f"distinct={distinct}, rows={rows!r})))")
    return json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])

RECORD_INGEST = r"""
import sys
from llm_nb.config import load_config
from llm_nb.run import Run
root = sys.argv[1]
run = Run(root + "/bench", load_config(None, **{"run.root": root, "run.name": "bench"}))
run.record("ingest", outputs=[run.dir/"ingest"/"parts"])
"""

def record_ingest(root) -> None:
    """Record the input part as the ingest stage's output in the manifest of the run `root`/bench, as a real run has
    it after its ingest stage: the clean stage then takes its input's hash from there instead of hashing it again
    (0.15 s of a 3 s clean at x20, work no real run does twice)."""
    import subprocess
    subprocess.run([sys.executable, "-c", RECORD_INGEST, str(root)], check=True, capture_output=True)
