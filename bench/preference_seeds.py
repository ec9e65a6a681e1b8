"""Benchmark: does preference tuning do what the demo of nbs/26_preference.ipynb says, on seeds no notebook uses
(issue #56)?

The notebook's own demo (`llm_nb.preference.demo_pairs()`: 300 pairs about style, 40 held out, the SFT data
answering 30 % of its questions labelled and the rest plain, `synth.styled_answers: 0.3`; DPO 60 steps) runs as a
user runs it, through `run_pipeline(cfg, STAGES, seeds=...)` with the shipped defaults otherwise (decontamination
on), at seeds 101,102,103: once with DPO, then with GRPO (`llm_nb.preference.DEMO_GRPO`: the same pairs' prompts,
rewarded by exact match with the chosen answer) in the same seed folders, where every stage before preference is
skipped (its result holds). From each seed's preference/scores.json the bench takes, per held-out pair, the SFT
model's and the tuned model's values (the pair as written ranked right or not, the greedy answer the chosen one or
not, the reward) and compares the two models on the same pairs with `llm_nb.stats.paired_over_seeds`: the mean over
seeds of each seed's paired difference, with a hierarchical bootstrap 95 % interval (seeds resampled, then pairs).

Targets, written before the bench's seeds were run (issue #56's claims) and never moved after:
- DPO − SFT accuracy on the held-out pairs as written: the interval's lower end >= +0.2;
- DPO − SFT exact match of the greedy answers: the interval's lower end >= -0.05 (down by no more than 0.05);
- GRPO − SFT held-out reward: the interval's lower end > 0 (it excludes 0).
GRPO − SFT exact match and accuracy are printed beside them, not judged.
`--smoke`: one seed of the smallest demo (bench/_data.py SMOKE_RUN, 20 instructions, 16 pairs, 4 held out, 4 SFT
steps, 2 DPO and 2 GRPO steps, no W&B), judged on nothing (tools/bench_smoke.sh).

    python bench/preference_seeds.py [--seeds 101,102,103] [--keep DIR] [--smoke]
"""
import argparse, json, shutil, sys, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import SMOKE_RUN, Targets, add_seed_args, add_smoke_arg, seeds_and_root

STAGES = ["synth", "ingest", "clean", "annotate", "model", "tokenize", "train", "preference"]
ACCURACY, EXACT_DROP = 0.2, -0.05  # the targets above (the reward's: a lower end above 0)
PER_PAIR = {"accuracy, pairs as written": "ranked_written", "exact match": "exact", "reward": "rewards"}
SMOKE = {**SMOKE_RUN, "tokenize.max_length": 128, "synth.n_instructions": 20, "synth.n_heldout_instructions": 4,
         "synth.n_preference_pairs": 16, "synth.n_heldout_pairs": 4, "train.max_steps": 4, "preference.max_steps": 2,
         "annotate.input": "", "annotate.second": "", "track.wandb": "disabled"}
SMOKE_GRPO = {"preference.max_steps": 2, "preference.batch_size": 4, "preference.num_generations": 2}

def seed_scores(top:Path, seeds:list[int]) -> dict:
    "{seed: preference/scores.json} of each seed's run under `top`."
    return {k: json.loads((top/f"seed-{k}"/"preference"/"scores.json").read_text()) for k in seeds}

def compare(scores:dict, tuned:str, per:str) -> dict|None:
    "`tuned` − SFT on the same held-out pairs over the seeds (`paired_over_seeds`), or None when a seed lacks it."
    from llm_nb.stats import paired_over_seeds
    if any(per not in s["sft"] or per not in s[tuned] for s in scores.values()): return None
    return paired_over_seeds([(s["sft"][per], s[tuned][per]) for s in scores.values()])

def mean(v) -> str: return f"{sum(v) / len(v):.3f}" if v else "–"

def main():
    ap = argparse.ArgumentParser()
    add_seed_args(ap, "101,102,103")
    add_smoke_arg(ap, "one seed of SMOKE_RUN's demo, 16 pairs, 4 SFT steps, 2 DPO and 2 GRPO steps")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    from llm_nb.config import demo_config, load_config
    from llm_nb.pipeline import run_pipeline
    from llm_nb.preference import DEMO_GRPO, demo_pairs
    from llm_nb.stats import verdict
    seeds, root = seeds_and_root(a, "preference_seeds")
    dpo_cfg = demo_config(**{**demo_pairs(), "run.root": str(root), "run.name": "preference_seeds",
                             **(SMOKE if a.smoke else {})})
    grpo_cfg = load_config(dpo_cfg.model_dump(), **{**DEMO_GRPO, **(SMOKE_GRPO if a.smoke else {})})
    t0 = time.perf_counter()
    try:
        top = run_pipeline(dpo_cfg, STAGES, seeds=seeds)
        dpo = seed_scores(top.dir, seeds)
        for f in ("summary.md", "summary.json"): shutil.copy(top.dir/f, top.dir/f.replace("summary", "summary-dpo"))
        t1 = time.perf_counter()
        top = run_pipeline(grpo_cfg, STAGES, seeds=seeds)  # the same seed folders: only preference runs again
        grpo = seed_scores(top.dir, seeds)
        print(f"\n{len(seeds)} seeds {seeds} of 26_preference's demo: synth..train and DPO in {t1 - t0:.0f}s, GRPO in "
              f"{time.perf_counter() - t1:.0f}s; summaries: {top.dir/'summary-dpo.md'} (DPO), {top.dir/'summary.md'} (GRPO)")
        print("\n| seed | held-out pairs | SFT accuracy (as written) | DPO | SFT exact match | DPO | GRPO | SFT reward | GRPO |")
        print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
        for k in seeds:
            d, g = dpo[k], grpo[k]
            print(f"| {k} | {len(d['sft']['exact'])} | {mean(d['sft'].get('ranked_written'))} | "
                  f"{mean(d['dpo'].get('ranked_written'))} | {mean(d['sft']['exact'])} | {mean(d['dpo']['exact'])} | "
                  f"{mean(g['grpo']['exact'])} | {mean(g['sft'].get('rewards'))} | {mean(g['grpo'].get('rewards'))} |")
        rows = {f"DPO - SFT {name}": compare(dpo, "dpo", per) for name, per in PER_PAIR.items() if per != "rewards"}
        rows |= {f"GRPO - SFT {name}": compare(grpo, "grpo", per) for name, per in PER_PAIR.items()}
        print("\n| paired on the same held-out pairs, over seeds | difference | 95 % interval | pairs |\n|---|--:|--:|--:|")
        for name, d in rows.items():
            print(f"| {name} | {d['diff']:+.3f} | [{d['lo']:+.3f}, {d['hi']:+.3f}] | {d['n']} |" if d else f"| {name} | not measured | | |")
        for name, d in rows.items():
            if d: print(f"{name}: {verdict(d)}")
    finally:
        if a.keep is None: shutil.rmtree(root, ignore_errors=True)
    tg = Targets("preference_seeds", a.smoke)
    acc, exact, reward = (rows[k] for k in ("DPO - SFT accuracy, pairs as written", "DPO - SFT exact match",
                                            "GRPO - SFT reward"))
    tg.check("DPO - SFT accuracy on the held-out pairs as written, lower end of the 95 % interval", acc["lo"], ">=",
             ACCURACY, "{:+.3f}")
    tg.check("DPO - SFT exact match, lower end of the 95 % interval", exact["lo"], ">=", EXACT_DROP, "{:+.3f}")
    tg.check(f"GRPO - SFT held-out reward, 95 % interval above 0 (lower end {reward['lo']:+.3f})", reward["lo"] > 0,
             "==", True)
    return tg.finish()

if __name__ == "__main__": sys.exit(main())
