"""Benchmark: llm_nb's clean on an input at least 4x DuckDB's memory_limit completes with the limit enforced.

Input: the review corpus online_shopping_10_cats.csv ×SCALE with perturbations (bench/_data.py), as an ingest part.
Runs run_clean in a subprocess with clean.memory_limit=LIMIT and the default config (near dedup on: its
signatures, band keys and pairs are DuckDB tables too; `--no-near` turns it off), and prints the input size, the
limit DuckDB reports, what DuckDB had spilled to temp_dir, the peak RSS of the process, and the counts.

    python bench/out_of_core.py [--scale 100] [--memory-limit 256MB] [--no-near] [--distinct] [--data CSV]

CSV defaults to ../shared/data/online_shopping_10_cats.csv; when it is not there, pass --data.
"""
import argparse, json, sys, tempfile
from pathlib import Path
import psutil
from llm_nb.config import memory_bytes
sys.path.insert(0, str(Path(__file__).parent))
from _data import add_data_arg, corpus, make_input_in_child, record_ingest, run_measured, sensitive_words

RUN = r'''
import json, sys
from llm_nb.config import load_config
from llm_nb.run import Run
from llm_nb.clean import run_clean
root, words, mem, near = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4] == "near"
cfg = load_config(None, **{"run.root": root, "run.name": "bench", "clean.sensitive_words": words, "clean.near_dedup": near,
                           "clean.memory_limit": mem, "clean.threads": 2})
c = run_clean(cfg, Run(cfg.run.root + "/bench", cfg))
print("RESULT", json.dumps(c))
'''

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--scale", type=int, default=100); ap.add_argument("--memory-limit", default="256MB")
    ap.add_argument("--no-near", action="store_true", help="near dedup off")
    ap.add_argument("--distinct", action="store_true", help="copies made distinct (each review + another one), "
                    "so that nearly every row reaches near dedup")
    add_data_arg(ap)
    a = ap.parse_args()
    csv = corpus(a.data, "out_of_core")
    with tempfile.TemporaryDirectory() as root:
        info = make_input_in_child(Path(root)/"bench"/"ingest"/"parts"/"input.parquet", a.scale, csv, a.distinct)
        record_ingest(root)
        m = run_measured(RUN, root, json.dumps(sensitive_words(50)), a.memory_limit, "exact" if a.no_near else "near")
    wall, rss = m["wall_s"], m["rss_mib"]
    c = m["result"]
    limit = memory_bytes(a.memory_limit, psutil.virtual_memory().total)
    print(f"input: {info['rows']:,} rows, {info['text_bytes']/2**20:,.0f} MiB of text ({info['text_bytes']/limit:.1f}x memory_limit), "
          f"{info['file_bytes']/2**20:,.0f} MiB Parquet")
    print(f"memory_limit asked {a.memory_limit}, DuckDB reports {c['duckdb_memory_limit']}; spilled to temp_dir: {c['spilled_bytes']/2**20:,.0f} MiB")
    print(f"completed in {wall:.1f}s; peak RSS {rss:,.0f} MiB; rows in {c['rows_in']:,} -> out {c['rows_out']:,}; "
          f"rejected {c['rejected']}; invariant ok: {c['invariant_ok']}")
    print(f"near dedup: {c['engine']['near_dedup']}")
    print(f"input text / memory_limit >= 4: {info['text_bytes'] / limit >= 4}")

if __name__ == "__main__": main()
