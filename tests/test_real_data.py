"""Clean on a real corpus (../shared/data/online_shopping_10_cats.csv, 62,774 reviews with stray BOMs, exact duplicates
and an empty review): exact dedup finds every duplicate a plain Python set finds, and the BOMs are gone; the quality
filters keep informal reviews (～～～, emoticons) and reject exactly the texts without a letter."""
import json, re
from pathlib import Path
import pyarrow.parquet as pq, pytest
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean

CSV = Path(__file__).resolve().parents[2]/"shared"/"data"/"online_shopping_10_cats.csv"

def py_normalize(t:str) -> str:
    "The normalization of llm_nb.clean_text, written independently with Python's re."
    t = re.sub(r"\r\n?", "\n", t)
    t = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufeff\u200b]", "", t)
    t = re.sub(r"[ \t]+", " ", t)
    t = re.sub(r" ?\n ?", "\n", t)
    t = re.sub(r"\n{3,}", "\n\n", t)
    return t.strip(" \n")

pytestmark = pytest.mark.skipif(not CSV.exists(), reason=f"{CSV} is not there (it is beside the repo in CI)")
BASE = {"synth.n_records": 0, "ingest.sources": [{"name": "shop", "path": str(CSV), "text_field": "review"}],
        "clean.pii": [], "clean.sensitive_words": [], "clean.near_dedup": False}

@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    "A run folder holding the corpus ingested once, and its raw texts."
    cfg = demo_config(**{"run.root": str(tmp_path_factory.mktemp("real")), **BASE})
    run = Run.create(cfg)
    ing = run_ingest(cfg, run)
    assert ing["kept"] == 62774 and ing["quarantined"] == 0
    return run, pq.read_table(run.dir/"ingest"/"parts", columns=["text"]).column("text").to_pylist()

def clean_with(run:Run, **overrides) -> dict:
    "run_clean on the ingested run with `overrides` of the clean section."
    cfg = demo_config(**{"run.root": str(run.dir.parent), "run.name": run.dir.name, **BASE, **overrides})
    return run_clean(cfg, Run(run.dir, cfg))

def test_exact_dedup_matches_a_python_set_and_boms_are_gone(ingested):
    run, raw = ingested
    assert sum("\ufeff" in t for t in raw) >= 20
    c = clean_with(run, **{"clean.min_chars": 1, "clean.max_symbol_ratio": 1, "clean.max_digit_ratio": 1,
                           "clean.max_dup_line_ratio": 1, "clean.require_letters": False, "clean.reject_mojibake": False})
    normalized = [py_normalize(t) for t in raw]
    nonempty = [t for t in normalized if t]
    assert c["rejected"]["too_short"] == len(normalized) - len(nonempty)
    assert c["rejected"]["exact_dup"] == len(nonempty) - len(set(nonempty))
    clean = pq.read_table(run.dir/"clean"/"clean.parquet", columns=["text"]).column("text").to_pylist()
    assert set(clean) == set(nonempty) and len(clean) == len(set(nonempty))
    assert not any("\ufeff" in t for t in clean)

INFORMAL = ["还不错～～～～～～～～", "不错~~~~~~~~~~~~~~~~~~~~~~", "差评！～～～～", "不错不错 赞赞赞\\(≧▽≦)/\\(≧▽≦)/\\(≧▽≦)/"]

def test_quality_filters_keep_informal_reviews_and_reject_texts_without_letters(ingested):
    run, raw = ingested
    assert all(t in raw for t in INFORMAL)  # real reviews the character-counting symbol filter rejected
    c = clean_with(run)  # the default thresholds
    normalized = [py_normalize(t) for t in raw]
    long_enough = [t for t in normalized if len(t) >= 5]
    assert c["rejected"]["no_letters"] == sum(not any(ch.isalpha() for ch in t) for t in long_enough)
    assert c["rejected"]["no_letters"] >= 2 and "mojibake" not in c["rejected"]
    assert c["rejected"].get("symbol_ratio", 0) <= 5  # 25 with the character-counting filter (the note)
    clean = set(pq.read_table(run.dir/"clean"/"clean.parquet", columns=["text"]).column("text").to_pylist())
    assert all(t in clean for t in INFORMAL)
    stats = json.loads((run.dir/"clean"/"stats.json").read_text())
    assert set(stats["samples"]) == set(c["rejected"])
    for reason, rows in stats["samples"].items():
        assert 1 <= len(rows) <= 5 and all(r["line"] > 0 and r["file"].endswith(CSV.name) for r in rows), reason
    assert all(not any(ch.isalpha() for ch in r["text"]) for r in stats["samples"]["no_letters"])
