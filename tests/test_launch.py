"""Training at scale, for real: the sbatch script `llm_nb.launch` writes trains 2 CPU ranks on a one-machine Slurm,
and a job warned mid-training checkpoints, requeues itself and resumes exactly."""
import json, os, subprocess, shutil, sys, time
from pathlib import Path
import pytest, yaml
from conftest import llm_nb_cmd
from llm_nb.config import demo_config, load_config
from llm_nb.launch import launch_argv, write_sbatch
from llm_nb.testing import run_until
from test_train import job_config, logged_losses  # the kill -9 resume test's: a copy of a prepared run; its losses

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ["-m", "llm_nb.cli", "run", "c.yaml", "--stages", "train"]


def check_two_ranks(out:str, run_dir:Path, nnodes:int, nproc:int, steps:int):
    "A job's Slurm output `out` and its run folder say: world size 2 over `nnodes` x `nproc`, `steps` trained, rank 0 wrote."
    assert f"{nnodes} node(s) x {nproc} process(es) = world size 2" in out
    assert out.count(f"train: {steps} steps") == 1 and out.count("pipeline: ran train, skipped 0 of 1 in") == 1
    assert (run_dir/"train"/"adapter"/"adapter_config.json").exists()
    train = json.loads((run_dir/"report.json").read_text())["stages"]["train"]
    assert (train["world_size"], train["steps"]) == (2, steps)


def test_sbatch_trains_two_ranks(slurm_env, tmp_path):
    """2 nodes x 1 CPU process: torchrun (gloo) under srun, by `sbatch --wait`; 2 ranks train, rank 0 writes (1 node x 2
    processes: the preemption test's uninterrupted job)."""
    nnodes, nproc = 2, 1
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
    out = log.read_text(errors="replace") if log.exists() else "(no Slurm output file)"  # two ranks write it at once
    print(f"sbatch --wait: job {job} exit {r.returncode} in {job_s:.1f} s\n{out[-3000:]}")
    assert r.returncode == 0, f"{r.stderr}\n{out[-6000:]}"
    check_two_ranks(out, run.dir, nnodes, nproc, 4)


def submit(script:Path, env:dict) -> tuple[subprocess.Popen, str]:
    "`sbatch --wait` of `script`, running: the process (it ends with the job, after any requeue) and the job id."
    p = subprocess.Popen(["sbatch", "--wait", "--parsable", str(script)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    return p, p.stdout.readline().strip().split(";")[0]

def logged_step(run_dir:Path) -> int:
    "The last step the dashboard of `run_dir`'s train stage has logged so far (0 before any)."
    f = run_dir/"train"/"series.jsonl"
    return max([0] + ([json.loads(l)["step"] for l in f.read_text().splitlines() if l.strip()] if f.exists() else []))

def adapter(run_dir:Path) -> dict:
    from safetensors.torch import load_file
    return load_file(str(run_dir/"train"/"adapter"/"adapter_model.safetensors"))

def test_sbatch_preempted_requeues_and_resumes(slurm_env, tmp_path):
    """A job warned mid-training (`scancel --signal=USR1 --batch`: what `--signal=B:USR1@N` sends N seconds before
    the time limit) saves a checkpoint, requeues itself and resumes: the losses and adapter of an uninterrupted job."""
    prepared = run_until("train", **{"train.max_steps": 10, "train.logging_steps": 1, "train.save_steps": 0,
                                     "launch.nproc_per_node": 2, "launch.slurm.cpus_per_task": 2,
                                     "launch.slurm.time": "00:15:00", "launch.master_port": 29518})
    jobs = {}
    for name in ("whole", "preempted"):
        cfg = job_config(prepared, tmp_path, name)
        jobs[name] = write_sbatch(load_config(cfg), cfg, tmp_path/f"{name}.sbatch")
    t0 = time.perf_counter()
    whole, whole_job = submit(jobs["whole"], slurm_env)
    assert whole.wait(timeout=600) == 0, whole.stderr.read()
    check_two_ranks((tmp_path/"whole"/"logs"/f"slurm-{whole_job}.out").read_text(errors="replace"), tmp_path/"whole", 1, 2, 10)
    t1 = time.perf_counter()
    p, job = submit(jobs["preempted"], slurm_env)
    while logged_step(tmp_path/"preempted") < 3 and p.poll() is None: time.sleep(0.2)
    signalled_after = logged_step(tmp_path/"preempted")
    subprocess.run(["scancel", "--signal=USR1", "--batch", job], env=slurm_env, check=True)
    code = p.wait(timeout=600)
    out = (tmp_path/"preempted"/"logs"/f"slurm-{job}.out").read_text(errors="replace")
    print(f"uninterrupted job {t1 - t0:.1f} s; preempted job {job} (USR1 after step {signalled_after}), requeued and "
          f"done in {time.perf_counter() - t1:.1f} s, exit {code}\n{out[-4000:]}")
    assert code == 0, out[-6000:]
    stopped = int(out.split("train: preempted by SIGUSR1: checkpoint-")[1].split()[0])
    assert signalled_after < stopped < 10 and f"train: resuming from checkpoint-{stopped}" in out
    assert out.count("launch: SIGUSR1") == 1 and out.count(f"requeueing job {job}") == 1
    assert out.count("pipeline: ran train, skipped 0 of 1 in") == 1  # recorded once: by the requeued job
    want, got = logged_losses(tmp_path/"whole"), logged_losses(tmp_path/"preempted")
    assert sorted(got) == sorted(want) == list(range(1, 11))
    for step in want: assert abs(got[step] - want[step]) < 1e-4, (step, got[step], want[step])
    a, b = adapter(tmp_path/"whole"), adapter(tmp_path/"preempted")
    assert max((a[k] - b[k]).abs().max().item() for k in a) < 1e-4


@pytest.mark.parametrize("launcher, expected", [
    ("torchrun", ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "--node-rank", "1", "--master-addr", "n0",
                  "--master-port", "29500", *TRAIN]),
    ("deepspeed", ["deepspeed", "--hostfile", "hosts", "--no_ssh", "--node_rank", "1", "--num_nodes", "2",
                   "--num_gpus", "8", "--master_addr", "n0", "--master_port", "29500", "--module", *TRAIN[1:]]),
    ("accelerate", ["accelerate", "launch", "--config_file", "c.accelerate.yaml", "--machine_rank", "1",
                    "--main_process_ip", "n0", *TRAIN])])
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
    r = llm_nb_cmd("launch", cfg, "--launcher", "accelerate", "--nproc-per-node", "4", "--gpus-per-node", "4")
    world = yaml.safe_load((tmp_path/"c.accelerate.yaml").read_text())  # accelerate's config file, beside the config
    assert r.returncode == 0 and f"--config_file {tmp_path/'c.accelerate.yaml'}" in r.stdout, (r.stdout, r.stderr)
    assert (world["distributed_type"], world["num_processes"], world["num_machines"]) == ("MULTI_GPU", 4, 1), world
