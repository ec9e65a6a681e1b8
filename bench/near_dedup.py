"""Benchmark: the clean stage's near-dedup pass, llm_nb.minhash (numpy, DuckDB tables) vs the datasketch pass it
replaced, and datatrove's own MinHash stages, on the same rows, in one run; and all against exact Jaccard similarity.

Input: the review corpus online_shopping_10_cats.csv ×SCALE with perturbations (bench/_data.py), as an ingest part.
Each side runs in its own subprocess: the clean stage's pass 1 and exact dedup (the same code for both), then its
near-dedup pass, timed alone; wall time, the child's own peak RSS (VmHWM) and the pairs it found are compared.

  * speed: the datasketch pass's seconds / the new pass's seconds (target >= 10x at SCALE 4); datatrove's four
    MinHash stages (signatures, buckets, clusters, filter; LocalPipelineExecutor, 2 workers) on the same rows
    and bands, with character n-gram shingles like ours (--no-datatrove leaves them out);
  * agreement: duplicates both found, found by one only;
  * precision: the share of (duplicate, kept row) pairs whose exact n-gram Jaccard reaches the threshold;
  * recall on a sample: SAMPLE rows drawn at random among those reaching near dedup; a brute-force join in DuckDB
    over every earlier row's n-grams finds which of them truly have an earlier row at or above the threshold,
    and each side's share of those it flagged is its recall. (Keep-first makes a row whose only matches were
    removed stay; that chain effect is the same for both sides.)

Targets (one line each, exit status 1 when one is missed):
  * the datasketch pass's seconds / llm_nb.minhash's >= 10 (at SCALE 4);
  * llm_nb.minhash's precision >= 0.99 (it verifies every candidate pair by exact Jaccard);
  * its recall on the sample >= datasketch's less 0.02 (it replaced datasketch's pass: faster, not by finding fewer).
The precision and recall bounds are this file's reading of "faster and exact" (commit 0c5b62c), not measured limits.
`--smoke` runs every side on the first 1,000 reviews x2, a sample of 100, and judges nothing (tools/bench_smoke.sh).

    python bench/near_dedup.py [--scale 4] [--sample 1000] [--memory-limit 2GB] [--rows N] [--data CSV] [--smoke]

CSV defaults to ../shared/data/online_shopping_10_cats.csv; when it is not there, pass --data.
Exit status 1 when a target is missed, 2 when the corpus is missing.
"""
import argparse, json, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_data_arg, add_rows_arg, add_smoke_arg, corpus, make_input_in_child, run_measured

TARGET_SPEED, TARGET_PRECISION, RECALL_SLACK = 10.0, 0.99, 0.02

PREP = r'''
import json, sys, time
from pathlib import Path
from llm_nb.config import load_config
from llm_nb.run import Run
from llm_nb.clean_passes import connect, make_scored, exact_dedup
root, mem, side = sys.argv[1], sys.argv[2], sys.argv[3]
cfg = load_config(None, **{"run.root": root, "run.name": "bench", "clean.memory_limit": mem, "clean.threads": 2})
cc, run = cfg.clean, Run(root + "/bench", cfg)
con = connect(cc, run)
make_scored(con, cc, [], f"{root}/bench/ingest/parts/input.parquet", per_text=True)  # as the stage's default config
exact_dedup(con, cc)  # judges each distinct text once
rows = con.execute("SELECT count(*) FROM deduped").fetchall()[0][0]
if side == "new":  # the rows that reach near dedup, for the exact checks (before the clock starts)
    con.execute(f"""COPY (SELECT row_number() OVER (ORDER BY file, line) - 1 AS rid, file || ':' || line AS k, text
                          FROM deduped) TO '{root}/rows.parquet' (FORMAT parquet)""")
if side == "datatrove":  # the same rows as datatrove documents, in two halves (one per task), before the clock
    Path(root, "docs").mkdir(exist_ok=True)
    for part in (1, 2):  # contiguous halves: datatrove's "first" (lowest file, then document) is ours, (file, line)
        con.execute(f"""COPY (SELECT file || ':' || line AS id, text FROM deduped
                              QUALIFY ntile(2) OVER (ORDER BY file, line) = {part} ORDER BY file, line)
                        TO '{root}/docs/{part}.parquet' (FORMAT parquet)""")
t = time.perf_counter()
'''

# the datasketch pass as llm_nb.clean had it until this benchmark's commit (near_duplicates, shingles, _near_pass)
OLD = PREP + r'''
from datasketch import MinHash, MinHashLSH
def shingles(text, n=3): return {text[i:i + n].encode() for i in range(max(len(text) - n + 1, 1))}
def near_duplicates(rows, threshold=0.8, n=3, num_perm=128, seed=0):
    lsh, kept, dups = MinHashLSH(threshold=max(threshold - 0.15, 0.05), num_perm=num_perm), {}, {}
    for key, text in rows:
        m = MinHash(num_perm=num_perm, seed=seed)
        m.update_batch(list(shingles(text, n)))
        best = max(((kept[h].jaccard(m), h) for h in lsh.query(m)), default=(0, None))
        if best[0] >= threshold: dups[key] = best[1]
        else:
            lsh.insert(key, m)
            kept[key] = m
    return dups
cur = con.execute("SELECT file || ':' || line AS k, text FROM deduped ORDER BY file, line")
def batches():
    while batch := cur.fetchmany(10_000): yield from batch
dups = near_duplicates(batches(), cc.near_threshold, cc.ngram, cc.num_perm, cfg.run.seed)
near_s = time.perf_counter() - t
Path(root, side + ".json").write_text(json.dumps(dups))
print("RESULT", json.dumps(dict(rows=rows, near_s=near_s, dups=len(dups))))
'''

NEW = PREP + r'''
from llm_nb.clean_passes import near_dedup_pass
stats = near_dedup_pass(con, cc, cfg.run.seed)
near_s = time.perf_counter() - t
dups = dict(con.execute("SELECT k, dup_of FROM near_dups").fetchall())
Path(root, side + ".json").write_text(json.dumps(dups))
print("RESULT", json.dumps(dict(rows=rows, near_s=near_s, dups=len(dups), stats=stats)))
'''

# datatrove's own MinHash stages (signatures, buckets, clusters, filter) on the same rows, 2 tasks where it splits;
# shingles are character n-grams as llm_nb's (its word tokenizer makes one word of a Chinese review), and its bands
# are llm_nb's: the same LSH, datatrove's implementation of it (which keeps every bucket match: no check of the pair)
DATATROVE = PREP + r'''
import numpy as np
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                              MinhashDedupFilter, MinhashDedupSignature)
from datatrove.pipeline.readers import ParquetReader
from datatrove.pipeline.writers.jsonl import JsonlWriter
from datatrove.utils.hashing import HashConfig
from llm_nb.clean_match import near_lsh
import datatrove.pipeline.dedup.minhash as dtm
class CharSignature(MinhashDedupSignature):
    "datatrove's signature stage over character n-grams."
    def __init__(self, *args, **kw):
        real, dtm.load_word_tokenizer = dtm.load_word_tokenizer, lambda language: None  # no word tokenizer needed
        try: super().__init__(*args, **kw)
        finally: dtm.load_word_tokenizer = real
    def get_shingles(self, text):
        import numpy as np  # in datatrove's worker processes: this script's globals are not there
        n = self.config.n_grams
        grams = {text[i:i + n] for i in range(max(len(text) - n + 1, 1))}
        return np.fromiter((self._hash_func(g.encode()) for g in grams), dtype=np.uint64).reshape((-1, 1))
b, r = near_lsh(cc)  # the bands llm_nb's pass uses (it then checks each candidate pair; datatrove does not)
mc = MinhashConfig(n_grams=cc.ngram, num_buckets=b, hashes_per_bucket=r, seed=cfg.run.seed,
                   hash_config=HashConfig(precision=64))
work, docs = Path(root, "dt"), Path(root, "docs")
read = lambda: ParquetReader(str(docs), text_key="text", id_key="id")
steps = [([read(), CharSignature(str(work/"sigs"), config=mc)], 2),
         ([MinhashDedupBuckets(str(work/"sigs"), str(work/"buckets"), config=mc)], b),
         ([MinhashDedupCluster(str(work/"buckets"), str(work/"remove"), config=mc)], 1),
         ([read(), MinhashDedupFilter(str(work/"remove"), exclusion_writer=JsonlWriter(str(work/"removed")))], 2)]
for i, (pipeline, tasks) in enumerate(steps):
    LocalPipelineExecutor(pipeline, tasks=tasks, workers=min(tasks, 2), logging_dir=str(work/f"logs{i}")).run()
near_s = time.perf_counter() - t
import gzip
removed = [json.loads(l)["id"] for f in sorted((work/"removed").glob("*.jsonl.gz")) for l in gzip.open(f, "rt")]
dups = {k: None for k in removed}  # datatrove keeps one document per cluster, and does not say which
Path(root, side + ".json").write_text(json.dumps(dups))
print("RESULT", json.dumps(dict(rows=rows, near_s=near_s, dups=len(dups), bands=[b, r])))
'''

def exact_similarity(con, pairs:list, n:int) -> list[float]:
    "Exact Jaccard of the character n-gram sets of each (k, dup_of) pair, k = file:line, from the table `rows`."
    from llm_nb.minhash import jaccard
    text = dict(con.execute("SELECT k, text FROM rows").fetchall())
    return jaccard([text[a] for a, _ in pairs], [text[b] for _, b in pairs], n).tolist() if pairs else []

def true_near(con, sample:int, n:int, threshold:float, seed:int=0) -> set:
    "Keys of the sampled rows that have an earlier row with exact n-gram Jaccard >= threshold (brute-force join)."
    con.execute(f"""CREATE TEMP TABLE grams AS SELECT DISTINCT rid, substring(text, i + 1, {n}) AS g FROM (
                      SELECT rid, text, unnest(range(greatest(length(text) - {n} + 1, 1))) AS i FROM rows)""")
    con.execute("CREATE TEMP TABLE sizes AS SELECT rid, count(*) AS size FROM grams GROUP BY rid")
    con.execute(f"CREATE TEMP TABLE picked AS SELECT rid FROM rows USING SAMPLE {sample} ROWS (reservoir, {seed})")
    hits = con.execute(f"""
        WITH shared AS (SELECT p.rid AS j, e.rid AS i, count(*) AS inter FROM picked p
                        JOIN grams gj ON gj.rid = p.rid JOIN grams e ON e.g = gj.g AND e.rid < p.rid GROUP BY 1, 2)
        SELECT DISTINCT r.k FROM shared s JOIN sizes sj ON sj.rid = s.j JOIN sizes si ON si.rid = s.i
        JOIN rows r ON r.rid = s.j WHERE s.inter / (sj.size + si.size - s.inter) >= {threshold}""").fetchall()
    picked = {k for (k,) in con.execute("SELECT r.k FROM picked JOIN rows r USING (rid)").fetchall()}
    return picked, {k for (k,) in hits}

def precision_recall(dups:dict, sims:list|None, picked:set, truth:set, threshold:float) -> tuple:
    "A side's precision (share of its pairs at or above `threshold`; None where it names no pairs) and recall on the sample."
    precision = None if sims is None else sum(x >= threshold for x in sims) / max(len(dups), 1)
    return precision, len(picked & set(dups) & truth) / max(len(truth), 1)

def side_report(name:str, dups:dict, sims:list|None, picked:set, truth:set, threshold:float) -> str:
    "One line: a side's duplicates, its precision (exact similarity of its pairs, where it names them) and its recall on the sample."
    flagged = picked & set(dups)
    if sims is None: precision = "precision n/a (it does not say which row each was a duplicate of)"
    else:
        right = sum(x >= threshold for x in sims)
        precision = f"precision {right / max(len(dups), 1):.4f} ({len(dups) - right} pairs below {threshold})"
    return (f"{name:>15}: {len(dups):,} near duplicates; {precision}; sample: recall "
            f"{len(flagged & truth) / max(len(truth), 1):.3f} ({len(flagged & truth)} of {len(truth)}), "
            f"flagged without a true match {len(flagged - truth)}")

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=4)
    ap.add_argument("--sample", type=int, default=1000)
    ap.add_argument("--memory-limit", default="2GB")
    ap.add_argument("--no-datatrove", action="store_true", help="leave out datatrove's MinHash stages")
    add_data_arg(ap); add_rows_arg(ap); add_smoke_arg(ap, "--rows 1000 --scale 2 --sample 100")
    a = ap.parse_args()
    if a.smoke: a.rows, a.scale, a.sample = 1000, 2, 100
    csv = corpus(a.data, "near_dedup")
    import duckdb
    from llm_nb.config import CleanCfg
    cc = CleanCfg()
    with tempfile.TemporaryDirectory() as root:
        info = make_input_in_child(Path(root)/"bench"/"ingest"/"parts"/"input.parquet", a.scale, csv, rows=a.rows)
        new = run_measured(NEW, root, a.memory_limit, "new")
        old = run_measured(OLD, root, a.memory_limit, "old")
        dt = run_measured(DATATROVE, root, a.memory_limit, "datatrove") if not a.no_datatrove else None
        dn, do = (json.loads(Path(root, s + ".json").read_text()) for s in ("new", "old"))
        dd = json.loads(Path(root, "datatrove.json").read_text()) if dt else None
        con = duckdb.connect()
        con.execute(f"CREATE TEMP TABLE rows AS SELECT * FROM read_parquet('{root}/rows.parquet')")
        picked, truth = true_near(con, a.sample, cc.ngram, cc.near_threshold)
        sims = {name: exact_similarity(con, list(d.items()), cc.ngram) for name, d in (("new", dn), ("old", do))}
    print(f"input: {info['rows']:,} rows (review corpus x{a.scale}); {new['result']['rows']:,} reach near dedup "
          f"(after the filters and exact dedup); {cc.ngram}-grams, threshold {cc.near_threshold}, {cc.num_perm} permutations")
    print(f"near-dedup pass: datasketch {old['result']['near_s']:.2f} s, llm_nb.minhash {new['result']['near_s']:.2f} s "
          f"-> {old['result']['near_s'] / new['result']['near_s']:.1f}x faster")
    print(f"peak RSS (whole child, memory_limit {a.memory_limit}): datasketch {old['rss_mib']:,.0f} MiB, "
          f"llm_nb.minhash {new['rss_mib']:,.0f} MiB")
    print("new pass:", new["result"]["stats"])
    both = set(dn) & set(do)
    print(f"duplicates: both {len(both):,} (same kept row for {sum(dn[k] == do[k] for k in both):,}), "
          f"new only {len(set(dn) - set(do)):,}, old only {len(set(do) - set(dn)):,}")
    print(f"exact check, {len(picked):,} rows sampled, {len(truth)} of them have an earlier row at >= {cc.near_threshold}:")
    print(side_report("llm_nb.minhash", dn, sims["new"], picked, truth, cc.near_threshold))
    print(side_report("datasketch", do, sims["old"], picked, truth, cc.near_threshold))
    t = Targets("near_dedup", a.smoke)
    (p_new, r_new), (_, r_old) = (precision_recall(d, sims[k], picked, truth, cc.near_threshold)
                                  for k, d in (("new", dn), ("old", do)))
    t.check("datasketch / llm_nb.minhash near-dedup seconds", old["result"]["near_s"] / new["result"]["near_s"], ">=",
            TARGET_SPEED, "{:.1f}")
    t.check("llm_nb.minhash precision", p_new, ">=", TARGET_PRECISION, "{:.4f}")
    t.check(f"llm_nb.minhash recall on the sample (datasketch's {r_old:.3f} less {RECALL_SLACK})", r_new, ">=",
            round(r_old - RECALL_SLACK, 3), "{:.3f}")
    if dt is not None: datatrove_report(dt, dd, dn, new, picked, truth, cc)
    return t.finish()

def datatrove_report(dt:dict, dd:dict, dn:dict, new:dict, picked:set, truth:set, cc):
    "The datatrove side's lines (information: no target)."
    b, r = dt["result"]["bands"]
    print(f"datatrove's MinHash stages ({b} bands x {r} rows, character {cc.ngram}-grams, 2 tasks where they split): "
          f"{dt['result']['near_s']:.2f} s -> llm_nb.minhash {dt['result']['near_s'] / new['result']['near_s']:.1f}x "
          f"faster; peak RSS of its child {dt['rss_mib']:,.0f} MiB (the stages run in worker processes: not counted)")
    print(f"duplicates: datatrove and llm_nb both {len(set(dd) & set(dn)):,}, datatrove only {len(set(dd) - set(dn)):,}, "
          f"llm_nb only {len(set(dn) - set(dd)):,}")
    print(side_report("datatrove", dd, None, picked, truth, cc.near_threshold))

if __name__ == "__main__": sys.exit(main())
