"""Clean on a real corpus (../shared/data/online_shopping_10_cats.csv, 62,774 reviews with stray BOMs, exact duplicates
and an empty review): exact dedup finds every duplicate a plain Python set finds, and the BOMs are gone."""
import re
from pathlib import Path
import pyarrow.parquet as pq, pytest
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean import run_clean

CSV = Path(__file__).resolve().parents[2]/"shared"/"data"/"online_shopping_10_cats.csv"

def py_normalize(t:str) -> str:
    "The normalization of llm_nb.clean, written independently with Python's re."
    t = re.sub(r"\r\n?", "\n", t)
    t = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\u200b]", "", t)
    t = re.sub(r"[ \t]+", " ", t)
    t = re.sub(r" ?\n ?", "\n", t)
    t = re.sub(r"\n{3,}", "\n\n", t)
    return t.strip(" \n")

@pytest.mark.skipif(not CSV.exists(), reason=f"{CSV} is not there (it is beside the repo in CI)")
def test_exact_dedup_matches_a_python_set_and_boms_are_gone(tmp_path):
    cfg = demo_config(**{"run.root": str(tmp_path), "synth.n_records": 0, "ingest.sources": [{"name": "shop", "path": str(CSV), "text_field": "review"}],
                         "clean.pii": [], "clean.sensitive_words": [], "clean.near_dedup": False, "clean.min_chars": 1,
                         "clean.max_symbol_ratio": 1, "clean.max_digit_ratio": 1, "clean.max_dup_line_ratio": 1})
    run = Run.create(cfg)
    ing = run_ingest(cfg, run)
    assert ing["kept"] == 62774 and ing["quarantined"] == 0
    raw = pq.read_table(run.dir/"ingest"/"parts", columns=["text"]).column("text").to_pylist()
    assert sum("\ufeff" in t for t in raw) >= 20
    c = run_clean(cfg, run)
    normalized = [py_normalize(t) for t in raw]
    nonempty = [t for t in normalized if t]
    assert c["rejected"]["too_short"] == len(normalized) - len(nonempty)
    assert c["rejected"]["exact_dup"] == len(nonempty) - len(set(nonempty))
    clean = pq.read_table(run.dir/"clean"/"clean.parquet", columns=["text"]).column("text").to_pylist()
    assert set(clean) == set(nonempty) and len(clean) == len(set(nonempty))
    assert not any("\ufeff" in t for t in clean)
