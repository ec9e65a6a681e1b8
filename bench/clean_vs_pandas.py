"""Benchmark: llm_nb's DuckDB clean vs a straightforward pandas implementation of the same job, in one run.

Job (both sides, same input Parquet = an ingest part built from the review corpus online_shopping_10_cats.csv
×SCALE with perturbations): normalize keeping newlines → redact PII (email, ID number, bank card, phone) → drop
texts with a sensitive word (50 words) → drop empty texts → exact dedup keeping the first copy → write kept and
rejected rows (exact duplicates without their text, which is the kept copy's).
Each side runs in its own subprocess; wall time and the child's own peak RSS (VmHWM) are measured side by side.
The input is recorded as the ingest stage's output first, as a real run has it, so llm_nb's clean takes its hash
from the manifest rather than hashing the input again.
Also: llm_nb with 2,000 sensitive words against 50 (the multi-pattern matcher should stay flat); llm_nb with its
default config (quality filters, language ID and near dedup on, which pandas does not do); and two DuckDB floors
over the same file: the fair one does in plain SQL what exact-only clean (exact dedup alone: no PII, no sensitive
words, no filters) must at least do, normalize + hash + the first copy of each text (empty texts rejected, as min_chars 1
does) + writing the same kept and rejected Parquet files (rows sorted, duplicates by reference), and the bench checks that llm_nb's kept rows are the
floor's; the bare one only normalizes and counts distinct md5s, writing nothing. The job above (with PII and
sensitive words) is timed against the fair floor too, and printed: its regular expressions are work the floor
does not do.

Targets (medians; one line each, exit status 1 when one is missed):
  * llm_nb exact-only is >= 5x faster than pandas (wall time);
  * its peak RSS is <= 0.5x pandas';
  * it gives pandas' results (rows out, exact duplicates, sensitive, PII counts);
  * exact-only clean takes <= 1.3x the fair DuckDB floor (`--target-ratio`) at `--scale` (x20, the scale the target
    was set at): the median of `--floor-repeat` runs each, the pair alone, its order alternating, the per-pair ratios
    printed as the spread; and it keeps the floor's rows; the bare floor's ratio is printed;
  * 2,000 sensitive words take <= 1.5x the time of 50 (the multi-pattern matcher stays flat).
The stage has a fixed cost the floor does not: stats.json, stats.png with its jieba top terms drawn beside DuckDB's
threads (matplotlib 0.4 s to import and 0.4 s to draw, jieba 0.1 s to import and 0.1 s to cut 5,000 texts, all on
the same two cores; measured with `python -X importtime` and timers around `plot_stats` and `top_terms`), the manifest. This target once moved to x100 after missing at x20 (1.88x, then 1.58x); it is
judged at x20 again, and a miss there says MISSED. datatrove's executors are no longer imported by the DuckDB engine
(0.2 s; 13_clean_datatrove makes its Slurm executor on first use).
Measured 2026-12-05 under load (other jobs on the 2 cores, load average 2.5-3.5), `python bench/clean_vs_pandas.py`:
exact-only / fair floor at x20 1.46x (5.4 s vs 3.7 s, the same 258,704 rows; per pair 1.46-1.57): MISSED; pandas
3.7x slower: MISSED (6.0x on a quiet machine before); RSS 0.48x, results identical, 2,000 words 1.28x: 4 of 6 met.
`--smoke` runs every side once on the first 1,000 reviews x2 (the floor pair twice) and judges nothing
(tools/bench_smoke.sh).

    python bench/clean_vs_pandas.py [--scale 20] [--repeat 3] [--floor-repeat 5] [--memory-limit 1GB] [--rows N]
                                    [--data CSV] [--target-ratio 1.3] [--smoke]

CSV defaults to ../shared/data/online_shopping_10_cats.csv; when it is not there, pass --data.
Exit status 1 when a target is missed, 2 when the corpus is missing.
"""
import argparse, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import (Targets, add_data_arg, add_rows_arg, add_smoke_arg, corpus, make_input_in_child, record_ingest,
                   run_measured, sensitive_words)

TARGET_PANDAS, TARGET_RSS, TARGET_FLOOR, TARGET_WORDS = 5.0, 0.5, 1.3, 1.5

LLM_NB = r'''
import json, sys
from llm_nb.config import load_config
from llm_nb.run import Run
from llm_nb.clean_datatrove import run_clean
root, words, mem, job = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]
exact_only = {"clean.near_dedup": False, "clean.min_chars": 1, "clean.max_symbol_ratio": 1, "clean.max_digit_ratio": 1,
              "clean.max_dup_line_ratio": 1, "clean.require_letters": False,
              "clean.reject_mojibake": False, "clean.lang_id": False}  # the job pandas does too
dedup_only = {**exact_only, "clean.pii": []}  # and no sensitive words: exact dedup alone, what the fair floor does
cfg = load_config(None, **{"run.root": root, "run.name": "bench", "clean.sensitive_words": words,
                           "clean.memory_limit": mem, "clean.threads": 2,
                           **{"exact": exact_only, "dedup": dedup_only}.get(job, {})})
c = run_clean(cfg, Run(cfg.run.root + "/bench", cfg))
print("RESULT", json.dumps(dict(rows_out=c["rows_out"], exact_dup=c["rejected"].get("exact_dup", 0),
                                sensitive=c["rejected"].get("sensitive", 0), near_dup=c["rejected"].get("near_dup", 0),
                                pii=c["pii"])))
'''

FLOOR = r'''
import json, sys, duckdb
from llm_nb.clean_text import normalize_sql
root, mem = sys.argv[1], sys.argv[2]
con = duckdb.connect(config=dict(memory_limit=mem, threads=2))
n = con.execute(f"SELECT count(DISTINCT md5({normalize_sql('text')})) FROM read_parquet('{root}/bench/ingest/parts/input.parquet')").fetchall()[0][0]
print("RESULT", json.dumps(dict(distinct=n)))
'''

FAIR_FLOOR = r'''
import json, sys, duckdb
from llm_nb.clean_text import normalize_sql
root, mem = sys.argv[1], sys.argv[2]
con = duckdb.connect(config=dict(memory_limit=mem, threads=2, preserve_insertion_order=False))
con.execute(f"""CREATE TEMP TABLE n AS SELECT *, hash(text) AS h, text = '' AS empty FROM (SELECT {normalize_sql('text')}
                AS text, source, file, line, meta FROM read_parquet('{root}/bench/ingest/parts/input.parquet'))""")
con.execute("CREATE TEMP TABLE f AS SELECT h, min({'file': file, 'line': line}) AS k FROM n WHERE NOT empty GROUP BY h")
first = "f.k.file = n.file AND f.k.line = n.line"
con.execute(f"COPY (SELECT n.* EXCLUDE (h, empty) FROM n JOIN f USING (h) WHERE {first} ORDER BY file, line) "
            f"TO '{root}/floor_clean.parquet' (FORMAT parquet)")
# the rest in one pass: an empty text is rejected (clean.min_chars 1), every other copy is a duplicate by reference
con.execute(f"""COPY (SELECT n.* EXCLUDE (h, empty) REPLACE (CASE WHEN empty THEN '' END AS text),
                CASE WHEN empty THEN 'too_short' ELSE 'exact_dup' END AS reason,
                CASE WHEN NOT empty THEN f.k.file || ':' || f.k.line END AS dup_of
                FROM n LEFT JOIN f USING (h) WHERE empty OR NOT ({first}))
                TO '{root}/floor_rejected.parquet' (FORMAT parquet)""")
kept = con.execute(f"SELECT count(*) FROM read_parquet('{root}/floor_clean.parquet')").fetchall()[0][0]
print("RESULT", json.dumps(dict(distinct=kept)))
'''

PANDAS = r'''
import json, re, sys
import pandas as pd
root, words = sys.argv[1], json.loads(sys.argv[2])
df = pd.read_parquet(f"{root}/bench/ingest/parts/input.parquet", columns=["text", "source", "file", "line", "meta"])
t = df.text
t = t.str.replace(r"\r\n?", "\n", regex=True).str.replace("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\u200b]", "", regex=True)
t = t.str.replace(r"[ \t]+", " ", regex=True).str.replace(r" ?\n ?", "\n", regex=True).str.replace(r"\n{3,}", "\n\n", regex=True).str.strip(" \n")
pii = {}
for name, pat, rep in [("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}", "<EMAIL>"),
                       ("id_number", r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx](?![0-9A-Za-z])", "<ID_NUMBER>"),
                       ("bank_card", r"(?<![0-9])[3-6][0-9]{15,18}(?![0-9])", "<BANK_CARD>"),
                       ("phone", r"(?<![0-9])(?:\+?86[- ]?)?1[3-9][0-9]{9}(?![0-9])", "<PHONE>")]:
    pii[name] = int(t.str.count(pat).sum())
    t = t.str.replace(pat, rep, regex=True)
df["text"] = t
sens = df.text.str.contains("(?i)(?:" + "|".join(re.escape(w) for w in words) + ")", regex=True)
empty = df.text.str.len() < 1
df["reason"] = None
df.loc[empty, "reason"] = "too_short"
df.loc[sens, "reason"] = "sensitive"
ok = df[df.reason.isna()].sort_values(["file", "line"])
dup = ok.duplicated(subset="text", keep="first")
kept = ok[~dup]
rejected = pd.concat([df[df.reason.notna()], ok[dup].assign(reason="exact_dup", text=None)])  # duplicates by reference, as llm_nb
kept.to_parquet(f"{root}/pandas_clean.parquet"); rejected.to_parquet(f"{root}/pandas_rejected.parquet")
print("RESULT", json.dumps(dict(rows_out=len(kept), exact_dup=int(dup.sum()), sensitive=int(sens.sum()), pii=pii)))
'''

def same_kept(ours:str, floor:str) -> bool:
    "Whether two kept files hold the same rows (text, source, file, line, meta), compared in DuckDB."
    import duckdb
    rows = lambda f: f"SELECT text, source, file, line, meta FROM read_parquet('{f}')"
    apart = duckdb.sql(f"SELECT (SELECT count(*) FROM ({rows(ours)} EXCEPT ALL {rows(floor)})) + "
                       f"(SELECT count(*) FROM ({rows(floor)} EXCEPT ALL {rows(ours)}))").fetchall()[0][0]
    return apart == 0

def make_run_input(root:str, scale:int, csv:Path, rows:int|None) -> None:
    "The ingest part at `scale` in the run folder `root`/bench, recorded as a real run has it; its sizes printed."
    info = make_input_in_child(Path(root)/"bench"/"ingest"/"parts"/"input.parquet", scale, csv, rows=rows)
    record_ingest(root)
    print(f"input: {info['rows']:,} rows, {info['text_bytes']/2**20:.1f} MiB of text, {info['file_bytes']/2**20:.1f} MiB Parquet (×{scale})")

def against_floor(root:str, repeat:int, mem:str) -> tuple[list, list, bool]:
    "Exact-only clean and the fair floor on the input in `root`, which goes first alternating: their runs, and whether they keep the same rows."
    ours, fair = [], []
    for i in range(repeat):
        for side in ("ours", "fair")[::1 if i % 2 == 0 else -1]:
            if side == "ours": ours.append(run_measured(LLM_NB, root, "[]", mem, "dedup"))
            else: fair.append(run_measured(FAIR_FLOOR, root, mem))
    return ours, fair, same_kept(f"{root}/bench/clean/clean.parquet", f"{root}/floor_clean.parquet")

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--scale", type=int, default=20); ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--repeat", type=int, default=3, help="runs per side, alternating; medians are reported")
    ap.add_argument("--floor-repeat", type=int, default=5,
                    help="runs of exact-only clean and of the fair floor, the pair alone, which goes first alternating")
    ap.add_argument("--target-ratio", type=float, default=TARGET_FLOOR, help="the largest llm_nb exact-only / fair DuckDB floor")
    add_data_arg(ap); add_rows_arg(ap); add_smoke_arg(ap, "--rows 1000 --scale 2 --repeat 1 --floor-repeat 2")
    a = ap.parse_args()
    if a.smoke: a.rows, a.scale, a.repeat, a.floor_repeat = 1000, 2, 1, 2
    csv = corpus(a.data, "clean_vs_pandas")
    with tempfile.TemporaryDirectory() as root:
        make_run_input(root, a.scale, csv, a.rows)
        w50, w2000 = json.dumps(sensitive_words(50)), json.dumps(sensitive_words(2000))
        runs = {"pandas": [], "llm_nb": [], "llm_nb_2000": [], "llm_nb_default": [], "llm_nb_dedup": [], "fair_floor": [],
                "bare_floor": []}
        for _ in range(a.repeat):  # alternate the sides so load changes on the machine hit both
            runs["pandas"].append(run_measured(PANDAS, root, w50))
            runs["llm_nb"].append(run_measured(LLM_NB, root, w50, a.memory_limit, "exact"))
            runs["llm_nb_2000"].append(run_measured(LLM_NB, root, w2000, a.memory_limit, "exact"))
            runs["llm_nb_default"].append(run_measured(LLM_NB, root, w50, a.memory_limit, "default"))
            runs["bare_floor"].append(run_measured(FLOOR, root, a.memory_limit))
        runs["llm_nb_dedup"], runs["fair_floor"], same_rows = against_floor(root, a.floor_repeat, a.memory_limit)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    medians = lambda r: {**r[0], "wall_s": med([x["wall_s"] for x in r]), "rss_mib": med([x["rss_mib"] for x in r])}
    pd_, nb, nb2k, nbd, nbx, fair, floor = map(medians, runs.values())
    print("wall times (s): " + "; ".join(f"{k} " + ", ".join(f"{x['wall_s']:.1f}" for x in v) for k, v in runs.items()))
    same = {k: nb["result"][k] == pd_["result"][k] for k in ("rows_out", "exact_dup", "sensitive", "pii")}
    print(f"\nmedians of {a.repeat} runs\n{'':28}{'pandas':>12}{'llm_nb':>12}{'ratio':>10}")
    print(f"{'wall time (s)':28}{pd_['wall_s']:12.1f}{nb['wall_s']:12.1f}{pd_['wall_s'] / nb['wall_s']:9.1f}x faster")
    print(f"{'peak RSS (MiB)':28}{pd_['rss_mib']:12.0f}{nb['rss_mib']:12.0f}{nb['rss_mib'] / pd_['rss_mib']:9.2f}x")
    for k in ("rows_out", "exact_dup", "sensitive"):
        print(f"{k:28}{pd_['result'][k]:12,}{nb['result'][k]:12,}")
    print(f"{'pii':28}{json.dumps(pd_['result']['pii'])}\n{'':28}{json.dumps(nb['result']['pii'])}")
    print(f"results identical: {same}")
    print(f"llm_nb with 2,000 sensitive words: {nb2k['wall_s']:.1f}s vs {nb['wall_s']:.1f}s with 50 ({nb2k['wall_s'] / nb['wall_s']:.2f}x)")
    print(f"llm_nb, default config (filters + near dedup on): {nbd['wall_s']:.1f}s, peak RSS {nbd['rss_mib']:,.0f} MiB, "
          f"rows out {nbd['result']['rows_out']:,} (near_dup {nbd['result']['near_dup']:,}); "
          f"{pd_['wall_s'] / nbd['wall_s']:.1f}x faster than pandas doing less")
    print(f"fair DuckDB floor (normalize + hash + first copy + the same two Parquet files), ×{a.scale}: {fair['wall_s']:.1f}s "
          f"({fair['result']['distinct']:,} kept; llm_nb exact-only kept {nbx['result']['rows_out']:,}, the same rows: "
          f"{same_rows}); llm_nb exact-only / fair floor = {nbx['wall_s'] / fair['wall_s']:.2f}x ({nbx['wall_s']:.1f}s, "
          f"{nbx['wall_s'] - fair['wall_s']:+.1f}s); with PII and sensitive words / fair floor = {nb['wall_s'] / fair['wall_s']:.2f}x, "
          f"default / fair floor = {nbd['wall_s'] / fair['wall_s']:.2f}x")
    print(f"bare DuckDB floor (normalize + md5 + count DISTINCT, nothing written): {floor['wall_s']:.1f}s "
          f"({floor['result']['distinct']:,} distinct); llm_nb exact-only / bare floor = {nbx['wall_s'] / floor['wall_s']:.2f}x, "
          f"with PII and sensitive words / bare floor = {nb['wall_s'] / floor['wall_s']:.2f}x")
    pairs = sorted(o["wall_s"] / f["wall_s"] for o, f in zip(runs["llm_nb_dedup"], runs["fair_floor"]))
    print(f"exact-only / fair floor per pair (order alternating), ×{a.scale}: " + ", ".join(f"{x:.2f}" for x in pairs)
          + f" (median of the pairs {med(pairs):.2f}x, range {pairs[0]:.2f}-{pairs[-1]:.2f}); judged: the ratio of the "
          f"medians, {nbx['wall_s'] / fair['wall_s']:.2f}x")
    t = Targets("clean_vs_pandas", a.smoke)
    t.check("pandas / llm_nb exact-only wall time", pd_["wall_s"] / nb["wall_s"], ">=", TARGET_PANDAS, "{:.1f}")
    t.check("llm_nb exact-only / pandas peak RSS", nb["rss_mib"] / pd_["rss_mib"], "<=", TARGET_RSS)
    t.check("llm_nb results identical to pandas'", all(same.values()), "==", True)
    t.check(f"exact-only / fair floor at ×{a.scale}", nbx["wall_s"] / fair["wall_s"], "<=", a.target_ratio)
    t.check("exact-only keeps the fair floor's rows", same_rows, "==", True)
    t.check("2,000 sensitive words / 50 wall time", nb2k["wall_s"] / nb["wall_s"], "<=", TARGET_WORDS)
    return t.finish()

if __name__ == "__main__": sys.exit(main())
