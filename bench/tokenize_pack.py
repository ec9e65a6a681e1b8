"""Benchmark: the tokenize stage's batched `datasets.map` tokenize + pack against the raw `tokenizers` backend, and
packing against naive padding, on a real corpus, in one run.

Corpus: the 62,774 Chinese reviews (online_shopping_10_cats.csv, one record per review) or tiny Shakespeare (one
record per speech: blocks between blank lines), from ../shared/data/. The tokenizer is the tiny model's: a
SentencePiece BPE trained with `llm_nb.model.train_tokenizer` on the same texts, in a temporary folder.

(a) throughput, tokens/s, on the same texts: llm_nb's path (`datasets.map(tokenize_batch, batched=True)` then
    `map(pack_batch, batched=True)`, as `run_tokenize` does) vs the fast backend's `encode_batch` in chunks of
    the same batch size, ids read out as lists. Target: llm_nb >= 0.8x raw. Sides alternate; each side's best
    (shortest) of --repeat runs is reported, since other load on the machine only ever adds time.
(b) the anti-pattern for scale: `map(..., batched=False)`, one call per record (on a sample of records).
(c) non-pad share of the token slots in training batches (DataCollatorForLanguageModeling, as the train stage):
    packed blocks vs one record per row padded to the longest in the batch, and padded to max_length.
    Target: packing >= 98% (its batches have no pads; it also drops the tail of each map batch, reported as
    "tokens kept", which must be >= 98% too).

One line per target. `--smoke` runs every side once on the first 2,000 reviews (map batches of 200, a per-record
sample of 200, a 1,000-piece vocabulary, grown as the characters need) and judges nothing (tools/bench_smoke.sh).

    python bench/tokenize_pack.py [--corpus reviews|shakespeare] [--max-length 128] [--repeat 3] [--records N]
                                  [--data-dir DIR] [--smoke]

Exit status 1 when a target is missed, 2 when the corpus is missing.
"""
import argparse, csv, os, sys, tempfile
from pathlib import Path
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_smoke_arg, timed

DATA = Path(__file__).resolve().parents[2]/"shared"/"data"  # the default, beside the repo
FILES = dict(reviews="online_shopping_10_cats.csv", shakespeare="tinyshakespeare.txt")
VOCAB = dict(reviews=8000, shakespeare=1000)  # SentencePiece needs a piece for each character it covers
TARGET_RATIO, TARGET_NONPAD = 0.8, 0.98

def load_texts(corpus:str, data_dir:Path) -> list[str]:
    "Records of `corpus`: one per non-empty review, or one per speech of Shakespeare."
    path = data_dir/FILES[corpus]
    if not path.is_file():
        print(f"tokenize_pack: no corpus: {path} does not exist (pass --data-dir)", file=sys.stderr)
        raise SystemExit(2)
    if corpus == "reviews":
        with open(path, newline="", encoding="utf-8") as f: texts = [r["review"] for r in csv.DictReader(f)]
    else: texts = path.read_text(encoding="utf-8").split("\n\n")
    return [t.strip() for t in texts if t.strip()]

def ours(texts, tok, L:int, batch:int, batched:bool=True):
    "llm_nb's path: tokenize (batched, or one record per call) with datasets.map, then pack as the stage does."
    from datasets import Dataset
    from llm_nb.config import TokenizeCfg
    from llm_nb.tokenize import make_examples, tokenize_batch
    ds = Dataset.from_dict({"text": texts})
    if batched: ids = ds.map(tokenize_batch, batched=True, batch_size=batch, remove_columns=["text"],
                             fn_kwargs=dict(tok=tok))
    else: ids = ds.map(lambda r: {"input_ids": tokenize_batch({"text": [r["text"]]}, tok)["input_ids"][0]},
                       remove_columns=["text"])
    packed, _ = make_examples(ids, TokenizeCfg(max_length=L, batch_size=batch), "all")
    return packed, ids

def wrapper(texts, tok, L:int, batch:int):
    "The straightforward path for comparison: `tok(texts)` in the map, and a Python-list pack."
    from datasets import Dataset
    def tokenize(b): return {"input_ids": [x + [tok.eos_token_id] for x in tok(b["text"])["input_ids"]]}
    def pack(b):
        flat = [t for x in b["input_ids"] for t in x]
        return {"input_ids": [flat[i:i + L] for i in range(0, len(flat) // L * L, L)]}
    ids = Dataset.from_dict({"text": texts}).map(tokenize, batched=True, batch_size=batch, remove_columns=["text"])
    return ids.map(pack, batched=True, batch_size=batch)

def raw(texts, backend, batch:int, fast:bool=False) -> int:
    "The backend alone: encode_batch (or encode_batch_fast) in chunks of `batch`, ids as lists; the token count."
    enc, n = backend.encode_batch_fast if fast else backend.encode_batch, 0
    for i in range(0, len(texts), batch):
        n += sum(len(e.ids) for e in enc(texts[i:i + batch], add_special_tokens=True))
    return n

def nonpad_share(rows, tok, batch:int, pad_to:int|None=None, seed:int=0) -> float:
    "Share of token slots that are not padding over all training batches of `rows` (lists of ids), shuffled."
    import random
    from transformers import DataCollatorForLanguageModeling
    collate = DataCollatorForLanguageModeling(tok, mlm=False, pad_to_multiple_of=pad_to)
    rows = list(rows)
    random.Random(seed).shuffle(rows)  # the Trainer's sampler shuffles too
    real = slots = 0
    for i in range(0, len(rows), batch):
        m = collate([{"input_ids": r} for r in rows[i:i + batch]])["attention_mask"]
        real, slots = real + int(m.sum()), slots + m.numel()
    return real / slots

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", choices=sorted(FILES), default="reviews")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--max-length", type=int, default=128, help="tokens per block (tokenize.max_length)")
    ap.add_argument("--map-batch", type=int, default=1000, help="records per map batch (tokenize.batch_size)")
    ap.add_argument("--train-batch", type=int, default=8, help="rows per training batch (train.batch_size)")
    ap.add_argument("--vocab", type=int, default=None,
                    help=f"tokenizer vocabulary (default {VOCAB}: the reviews have ~4,000 distinct characters)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per side, alternating; the best is reported")
    ap.add_argument("--sample", type=int, default=10_000, help="records for the per-record map")
    ap.add_argument("--records", type=int, default=None, metavar="N", help="the corpus' first N records only")
    add_smoke_arg(ap, "--records 2000 --map-batch 200 --sample 200 --vocab 1000 --repeat 1")
    a = ap.parse_args()
    if a.smoke: a.records, a.map_batch, a.sample, a.vocab, a.repeat = 2000, 200, 200, 1000, 1
    import datasets
    from llm_nb.model import train_tokenizer
    datasets.disable_progress_bars()
    texts = load_texts(a.corpus, a.data_dir)[:a.records]
    with tempfile.TemporaryDirectory() as d:
        t_train, tok = timed(train_tokenizer, texts, Path(d)/"tok", a.vocab or VOCAB[a.corpus])
    backend = tok.backend_tokenizer
    print(f"corpus: {a.corpus}, {len(texts):,} records, {sum(map(len, texts)):,} chars; tokenizer: {len(tok)} pieces "
          f"(trained in {t_train:.1f}s); TOKENIZERS_PARALLELISM={os.environ.get('TOKENIZERS_PARALLELISM', 'unset')}, "
          f"{os.cpu_count()} CPUs")

    L, B = a.max_length, a.map_batch
    warm = texts[:min(1000, len(texts) // 4)]  # first calls pay for imports and caches: not measured
    raw(warm, backend, B), raw(warm, backend, B, fast=True), ours(warm, tok, L, B), wrapper(warm, tok, L, B)
    t = dict(raw=[], raw_fast=[], llm_nb=[], wrapper=[])
    for _ in range(a.repeat):  # alternate the sides so load changes on the machine hit both
        s, n_tok = timed(raw, texts, backend, B)
        t["raw"].append(s)
        t["raw_fast"].append(timed(raw, texts, backend, B, fast=True)[0])
        s, (packed, ids) = timed(ours, texts, tok, L, B)
        t["llm_nb"].append(s)
        t["wrapper"].append(timed(wrapper, texts, tok, L, B)[0])
    sample = texts[:a.sample]
    n_sample = raw(sample, backend, B)
    t_one, t_few = [], []
    for _ in range(a.repeat):  # alternating too
        t_few.append(timed(ours, sample, tok, L, B)[0])
        t_one.append(timed(ours, sample, tok, L, B, batched=False)[0])
    best = min
    rate = {k: n_tok / best(v) for k, v in t.items()}
    rate_one, rate_few = n_sample / best(t_one), n_sample / best(t_few)
    ratio = rate["llm_nb"] / rate["raw"]

    from llm_nb.tokenize import token_lengths
    rows = [r[:L] for r in ids["input_ids"]]
    n_ids = int(token_lengths(ids).sum())
    kept, kept_rows = int(token_lengths(packed).sum()) / n_ids, sum(map(len, rows)) / n_ids
    share = dict(packed=nonpad_share(packed["input_ids"], tok, a.train_batch),
                 longest=nonpad_share(rows, tok, a.train_batch),
                 max_length=nonpad_share(rows, tok, a.train_batch, pad_to=L))
    steps = dict(packed=-(-len(packed) // a.train_batch), longest=-(-len(rows) // a.train_batch))

    print(f"\n(a)+(b) throughput, tokens/s (best of {a.repeat}); seconds per run: "
          + "; ".join(f"{k} " + ", ".join(f"{x:.2f}" for x in v) for k, v in t.items()))
    rows_a = [("raw backend encode_batch (all records)", rate["raw"], ""),
              ("raw backend encode_batch_fast", rate["raw_fast"], f"{rate['raw_fast'] / rate['raw']:.2f}x raw"),
              ("llm_nb map batched tokenize + pack", rate["llm_nb"], f"{ratio:.2f}x raw"),
              ("", None, f"{rate['llm_nb'] / rate['raw_fast']:.2f}x raw fast"),
              ("map with tok() wrapper + list pack", rate["wrapper"], f"{rate['wrapper'] / rate['raw']:.2f}x raw"),
              (f"llm_nb map batched ({len(sample):,} records)", rate_few, ""),
              (f"map batched=False ({len(sample):,} records)", rate_one, f"{rate_one / rate_few:.2f}x batched")]
    for name, r, note in rows_a: print(f"{name:44}{'' if r is None else f'{r:,.0f}':>14}  {note}")
    print(f"\n(c) non-pad share of training-batch slots ({a.train_batch} rows, max_length {L})")
    print(f"{'packed blocks':44}{share['packed']:>13.1%}   {steps['packed']:,} steps/epoch, tokens kept {kept:.1%}")
    print(f"{'one record per row, pad to longest':44}{share['longest']:>13.1%}   {steps['longest']:,} steps/epoch, "
          f"tokens kept {kept_rows:.1%} (cut at max_length)")
    print(f"{'one record per row, pad to max_length':44}{share['max_length']:>13.1%}")
    print()
    t = Targets("tokenize_pack", a.smoke)
    t.check("llm_nb / raw throughput", ratio, ">=", TARGET_RATIO, "{:.3f}")
    t.check("packing non-pad share", share["packed"], ">=", TARGET_NONPAD, "{:.4f}")
    t.check("packing tokens kept", kept, ">=", TARGET_NONPAD, "{:.4f}")
    raise SystemExit(t.finish())

if __name__ == "__main__": main()
