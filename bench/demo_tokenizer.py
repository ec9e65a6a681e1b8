"""Benchmark: the demo on a real tokenizer (issue #57). Can the default demo use a real family's tokenizer and chat
template (Qwen2.5's: 151,936 tokens, the demo's Chinese in few tokens each) on its tiny model and keep its speed?

Two arms, side by side in one invocation, each the demo pipeline (`llm_nb.pipeline.run_pipeline` on
`llm_nb.config.demo_config()`, stages synth through evaluate: no export, no serving, no vLLM) in a fresh run folder
and a process of its own (its wall time counts Python's start and imports, as `llm_nb demo` would):
  own      the demo as shipped: a SentencePiece tokenizer trained on the run's text, ChatML, a tiny Llama;
  qwen2.5  `model.tiny.family: qwen2.5`: Qwen2ForCausalLM in the same tiny shape with Qwen2.5's real tokenizer (from
           llama.cpp's vocabulary GGUF, converted once and cached by llm_nb.families), its chat template as it ships
           and its end-of-turn stops. Everything else is the demo's (200 steps, lr 3e-3, embeddings and head trained
           whole beside the LoRA).
Printed per arm: the wall time of the whole run, the seconds of the model, tokenize, train and evaluate stages (the
pipeline's report.json), the parameters (all, trained), and the evaluate stage's exact match of the base and the
fine-tuned model on the held-out questions with the paired difference and its 95 % bootstrap interval
(`llm_nb.evaluate.paired_items`). Then, measured directly on each arm's base model with the demo's LoRA, the seconds
of one training step (forward, backward, AdamW; a batch of `train.batch_size` rows of `tokenize.max_length` tokens,
the median of `--step-repeats` after a warm-up) with the embeddings and the head trained whole (the demo's
`lora.modules_to_save`) and without: why an arm is as slow as it is.
Targets, stated before the first full run and never moved (judged at full scale only): the qwen2.5 demo <= 60 s in
all (the issue's), and it learns: fine-tuned exact match >= base + 0.3, with the paired interval's lower end > 0.
`--variant` adds a third arm: qwen2.5 with dotted-key overrides (e.g. `--variant train.max_steps=40`), reported, not
judged. An arm still running after `--cap-s` (600 s, 10x the target) is stopped: its table shows how far it got
(the stage, the training step) and what it did not reach, which counts as missed. `--smoke`: SMOKE_RUN's model,
20 instructions, 4 held-out questions, 2 steps of 2 rows, no W&B, no cap, judged on nothing (tools/bench_smoke.sh).

Measured 2026-12-05 at full scale under load (other jobs on the 2 cores, load average 7 to 10): both arms stopped at
the 600 s cap in train, own at step 179/200 after 576 s of training, qwen2.5 at step 23/200 after 553 s (about 7.5x
the time per step); qwen2.5's model stage 20 s against 1 s, tokenize 7 s against 1 s; 157.0M parameters (77.9M
trained: the 151,936-row embeddings and head) against 2.4M. Targets: 0 of 3 met (time MISSED; exact match not
reached). The demo keeps its own tokenizer.

    python bench/demo_tokenizer.py [--cap-s 600] [--step-repeats 2] [--variant KEY=VALUE ...] [--smoke]
"""
import argparse, json, math, os, re, signal, statistics, subprocess, sys, tempfile, threading, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import SMOKE_RUN, Targets, add_smoke_arg

STAGES = ["synth", "ingest", "clean", "annotate", "model", "tokenize", "train", "preference", "evaluate"]
SHOWN = ("model", "tokenize", "train", "evaluate")  # the stages the table shows (the rest: synth to annotate, ~seconds)
TASK = "heldout_answers"  # the demo's held-out questions (demo.yaml evaluate.local_tasks)
SMOKE = {**SMOKE_RUN, "synth.n_instructions": 20, "synth.n_heldout_instructions": 4, "synth.n_contaminated": 0,
         "train.max_steps": 2, "train.batch_size": 2, "evaluate.order_questions": 0, "evaluate.max_batches": 1,
         "track.wandb": "disabled", "tokenize.max_length": 96}  # Qwen2.5's default system turn alone is ~20 tokens

def run_arm(root:str, name:str, overrides:dict) -> None:
    "In this process: the demo pipeline, synth through evaluate, in `root`/`name` (the child of `timed_arm`)."
    warnings.filterwarnings("ignore")
    from llm_nb.config import demo_config
    from llm_nb.pipeline import run_pipeline
    run_pipeline(demo_config(**overrides, **{"run.root": root, "run.name": name}), STAGES, seeds=[])

def timed_arm(root:str, name:str, overrides:dict, cap:float|None) -> dict:
    """Run one arm in a process of its own, stopped (its process group killed) after `cap` seconds: its wall seconds,
    when each stage began (read from its output as it comes), the last training step it reported, its report.json."""
    cmd = [sys.executable, __file__, "--arm", name, "--root", root, "--overrides", json.dumps(overrides)]
    t0, starts, step, log = time.perf_counter(), {}, "", []
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                         env=os.environ | {"TOKENIZERS_PARALLELISM": "false"})
    def read():  # each stage's "<stage>: runs:" line, and the trainer's progress bar "k/N [", timed as they arrive
        nonlocal step
        while chunk := os.read(p.stdout.fileno(), 65536):
            now, text = time.perf_counter() - t0, chunk.decode(errors="replace")
            log.append(text)
            for m in re.finditer(r"^(\w+): runs:", text, re.M): starts[m[1]] = now
            if "train" in starts and "preference" not in starts: step = ([step] + re.findall(r"(\d+/\d+) \[", text))[-1]
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try: p.wait(timeout=cap)
    except subprocess.TimeoutExpired: os.killpg(p.pid, signal.SIGKILL), p.wait()
    wall, capped = time.perf_counter() - t0, p.returncode == -signal.SIGKILL
    reader.join(10)
    (Path(root)/f"{name}.log").write_text("".join(log))
    if p.returncode and not capped: raise SystemExit(f"arm {name} failed (exit {p.returncode}):\n" + "".join(log)[-4000:])
    rep = Path(root)/name/"report.json"
    return dict(wall=wall, capped=capped, starts=starts, step=step, dir=Path(root)/name,
                rep=json.loads(rep.read_text()) if rep.exists() else {})

def stage_seconds(arm:dict) -> dict:
    "Seconds of each stage: the pipeline's own count where the run finished, else from when each stage began (the last one: until stopped)."
    if not arm["capped"]: return arm["rep"]["summary"]["seconds"]
    ends = sorted(arm["starts"].values())[1:] + [arm["wall"]]
    return {s: e - t for (s, t), e in zip(sorted(arm["starts"].items(), key=lambda x: x[1]), ends)}

NA = float("nan")  # a figure the arm did not reach before it was stopped

def figures(arm:dict) -> dict:
    "The printed figures of one arm, from its report.json (what a stopped arm did not reach: NaN)."
    stages = arm["rep"].get("stages", {})
    ev, model = stages.get("evaluate", {}), stages.get("model", {})
    p = ev.get("paired", {}).get("fine-tuned", {}).get(TASK, {})
    em = lambda m: ev.get("lm_eval", {}).get(m, {}).get(TASK, NA)
    secs = stage_seconds(arm)
    return dict(wall=arm["wall"], pipeline=arm["rep"].get("summary", {}).get("total_s", NA),
                **{s: secs.get(s, NA) for s in SHOWN}, vocab=model.get("vocab_size", NA), params=model.get("total", NA),
                trained=model.get("trainable", NA), base_em=em("base"), tuned_em=em("fine-tuned"),
                **{k: p.get(k, NA) for k in ("diff", "lo", "hi", "n")})

def step_seconds(run_dir:Path, whole:bool, repeats:int) -> float:
    "Median seconds of one LoRA training step on the run's base (demo batch and length), the embeddings and head trained whole or not."
    import torch
    from llm_nb.config import load_config
    from llm_nb.model import add_lora, load_model
    from llm_nb.artifacts import base_model_path
    from llm_nb.run import Run
    run = Run(run_dir, load_config(run_dir/"config.yaml"))
    cfg = load_config(run.cfg.model_dump(), **{"lora.modules_to_save": run.cfg.lora.modules_to_save if whole else []})
    model = add_lora(load_model(base_model_path(run), cfg.model), cfg.lora).train()
    opt = torch.optim.AdamW([q for q in model.parameters() if q.requires_grad], lr=cfg.train.learning_rate)
    g = torch.Generator().manual_seed(0)
    x = torch.randint(model.config.vocab_size, (cfg.train.batch_size, cfg.tokenize.max_length), generator=g)
    times = []
    for _ in range(repeats + 1):  # the first one warms up
        t = time.perf_counter()
        model(input_ids=x, labels=x).loss.backward()
        opt.step(), opt.zero_grad()
        times.append(time.perf_counter() - t)
    return statistics.median(times[1:])

def parse_variant(items:list[str]) -> dict:
    "Dotted-key overrides from KEY=VALUE strings (VALUE read as YAML: numbers, lists, ...)."
    import yaml
    return {k: yaml.safe_load(v) for k, v in (i.split("=", 1) for i in items)}

def cell(v, fmt:str) -> str:
    "A table cell: `v` formatted, or what a stopped arm did not reach."
    return "not reached" if isinstance(v, float) and math.isnan(v) else fmt.format(v)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cap-s", type=float, default=None,
                    help="stop an arm after this many seconds (default 600, 10x the target; none with --smoke; 0: never): "
                         "what it did not reach is missed")
    ap.add_argument("--step-repeats", type=int, default=2, help="timed training steps per step measurement")
    ap.add_argument("--variant", nargs="*", default=[], help="a third arm: qwen2.5 with these KEY=VALUE overrides")
    ap.add_argument("--arm", help=argparse.SUPPRESS)  # the child process of one arm
    ap.add_argument("--root", help=argparse.SUPPRESS)
    ap.add_argument("--overrides", help=argparse.SUPPRESS)
    add_smoke_arg(ap, "SMOKE_RUN's model, 20 instructions, 4 held-out questions, 2 steps of 2 rows, no W&B, no cap")
    a = ap.parse_args()
    if a.cap_s and a.cap_s <= 60: ap.error("--cap-s must exceed the 60 s target (a stopped arm's time then misses it)")
    if a.arm: return run_arm(a.root, a.arm, json.loads(a.overrides))
    warnings.filterwarnings("ignore")
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    from llm_nb.config import load_config
    base, cap = SMOKE if a.smoke else {}, (None if a.smoke else 600) if a.cap_s is None else a.cap_s or None
    arms = {"own": base, "qwen2.5": base | {"model.tiny.family": "qwen2.5"}}
    if a.variant: arms["qwen2.5 + " + " ".join(a.variant)] = arms["qwen2.5"] | parse_variant(a.variant)
    root = tempfile.mkdtemp(prefix="demo_tokenizer-")
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; runs in {root}")
    res = {}
    for name, ov in arms.items():
        arm = timed_arm(root, name.replace(" ", "_").replace("=", "-"), ov, cap)
        res[name] = figures(arm) | dict(dir=arm["dir"], capped=arm["capped"], step=arm["step"])
        done = int(arm["step"].split("/")[0]) if arm["capped"] and arm["step"] else None  # steps a stopped arm reached
        steps = done if arm["capped"] else load_config(arm["dir"]/"config.yaml").train.max_steps
        res[name]["train_per_step"] = res[name]["train"] / steps if steps else NA  # trainer set-up included
        stopped = f", STOPPED at the {cap:.0f} s cap in stage {max(arm['starts'], key=arm['starts'].get)}" + (
            f" (training step {arm['step']})" if arm["step"] else "") if arm["capped"] else ""
        print(f"{name}: {res[name]['wall']:.1f}s{stopped} (load average now {os.getloadavg()[0]:.1f})", flush=True)
    repeats = 1 if a.smoke else a.step_repeats
    for name in list(arms)[:2]:
        steps = load_config(res[name]["dir"]/"config.yaml").train.max_steps
        if not (res[name]["dir"]/"model"/"model.json").exists(): continue  # stopped before its model was built
        for whole in (True, False):
            res[name]["step_whole" if whole else "step_lora"] = step_seconds(res[name]["dir"], whole, repeats)
        res[name]["train_projected"] = res[name]["step_whole"] * steps
    cols = list(res)
    rows = [("whole run, wall (s)", "wall", "{:.1f}"), ("  pipeline's own total (s)", "pipeline", "{:.1f}"),
            *[(f"  {s} (s)", s, "{:.1f}") for s in SHOWN], ("vocabulary", "vocab", "{:,}"),
            ("parameters", "params", "{:,}"), ("  trained", "trained", "{:,}"),
            ("base exact match", "base_em", "{:.3f}"), ("fine-tuned exact match", "tuned_em", "{:.3f}"),
            ("fine-tuned − base (paired)", "diff", "{:+.3f}"), ("  95 % interval, low", "lo", "{:+.3f}"),
            ("  95 % interval, high", "hi", "{:+.3f}"), ("  questions", "n", "{}"),
            ("  train stage per step reached (s)", "train_per_step", "{:.2f}"),
            ("train step, embeddings+head whole (s)", "step_whole", "{:.3f}"),
            ("train step, LoRA alone (s)", "step_lora", "{:.3f}"),
            ("train.max_steps × step, whole (s)", "train_projected", "{:.0f}")]
    print("\n| figure | " + " | ".join(cols) + " |\n|---|" + "--:|" * len(cols))
    for label, k, fmt in rows:
        print(f"| {label} | " + " | ".join(cell(res[c][k], fmt) if k in res[c] else "—" for c in cols) + " |")
    print(f"\nload average after: {os.getloadavg()[0]:.1f}" + ("; a stopped arm's stage seconds run from when each "
          "stage began, its last one until the cap" if any(r["capped"] for r in res.values()) else ""))
    q = res["qwen2.5"]
    tg = Targets("demo_tokenizer", a.smoke)
    tg.check("qwen2.5 demo, whole run (s)" + (" (stopped at the cap)" if q["capped"] else ""), q["wall"], "<=", 60, "{:.1f}")
    tg.check("qwen2.5 fine-tuned − base exact match", q["diff"], ">=", 0.3, "{:+.3f}")  # NaN (not reached): missed
    tg.check("qwen2.5 paired interval's lower end", q["lo"], ">", 0, "{:+.3f}")
    if math.isnan(q["diff"]): print("nan: not reached (the arm was stopped at the cap before evaluate ended)")
    return tg.finish()

if __name__ == "__main__": sys.exit(main())
