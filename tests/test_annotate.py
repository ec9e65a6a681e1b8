"""Annotate (#13): Doccano → HF → Doccano round trips over many random valid exports (both span shapes, nested
spans in layers, BIO and BIOES, through the dataset and through HF-style JSONL), one planted problem at a time
reported with its line and span, and the stage on the demo's synth output and with a tokenizer's offsets."""
import json, random
import pytest
from llm_nb.annotate import class_dataset, from_dataset, hf_rows, read_hf_jsonl, run_annotate, write_doccano
from llm_nb.doccano import ner_dataset, prepare, read_doccano, token_offsets
from llm_nb.config import ConfigError, demo_config
from llm_nb.run import Run
from llm_nb.testing import run_until

WORDS = ["Ann", "met", "Bob", "in", "New", "York", "aspirin", "5mg", "Dr", ".", ",", "e-mail", "x@y.com"]
HAN = "患者口服阿司匹林治疗配合布洛芬头痛发热"
LABELS = ["PER", "LOC", "DRUG", "TREATMENT", "DOSE"]
SEPARATORS = [" ", " ", " ", "  ", "\n", "\n\n", "\t"]


def random_text(r:random.Random) -> str:
    "Words and runs of Han characters with varied white space between them."
    parts = [r.choice(WORDS) if r.random() < .6 else "".join(r.choices(HAN, k=r.randint(1, 6)))
             for _ in range(r.randint(1, 12))]
    return "".join(p + r.choice(SEPARATORS) for p in parts).strip()


def random_spans(r:random.Random, text:str, nested:bool) -> list[tuple]:
    "Aligned spans over `text`'s tokens (auto): disjoint ones, and with `nested`, some inside them or duplicated."
    offs = token_offsets(text, "auto")
    cuts = sorted(r.sample(range(len(offs) + 1), min(len(offs) + 1, 2 * r.randint(0, 3))))
    spans = [(offs[a][0], offs[b - 1][1], r.choice(LABELS)) for a, b in zip(cuts[::2], cuts[1::2]) if b > a]
    if nested:
        for s, e, label in list(spans):
            inner = [o for o in offs if s <= o[0] and o[1] <= e]
            if r.random() < .5: spans.append((inner[0][0], inner[-1][1] if r.random() < .5 else inner[0][1], "DOSE"))
            if r.random() < .1: spans.append((s, e, label))  # a duplicate click
    r.shuffle(spans)
    return spans


def random_record(r:random.Random, k:int, nested:bool) -> dict:
    "A valid Doccano sequence-labeling record in either shape, with fields of its own."
    text = random_text(r)
    spans = random_spans(r, text, nested)
    if r.random() < .5: rec = {"id": k, "text": text, "label": [list(s) for s in spans]}
    else:
        rec = {"id": k, "text": text, "entities": [{"id": 100 * k + i, "label": l, "start_offset": s, "end_offset": e}
                                                   for i, (s, e, l) in enumerate(spans)], "relations": []}
    if r.random() < .3: rec["meta"] = {"source": f"batch-{k % 3}", "score": r.random()}
    if r.random() < .2: rec["Comments"] = []
    return rec


def write_jsonl(path, recs:list) -> object:
    "Write `recs` as JSONL (a str is written as it is)."
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)) + "\n" for x in recs),
                    encoding="utf-8")
    return path


def write_hf(ds, path) -> object:
    "`ds` as the stage's train.jsonl (tags as strings)."
    return write_jsonl(path, hf_rows(ds))


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
@pytest.mark.parametrize("nested", [False, True])
def test_roundtrip_random_exports(tmp_path, scheme, nested):
    "Doccano → dataset → Doccano, and → HF JSONL → Doccano, give back every record byte for byte."
    r = random.Random(f"{scheme}-{nested}")
    src = [random_record(r, k, nested) for k in range(1, 151)]
    p = write_jsonl(tmp_path/"export.jsonl", src)
    exs, found = prepare(read_doccano(p), overlap="layers" if nested else "error")
    assert all(f.repaired and f.kind == "overlap" for f in found) and len(exs) == len(src)
    assert nested == any(len(ex.layers) > 1 for ex in exs)
    ds = ner_dataset(exs, scheme)
    back, bad = from_dataset(ds)
    assert bad == [] and back == src
    assert write_doccano(back, tmp_path/"back.jsonl").read_bytes() == p.read_bytes()
    assert read_hf_jsonl(write_hf(ds, tmp_path/"train.jsonl")) == (src, [])


@pytest.mark.parametrize("task", ["classification", "seq2seq"])
def test_roundtrip_classes(tmp_path, task):
    "Classification (single and multi-label) and seq2seq exports round-trip too."
    r = random.Random(task)
    for multi in (False, True):
        pool = ["pos", "neg", "neutral"] if task == "classification" else ["a summary", "another one", "摘要"]
        src = [{"id": k, "text": random_text(r), "label": r.sample(pool, r.randint(0, 2) if multi else 1)}
               for k in range(1, 41)]
        export = read_doccano(write_jsonl(tmp_path/f"{task}.jsonl", src), task)
        assert export.findings == [] and from_dataset(class_dataset(export.records, task)) == (src, [])


def plant(r:random.Random, rec:dict) -> tuple[object, str, tuple|None]:
    "`rec` with one problem planted: (the line to write, the finding's kind, its span)."
    text = rec["text"]
    offs = token_offsets(text, "words")
    a, b = r.choice(offs)
    case = r.choice(["out_of_range", "start_after_end", "zero_length", "cuts_token", "edge_space", "no_text",
                     "empty_text", "invalid_json", "unknown_shape", "overlap"])
    span = {"out_of_range": (a, len(text) + 3), "start_after_end": (b, a), "zero_length": (a, a),
            "cuts_token": (a, b - 1), "edge_space": (a, b + 1), "overlap": (a, b)}.get(case)
    if case == "cuts_token" and b - a < 2: return plant(r, rec)  # a one-character token cannot be cut
    if case == "edge_space" and (b >= len(text) or not text[b].isspace()): return plant(r, rec)
    if case == "no_text": return {k: v for k, v in rec.items() if k != "text"}, case, None
    if case == "empty_text": return dict(rec, text=" "), case, None
    if case == "invalid_json": return json.dumps(rec)[:-2], case, None
    if case == "unknown_shape": return dict(rec, label=[[a, b]]), case, None
    if case == "overlap": return dict(rec, label=[[0, len(text), "TREATMENT"], [a, b, "DRUG"]]), case, (a, b, "DRUG")
    return dict(rec, label=[[*span, "PER"]]), case, (*span, "PER")


def test_every_planted_problem_has_its_line_and_span(tmp_path):
    "One problem planted in each of many records: each reported once, with its line and span, and nothing else."
    r = random.Random(0)
    lines, want = [], {}
    for k in range(1, 301):
        rec = {"id": k, "text": " ".join(r.choices(["Ann", "Smith", "met", "aspirin", "5mg", "in", "York"], k=5)),
               "label": []}
        if k % 3: lines.append(rec)
        else:
            line, kind, span = plant(r, rec)
            lines.append(line)
            want[len(lines)] = (kind, span)
    lines.insert(10, "")  # a blank line moves the lines after it
    want = {n + (n > 10): v for n, v in want.items()}
    exs, found = prepare(read_doccano(write_jsonl(tmp_path/"admin.jsonl", lines), "sequence_labeling"),
                         "words")
    assert {f.line: (f.kind, f.span) for f in found} == want and len(found) == len(want)
    assert all(str(f).startswith(f"admin.jsonl:{f.line}: ") and not f.repaired for f in found)
    assert len(exs) == 300 - len(want)
    assert {f.kind for f in found} == {"out_of_range", "start_after_end", "zero_length", "cuts_token", "edge_space",
                                       "no_text", "empty_text", "invalid_json", "unknown_shape", "overlap"}


def test_stage_on_demo_synth_output(tmp_path):
    "The stage on the demo's two annotators; then a broken copy: stops with its line, or sets it aside."
    run = run_until("ingest")
    truth = json.loads((run.dir/"synth"/"doccano"/"truth.json").read_text())
    c = run_annotate(run.cfg, run)
    assert (c["records"], c["kept"], c["spans"], c["findings"], c["set_aside"]) == (
        truth["records"], truth["records"], truth["spans"], 0, 0)
    assert 0 < c["span_f1"] < 1 and 0 < c["kappa"] < 1
    assert "annotate" in run.manifest()["stages"] and run.report()["stages"]["annotate"]["spans"] == truth["spans"]
    recs = [json.loads(l) for l in (run.dir/"synth"/"doccano"/"admin.jsonl").read_text().splitlines()]
    e = recs[4]["entities"][0]
    recs[4]["entities"][0] = dict(e, end_offset=len(recs[4]["text"]) + 1)  # line 5: past the end of the text
    bad = write_jsonl(tmp_path/"admin.jsonl", recs)
    cfg = lambda **kw: demo_config(**{"run.root": str(tmp_path/"runs"), "annotate.input": str(bad),
                                      "annotate.second": "", **{f"annotate.{k}": v for k, v in kw.items()}})
    toy = Run.create(cfg())
    with pytest.raises(ConfigError, match=rf"admin.jsonl:5: span \[{e['start_offset']}, "):
        run_annotate(toy.cfg, toy)
    c = run_annotate(cfg(invalid="skip"), toy)
    assert (c["kept"], c["set_aside"]) == (truth["records"] - 1, 1)
    aside = [json.loads(l) for l in (toy.dir/"annotate"/"invalid.jsonl").read_text().splitlines()]
    assert [(x["line"], json.loads(x["raw"])) for x in aside] == [(5, recs[4])]


def test_stage_with_tokenizer_offsets(tmp_path):
    "`annotate.tokens` naming a tokenizer folder: the tags follow its tokens (a local WordPiece, no hub)."
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    vocab = {w: i for i, w in enumerate(["[UNK]", "Dr", ".", "Sm", "##ith", "prescribed", "asp", "##irin"])}
    wp = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=wp, unk_token="[UNK]").save_pretrained(tmp_path/"tok")
    src = [{"id": 1, "text": "Dr. Smith prescribed aspirin", "label": [[4, 9, "PER"], [21, 24, "DRUG"]]}]
    cfg = demo_config(**{"run.root": str(tmp_path/"runs"), "annotate.input": str(write_jsonl(tmp_path/"a.jsonl", src)),
                         "annotate.second": "", "annotate.tokens": str(tmp_path/"tok")})
    run = Run.create(cfg)
    c = run_annotate(cfg, run)
    assert (c["kept"], c["findings"]) == (1, 0)  # [21, 24) is the token `asp`: aligned for this tokenizer
    row = json.loads((run.dir/"annotate"/"train.jsonl").read_text())
    assert row["tokens"] == ["Dr", ".", "Sm", "ith", "prescribed", "asp", "irin"]
    assert row["ner_tags"] == ["O", "O", "B-PER", "I-PER", "O", "B-DRUG", "O"]
    assert (run.dir/"annotate"/"roundtrip.jsonl").read_text() == (tmp_path/"a.jsonl").read_text()
