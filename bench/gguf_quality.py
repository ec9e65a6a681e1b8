"""GGUF quality on a *trained* model (random weights are the worst case for quantization).

Trains a small Llama (hidden 256, 4 layers, SentencePiece vocabulary) on the first 90% of tiny Shakespeare
(full weights, CPU, a few minutes), exports it with llm_nb.gguf (llama.cpp's converter → f16 → Q8_0, Q4_K_M, and
Q4_K_M with an importance matrix computed by llama-imatrix over `--imatrix-chunks` chunks of the *training* text),
and prints the verification table measured on blocks of the last 10%: ppl, Δppl% against the HF model,
top-1 agreement, mean KL divergence from the HF model, max |Δlogit|. Targets: Q8_0's |Δppl| <= 1%, and the imatrix
Q4_K_M's KLD below the plain Q4_K_M's (exit status 1 when one is missed).
`--smoke` builds, trains (5 steps), exports and verifies a model of width 64, one layer, on the corpus' first
100,000 characters, and judges nothing (tools/bench_smoke.sh).

    python bench/gguf_quality.py [--steps 800] [--out /tmp/llm_nb_gguf_quality] [--chars N] [--smoke]
"""
import argparse, json, math, shutil, sys, tempfile, time
from pathlib import Path
import numpy as np, torch
from tqdm.auto import tqdm
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_smoke_arg
from llm_nb.config import TinyCfg
from llm_nb.model import build_tiny_model, load_tokenizer
from llm_nb.gguf import (convert_to_gguf, quantize_gguf, kquant_warnings, verify_gguf, quality_markdown, plot_quality,
                          compute_imatrix)

TEXT = Path(__file__).resolve().parents[2]/"shared"/"data"/"tinyshakespeare.txt"

def train(model_dir:Path, ids:list[int], steps:int, block:int, batch:int, lr:float, seed:int=0) -> list[float]:
    "Full-weight AdamW training on random windows of `ids` with warm-up + cosine decay; saves the weights back."
    from transformers import LlamaForCausalLM
    torch.manual_seed(seed); rng = np.random.default_rng(seed)
    model = LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1, betas=(0.9, 0.95))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1, (s + 1) / 50) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))
    data, losses = torch.tensor(ids), []
    model.train()
    for step in (bar := tqdm(range(steps), desc="train")):
        starts = rng.integers(0, len(data) - block - 1, batch)
        x = torch.stack([data[s:s + block] for s in starts])
        loss = model(input_ids=x, labels=x).loss
        loss.backward(); torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step(); sched.step(); opt.zero_grad()
        losses.append(loss.item())
        if step % 50 == 0: bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    model.save_pretrained(model_dir)
    return losses

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=800); ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--batch", type=int, default=16); ap.add_argument("--block", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=2000); ap.add_argument("--eval-blocks", type=int, default=32)
    ap.add_argument("--out", type=Path, default=Path("/tmp/llm_nb_gguf_quality"))
    ap.add_argument("--chars", type=int, default=None, help="use the corpus' first N characters only (default: all)")
    ap.add_argument("--hidden", type=int, default=256); ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--imatrix-chunks", type=int, default=100, help="chunks of --block tokens of training text for llama-imatrix")
    add_smoke_arg(ap, "--chars 100000 --hidden 64 --layers 1 --vocab 400 --steps 5 --batch 2 --block 32 "
                      "--eval-blocks 2 --imatrix-chunks 4, written to a temporary folder")
    a = ap.parse_args()
    if a.smoke:
        a.chars, a.hidden, a.layers, a.vocab, a.steps, a.batch, a.block, a.eval_blocks, a.imatrix_chunks = 100_000, 64, 1, 400, 5, 2, 32, 2, 4
        a.out = Path(tempfile.mkdtemp(prefix="llm_nb_gguf_smoke_"))
    torch.set_num_threads(max(1, torch.get_num_threads()))
    text = TEXT.read_text(encoding="utf-8")[:a.chars]
    cut = text.index("\n\n", int(len(text) * 0.9))
    train_text, held = text[:cut], text[cut:]
    t0 = time.time()
    tiny = TinyCfg(vocab_size=a.vocab, hidden_size=a.hidden, intermediate_size=3 * a.hidden, num_layers=a.layers,
                   num_heads=a.hidden // 64, max_position_embeddings=512)
    model_dir = build_tiny_model([p for p in train_text.split("\n\n") if p.strip()], a.out/"model", tiny)
    tok = load_tokenizer(str(model_dir))
    ids = tok(train_text, add_special_tokens=False)["input_ids"]
    hid = tok(held, add_special_tokens=False)["input_ids"]
    blocks = [hid[i:i + a.block] for i in range(0, len(hid) - a.block + 1, a.block)][:a.eval_blocks]
    print(f"tiny Shakespeare: {len(ids):,} training tokens, {sum(map(len, blocks)):,} held-out tokens in {len(blocks)} blocks, vocab {len(tok)}")
    losses = train(model_dir, ids, a.steps, a.block, a.batch, a.lr)
    print(f"trained {a.steps} steps in {time.time() - t0:.0f}s: loss {np.mean(losses[:20]):.3f} -> {np.mean(losses[-50:]):.3f}")
    conf = json.loads((model_dir/"config.json").read_text())
    for w in kquant_warnings(conf, ["q4_k_m"]): print("warning:", w)
    files = {"f16": convert_to_gguf(model_dir, a.out/"model-f16.gguf", "f16")}
    for q in ("q8_0", "q4_k_m"): files[q] = quantize_gguf(files["f16"], a.out/f"model-{q}.gguf", q)
    # the importance matrix reads training text only: the held-out blocks it is judged on stay unseen
    (a.out/"calibration.txt").write_text(train_text[-a.imatrix_chunks * a.block * 8:])  # ~4 characters a token, twice over
    imatrix = compute_imatrix(files["f16"], a.out/"calibration.txt", a.out/"imatrix.gguf", a.block, a.imatrix_chunks)
    files["q4_k_m-imatrix"] = quantize_gguf(files["f16"], a.out/"model-q4_k_m-imatrix.gguf", "q4_k_m", imatrix=imatrix)
    rows = verify_gguf(files, model_dir, blocks)
    (a.out/"quality.json").write_text(json.dumps(rows, indent=2))
    (a.out/"quality.md").write_text(quality_markdown(rows) + "\n")
    plot_quality(rows, a.out/"quality.png")
    print(f"\nheld-out: last 10% of tiny Shakespeare, {rows[0]['positions']} predicted positions\n" + quality_markdown(rows))
    q = {r["format"]: r for r in rows}
    if not a.smoke: print(f"\nwritten to {a.out}")
    t = Targets("gguf_quality", a.smoke)
    t.check("Q8_0 |Δppl| %", abs(q["q8_0"]["dppl_pct"]), "<=", 1.0, "{:.3f}")
    t.check("Q4_K_M KLD with an imatrix / without", q["q4_k_m-imatrix"]["kld"] / q["q4_k_m"]["kld"], "<", 1.0, "{:.3f}")
    if a.smoke: shutil.rmtree(a.out, ignore_errors=True)
    sys.exit(t.finish())

if __name__ == "__main__": main()
