"""Benchmark: language ID (`llm_nb.clean_match.languages_of`: py3langid's model, texts walked in batches) on the 62,773
real reviews of the corpus, against py3langid's own `classify`, one text at a time (`text_language`), in one run.

A review with a Chinese character in it is Chinese (the corpus holds a few reviews written in English alone: those
are not), so each one read as another language is a false reject under `clean.languages: [zh]` (`zxx`, a text
without a letter, is never rejected for its language). Measured, with the identifier choosing among all of
py3langid's languages and among the candidates `--candidates` (default zh,en,ja: what a Chinese shop's corpus can
hold): the share of Chinese reviews read as another language, the same share among the mixed-script ones (a run of two
or more Latin letters too: product names, brands, URLs, "iPhone 15 很好用"), the labels they got, what the reviews
without a Chinese character were read as, and texts per second of both ways. Targets: the batched labels are
py3langid's own, every one; the batched way is at least 2x faster; with the candidates narrowed, at most 0.1% of the
Chinese reviews, and at most 0.5% of the mixed-script ones, are read as another language (with all languages the
shares are printed: short reviews read as Wu or Cantonese).

    python bench/lang_id.py [--candidates zh,en,ja] [--data PATH] [--rows N] [--smoke]

`--smoke` reads the first 2,000 reviews and judges nothing (tools/bench_smoke.sh). Exit status 1 when a target is
missed, 2 when the corpus is missing.
"""
import argparse, re, sys, time
from collections import Counter
from pathlib import Path
import duckdb
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_data_arg, add_rows_arg, add_smoke_arg, corpus
from llm_nb.clean_match import NO_LANGUAGE, lang_identifier, languages_of, text_language

TARGET_SHARE, TARGET_MIXED, TARGET_SPEEDUP = 0.001, 0.005, 2.0  # Chinese reviews (all, mixed-script) read as another language, narrowed
HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")  # a Chinese character: the review is Chinese
MIXED = re.compile(r"[A-Za-z]{2,}")  # a Latin word inside a Chinese review

def reviews(csv:Path, rows:int|None) -> list[str]:
    "The non-empty reviews of the corpus (the first `rows`)."
    sql = f"SELECT review FROM read_csv(?, header=true, all_varchar=true) WHERE trim(coalesce(review, '')) <> ''"
    texts = [r for (r,) in duckdb.execute(sql, [str(csv)]).fetchall()]
    return texts[:rows] if rows else texts

def measure(texts:list[str], candidates:tuple) -> dict:
    "Labels of `texts` batched, the seconds they took, and those of py3langid's own walk, one text at a time."
    lm = lang_identifier(candidates)  # loaded first: not timed
    t = time.perf_counter()
    labels = languages_of(lm, texts)
    t1 = time.perf_counter()
    own = [text_language(lm, s) for s in texts]
    return dict(labels=labels, seconds=t1 - t, own_seconds=time.perf_counter() - t1,
                same=sum(a == b for a, b in zip(labels, own)))

def report(name:str, texts:list[str], m:dict) -> dict:
    "Print one side's figures; its shares of Chinese reviews (all, mixed-script) read as another language."
    chinese = [(s, l) for s, l in zip(texts, m["labels"]) if HAN.search(s)]
    other = [(s, l) for s, l in chinese if l not in ("zh", NO_LANGUAGE)]
    mixed = [s for s, _ in chinese if MIXED.search(s)]
    mixed_other = [s for s, _ in other if MIXED.search(s)]
    share, mixed_share = len(other) / max(len(chinese), 1), len(mixed_other) / max(len(mixed), 1)
    print(f"{name}: {len(other):,} of {len(chinese):,} Chinese reviews read as another language ({share:.3%}); "
          f"mixed-script: {len(mixed_other):,} of {len(mixed):,} ({mixed_share:.3%})")
    print(f"  {len(texts) / m['seconds']:,.0f} texts/s batched, {len(texts) / m['own_seconds']:,.0f} texts/s with py3langid's "
          f"own walk ({m['own_seconds'] / m['seconds']:.1f}x); the same label for {m['same']:,} of {len(texts):,}")
    print(f"  their labels: {Counter(l for _, l in other).most_common(8)}")
    for s, l in other[:3]: print(f"  e.g. {l}: {s[:50]!r}")
    rest = Counter(l for s, l in zip(texts, m["labels"]) if not HAN.search(s))
    print(f"  the {sum(rest.values()):,} reviews without a Chinese character read as: {rest.most_common(5)}")
    return dict(share=share, mixed_share=mixed_share, same=m["same"] == len(texts),
                speedup=m["own_seconds"] / m["seconds"])

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--candidates", default="zh,en,ja", help="the narrowed candidates, comma-separated")
    add_data_arg(ap); add_rows_arg(ap); add_smoke_arg(ap, "the first 2,000 reviews")
    a = ap.parse_args(argv)
    texts = reviews(corpus(a.data, "bench/lang_id.py"), 2000 if a.smoke else a.rows)
    narrowed = tuple(a.candidates.split(","))
    every = report("all languages", texts, measure(texts, ()))
    r = report(f"candidates {','.join(narrowed)}", texts, measure(texts, narrowed))
    targets = Targets("bench/lang_id.py", a.smoke)
    targets.check("batched labels are py3langid's own (all languages, narrowed)", every["same"] and r["same"], "==", True)
    targets.check("batched / own walk speed, all languages", every["speedup"], ">=", TARGET_SPEEDUP, "{:.1f}")
    targets.check("Chinese reviews read as another language, candidates narrowed", r["share"], "<=", TARGET_SHARE,
                  "{:.3%}")
    targets.check("mixed-script Chinese reviews read as another language, candidates narrowed", r["mixed_share"], "<=",
                  TARGET_MIXED, "{:.3%}")
    return targets.finish()

if __name__ == "__main__": sys.exit(main())
