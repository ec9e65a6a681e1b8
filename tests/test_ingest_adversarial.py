"""Adversarial input: every record is kept or quarantined with a reason and its line number; nothing is lost.
Bad JSON lines, invalid UTF-8, BOM, CRLF, NUL bytes, empty lines, a 50 MB line, wrong field types,
a failing HTTP source."""
import json
import pyarrow as pa, pyarrow.parquet as pq, pytest
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean
from llm_nb.testing import PagedAPI

BIG = 50 * 2**20

@pytest.fixture
def api():
    "Pages 1 and 2 answer 503 twice before they work, page 2 has a record whose text is a list, page 3 always fails."
    pages = {p: [{"text": f"api page {p} item {i}"} for i in range(4)] for p in (1, 2)}
    pages[2][2] = {"text": ["not", "a", "string"]}
    with PagedAPI(pages, fail_first=2, dead=[3]) as srv:
        yield srv

def write_inputs(d):
    "Files with planted problems; returns the expected kept and quarantined counts and the bad lines."
    d.mkdir()
    lines = [b'\xef\xbb\xbf{"text": "bom first line"}',  # 1 ok
             b'{"text": "crlf line"}\r',                   # 2 ok
             b'',                                           # 3 blank
             b'{"text": "broken',                           # 4 bad json
             b'{"text": "bad \xff\xfe utf8"}',              # 5 bad utf-8
             b'{"text": "nul \x00 inside"}',                # 6 ok (raw NUL accepted, cleaned later)
             b'{"text": 12345}',                            # 7 wrong type
             b'{"body": "no text field"}',                  # 8 missing field
             b'   ',                                        # 9 blank
             b'{"text": "' + b"x" * BIG + b'"}',            # 10 ok, 50 MB
             b'["a", "list"]',                              # 11 not an object
             b'{"text": "last line, no newline"}']          # 12 ok
    (d/"a.jsonl").write_bytes(b"\n".join(lines))
    (d/"b.csv").write_bytes('\ufeffid,text\r\n1,"quoted\r\nnewline"\r\n2,"bad '.encode() + b"\xff"
                            + b'"\r\n3\r\n4,ok,extra\r\n5,fine\r\n')
    pq.write_table(pa.table({"text": ["p1", None, "p3"], "n": [1, 2, 3]}), d/"c.parquet")
    pq.write_table(pa.table({"text": [1, 2]}), d/"d.parquet")
    (d/"e.json").write_text(json.dumps([{"text": "j1"}, {"text": None}, "oops"]))
    (d/"f.json").write_text('{"not": "closed"')
    (d/"g.txt").write_bytes(b"first paragraph\r\n\r\nsecond \xff paragraph\r\n")
    return dict(
        kept={"a.jsonl": 5, "b.csv": 2, "c.parquet": 2, "d.parquet": 0, "e.json": 1, "f.json": 0, "g.txt": 1, "api": 7},
        bad={"a.jsonl": [4, 5, 7, 8, 11], "b.csv": [4, 5, 6], "c.parquet": [2], "d.parquet": [1, 2], "e.json": [2, 3],
             "f.json": [0], "g.txt": [3], "api": [7]},
        blank=2)

def test_adversarial_inputs_lose_nothing(tmp_path, api, capsys):
    exp = write_inputs(tmp_path/"in")
    srcs = [{"name": "local", "path": str(tmp_path/"in"/"*"), "text_unit": "paragraph"},
            {"name": "api", "kind": "http", "url": api.url + "/items", "records_field": "data", "page_size": 4,
             "retries": 3, "backoff": 0.01}]
    cfg = demo_config(**{"run.root": str(tmp_path/"runs"), "ingest.sources": srcs, "synth.n_records": 0})
    run = Run.create(cfg)
    c = run_ingest(cfg, run)
    out = capsys.readouterr().out
    kept, bad = sum(exp["kept"].values()), sum(map(len, exp["bad"].values()))
    assert f"records read {kept + bad} = kept {kept} + quarantined {bad} -> OK" in out
    assert "1 API pages failed" in out
    assert (c["kept"], c["quarantined"], c["blank"], c["failed_pages"]) == (kept, bad, exp["blank"], 1)
    recs = pq.read_table(run.dir/"ingest"/"parts").to_pandas()
    name = lambda f: "api" if f.startswith("http") else f.rsplit("/", 1)[-1]
    assert recs.file.map(name).value_counts().to_dict() == {k: v for k, v in exp["kept"].items() if v}
    dead = [json.loads(l) for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text().splitlines()]
    pages = [x for x in dead if x["reason"].startswith("page ")]
    assert len(pages) == 1 and pages[0]["reason"] == "page 3: http 503 after 4 attempts; source stopped"
    assert api.hits == {1: 3, 2: 3, 3: 4}  # two 503s before pages 1 and 2 work; page 3: 1 + 3 retries, then stop
    got = {}
    for x in dead:
        if x not in pages: got.setdefault(name(x["file"]), []).append(x["line"])
    assert {k: sorted(v) for k, v in got.items()} == exp["bad"]
    assert all(x["reason"] and x["source"] in ("local", "api") for x in dead)
    reasons = {(name(x["file"]), x["line"]): x["reason"] for x in dead}
    assert reasons[("a.jsonl", 5)].startswith("invalid utf-8") and reasons[("a.jsonl", 4)].startswith("invalid json")
    assert reasons[("a.jsonl", 7)] == "field 'text' is int, not a string"
    assert reasons[("b.csv", 5)] == "expected 2 fields, got 1" and reasons[("b.csv", 6)] == "expected 2 fields, got 3"
    assert reasons[("c.parquet", 2)] == "field 'text' is null, not a string"
    assert reasons[("g.txt", 3)].startswith("invalid utf-8")
    by_line = dict(zip(zip(recs.file.map(name), recs.line), recs.text))
    assert by_line[("a.jsonl", 1)] == "bom first line" and by_line[("a.jsonl", 2)] == "crlf line"
    assert by_line[("b.csv", 2)] == "quoted\r\nnewline" and len(by_line[("a.jsonl", 10)]) == BIG

    # clean keeps the accounting: the 50 MB record is rejected as too long (and kept in rejected.parquet),
    # NUL is removed
    cl = run_clean(cfg, run)
    assert cl["rows_in"] == kept and cl["rows_out"] + sum(cl["rejected"].values()) == kept
    assert cl["rejected"]["too_long"] == 1
    clean = pq.read_table(run.dir/"clean"/"clean.parquet").to_pandas()
    assert "nul  inside".replace("  ", " ") in set(clean.text) and not clean.text.str.contains("\x00").any()
    assert "quoted\nnewline" in set(clean.text)

def test_unchanged_files_are_skipped_and_changed_ones_reread(tmp_path):
    d = tmp_path/"in"
    d.mkdir()
    (d/"a.jsonl").write_text('{"text": "one"}\n')
    (d/"b.jsonl").write_text('{"text": "two"}\n')
    cfg = demo_config(**{"run.root": str(tmp_path/"runs"), "synth.n_records": 0,
                         "ingest.sources": [{"path": str(d/"*.jsonl")}]})
    run = Run.create(cfg)
    assert run_ingest(cfg, run)["skipped_unchanged"] == 0
    assert run_ingest(cfg, run)["skipped_unchanged"] == 2
    (d/"b.jsonl").write_text('{"text": "two"}\n{"text": "three"}\n')
    c = run_ingest(cfg, run)
    assert (c["skipped_unchanged"], c["kept"]) == (1, 3)
    (d/"a.jsonl").unlink()
    c = run_ingest(cfg, run)
    assert c["kept"] == 2 and len(list((run.dir/"ingest"/"parts").iterdir())) == 1
