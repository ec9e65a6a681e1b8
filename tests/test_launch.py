"Training at scale, for real: the sbatch script `llm_nb.launch` writes trains 2 CPU ranks on a one-machine Slurm."
import json, os, subprocess, shutil, sys, time
from pathlib import Path
import pytest
from conftest import llm_nb_cmd
from llm_nb.config import demo_config, load_config
from llm_nb.launch import launch_argv, write_sbatch
from llm_nb.testing import run_until

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["-m", "llm_nb.cli", "run", "c.yaml", "--stages", "train"]


@pytest.mark.parametrize("nnodes, nproc", [(1, 2), (2, 1)])
def test_sbatch_trains_two_ranks(slurm_env, tmp_path, nnodes, nproc):
    "`nnodes` x `nproc` CPU processes: torchrun (gloo) under srun, by `sbatch --wait`; 2 ranks train, rank 0 writes."
    run = run_until("train", **{"train.max_steps": 4, "train.logging_steps": 2, "launch.nnodes": nnodes,
                                "launch.nproc_per_node": nproc, "launch.slurm.cpus_per_task": nproc,
                                "launch.slurm.time": "00:15:00", "launch.master_port": 29517})
    config = run.dir/"config.yaml"
    script = write_sbatch(load_config(config), config, tmp_path/"train.sbatch")
    t0 = time.perf_counter()
    r = subprocess.run(["sbatch", "--wait", "--parsable", str(script)], env=slurm_env, capture_output=True, text=True,
                       timeout=900)
    job_s = time.perf_counter() - t0
    job = r.stdout.strip().split(";")[0]
    log = run.dir/"logs"/f"slurm-{job}.out"
    out = log.read_text() if log.exists() else "(no Slurm output file)"
    print(f"sbatch --wait: job {job} exit {r.returncode} in {job_s:.1f} s\n{out[-3000:]}")
    assert r.returncode == 0, f"{r.stderr}\n{out[-6000:]}"
    assert f"{nnodes} node(s) x {nproc} process(es) = world size 2" in out
    assert out.count("train: 4 steps") == 1 and out.count("pipeline: ran train, skipped 0 of 1 in") == 1
    assert (run.dir/"train"/"adapter"/"adapter_config.json").exists()
    train = json.loads((run.dir/"report.json").read_text())["stages"]["train"]
    assert (train["world_size"], train["steps"]) == (2, 4)


@pytest.mark.parametrize("launcher, expected", [
    ("torchrun", ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "--node-rank", "1", "--master-addr", "n0",
                  "--master-port", "29500", *TRAIN]),
    ("deepspeed", ["deepspeed", "--hostfile", "hosts", "--no_ssh", "--node_rank", "1", "--num_nodes", "2",
                   "--num_gpus", "8", "--master_addr", "n0", "--master_port", "29500", "--module", *TRAIN[1:]]),
    ("accelerate", ["accelerate", "launch", "--multi_gpu", "--num_processes", "16", "--num_machines", "2",
                    "--machine_rank", "1", "--main_process_ip", "n0", "--main_process_port", "29500", *TRAIN])])
def test_two_node_argv(launcher, expected):
    cfg = demo_config(**{"launch.launcher": launcher, "launch.nnodes": 2, "launch.nproc_per_node": 8,
                         "launch.gpus_per_node": 8})
    assert launch_argv(cfg, "c.yaml", node_rank=1, master_addr="n0", hostfile="hosts") == expected


def test_module_takes_deepspeeds_local_rank(tmp_path):
    "Ranks run `python -m llm_nb.cli`; DeepSpeed's launcher puts `--local_rank=N` before the subcommand."
    cfg = tmp_path/"c.yaml"
    cfg.write_text("train: {max_steps: 3}\n")
    r = subprocess.run([sys.executable, "-m", "llm_nb.cli", "--local_rank=1", "check", str(cfg)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip().endswith(": OK"), r.stderr


def test_launch_command(tmp_path):
    "`llm_nb launch` writes the sbatch script, or refuses a world its batch cannot be split over, naming the keys."
    cfg = tmp_path/"c.yaml"
    cfg.write_text(f"run: {{root: {tmp_path}, name: r}}\ndeepspeed: {{stage: 2, train_batch_size: 100}}\n")
    r = llm_nb_cmd("launch", cfg, "--nnodes", "2", "--nproc-per-node", "8", "--gpus-per-node", "8")
    assert r.returncode == 2 and "deepspeed.train_batch_size=100 cannot be split over launch.nnodes × launch.nproc_per_node = 16 ranks" in r.stderr
    r = llm_nb_cmd("launch", cfg, "--nproc-per-node", "4", "--gpus-per-node", "4", "--sbatch", tmp_path/"t.sbatch")
    assert r.returncode == 0, r.stderr
    text = (tmp_path/"t.sbatch").read_text()
    assert "#SBATCH --gres=gpu:4" in text and subprocess.run(["bash", "-n", tmp_path/"t.sbatch"]).returncode == 0
