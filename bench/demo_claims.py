"""Benchmark: do the demo's pre-registered claims hold on seeds that no notebook uses (issue #56)?

The shipped demo config (`llm_nb/data/demo.yaml`) runs as a user runs it with `llm_nb run demo.yaml --seeds 11,12,13`:
`run_pipeline(cfg, stages, seeds=...)` makes one run per seed (synth draws its records and questions from the seed,
the model its weights, training its order), then the summary over the seeds (summary.md, .json, .png). Stages synth
through export: the servers are not part of these claims. From each seed's run the bench reads the answers question
by question that lm-eval logged (evaluate/lm_eval.json: base and fine-tuned; export/lm_eval.json: each GGUF form),
and compares two models on the same held-out questions with `llm_nb.stats.paired_over_seeds`: the mean over seeds of
each seed's paired difference, with a hierarchical bootstrap 95 % interval (seeds resampled, then questions).

Targets, written before the seeds were run and never moved after:
- the fine-tune learns: fine-tuned − base exact match on the held-out questions, interval's lower end >= +0.3;
- Q8_0 answers like the fine-tuned model: Q8_0 − fine-tuned, the whole interval within ±0.05.
Q4_K_M − fine-tuned is printed beside them, not judged (no claim was made for it).
Measured 2026-12-05 under load (load average 7-11 on the 2 cores: 4,336 s for the three seeds),
`python bench/demo_claims.py`: exact match base / fine-tuned / Q8_0 / Q4_K_M 0.000 / 0.650 / 0.650 / 0.650 (seed 11),
0.000 / 0.725 / 0.725 / 0.725 (12), 0.000 / 0.875 / 0.875 / 0.875 (13), 40 questions each; fine-tuned - base +0.750
[+0.625, +0.875], Q8_0 - fine-tuned +0.000 [+0.000, +0.000], Q4_K_M - fine-tuned +0.000 [+0.000, +0.000]: 2 of 2 met.
`--smoke`: one seed of the smallest demo (bench/_data.py SMOKE_RUN, 20 instructions, 4 held-out questions, 4 steps,
Q8_0 only), judged on nothing (tools/bench_smoke.sh).

    python bench/demo_claims.py [--seeds 11,12,13] [--keep DIR] [--smoke]
"""
import argparse, json, shutil, sys, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import SMOKE_RUN, Targets, add_seed_args, add_smoke_arg, seeds_and_root

STAGES = ["synth", "ingest", "clean", "annotate", "model", "tokenize", "train", "evaluate", "export"]
TASK = "heldout_answers"  # the demo's held-out questions, asked through the chat template (demo.yaml's local task)
LEARNS, CLOSE = 0.3, 0.05  # the targets above

def seed_items(seed_dir:Path) -> dict:
    "{model: per-question scores of the held-out task} from one seed's evaluate and export stages."
    items = {}
    for stage in ("evaluate", "export"):
        p = seed_dir/stage/"lm_eval.json"
        if p.exists(): items |= {m: t[TASK] for m, t in json.loads(p.read_text()).get("items", {}).items() if TASK in t}
    return items

def metric_of(q:dict) -> str:
    "The task's main metric: the first one logged beside the question ids."
    return next(k for k in q if k != "doc_id")

def compare(per_seed:dict, a:str, b:str) -> dict|None:
    "`b - a` over seeds on the same questions (`paired_over_seeds`), or None when a seed lacks either model."
    from llm_nb.stats import paired_over_seeds
    pairs = []
    for k, items in per_seed.items():
        if a not in items or b not in items: return None
        if items[a]["doc_id"] != items[b]["doc_id"]: raise SystemExit(f"seed {k}: {a} and {b} were asked other questions")
        m = metric_of(items[a])
        pairs.append((items[a][m], items[b][m]))
    return paired_over_seeds(pairs)

def main():
    ap = argparse.ArgumentParser()
    add_seed_args(ap, "11,12,13")
    add_smoke_arg(ap, "one seed of SMOKE_RUN's demo, 20 instructions, 4 held-out questions, 4 steps, Q8_0 only")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    from llm_nb.config import demo_config
    from llm_nb.pipeline import run_pipeline
    from llm_nb.stats import verdict
    seeds, root = seeds_and_root(a, "demo_claims")
    ov = {"run.root": str(root), "run.name": "demo_claims", "serve.compare": []}
    if a.smoke: ov |= {**SMOKE_RUN, "synth.n_instructions": 20, "synth.n_heldout_instructions": 4,
                       "train.max_steps": 4, "export.quants": ["q8_0"]}
    t0 = time.perf_counter()
    try:
        top = run_pipeline(demo_config(**ov), STAGES, seeds=seeds)
        per_seed = {k: seed_items(top.dir/f"seed-{k}") for k in seeds}
        wall = time.perf_counter() - t0
        print(f"\n{len(seeds)} seeds {seeds} of the demo, stages synth..export, in {wall:.0f}s; summary: {top.dir/'summary.md'}")
        for k, items in per_seed.items():
            print(f"seed {k}: exact match on {len(next(iter(items.values()))['doc_id'])} held-out questions: "
                  + ", ".join(f"{m} {sum(q[metric_of(q)]) / len(q['doc_id']):.3f}" for m, q in items.items()))
        rows = {"fine-tuned - base": compare(per_seed, "base", "fine-tuned"),
                "q8_0 - fine-tuned": compare(per_seed, "fine-tuned", "q8_0"),
                "q4_k_m - fine-tuned": compare(per_seed, "fine-tuned", "q4_k_m")}
        print(f"\n| paired, over seeds | difference | 95 % interval | questions |\n|---|--:|--:|--:|")
        for name, d in rows.items():
            if d: print(f"| {name} | {d['diff']:+.3f} | [{d['lo']:+.3f}, {d['hi']:+.3f}] | {d['n']} |")
            else: print(f"| {name} | not measured: a seed has no such form | | |")
        for name, d in rows.items():
            if d: print(f"{name}: {verdict(d)}")
    finally:
        if a.keep is None: shutil.rmtree(root, ignore_errors=True)
    tg = Targets("demo_claims", a.smoke)
    learn, q8 = rows["fine-tuned - base"], rows["q8_0 - fine-tuned"]
    tg.check("fine-tuned - base exact match, lower end of the 95 % interval", learn["lo"], ">=", LEARNS, "{:+.3f}")
    tg.check("|Q8_0 - fine-tuned| exact match, farther end of the 95 % interval",
             max(abs(q8["lo"]), abs(q8["hi"])) if q8 else float("inf"), "<=", CLOSE, "{:.3f}")
    return tg.finish()

if __name__ == "__main__": sys.exit(main())
