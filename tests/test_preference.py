"""DPO as a job runs it: killed with SIGKILL mid-run and resumed from its last complete checkpoint, matching the
uninterrupted run; a NaN loss handled by train.nan_policy, as in SFT. GRPO with a reward of the user's own."""
import json, os, shutil, subprocess
from pathlib import Path
import pytest
from llm_nb.config import demo_config, load_config, to_yaml
from llm_nb.chat import stop_ids
from llm_nb.model import load_tokenizer
from llm_nb.preference import run_preference
from llm_nb.testing import run_until
from llm_nb.train import MARKER, nan_at
from conftest import kill_9_once

LLM_NB = shutil.which("llm_nb")
ENV = dict(os.environ, OMP_NUM_THREADS="1")
PAIRS = {"synth.n_preference_pairs": 60, "synth.n_heldout_pairs": 8, "preference.method": "dpo",
         "ingest.sources": [s.model_dump() for s in demo_config().ingest.sources]
                           + [{"name": "preferences", "path": "{run}/synth/chat/preference.jsonl"}],
         "preference.heldout": "{run}/synth/chat/preference_heldout.jsonl", "train.max_steps": 10,
         "preference.learning_rate": 1e-3, "preference.batch_size": 4, "preference.max_steps": 16,
         "preference.save_steps": 4, "preference.logging_steps": 1, "train.resume": "auto", "track.wandb": "disabled",
         "annotate.input": "", "annotate.second": ""}  # no annotation: not read by SFT or DPO

@pytest.fixture(scope="module")
def prepared():
    "A demo run with SFT done (10 steps) and 60 pairs cleaned, 8 held out."
    return run_until("preference", **PAIRS)

def job_config(run, tmp_path:Path, name:str) -> Path:
    "A copy of the prepared run folder under a new name, and its config file."
    shutil.copytree(run.dir, tmp_path/name)
    (p := tmp_path/f"{name}.yaml").write_text(to_yaml(load_config(run.cfg.model_dump(), **{"run.root": str(tmp_path), "run.name": name})))
    return p

def logged(run_dir:Path, key:str) -> dict:
    "{step: value} of `key` in preference/log.json."
    return {h["step"]: h[key] for h in json.loads((run_dir/"preference"/"log.json").read_text()) if key in h}

def test_dpo_kill_9_then_resume_matches_the_uninterrupted_run(prepared, tmp_path):
    ref = job_config(prepared, tmp_path, "ref")
    r = subprocess.run([LLM_NB, "run", ref, "--stages", "preference"], capture_output=True, text=True, env=ENV, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    cfg = job_config(prepared, tmp_path, "killed")
    ck = tmp_path/"killed"/"preference"/"checkpoints"
    kill_9_once([LLM_NB, "run", cfg, "--stages", "preference"], ck/"checkpoint-8"/MARKER, ENV)  # after its 2nd checkpoint
    assert not (tmp_path/"killed"/"preference"/"adapter").exists()  # it really died before the end
    r = subprocess.run([LLM_NB, "run", cfg, "--stages", "preference"], capture_output=True, text=True, env=ENV, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "resuming from checkpoint-" in r.stdout, r.stdout[-2000:]
    for key in ("loss", "rewards/margins"):
        want, got = logged(tmp_path/"ref", key), logged(tmp_path/"killed", key)
        assert sorted(got) == sorted(want) == list(range(1, 17)), (key, got)
        for step in want: assert abs(got[step] - want[step]) < 1e-4, (key, step, got[step], want[step])
    reps = [json.loads((tmp_path/n/"report.json").read_text())["stages"]["preference"] for n in ("ref", "killed")]
    assert abs(reps[0]["dpo_accuracy"] - reps[1]["dpo_accuracy"]) < 1e-9 and reps[0]["steps"] == reps[1]["steps"] == 16, reps

def test_a_nan_loss_in_dpo_is_skipped_by_the_policy(prepared, tmp_path):
    "`train.nan_policy: skip` on DPO: the poisoned step leaves the adapter unchanged, is logged, and training goes on."
    cfg = load_config(prepared.cfg.model_dump(), **{"train.nan_policy": "skip", "preference.save_steps": 0,
                                                    "preference.max_steps": 6})
    c = run_preference(cfg, prepared, drill=lambda t: nan_at(t, {3}))
    assert c["nan_events"] == 1 and c["steps"] == 6, c
    events = json.loads((prepared.dir/"preference"/"nan_events.json").read_text())
    assert [(e["step"], e["action"]) for e in events] == [(3, "skip")], events

def test_grpo_stops_sampling_at_the_end_of_a_turn_and_calls_the_users_reward(prepared, tmp_path, monkeypatch):
    """GRPO on the pairs' prompts with a reward named `module:function`: TRL calls it with each completion and the
    pair's chosen answer as `reference`; sampling stops at the template's end of turn (not only at `</s>`); with a KL
    term, the `ref` copy of the adapter is not saved with the result."""
    (tmp_path/"my_reward.py").write_text(
        "CALLS = []\n"
        "def starts_right(prompts, completions, reference, **kw):\n"
        "    CALLS.append(len(completions))\n"
        "    return [float(c[0]['content'][:1] == r[:1]) for c, r in zip(completions, reference)]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_reward
    cfg = load_config(prepared.cfg.model_dump(), **{
        "preference.method": "grpo", "preference.reward": "my_reward:starts_right", "preference.num_generations": 4,
        "preference.batch_size": 8, "preference.max_steps": 4, "preference.save_steps": 0, "preference.kl_beta": 0.05,
        "preference.max_new_tokens": 24})
    stops = []
    c = run_preference(cfg, prepared, drill=lambda t: stops.append(t.eos_token_ids))
    tok = load_tokenizer(str(prepared.dir/"tokenize"/"tokenizer"))
    assert set(stop_ids(tok, tok.chat_template)) <= set(stops[0]), stops  # sampling stops where a turn ends
    assert c["method"] == "grpo" and c["steps"] == 4 and 0 <= c["sft_reward"] <= 1 and 0 <= c["grpo_reward"] <= 1, c
    assert my_reward.CALLS == [8] * 6, my_reward.CALLS  # SFT's 8 held-out answers, 4 steps of 2 prompts x 4, GRPO's 8
    log = json.loads((prepared.dir/"preference"/"log.json").read_text())
    assert [h["step"] for h in log if "reward" in h] == [1, 2, 3, 4], log
    scores = json.loads((prepared.dir/"preference"/"scores.json").read_text())
    assert set(scores) == {"sft", "grpo"} and len(scores["grpo"]["rewards"]) == 8, scores.keys()
    adapter = prepared.dir/"preference"/"adapter"
    assert (adapter/"adapter_model.safetensors").exists() and not (adapter/"ref").exists()

def test_evaluate_takes_the_preference_adapter(prepared):
    """With the preference stage on, evaluate scores `preference/adapter` (`final_adapter`), as export and the servers
    take it: the fine-tuned perplexity differs from the SFT adapter's, on the same base and the same eval blocks."""
    from llm_nb.evaluate import run_evaluate
    cfg = load_config(prepared.cfg.model_dump(), **{"preference.max_steps": 4, "preference.save_steps": 0,
                                                    "evaluate.max_batches": 2, "evaluate.local_tasks": [],
                                                    "evaluate.tasks": []})
    run_preference(cfg, prepared)
    tuned = run_evaluate(cfg, prepared)
    sft = run_evaluate(load_config(cfg.model_dump(), **{"preference.method": "off"}), prepared)
    assert tuned["ppl_before"] == sft["ppl_before"] and tuned["eval_tokens"] == sft["eval_tokens"], (tuned, sft)
    assert abs(tuned["ppl_after"] - sft["ppl_after"]) > 1e-6, (tuned, sft)

def test_dpo_under_deepspeed_zero2_on_two_ranks_saves_the_adapter_it_scored(prepared, tmp_path):
    """DPO as SFT runs under DeepSpeed: ZeRO-2 on 2 CPU ranks (torchrun, gloo), each rank half of every batch. The saved
    adapter is the model the stage scored: reloaded on one process, its held-out log-probabilities are scores.json's."""
    import socket, torch
    from llm_nb.preference import answer_ids, answer_logps, read_pairs
    from peft import PeftModel
    from llm_nb.model import load_model
    from llm_nb.artifacts import base_model_path
    shutil.copytree(prepared.dir, tmp_path/"z2")
    cfg = load_config(prepared.cfg.model_dump(), **{"run.root": str(tmp_path), "run.name": "z2", "deepspeed.stage": 2,
                                                    "preference.max_steps": 4, "preference.save_steps": 0,
                                                    "preference.batch_size": 2})
    (p := tmp_path/"z2.yaml").write_text(to_yaml(cfg))
    with socket.socket() as s: s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]  # torchrun hangs on port 0
    r = subprocess.run(["torchrun", "--nproc-per-node", "2", "--master-port", str(port), LLM_NB, "run", p, "--stages",
                        "preference"], capture_output=True, text=True, env=ENV, timeout=900)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    rep = json.loads((tmp_path/"z2"/"report.json").read_text())["stages"]["preference"]
    assert (rep["steps"], rep["ranks"], rep["zero_stage"]) == (4, 2, 2), rep
    assert rep["last_margin"] != rep["first_margin"], rep  # it trained
    from llm_nb.run import Run
    run = Run(tmp_path/"z2", cfg)
    held = read_pairs(tmp_path/"z2"/"synth"/"chat"/"preference_heldout.jsonl")
    tok = load_tokenizer(str(run.dir/"tokenize"/"tokenizer"))
    model = PeftModel.from_pretrained(load_model(base_model_path(run), cfg.model), str(run.dir/"preference"/"adapter"))
    got = answer_logps(model.eval(), tok.pad_token_id, [answer_ids(tok, h["prompt"], h["chosen"]) for h in held])
    want = json.loads((run.dir/"preference"/"scores.json").read_text())["dpo"]["logps_chosen"]
    assert torch.allclose(torch.as_tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64), atol=1e-3), (got, want)

def test_grpo_on_conversations_needs_no_pairs(prepared):
    """`preference.prompts: conversations`: GRPO's prompts are the cleaned conversations' (their last answer the
    reference), eval_frac of them held out and scored by exact match and reward (no rejected side: no accuracy)."""
    cfg = load_config(prepared.cfg.model_dump(), **{
        "preference.method": "grpo", "preference.prompts": "conversations", "preference.heldout": "",
        "preference.eval_frac": 0.05, "preference.reward": "f1", "preference.num_generations": 2,
        "preference.batch_size": 4, "preference.max_steps": 2, "preference.save_steps": 0})
    c = run_preference(cfg, prepared)
    from llm_nb.preference import stored_conversations
    n = len(stored_conversations(prepared.dir/"clean"/"clean.parquet"))
    assert (c["prompts"], c["steps"], c["pairs"] + c["heldout_pairs"]) == ("conversations", 2, n), (c, n)
    assert 0 <= c["sft_reward"] <= 1 and 0 <= c["grpo_reward"] <= 1 and "sft_accuracy" not in c, c
    with pytest.raises(Exception, match="preference.prompts=conversations is GRPO's"):
        load_config(cfg.model_dump(), **{"preference.method": "dpo"})
    import torch
    if not torch.cuda.is_available():  # vLLM's generation: refused before the stage loads a model
        with pytest.raises(ValueError, match="preference.generation=vllm needs a CUDA GPU"):
            run_preference(load_config(cfg.model_dump(), **{"preference.generation": "vllm"}), prepared)
