"""Benchmark: conversations through the tokenize stage's chat path, against the raw `tokenizers` backend, and packed
against padded training batches, in one run.

Conversations: built from the 62,774 Chinese reviews (online_shopping_10_cats.csv in ../shared/data/): the user asks
which category a review belongs to and gets its category; every third conversation asks on whether the review is
positive and gets 是/不是 (its label); every fifth has a system prompt. The tokenizer is the tiny model's (ChatML
tokens, its own template), trained with `llm_nb.model.train_tokenizer` on the reviews.

(a) throughput, tokens/s: `tokenize_chats` (render with the chat template, tokenize, the loss mask, as the stage
    maps it over batches) vs the fast backend's `encode_batch` on the same conversations already rendered to text
    (rendering not timed), in chunks of the same batch size, both keeping the ids of every conversation. Target:
    llm_nb >= 0.5x raw (rendering the Jinja template per conversation is the usual cost; `render_chats` renders a
    batch in one Jinja call). Both must give the same ids for every conversation not cut for length.
(b) three layouts of the same conversations for training, each collated by `collate_samples` as the train stage
    does: packed (`pack_chats`: whole conversations, best fit decreasing), padded (one per row, in stored order,
    padded to the longest in its batch) and grouped (one per row, in the order of the Trainer's
    `LengthGroupedSampler`, which the train stage uses when tokenize grouped them). For each: the non-pad share of
    the batches' token slots and the time of one forward + backward pass over all of them on a random tiny Llama
    (fp32, SDPA; a batch of --train-batch rows). The stage's `auto` chooses grouped here (SDPA) and packed under
    FlashAttention, so the targets judge what it chooses: grouped non-pad share >= 0.9 and grouped seconds <= padded
    seconds; packed non-pad share >= 0.9 (the layout FlashAttention gets). packed / padded seconds is printed, not
    judged: under SDPA a packed row attends over its whole length (a block-diagonal mask still computes every
    pair), so long packed rows pay attention's quadratic cost that short rows do not.
    max_length is 1024 by default, TRL's SFTConfig default. Packing can only fill rows as far as the lengths allow:
    at 256 most of these conversations are over 128 tokens (the median is about 150), two never share a row, and
    the packed share stays near the padded one; the bench prints the fewest rows any packing could use.

`--smoke` runs it all once on 300 conversations (tools/bench_smoke.sh) and judges nothing.

    python bench/chat_tokenize.py [--records N] [--max-length 1024] [--repeat 3] [--data-dir DIR] [--smoke]

Exit status 1 when a target is missed, 2 when the corpus is missing.
"""
import argparse, csv, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_smoke_arg, timed

DATA = Path(__file__).resolve().parents[2]/"shared"/"data"
TARGET_RATIO, TARGET_NONPAD = 0.5, 0.9

def conversations(data_dir:Path, n:int) -> list[list[dict]]:
    "`n` conversations made from the reviews (see the module's docstring)."
    path = data_dir/"online_shopping_10_cats.csv"
    if not path.is_file():
        print(f"chat_tokenize: no corpus: {path} does not exist (pass --data-dir)", file=sys.stderr)
        raise SystemExit(2)
    with open(path, newline="", encoding="utf-8") as f: rows = [r for r in csv.DictReader(f) if r["review"].strip()]
    out = []
    for i, r in enumerate(rows[:n]):
        chat = [{"role": "system", "content": "你是电商评论分析助手。"}] if i % 5 == 0 else []
        chat += [{"role": "user", "content": f"这条评论属于哪个类别？\n{r['review'].strip()}"},
                 {"role": "assistant", "content": r["cat"]}]
        if i % 3 == 0: chat += [{"role": "user", "content": "是好评吗？"},
                                {"role": "assistant", "content": "是" if r["label"] == "1" else "不是"}]
        out.append(chat)
    return out

def ours(chats, tok, template, tc, batch:int) -> tuple[list, list]:
    "llm_nb's path, batch by batch: (ids, labels) of every conversation."
    from llm_nb.tokenize import tokenize_chats
    ids, labels = [], []
    for i in range(0, len(chats), batch):
        x, y, *_ = tokenize_chats(chats[i:i + batch], tok, template, tc)
        ids += x
        labels += y
    return ids, labels

def raw(texts, backend, batch:int) -> list:
    "The backend alone on rendered texts, no special tokens added (the template writes them): the ids of each, kept as ours are."
    return [e.ids for i in range(0, len(texts), batch) for e in backend.encode_batch(texts[i:i + batch], add_special_tokens=False)]

def batches(rows:list, size:int, pad_id:int) -> list[dict]:
    "`rows` (examples with seq_lengths) collated `size` at a time, as the train stage does."
    from llm_nb.tokenize import collate_samples
    return [collate_samples(rows[i:i + size], pad_id) for i in range(0, len(rows), size)]

def nonpad(bs:list[dict], pad_id:int) -> float:
    "Share of the token slots of `bs` that hold a token of a sample (position ids of padding are all 0 after a 0)."
    real = sum(int((b["position_ids"] > 0).sum()) + int(((b["position_ids"] == 0) & (b["input_ids"] != pad_id)).sum())
               for b in bs)
    return real / sum(b["input_ids"].numel() for b in bs)

def step_time(model, bs:list[dict]) -> float:
    "Seconds of one forward + backward pass over every batch in `bs`."
    t = time.perf_counter()
    for b in bs:
        model(**b, use_cache=False).loss.backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - t

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--records", type=int, default=20_000, help="conversations")
    ap.add_argument("--max-length", type=int, default=1024, help="tokenize.max_length (TRL's default)")
    ap.add_argument("--map-batch", type=int, default=1000, help="conversations per batch (tokenize.batch_size)")
    ap.add_argument("--train-batch", type=int, default=8, help="rows per training batch")
    ap.add_argument("--step-records", type=int, default=1000, help="conversations in the training-step timing")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per side, alternating; the best is reported")
    add_smoke_arg(ap, "--records 300 --map-batch 100 --step-records 64 --repeat 1")
    a = ap.parse_args()
    if a.smoke: a.records, a.map_batch, a.step_records, a.repeat = 300, 100, 64, 1
    import datasets, torch
    from datasets import Dataset
    from transformers import LlamaConfig, LlamaForCausalLM
    from llm_nb.chat import chat_template
    from llm_nb.config import TokenizeCfg
    from llm_nb.model import train_tokenizer
    from llm_nb.tokenize import pack_chats
    datasets.disable_progress_bars()
    chats = conversations(a.data_dir, a.records)
    with tempfile.TemporaryDirectory() as d:
        tok = train_tokenizer([m["content"] for c in chats for m in c], Path(d)/"tok", 8000 if not a.smoke else 1000)
    template, tc = chat_template(tok), TokenizeCfg(max_length=a.max_length, batch_size=a.map_batch)
    texts = tok.apply_chat_template(chats, chat_template=template, tokenize=False)
    print(f"{len(chats):,} conversations, {sum(map(len, texts)):,} rendered chars; tokenizer {len(tok)} pieces")

    warm = chats[:100]
    ours(warm, tok, template, tc, a.map_batch), raw(texts[:100], tok.backend_tokenizer, a.map_batch)
    t = dict(raw=[], llm_nb=[])
    for _ in range(a.repeat):
        s, raw_ids = timed(raw, texts, tok.backend_tokenizer, a.map_batch)
        t["raw"].append(s)
        s, (ids, labels) = timed(ours, chats, tok, template, tc, a.map_batch)
        t["llm_nb"].append(s)
    n_tok = sum(map(len, raw_ids))
    rate = {k: n_tok / min(v) for k, v in t.items()}
    ratio = rate["llm_nb"] / rate["raw"]
    trained = sum(l != -100 for y in labels for l in y) / sum(map(len, labels))
    differ = sum(x != y for x, y in zip(ids, raw_ids) if len(y) <= a.max_length)  # not cut: the same tokens
    print(f"\n(a) tokens/s (best of {a.repeat}): raw encode_batch {rate['raw']:,.0f}; llm_nb render + tokenize + mask "
          f"{rate['llm_nb']:,.0f} ({ratio:.2f}x raw); {trained:.1%} of the tokens trained")

    n = a.step_records
    one = [{"input_ids": x, "labels": y, "seq_lengths": [len(x)]} for x, y in zip(ids[:n], labels[:n])]
    packed = pack_chats(Dataset.from_dict({"input_ids": ids[:n], "labels": labels[:n]}), tc, "bench").to_list()
    pad = tok.pad_token_id
    from transformers.trainer_pt_utils import LengthGroupedSampler
    order = LengthGroupedSampler(a.train_batch, lengths=[len(r["input_ids"]) for r in one],
                                 generator=torch.Generator().manual_seed(0))
    by_length = [one[i] for i in order]  # the train stage's order when tokenize grouped the conversations
    sides = dict(packed=batches(packed, a.train_batch, pad), padded=batches(one, a.train_batch, pad),
                 grouped=batches(by_length, a.train_batch, pad))
    share = {k: nonpad(v, pad) for k, v in sides.items()}
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=4,
                                         max_position_embeddings=a.max_length, attn_implementation="sdpa"))
    step_time(model, sides["packed"][:2])  # warm-up
    secs = {k: [] for k in sides}
    for _ in range(a.repeat):
        for k in secs: secs[k].append(step_time(model, sides[k]))
    best = {k: min(v) for k, v in secs.items()}
    lengths = [len(x) for x in ids[:n] if x]
    fewest = max(-(-sum(lengths) // a.max_length), sum(k > a.max_length // 2 for k in lengths))
    print(f"\n(b) {n:,} conversations, batches of {a.train_batch} rows, max_length {a.max_length}; "
          f"median {sorted(lengths)[len(lengths) // 2]} tokens; packed rows {len(packed)} (no packing fits them in "
          f"fewer than {fewest})")
    for k in sides:
        print(f"{k:8} {len(sides[k]):5} batches  non-pad share {share[k]:6.1%}  forward+backward {best[k]:7.2f}s (best of {a.repeat})")
    print()
    tg = Targets("chat_tokenize", a.smoke)
    tg.check("conversations whose ids differ from raw's", differ, "==", 0, "{}")
    tg.check("llm_nb / raw throughput", ratio, ">=", TARGET_RATIO, "{:.3f}")
    tg.check("packed non-pad share", share["packed"], ">=", TARGET_NONPAD, "{:.4f}")
    tg.check("grouped non-pad share", share["grouped"], ">=", TARGET_NONPAD, "{:.4f}")
    tg.check("grouped / padded seconds", best["grouped"] / best["padded"], "<=", 1.0, "{:.3f}")
    print(f"packed / padded seconds (not judged: SDPA) {best['packed'] / best['padded']:.3f}")
    raise SystemExit(tg.finish())

if __name__ == "__main__": main()
