"""Decontamination on a user's instruction data: real reviews (../shared/data/online_shopping_10_cats.csv) asked
with one fixed instruction, as OpenAI `messages` records, against held-out questions asked the same way. The shared
instruction is a template, not contamination: every honest record is kept and planted copies of held-out questions
are still caught. A held-out set too small for the template rule stops the stage naming the n-gram it matched, and a
clean (or an ingest) that keeps nothing stops with its reasons before the next stage runs (issue #69)."""
import csv, json
from pathlib import Path
import pyarrow.parquet as pq, pytest
from llm_nb.config import demo_config
from llm_nb.run import Run, StageRefused
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean
from llm_nb.pipeline import run_pipeline
from llm_nb.clean_match import decontam_words

CSV = Path(__file__).resolve().parents[2]/"shared"/"data"/"online_shopping_10_cats.csv"
ASK = "判断这条商品评论的情感，只回答“正面”或“负面”。\n评论："  # 13 jieba words: the decontamination n-gram's length
LABEL = {"1": "正面", "0": "负面"}
PLANTED = [3, 77, 150]  # held-out questions copied into the training file, with their answers

pytestmark = pytest.mark.skipif(not CSV.exists(), reason=f"{CSV} is not there (it is beside the repo in CI)")

def reviews(n:int) -> list[tuple[str, str]]:
    "The first `n` distinct reviews of 30-80 characters, with their labels, in the file's order."
    seen, out = set(), []
    with CSV.open(encoding="utf-8") as f:
        for row in csv.DictReader(f):
            r = row["review"].strip()
            if 30 <= len(r) <= 80 and r not in seen:
                seen.add(r)
                out.append((r, LABEL[row["label"]]))
                if len(out) == n: return out
    raise AssertionError(f"{CSV} has fewer than {n} such reviews")

def write_jsonl(path:Path, rows:list) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path

def chat(question:str, answer:str) -> dict:
    return {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}

def sentiment_run(tmp:Path, n_held:int, **overrides) -> tuple:
    "A config reading 400 training records (+ the planted copies) and a held-out file of `n_held` questions."
    data = reviews(400 + n_held)
    held = [{"question": ASK + r, "answer": a} for r, a in data[400:]]
    train = [chat(ASK + r, a) for r, a in data[:400]] + [chat(held[i]["question"], held[i]["answer"])
                                                          for i in PLANTED if i < n_held]
    src, ev = write_jsonl(tmp/"train.jsonl", train), write_jsonl(tmp/"held.jsonl", held)
    cfg = demo_config(**{"run.root": str(tmp/"runs"), "synth.n_records": 0, "clean.near_dedup": False, "clean.decontaminate_evaluated": False,
                         "ingest.sources": [{"name": "reviews", "path": str(src)}],
                         "clean.decontaminate": [{"name": "sentiment", "path": str(ev)}], **overrides})
    return cfg, held

def test_a_shared_instruction_is_a_template_and_copies_are_still_caught(tmp_path):
    cfg, held = sentiment_run(tmp_path, 200)
    run = Run.create(cfg)
    assert run_ingest(cfg, run)["kept"] == 403
    c = run_clean(cfg, run)
    assert c["rejected"].get("contaminated:sentiment") == 3, c["rejected"]  # was 403 of 403
    rejected = pq.read_table(run.dir/"clean"/"rejected.parquet").to_pylist()
    caught = sorted(r["line"] for r in rejected if r["reason"] == "contaminated:sentiment")
    assert caught == [401, 402, 403]  # the planted copies, the training file's last three lines
    task = json.loads((run.dir/"clean"/"stats.json").read_text())["decontamination"]["tasks"]["sentiment"]
    assert task["template_ngrams"] >= 1 and task["template"].startswith(" ".join(decontam_words(ASK)))

def test_a_held_out_set_too_small_for_the_rule_stops_naming_the_ngram(tmp_path):
    cfg, _ = sentiment_run(tmp_path, 8)  # 8 examples: the instruction is in no more than 10 of them
    run = Run.create(cfg)
    run_ingest(cfg, run)
    with pytest.raises(StageRefused, match=r"rejected 401 of the 401 rows of source reviews as contaminated:sentiment "
                                           r"\(100%.*«判断 这 条 商品 评论 的 情感.*decontam_template_items"):
        run_clean(cfg, run)
    cfg, _ = sentiment_run(tmp_path, 8, **{"clean.decontam_template_items": 7})  # what the message advises
    assert run_clean(cfg, Run.create(cfg))["rejected"] == {"contaminated:sentiment": 1}  # the copy of question 3

def test_a_clean_that_keeps_nothing_stops_before_the_next_stage(tmp_path):
    cfg, _ = sentiment_run(tmp_path, 200, **{"clean.min_chars": 5000, "clean.decontaminate": []})
    with pytest.raises(StageRefused, match=r"stage clean kept no record of 403 \(too_short 403\).*stats.json"):
        run_pipeline(cfg, stages=["ingest", "clean", "model", "tokenize"], seeds=[])
    run = Run.create(cfg)
    assert (run.dir/"clean"/"stats.json").exists() and not (run.dir/"model").exists()
    assert "clean" not in run.recorded_stages()  # not recorded as done: the next run runs it again

def test_an_ingest_that_keeps_nothing_stops_with_its_reasons(tmp_path):
    bad = tmp_path/"broken.jsonl"
    bad.write_text('{"text": \n{"text": "ok"\n')
    cfg = demo_config(**{"run.root": str(tmp_path/"runs"), "synth.n_records": 0,
                         "ingest.sources": [{"name": "broken", "path": str(bad)}]})
    with pytest.raises(StageRefused, match=r"stage ingest kept no record of 2 \(invalid json: .* 1, invalid json: .*\); .*dead_letter.jsonl"):
        run_pipeline(cfg, stages=["ingest", "clean"], seeds=[])
