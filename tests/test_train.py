"Training as a job runs it: killed with SIGKILL and resumed exactly (batches grouped by length); DeepSpeed ZeRO-2 and ZeRO-3 + offload on 2 ranks."
import json, os, shutil, subprocess
from pathlib import Path
import pytest, torch
from datasets import load_from_disk
from llm_nb.config import load_config, to_yaml
from llm_nb.artifacts import base_model_path
from llm_nb.run import Run
from llm_nb.testing import TEXT_ONLY, run_until
from llm_nb.train import MARKER
from llm_nb.launch import accelerate_config_path, launch_argv, write_accelerate_config
from llm_nb.env import free_port
from safetensors.torch import load_file
from conftest import kill_9_once

LLM_NB = shutil.which("llm_nb")
ENV = dict(os.environ, OMP_NUM_THREADS="1")  # DeepSpeed's ops build in TORCH_EXTENSIONS_DIR (tools/test.sh: the venv's)

@pytest.fixture(scope="module")
def prepared():
    """A demo run with every stage before train done (a small eval split, so the checks are fast), on raw text only:
    `eval_losses` scores full blocks with every token a label (tests/test_chat.py trains on conversations)."""
    return run_until("train", **{"train.logging_steps": 1, **TEXT_ONLY})

@pytest.fixture(scope="module")
def demo_prepared():
    """The demo's own data up to train: text blocks and conversations, which on this CPU tokenize groups by length,
    so the Trainer draws its batches through its LengthGroupedSampler."""
    return run_until("train", **{"train.logging_steps": 1})

def job_config(run, tmp_path:Path, name:str, **overrides) -> Path:
    "A copy of the prepared run folder under a new name, and its config file with `overrides`."
    shutil.copytree(run.dir, tmp_path/name)
    data = load_config(run.cfg.model_dump(), **{"run.root": str(tmp_path), "run.name": name, **overrides})
    (p := tmp_path/f"{name}.yaml").write_text(to_yaml(data))
    return p

def logged_losses(run_dir:Path) -> dict:
    "{step: loss} from train/log.json."
    return {h["step"]: h["loss"] for h in json.loads((run_dir/"train"/"log.json").read_text()) if "loss" in h}

def test_kill_9_then_resume_auto_matches_the_uninterrupted_run(demo_prepared, tmp_path):
    assert "length" in load_from_disk(str(demo_prepared.dir/"tokenize"/"train")).column_names  # batches grouped by length
    steps = dict(**{"train.max_steps": 24, "train.save_steps": 4, "train.resume": "auto"})
    ref = job_config(demo_prepared, tmp_path, "ref", **steps)
    r = subprocess.run([LLM_NB, "run", ref, "--stages", "train"], capture_output=True, text=True, env=ENV, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    cfg = job_config(demo_prepared, tmp_path, "killed", **steps)
    ck = tmp_path/"killed"/"train"/"checkpoints"
    kill_9_once([LLM_NB, "run", cfg, "--stages", "train"], ck/"checkpoint-12"/MARKER, ENV)  # after its 3rd checkpoint
    assert not (tmp_path/"killed"/"train"/"adapter").exists()  # it really died before the end
    # a checkpoint whose saving was cut short (no marker), newer than every complete one
    shutil.copytree(ck/"checkpoint-12", ck/"checkpoint-20")
    (ck/"checkpoint-20"/MARKER).unlink()
    (ck/"checkpoint-20"/"optimizer.pt").write_bytes(b"half")
    r = subprocess.run([LLM_NB, "run", cfg, "--stages", "train"], capture_output=True, text=True, env=ENV, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    resumed_from = int(r.stdout.split("train: resuming from checkpoint-")[1].split()[0])
    assert 12 <= resumed_from < 20, r.stdout
    want, got = logged_losses(tmp_path/"ref"), logged_losses(tmp_path/"killed")
    assert sorted(got) == sorted(want) == list(range(1, 25))
    for step in range(1, 25): assert abs(got[step] - want[step]) < 1e-4, (step, got[step], want[step])
    rep = [json.loads((tmp_path/n/"report.json").read_text())["stages"]["train"] for n in ("ref", "killed")]
    assert abs(rep[0]["eval_loss"] - rep[1]["eval_loss"]) < 1e-4, rep

def eval_losses(run_dir:Path) -> tuple[float, float]:
    "Mean block loss on tokenize/eval of base + the saved adapter, and of the base alone, computed here in one process."
    from peft import PeftModel
    from transformers import AutoModelForCausalLM
    base = base_model_path(Run(run_dir, load_config({})))
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base), run_dir/"train"/"adapter").eval()
    ds = load_from_disk(str(run_dir/"tokenize"/"eval"))
    ids = torch.tensor(ds["input_ids"])
    with torch.no_grad():
        tuned = float(torch.stack([model(input_ids=b[None], labels=b[None]).loss for b in ids]).mean())
        with model.disable_adapter(): base = float(torch.stack([model(input_ids=b[None], labels=b[None]).loss for b in ids]).mean())
    return tuned, base

@pytest.mark.parametrize("name,ds", [
    ("zero2", {"deepspeed.stage": 2}),
    ("zero3_offload", {"deepspeed.stage": 3, "deepspeed.offload_optimizer": True, "deepspeed.offload_params": True}),
])
def test_deepspeed_two_ranks_trains_and_saves_a_model_that_loads_and_matches(prepared, tmp_path, name, ds):
    r = train_job(job_config(prepared, tmp_path, name, **{"train.max_steps": 6, "train.batch_size": 4, **ds}))
    assert r.stdout.count("train: 2 rank(s) × micro-batch 4 × grad_accum 1 = global batch 8") == 1, r.stdout
    rep = json.loads((tmp_path/name/"report.json").read_text())["stages"]["train"]
    assert (rep["steps"], rep["world_size"], rep["engine"]) == (6, 2, name.split("_")[0].replace("zero", "zero-")), rep
    assert rep["last_loss"] < rep["first_loss"], rep
    counted = json.loads((tmp_path/name/"model"/"model.json").read_text())  # by the model stage, on one process
    assert (rep["params_total"], rep["params_trainable"]) == (counted["total"], counted["trainable"]), rep
    tuned, base = eval_losses(tmp_path/name)
    # the Trainer's eval loss on 2 ranks weights the 7 eval blocks slightly unevenly (padding to a multiple of the
    # ranks, then a truncated gather): 0.02 covers that, and is far below what training changed (> 0.3)
    assert abs(tuned - rep["eval_loss"]) < 0.02 and base - tuned > 0.3, (tuned, base, rep)

def train_job(cfg:Path, argv:list|None=None) -> subprocess.CompletedProcess:
    "`llm_nb run CFG --stages train` on 2 CPU ranks (torchrun, gloo, on a free port: torchrun hangs on 0), or as `argv` starts it."
    argv = argv or ["torchrun", "--nproc-per-node", "2", "--master-port", str(free_port()), LLM_NB, "run", cfg, "--stages", "train"]
    r = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=1200)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-4000:])
    return r

def test_fsdp2_two_ranks_trains_saves_and_resumes_exactly(prepared, tmp_path):
    """FSDP2 (PyTorch's fully_shard through the Trainer) on 2 CPU ranks, training the demo's adapter with its whole
    embeddings and LM head (lora.modules_to_save), logs DDP's losses: within 1e-3, since FSDP2 takes the loss from the
    model's logits where DDP runs TRL's fused head (`lm_head_loss`; the fused head under FSDP2 parted by 3e-2 at step 2);
    the adapter it saves loads and scores as the Trainer said; a job resumed from its sharded checkpoint at step 3,
    started by `accelerate launch` with the config file `llm_nb launch` writes, logs the same losses (1e-4) and ends
    with the same adapter."""
    steps = {"train.max_steps": 6, "train.batch_size": 4, "train.save_steps": 3, "train.resume": "auto"}
    train_job(job_config(prepared, tmp_path, "ddp", **steps))
    steps["fsdp.version"] = 2
    assert "the loss comes from the model's logits" in train_job(job_config(prepared, tmp_path, "whole", **steps)).stdout
    rep = json.loads((tmp_path/"whole"/"report.json").read_text())["stages"]["train"]
    assert (rep["steps"], rep["world_size"], rep["engine"]) == (6, 2, "fsdp2"), rep
    ck = tmp_path/"whole"/"train"/"checkpoints"/"checkpoint-3"
    assert sorted(p.name for p in ck.glob("*fsdp*")), sorted(p.name for p in ck.iterdir())  # FSDP's sharded folders
    want, got = logged_losses(tmp_path/"ddp"), logged_losses(tmp_path/"whole")
    assert sorted(got) == sorted(want) == list(range(1, 7)) and all(abs(got[s] - want[s]) < 1e-3 for s in got), (got, want)
    tuned, base = eval_losses(tmp_path/"whole")
    assert abs(tuned - rep["eval_loss"]) < 0.02 and base - tuned > 0.3, (tuned, base, rep)
    cfg = job_config(prepared, tmp_path, "resumed", **steps, **{"launch.launcher": "accelerate", "launch.nproc_per_node": 2,
                                                               "launch.master_port": free_port()})
    shutil.copytree(ck, tmp_path/"resumed"/"train"/"checkpoints"/"checkpoint-3")
    argv = launch_argv(load_config(cfg), cfg)
    write_accelerate_config(load_config(cfg), cfg)  # the world for `accelerate launch`, as `llm_nb launch` writes it
    assert argv[:4] == ["accelerate", "launch", "--config_file", str(accelerate_config_path(cfg))], argv
    assert "train: resuming from checkpoint-3" in train_job(cfg, argv).stdout
    again = json.loads((tmp_path/"resumed"/"report.json").read_text())["stages"]["train"]
    assert (again["steps"], again["world_size"], again["engine"]) == (6, 2, "fsdp2"), again
    want, got = logged_losses(tmp_path/"whole"), logged_losses(tmp_path/"resumed")
    assert sorted(got) == sorted(want) == list(range(1, 7)), (got, want)
    for step in range(4, 7): assert abs(got[step] - want[step]) < 1e-4, (step, got[step], want[step])
    a, b = (load_file(str(tmp_path/n/"train"/"adapter"/"adapter_model.safetensors")) for n in ("whole", "resumed"))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-5) for k in a), "the adapters differ"
