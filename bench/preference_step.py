"""Benchmark: what a step of the preference stage costs, against an SFT step on the same pairs, each contender in a
fresh Python (so that each peak RSS is its own) on one prepared demo run (SFT done, the demo's pairs cleaned):

- **SFT on the chosen side**: TRL's `SFTTrainer` on the SFT policy (the base with the SFT adapter, trainable), each
  pair's prompt and chosen answer as a prompt-completion example (the loss on the answer), the stage's Trainer
  arguments (`trainer_args`);
- **DPO, LoRA reference**: the stage's own trainer (`build_dpo_trainer`): TRL copies the SFT adapter as a frozen
  `ref` adapter, so the reference costs the adapter's parameters, not a model;
- **DPO, full reference copy**: the same trainer given `ref_model`, the SFT model merged into a separate model (what a
  DPO without PEFT keeps: a second copy of the weights);
- **GRPO**: the stage's `build_grpo_trainer` (`preference.num_generations` completions per prompt, `max_new_tokens`
  long, batch in completions), its step split into generation (TRL's `_generate`), scoring (the rest of
  `_generate_and_score_completions`: rewards, old log-probabilities) and optimisation (the rest of the step).

A step is the interval between two `on_step_end` callbacks (the first measured from the start of `train`); the first
`--warmup` are dropped; medians of wall and process CPU time over the rest. The contenders run interleaved `--repeat`
times. Peak RSS is the child's `VmHWM`. Targets (exit status 1 when one is missed), from what the methods compute:
a DPO step runs forward and backward on two answers and a forward of the reference on both, about 8/3 of an SFT
step's forward and backward on one answer: DPO (LoRA reference) / SFT step CPU time ≤ `--dpo-target` (3.0); and the
LoRA reference saves at least half the base model's weights in peak RSS against the full copy. `--smoke`: the
smallest model, 3 steps each, nothing judged.

    python bench/preference_step.py [--hidden 512] [--layers 6] [--steps 10] [--warmup 3] [--repeat 2]
                                    [--batch-size 8] [--threads 1] [--smoke]
"""
import argparse, json, os, statistics, sys, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import SMOKE_RUN, Targets, add_smoke_arg, run_measured

CHILD = r"""
import json, os, sys, time, warnings
from pathlib import Path
warnings.filterwarnings("ignore")
import torch
from transformers.utils import logging as hf_logging
hf_logging.set_verbosity_error()
from transformers import TrainerCallback
from llm_nb.config import load_config
from llm_nb.run import Run
from llm_nb import preference as P
run_dir, who, steps, threads = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
torch.set_num_threads(threads)
over = {"preference.max_steps": steps, "preference.save_steps": 0, "track.wandb": "disabled"}
if who == "grpo": over["preference.method"] = "grpo"
cfg = load_config(run_dir/"config.yaml", **over)
run = Run(run_dir, cfg)
pairs = P.split_pairs(P.stored_pairs(run.dir/"clean"/"clean.parquet"), cfg.preference, run, cfg.run.seed)[0]
out = run.dir/"bench_preference"/who

class Steps(TrainerCallback):
    def __init__(self): self.wall, self.cpu = [time.perf_counter()], [time.process_time()]
    def on_step_end(self, *a, **kw): self.wall.append(time.perf_counter()); self.cpu.append(time.process_time())

def timed_method(obj, name, into):
    "Wrap obj.name so that each call's wall seconds go to `into` (a list)."
    f = getattr(obj, name)
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try: return f(*a, **kw)
        finally: into.append(time.perf_counter() - t)
    setattr(obj, name, wrapper)

gen, score = [], []
if who == "sft":
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer
    from transformers import set_seed
    set_seed(cfg.run.seed)
    tok = P.load_tokenizer(str(run.dir/"tokenize"/"tokenizer"))
    data = Dataset.from_list([{"prompt": p["prompt"], "completion": p["chosen"]} for p in pairs])
    args = SFTConfig(**P.trainer_args(cfg, out, True), max_length=cfg.preference.max_length or cfg.tokenize.max_length,
                     completion_only_loss=True)
    tr = SFTTrainer(model=P.sft_model(cfg, run, trainable=True), args=args, train_dataset=data, processing_class=tok)
elif who == "dpo_full_copy":
    from datasets import Dataset
    from transformers import set_seed
    set_seed(cfg.run.seed)
    ref = P.sft_model(cfg, run).merge_and_unload().eval()  # the SFT model as a model of its own
    tr = P.GuardedDPOTrainer(model=P.sft_model(cfg, run, trainable=True), ref_model=ref,
                             args=P.dpo_args(cfg, out/"checkpoints", True), train_dataset=Dataset.from_list(pairs),
                             processing_class=P.load_tokenizer(str(run.dir/"tokenize"/"tokenizer")),
                             nan_policy=cfg.train.nan_policy)
    assert "ref" not in tr.model.peft_config  # the reference is the copy, not an adapter
else:
    tr = (P.build_dpo_trainer if who == "dpo_lora_ref" else P.build_grpo_trainer)(cfg, run, out, pairs=pairs)
    if who == "dpo_lora_ref": assert "ref" in tr.model.peft_config
    if who == "grpo":
        timed_method(tr, "_generate", gen)
        timed_method(tr, "_generate_and_score_completions", score)
cb = Steps()
tr.add_callback(cb)
tr.train()
d = lambda xs: [b - a for a, b in zip(xs, xs[1:])]
base_bytes = sum(p.numel() * p.element_size() for n, p in tr.model.named_parameters()
                 if "lora_" not in n and "modules_to_save" not in n)  # the base alone, not its trained copies
print("RESULT" + json.dumps(dict(wall=d(cb.wall), cpu=d(cb.cpu), gen=gen, score=score, base_bytes=base_bytes)))
"""

CONTENDERS = ("sft", "dpo_lora_ref", "dpo_full_copy", "grpo")
NAMES = {"sft": "SFT, chosen side", "dpo_lora_ref": "DPO, LoRA reference", "dpo_full_copy": "DPO, full copy",
         "grpo": "GRPO"}

def prepare(a):
    "A demo run with SFT done and the demo's pairs cleaned (the bench's model size); its folder."
    from llm_nb.config import demo_config
    from llm_nb.testing import run_until
    ov = {"synth.n_preference_pairs": 120, "synth.n_heldout_pairs": 8, "preference.method": "dpo",
          "ingest.sources": [s.model_dump() for s in demo_config().ingest.sources]
                            + [{"name": "preferences", "path": "{run}/synth/chat/preference.jsonl"}],
          "preference.heldout": "{run}/synth/chat/preference_heldout.jsonl", "annotate.input": "",
          "annotate.second": "", "train.max_steps": 2, "train.save_steps": 0, "train.eval_steps": 0,
          "train.resume": "no", "track.wandb": "disabled", "preference.batch_size": a.batch_size,
          "preference.num_generations": 4, "preference.max_new_tokens": a.new_tokens,
          "preference.reward": "f1", "preference.learning_rate": 1e-4,
          "model.tiny.hidden_size": a.hidden, "model.tiny.intermediate_size": 2 * a.hidden,
          "model.tiny.num_layers": a.layers}
    if a.smoke: ov = {**SMOKE_RUN, **ov, "tokenize.max_length": 128}  # a conversation's first answer must fit
    return run_until("preference", **ov).dir

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=512); ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--steps", type=int, default=10, help="steps per contender, warm-up included")
    ap.add_argument("--warmup", type=int, default=3); ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8, help="pairs (DPO), examples (SFT), completions (GRPO)")
    ap.add_argument("--new-tokens", type=int, default=24, help="GRPO's completion length at most")
    ap.add_argument("--threads", type=int, default=1); ap.add_argument("--dpo-target", type=float, default=3.0)
    add_smoke_arg(ap, "SMOKE_RUN's model, --steps 3 --warmup 1 --repeat 1")
    a = ap.parse_args()
    if a.smoke:
        a.hidden, a.layers, a.steps, a.warmup, a.repeat = SMOKE_RUN["model.tiny.hidden_size"], 1, 3, 1, 1
    t = time.perf_counter()
    run_dir = prepare(a)
    print(f"prepared {run_dir} in {time.perf_counter() - t:.0f}s: hidden {a.hidden}, {a.layers} layers, batch "
          f"{a.batch_size}, {a.steps} steps ({a.warmup} warm-up) x {a.repeat}, torch threads {a.threads}", flush=True)
    got = {c: [] for c in CONTENDERS}
    for r in range(a.repeat):  # interleaved: a change of load on the machine hits every contender
        for c in CONTENDERS:
            m = run_measured(CHILD, run_dir, c, a.steps, a.threads)
            got[c].append(dict(m["result"], rss_mib=m["rss_mib"]))
        print(f"round {r + 1}: " + "; ".join(f"{NAMES[c]} {1000 * statistics.median(got[c][-1]['cpu'][a.warmup:]):.0f} ms CPU"
                                            for c in CONTENDERS), flush=True)
    keep = lambda c, k: [x for g in got[c] for x in g[k][a.warmup:]]
    med = {c: {k: statistics.median(keep(c, k)) for k in ("wall", "cpu")} for c in CONTENDERS}
    rss = {c: max(g["rss_mib"] for g in got[c]) for c in CONTENDERS}
    base_mib = got["sft"][0]["base_bytes"] / 2**20
    print(f"\n{'contender':22}{'wall ms':>10}{'CPU ms':>10}{'vs SFT (CPU)':>14}{'peak RSS MiB':>14}")
    for c in CONTENDERS:
        print(f"{NAMES[c]:22}{1000 * med[c]['wall']:10.0f}{1000 * med[c]['cpu']:10.0f}"
              f"{med[c]['cpu'] / med['sft']['cpu']:13.2f}x{rss[c]:14.0f}")
    g = got["grpo"]
    steps_s = sum(sum(x["wall"]) for x in g)
    gen_s, score_s = sum(sum(x["gen"]) for x in g), sum(sum(x["score"]) for x in g)
    print(f"\nGRPO, all {sum(len(x['wall']) for x in g)} steps: {steps_s:.1f} s = generation {gen_s:.1f} s "
          f"({100 * gen_s / steps_s:.0f} %) + scoring {score_s - gen_s:.1f} s ({100 * (score_s - gen_s) / steps_s:.0f} %)"
          f" + optimisation {steps_s - score_s:.1f} s ({100 * (steps_s - score_s) / steps_s:.0f} %)")
    saved = rss["dpo_full_copy"] - rss["dpo_lora_ref"]
    print(f"base model weights: {base_mib:.0f} MiB; the LoRA reference's peak RSS is {saved:.0f} MiB below the full copy's")
    tg = Targets("preference_step", a.smoke)
    tg.check("DPO (LoRA reference) / SFT step, CPU time", med["dpo_lora_ref"]["cpu"] / med["sft"]["cpu"], "<=",
             a.dpo_target)
    tg.check("peak RSS saved by the LoRA reference / base weights", saved / base_mib, ">=", 0.5)
    return tg.finish()

if __name__ == "__main__":
    sys.exit(main())
