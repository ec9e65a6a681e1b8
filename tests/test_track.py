"""W&B tracking of the train stage never writes the API key: a training run with a key in the environment leaves no
trace of it in what the stage prints or anywhere in the run folder, W&B's own offline run included."""
from llm_nb.testing import run_until, wandb_log
from llm_nb.train import run_train

def test_wandb_key_never_written(monkeypatch, capfd):
    key = "llmnbsecret" + "7" * 29  # 40 characters, as W&B's keys are
    monkeypatch.setenv("WANDB_API_KEY", key)
    monkeypatch.setenv("WANDB_MODE", "offline")  # with a key, auto would go online: there is no network here
    run = run_until("train", **{"train.max_steps": 5, "synth.n_records": 200})
    counts = run_train(run.cfg, run)
    assert counts["wandb"] == "offline"
    assert b"train/loss" in wandb_log(run.dir/counts["wandb_dir"], b"train/loss")  # the run was really recorded
    printed = capfd.readouterr()
    assert key not in printed.out + printed.err
    leaks = [str(p) for p in run.dir.rglob("*") if p.is_file() and key.encode() in p.read_bytes()]
    assert not leaks, leaks
