"""Benchmark (information, no target): the train stage on 2 CPU ranks as DDP (deepspeed.stage off), ZeRO-2, ZeRO-3,
ZeRO-3 with optimizer + parameter offload, and FSDP2 (fsdp.version 2, PyTorch's fully_shard through the Trainer):
median steady-state step time and peak RSS per rank, vs DDP.

One demo run (every stage before train done, `llm_nb.testing.run_until`) is copied per job; each job is
`torchrun --nproc-per-node 2 --master-port <free> bench/zero_table.py --child CONFIG.yaml OUT`, i.e. exactly
`llm_nb run CONFIG.yaml --stages train` (`llm_nb.cli.main`), except that the child adds a callback to the trainer
the stage builds (patching `llm_nb.train.build_trainer`), recording when each optimizer step ends, and writes at exit its
own peak RSS (VmHWM from /proc/self/status). A step's time is the interval between two step ends on rank 0; the first
`--warmup` steps are dropped, and so is each epoch's last step (a partial batch, and the dataloader restarting).
LoRA as the stage does it, fp32, a pure adapter (no modules_to_save: the same trainable share for every engine, and
TRL's fused LM head in all five, which FSDP2 gives up where it trains the head): the five jobs train the same thing, and their last and eval losses say so. Each job saves a checkpoint after its last step:
its size on disk, the seconds from the last step's end to the save's end, and the seconds to load it back into the
model, optimizer and scheduler as the Trainer's resume does (`load_checkpoint`) are in the table. The jobs run interleaved `--repeat` times (D 2 3 3o F D 2 ...); medians are reported.
Exit status 1 if any job fails (no target on the figures: the table is information). `--smoke` runs the five jobs
once on the smallest demo run (bench/_data.py SMOKE_RUN: width 64, one layer, 32-token blocks), 4 steps each, micro-batch
2 (tools/bench_smoke.sh). ZeRO-3 + offload uses DeepSpeed's CPU Adam: the first job of a venv builds it (minutes;
tools/test.sh keeps the build in the venv's torch_extensions).

Measured 2026-12-06 (`--repeat 3`, nothing else running; the table is in nbs/24_train.ipynb "The engines side by
side"): step vs DDP 1.24x ZeRO-2, 3.04x ZeRO-3, 2.60x ZeRO-3 + offload, 1.85x FSDP2; the five last losses equal.

    python bench/zero_table.py [--steps 12] [--warmup 3] [--repeat 1] [--hidden 256] [--layers 4]
                               [--max-length 128] [--batch-size 4] [--smoke]
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import SMOKE_LINE, SMOKE_RUN, add_smoke_arg
from llm_nb.env import free_port

JOBS = {"DDP": {"deepspeed.stage": "off"},
        "ZeRO-2": {"deepspeed.stage": 2},
        "ZeRO-3": {"deepspeed.stage": 3},
        "ZeRO-3 + offload": {"deepspeed.stage": 3, "deepspeed.offload_optimizer": True,
                             "deepspeed.offload_params": True},
        "FSDP2": {"fsdp.version": 2}}

def vm_hwm_mib() -> float:
    "This process's peak resident set size (VmHWM), MiB."
    line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM"))
    return int(line.split()[1]) / 1024

def load_checkpoint(tr, ck:str):
    "The checkpoint `ck` loaded into trainer `tr`'s model, optimizer and scheduler, as the Trainer's `train()` resumes (4.x/5.x)."
    from transformers.integrations.deepspeed import deepspeed_load_checkpoint
    if tr.is_deepspeed_enabled: deepspeed_load_checkpoint(tr.model_wrapped, ck, load_module_strict=False)  # a PEFT model
    elif tr.is_fsdp_enabled: tr._load_from_checkpoint(ck, tr.model_wrapped)
    else: tr._load_from_checkpoint(ck)
    tr._load_optimizer_and_scheduler(ck)

def child(cfg_path:str, out:str) -> int:
    "One rank: the `llm_nb run CONFIG --stages train` command with a step timer; writes OUT/rank<R>.json at exit."
    import atexit
    import llm_nb.train as T
    from transformers import TrainerCallback
    rec = dict(rank=int(os.environ.get("RANK", "0")), begin=[], end=[], train_begin=[])
    class StepTimer(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            rec["steps_per_epoch"] = len(kw["train_dataloader"]) // args.gradient_accumulation_steps
            rec["train_begin"].append(time.perf_counter())
        def on_step_begin(self, args, state, control, **kw): rec["begin"].append(time.perf_counter())
        def on_step_end(self, args, state, control, **kw): rec["end"].append(time.perf_counter())
        def on_save(self, args, state, control, **kw): rec["save_s"] = time.perf_counter() - rec["end"][-1]
    build, held = T.build_trainer, []
    def timed_trainer(*a, **kw):
        tr = build(*a, **kw)
        tr.add_callback(StepTimer())
        held.append(tr)
        return tr
    T.build_trainer = timed_trainer  # fit() looks `build_trainer` up in the module at call time
    def dump():
        rec["peak_rss_mib"] = vm_hwm_mib()
        Path(out, f"rank{rec['rank']}.json").write_text(json.dumps(rec))
    atexit.register(dump)
    from llm_nb.cli import main
    code = main(["run", cfg_path, "--stages", "train"])
    if code == 0 and held:  # the last checkpoint loaded back into the trained model, optimizer and scheduler, timed
        tr = held[-1]
        ck = str(Path(tr.args.output_dir)/f"checkpoint-{tr.state.global_step}")
        t = time.perf_counter()
        load_checkpoint(tr, ck)
        rec["load_s"] = time.perf_counter() - t
    return code

def run_job(prepared, root:Path, name:str, overrides:dict, timeout:int) -> dict:
    "Copy the prepared run, write its config, run the 2-rank job; wall time, per-rank records, the train report."
    from llm_nb.config import load_config, to_yaml
    shutil.copytree(prepared.dir, root/name)
    data = load_config(prepared.cfg.model_dump(), **{"run.root": str(root), "run.name": name, **overrides})
    (cfg := root/f"{name}.yaml").write_text(to_yaml(data))
    (out := root/f"{name}.timing").mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    argv = ["torchrun", "--nproc-per-node", "2", "--master-port", str(free_port()), __file__, "--child", str(cfg),
            str(out)]
    t = time.perf_counter()
    try: p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return dict(ok=False, why=f"timed out after {timeout}s", tail=str(e.stderr)[-3000:])
    wall = time.perf_counter() - t
    ranks = sorted((json.loads(f.read_text()) for f in out.glob("rank*.json")), key=lambda r: r["rank"])
    if p.returncode != 0 or len(ranks) != 2:
        return dict(ok=False, why=f"exit status {p.returncode}, {len(ranks)} rank records", tail=p.stderr[-3000:])
    rep = json.loads((root/name/"report.json").read_text())["stages"]["train"]
    ck = root/name/"train"/"checkpoints"/f"checkpoint-{rep['steps']}"
    return dict(ok=True, wall_s=wall, ranks=ranks, report=rep, ckpt_mib=sum(f.stat().st_size for f in ck.rglob("*") if f.is_file()) / 2**20)

def step_times(rec:dict, warmup:int) -> list:
    "Intervals between consecutive step ends (the first from train begin), minus the first `warmup` and epoch ends."
    t, n = rec["train_begin"][-1:] + rec["end"], rec["steps_per_epoch"]
    return [b - a for i, (a, b) in enumerate(zip(t, t[1:])) if i >= warmup and i % n != n - 1]

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=12); ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1); ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4); ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=4, help="micro-batch per rank")
    ap.add_argument("--timeout", type=int, default=1200, help="seconds per job")
    add_smoke_arg(ap, "SMOKE_RUN's model, --steps 4 --warmup 1 --repeat 1 --batch-size 2")
    a = ap.parse_args()
    if a.child: return child(*a.child)
    if a.smoke:
        a.hidden, a.layers = SMOKE_RUN["model.tiny.hidden_size"], SMOKE_RUN["model.tiny.num_layers"]
        a.max_length, a.steps, a.warmup, a.repeat, a.batch_size = SMOKE_RUN["tokenize.max_length"], 4, 1, 1, 2
    from llm_nb.testing import run_until
    t = time.perf_counter()
    prepared = run_until("train", **{
        **(SMOKE_RUN if a.smoke else {}),
        "model.tiny.hidden_size": a.hidden, "model.tiny.intermediate_size": 2 * a.hidden,
        "model.tiny.num_layers": a.layers, "tokenize.max_length": a.max_length,
        "model.tiny.max_position_embeddings": max(512, a.max_length),
        "train.batch_size": a.batch_size, "train.max_steps": a.steps, "train.logging_steps": 1, "train.save_steps": a.steps,
        "train.eval_steps": 0, "train.resume": "no",
        "lora.modules_to_save": []})  # a pure adapter: each engine computes the loss the same way (TRL's fused head)
    print(f"prepared the run in {time.perf_counter() - t:.0f}s: hidden {a.hidden}, {a.layers} layers, "
          f"{a.max_length} tokens x micro-batch {a.batch_size} per rank x 2 ranks, {a.steps} steps "
          f"({a.warmup} warm-up dropped); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    res, failed = {k: [] for k in JOBS}, []
    with tempfile.TemporaryDirectory() as root:
        for r in range(a.repeat):
            for name, ov in JOBS.items():
                tag = f"{name.replace(' ', '').replace('+', '_')}_{r}"
                j = run_job(prepared, Path(root), tag, ov, a.timeout)
                if not j["ok"]:
                    failed.append(name)
                    print(f"{name} (round {r + 1}) FAILED: {j['why']}\n{j['tail']}", flush=True)
                    continue
                res[name].append(j)
                st = step_times(j["ranks"][0], a.warmup)
                rss = " / ".join(f"{x['peak_rss_mib']:.0f}" for x in j["ranks"])
                print(f"round {r + 1} {name}: job {j['wall_s']:.0f}s, step {1000 * statistics.median(st):.0f} ms, "
                      f"peak RSS {rss} MiB, load average "
                      f"{os.getloadavg()[0]:.2f}", flush=True)
    rows = {}
    for name, js in res.items():
        if not js: continue
        rows[name] = dict(step=statistics.median(sum((step_times(j["ranks"][0], a.warmup) for j in js), [])),
                          rss=[statistics.median(j["ranks"][k]["peak_rss_mib"] for j in js) for k in (0, 1)],
                          wall=statistics.median(j["wall_s"] for j in js), loss=js[-1]["report"]["last_loss"],
                          eval=js[-1]["report"]["eval_loss"], steps=js[-1]["report"]["steps"],
                          engine=js[-1]["report"]["engine"], ckpt=statistics.median(j["ckpt_mib"] for j in js),
                          save=statistics.median(j["ranks"][0]["save_s"] for j in js),
                          load=statistics.median(j["ranks"][0]["load_s"] for j in js))
    d = rows.get("DDP")
    print(f"\nmedians of {a.repeat} job(s) each; load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'job':18}{'engine':>8}{'step (ms)':>10}{'vs DDP':>8}{'RSS r0 (MiB)':>14}{'RSS r1 (MiB)':>14}{'RSS vs DDP':>12}"
          f"{'ckpt (MiB)':>12}{'save (s)':>10}{'load (s)':>10}{'job (s)':>9}{'last loss':>11}{'eval loss':>11}")
    for name, x in rows.items():
        sr = f"{x['step'] / d['step']:.2f}x" if d else "-"
        rr = f"{max(x['rss']) / max(d['rss']):.2f}x" if d else "-"
        print(f"{name:18}{x['engine']:>8}{1000 * x['step']:10.0f}{sr:>8}{x['rss'][0]:14.0f}{x['rss'][1]:14.0f}{rr:>12}"
              f"{x['ckpt']:12.1f}{x['save']:10.2f}{x['load']:10.2f}{x['wall']:9.0f}{x['loss']:11.4f}{x['eval']:11.4f}")
    if failed: print(f"FAIL: job(s) failed: {', '.join(failed)}")
    else: print("all jobs ran (no target: information only)")
    if a.smoke: print(SMOKE_LINE)
    return 1 if failed else 0

if __name__ == "__main__": sys.exit(main())
