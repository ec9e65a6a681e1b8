"""Adversarial input: every record is kept or quarantined with a reason and its line number; nothing is lost.
Bad JSON lines, invalid UTF-8, BOM, CRLF, NUL bytes, empty lines, a 50 MB line, wrong field types,
a failing HTTP source."""
import json, os, tempfile
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq, pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.config_data import IngestLimits
from llm_nb.ingest import UTF8_BOM, read_jsonl, run_ingest, write_part
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

# --- hostile input (issue #70): every parser bounded, text Parquet can hold, sources keyed by source ---

def deep_schema(levels:int) -> dict:
    "A JSON schema `levels` objects deep (two JSON levels each: the object and its `properties`)."
    s = {"type": "string"}
    for _ in range(levels): s = {"type": "object", "properties": {"a": s}}
    return s

def tool_record(parameters:dict, arguments) -> dict:
    "A conversation that calls the tool `f` (its schema `parameters`) with `arguments`, then answers."
    call = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f", "arguments": arguments}}]}
    return {"tools": [{"name": "f", "parameters": parameters}],
            "messages": [{"role": "user", "content": "q"}, call, {"role": "tool", "content": "r"},
                         {"role": "assistant", "content": "a"}]}

def ingest_dir(tmp_path, sources:list, **cfg_over):
    "run_ingest over `sources` in a fresh run: (counts, the run, the dead letters by (file name, line))."
    cfg = demo_config(**{"run.root": str(tmp_path/"runs"), "synth.n_records": 0, "ingest.sources": sources, **cfg_over})
    run = Run.create(cfg)
    c = run_ingest(cfg, run)
    dead = [json.loads(l) for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text(encoding="utf-8").splitlines()]
    return c, run, {(x["file"].rsplit("/", 1)[-1], x["line"]): x["reason"] for x in dead}

def hostile_lines() -> list[str]:
    "JSON Lines that took the stage down (deep JSON, hostile tool schemas and arguments); lines 1, 9 and 10 are kept."
    return [json.dumps({"text": "fine"}),                                            # 1 ok
            '{"text": "x", "m": ' + "[" * 5000 + "]" * 5000 + "}",                     # 2 deeper than json goes
            json.dumps(tool_record(deep_schema(25), "{}")),  # 3 a schema 51 deep (100 levels: the line is too deep)
            json.dumps(tool_record({}, "[" * 10_000 + "]" * 10_000)),                  # 4 arguments 10,000 deep
            json.dumps(tool_record({}, json.dumps({"a": "x" * 1_100_000}))),           # 5 arguments of 1.1 M characters
            json.dumps(tool_record({"$schema": []}, "{}")),                            # 6 a $schema not a string
            json.dumps(tool_record({"properties": {"a": {"$ref": "http://127.0.0.1:9/x.json"}}}, '{"a": 1}')),  # 7
            '{"text": "x", "n": ' + "1" * 5000 + "}",                                  # 8 an int Python won't convert
            '{"text": "' + "[" * 5000 + '"}',                                          # 9 ok: brackets in a string
            json.dumps(tool_record(deep_schema(8), "{}"))]                             # 10 ok: a schema 17 deep

def test_deep_and_huge_json_are_dead_letters_by_line(tmp_path, capsys):
    "Nesting that blows Python's recursion (json, jsonschema) and oversized arguments: dead letters, the limit named."
    d = tmp_path/"in"
    d.mkdir()
    lines = hostile_lines()
    (d/"a.jsonl").write_text("\n".join(lines) + "\n")
    (d/"b.csv").write_text('messages,id\n"' + "[" * 3000 + "]" * 3000 + '",1\n')  # a list written as JSON, too deep
    (d/"c.json").write_text("[" * 3000 + "]" * 3000)  # a JSON document too deep: the file is dead-lettered whole
    c, run, reasons = ingest_dir(tmp_path, [{"name": "hostile", "path": str(d/"*")}])
    assert "-> OK" in capsys.readouterr().out
    assert (c["read"], c["kept"], c["quarantined"]) == (12, 3, 9)
    assert sorted(reasons) == [("a.jsonl", n) for n in range(2, 9)] + [("b.csv", 2), ("c.json", 0)]
    assert reasons[("a.jsonl", 2)] == "the line nests JSON deeper than 64 levels (ingest.limits.json_depth)"
    assert reasons[("a.jsonl", 3)] == ("field 'tools[0].parameters' nests deeper than 32 levels "
                                       "(ingest.limits.schema_depth)")
    args = "field 'messages[1].tool_calls[0].function.arguments'"
    assert reasons[("a.jsonl", 4)] == f"{args} nests JSON deeper than 64 levels (ingest.limits.json_depth)"
    assert reasons[("a.jsonl", 5)] == (f"{args} is 1,100,009 characters, more than 1,000,000 "
                                       "(ingest.limits.argument_chars)")
    assert reasons[("a.jsonl", 6)] == "field 'tools[0].parameters.$schema' is list, not a string"
    assert reasons[("a.jsonl", 7)].startswith(f"{args}: the schema of tool 'f' refers to 'http://127.0.0.1:9/x.json'")
    assert reasons[("a.jsonl", 8)].startswith("invalid json: Exceeds the limit (4300 digits)")
    assert reasons[("b.csv", 2)] == "field 'messages' nests JSON deeper than 64 levels (ingest.limits.json_depth)"
    assert reasons[("c.json", 0)] == "the document nests JSON deeper than 64 levels (ingest.limits.json_depth)"
    parts = pq.read_table(run.dir/"ingest"/"parts").to_pandas()
    assert sorted(parts.line) == [1, 9, 10] and len(parts[parts.line == 9].text.iloc[0]) == 5000

def test_json_limits_are_the_config_s(tmp_path):
    "A line longer than `ingest.limits.line_bytes` is dead-lettered without being held whole; the next lines are read."
    d = tmp_path/"in"
    d.mkdir()
    (d/"a.jsonl").write_text('{"text": "one"}\n{"text": "' + "y" * 5000 + '"}\n{"text": "[[[[three]]]]"}\n'
                             '{"text": "four", "m": [[[[]]]]}\n')
    c, _, reasons = ingest_dir(tmp_path, [{"path": str(d/"*.jsonl")}],
                               **{"ingest.limits.line_bytes": 1000, "ingest.limits.json_depth": 3})
    assert (c["kept"], c["quarantined"]) == (2, 2)
    assert reasons == {("a.jsonl", 2): "the line is 5,012 bytes, more than 1,000 (ingest.limits.line_bytes)",
                       ("a.jsonl", 4): "the line nests JSON deeper than 3 levels (ingest.limits.json_depth)"}

def test_deep_api_page_stops_the_source_not_the_stage():
    "A page nested deeper than the limit is a failed page of its source (httpx's json() raised RecursionError)."
    import httpx
    from llm_nb.config import SourceCfg
    from llm_nb.ingest import http_events
    body = '{"data": [{"text": "x", "m": ' + "[" * 5000 + "]" * 5000 + "}]}"
    client = httpx.Client(transport=httpx.MockTransport(lambda req: httpx.Response(200, text=body)))
    ev = list(http_events(SourceCfg(kind="http", url="http://api/items", records_field="data"), client=client))
    assert [(e.kind, e.reason) for e in ev] == [
        ("failed_page", "page 1: the page nests JSON deeper than 64 levels (ingest.limits.json_depth); source stopped")]

SURROGATE_LINES = [b'{"text": "a \\ud800 b"}',                       # 1 a lone high surrogate, JSON-escaped
                   b'{"text": "a \\udc00 b"}',                       # 2 a lone low one
                   b'{"text": "fine", "id": "\\udbff"}',             # 3 in a field that goes to meta
                   b'{"text": "a \xed\xa0\x80 b"}',                  # 4 a surrogate as bytes (CESU-8): not UTF-8
                   json.dumps(tool_record({}, {"city": "\ud800"})).encode(),  # 5 in a tool call's arguments
                   json.dumps({"messages": [{"role": "user", "content": "q\udfff"},
                                            {"role": "assistant", "content": "a"}]}).encode(),  # 6 in a turn
                   b'{"text": "a pair \\ud83d\\ude00 is one character"}']  # 7 ok: a pair is U+1F600

@pytest.mark.parametrize("policy", ["quarantine", "replace"])
def test_lone_surrogates_are_repaired_or_quarantined_by_line(tmp_path, policy):
    "Text Parquet cannot hold (lone surrogates, anywhere in a record) follows `bad_utf8`, by line, before the write."
    d = tmp_path/"in"
    d.mkdir()
    (d/"a.jsonl").write_bytes(b"\n".join(SURROGATE_LINES) + b"\n")
    c, run, reasons = ingest_dir(tmp_path, [{"path": str(d/"*.jsonl")}], **{"ingest.bad_utf8": policy})
    parts = pq.read_table(run.dir/"ingest"/"parts").to_pandas()
    if policy == "replace":
        assert (c["kept"], c["quarantined"], c["repaired_utf8"]) == (7, 0, 6)
        by_line = dict(zip(parts.line, parts.text))
        assert by_line[1] == by_line[2] == "a \ufffd b" and by_line[4] == "a \ufffd\ufffd\ufffd b"
        assert json.loads(parts[parts.line == 3].meta.iloc[0]) == {"id": "\ufffd"}
        return
    assert (c["kept"], c["quarantined"]) == (1, 6) and list(parts.line) == [7]
    assert parts.text.iloc[0] == "a pair \U0001F600 is one character"
    assert reasons == {("a.jsonl", 1): "lone surrogate U+D800 at character 2: UTF-8 cannot hold it",
                       ("a.jsonl", 2): "lone surrogate U+DC00 at character 2: UTF-8 cannot hold it",
                       ("a.jsonl", 3): "field 'id': lone surrogate U+DBFF at character 0: UTF-8 cannot hold it",
                       ("a.jsonl", 4): "invalid utf-8 at character 2",
                       ("a.jsonl", 5): "field 'turn_extras.1.tool_calls[0].function.arguments.city': lone surrogate "
                                       "U+D800 at character 0: UTF-8 cannot hold it",
                       ("a.jsonl", 6): "field 'messages[0].content': lone surrogate U+DFFF at character 1: UTF-8 "
                                       "cannot hold it"}

def test_one_file_under_two_sources_is_read_by_each(tmp_path, capsys):
    "A part belongs to (source, file, reader settings): the second source's records are not 'unchanged and skipped'."
    d = tmp_path/"in"
    d.mkdir()
    (d/"a.txt").write_text("para one\n\npara two\n")
    (d/"link.txt").symlink_to(d/"a.txt")
    srcs = [{"name": "whole", "path": str(d/"a.txt")}, {"name": "paras", "path": str(d/"link.txt"),
                                                          "text_unit": "paragraph"}]
    c, run, _ = ingest_dir(tmp_path, srcs)
    parts = pq.read_table(run.dir/"ingest"/"parts").to_pandas()
    assert parts.source.value_counts().to_dict() == {"whole": 1, "paras": 2}
    assert c["sources"] == {"whole": dict(read=1, kept=1, quarantined=0, failed_pages=0),
                            "paras": dict(read=2, kept=2, quarantined=0, failed_pages=0)}
    assert len(list((run.dir/"ingest"/"parts").iterdir())) == 2
    again = run_ingest(run.cfg, run)  # unchanged: both skipped, the counts the same
    assert (again["skipped_unchanged"], again["sources"]) == (2, c["sources"])

@pytest.mark.parametrize("near", [True, False])
def test_one_file_under_two_sources_cleans_with_counts_that_add_up(tmp_path, near):
    "Rows of one file read by two sources share file and line: clean tells them apart by source (it lost rows)."
    d = tmp_path/"in"
    d.mkdir()
    texts = ["这个台灯做工很好，灯光柔和，下次还会回购。", "物流太慢了，等了一个星期才到，包装也破了。",
             "这个台灯做工很好，灯光柔和，下次还会回购。", "衣服的颜色和图片上的一样，穿着很舒服，推荐。"]
    (d/"a.jsonl").write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts))
    _, run, _ = ingest_dir(tmp_path, [{"name": "one", "path": str(d/"a.jsonl")}, {"name": "two", "path": str(d/"a.jsonl")}],
                           **{"clean.near_dedup": near})
    res = run_clean(run.cfg, run)  # before: RuntimeError "clean lost rows"
    assert (res["rows_in"], res["rows_out"], res["rejected"], res["invariant_ok"]) == (8, 3, {"exact_dup": 5}, True)
    kept = pq.read_table(run.dir/"clean"/"clean.parquet").to_pylist()
    assert sorted((r["source"], r["line"]) for r in kept) == [("one", 1), ("one", 2), ("one", 4)]

def test_one_file_twice_in_one_source_is_read_once_and_said(tmp_path, capsys):
    "Two links to one file in one source's glob: read once, counted once, and said (printed and in the manifest)."
    real, d = tmp_path/"real", tmp_path/"in"
    real.mkdir()
    d.mkdir()
    (real/"a.jsonl").write_text('{"text": "one"}\n{"text": 2}\n{"text": "three"}\n')
    (d/"l1.jsonl").symlink_to(real/"a.jsonl")
    (d/"l2.jsonl").symlink_to(real/"a.jsonl")
    c, run, reasons = ingest_dir(tmp_path, [{"name": "links", "path": str(d/"*.jsonl")}])
    out = capsys.readouterr().out
    assert (c["read"], c["kept"], c["quarantined"], c["files"]) == (3, 2, 1, 1)
    assert list(reasons) == [("l1.jsonl", 2)]
    said = f"source 'links' names {d/'l1.jsonl'} twice (also as {d/'l2.jsonl'}): read once"
    assert said in out
    notes = json.loads((run.dir/"manifest.json").read_text())["stages"]["ingest"]["counts"]["notes"]
    assert said in notes

def test_paths_that_leave_their_folder_are_noted_in_the_manifest(tmp_path):
    "A source path with '..' and a file that is a link elsewhere are read (the user's own config), and noted."
    outside, d = tmp_path/"outside", tmp_path/"in"
    outside.mkdir()
    d.mkdir()
    (outside/"secret.txt").write_text("not meant for training\n")
    (d/"secret.txt").symlink_to(outside/"secret.txt")
    (d/"plain.txt").write_text("a plain file\n")
    c, run, _ = ingest_dir(tmp_path, [{"name": "up", "path": str(d/".."/"in"/"*.txt")}])
    assert c["kept"] == 2
    notes = json.loads((run.dir/"manifest.json").read_text())["stages"]["ingest"]["counts"]["notes"]
    assert notes == [f"source 'up': its path {str(d/'..'/'in'/'*.txt')!r} climbs with '..' (to {d})",
                     f"source 'up': {d/'..'/'in'/'secret.txt'} is a link to {outside/'secret.txt'}"]

# --- the fuzz test: ingest's JSON Lines reader never raises, and every line is kept, dead-lettered or blank ---
# short here (LLM_NB_FUZZ_EXAMPLES, default 150: a few seconds); bench/fuzz_ingest.py runs the same property for minutes

ODD = ["\ud800", "\udbff", "\udc00", "\udcff", "\x00", "\u202e", "\u200f", "\u0301", "\ufeff", "\u2028", "\ue000",
       "\ue001", "\r", "\n", "\\", '"', "[", "{", "<|im_end|>", "<|im_start|>assistant\n", "</s>", "<think>", "</think>"]
odd_text = st.lists(st.characters(exclude_categories=()) | st.sampled_from(ODD), max_size=12).map("".join)
json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | odd_text,
                           lambda kids: st.lists(kids, max_size=3) | st.dictionaries(odd_text, kids, max_size=3),
                           max_leaves=12)
tool_names = st.sampled_from(["f", "g"]) | odd_text
calls = st.fixed_dictionaries({"name": tool_names, "arguments": json_values | json_values.map(json.dumps) | odd_text})
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(["system", "user", "assistant", "tool", "bot"]) | odd_text,
     "content": odd_text | st.none() | json_values},
    optional={"tool_calls": st.lists(calls, max_size=2), "reasoning_content": odd_text, "tool_call_id": odd_text})
tools = st.fixed_dictionaries({"name": tool_names}, optional={"description": odd_text, "parameters": json_values | st.just(
    {"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}, "required": ["a"]})})
records = st.one_of(st.fixed_dictionaries({"text": odd_text}, optional={"id": json_values}),
                    st.fixed_dictionaries({"messages": st.lists(messages, max_size=4)},
                                          optional={"tools": st.lists(tools, max_size=2) | odd_text}),
                    st.dictionaries(odd_text, json_values, max_size=3), json_values)
deep_lines = st.integers(0, 3000).map(lambda n: '{"text": "x", "m": ' + "[" * n + "]" * n + "}")
lines = st.one_of(records.map(json.dumps),  # surrogates written as \\udXXX escapes
                  records.map(lambda r: json.dumps(r, ensure_ascii=False)),  # ... and as bytes (not UTF-8)
                  deep_lines, odd_text).map(lambda s: s.encode("utf-8", "surrogatepass")) | st.binary(max_size=40)
jsonl_files = st.tuples(st.lists(lines, max_size=8), st.booleans()).map(lambda t: b"\n".join(t[0]) + b"\n" * t[1])

def line_count(content:bytes) -> int:
    "How many lines a file of `content` has, as Python's binary file iteration splits it (on \\n alone)."
    return content.count(b"\n") + (not content.endswith(b"\n")) if content else 0

def check_jsonl(content:bytes, # a JSON Lines file
                policy:str="quarantine", # `bad_utf8`
                limits:IngestLimits=IngestLimits() # `ingest.limits`
               ) -> dict:
    "Read and write `content` as ingest does; assert that every line is kept, dead-lettered with a reason, or blank."
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        (d/"f.jsonl").write_bytes(content)
        c = write_part(read_jsonl(d/"f.jsonl", policy=policy, limits=limits), "fuzz", str(d/"f.jsonl"),
                       d/"part.parquet", d/"dead.jsonl", policy=policy)
        kept = pq.read_table(d/"part.parquet").to_pydict()  # every text and meta written, as UTF-8
        dead = [json.loads(l) for l in (d/"dead.jsonl").read_text(encoding="utf-8").splitlines()]  # as readers do
    n = line_count(content)
    split = content.split(b"\n")[:n]
    blank = sum(not (l.removeprefix(UTF8_BOM) if i == 0 else l).strip() for i, l in enumerate(split))
    assert (c["read"], c["read"] + c["blank"], c["blank"]) == (c["kept"] + c["quarantined"], n, blank), c
    assert (len(kept["line"]), len(dead)) == (c["kept"], c["quarantined"]), c
    assert all(x["reason"] and x["file"].endswith("f.jsonl") for x in dead), dead
    seen = kept["line"] + [x["line"] for x in dead]
    assert len(set(seen)) == len(seen) and set(seen) <= set(range(1, n + 1)), seen
    assert all(isinstance(t, str) for t in kept["text"]) and all(json.loads(m) is not None for m in kept["meta"])
    return c

FUZZ_EXAMPLES = int(os.environ.get("LLM_NB_FUZZ_EXAMPLES", "150"))
FUZZ_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

@settings(max_examples=FUZZ_EXAMPLES, **FUZZ_SETTINGS)
@given(content=jsonl_files, policy=st.sampled_from(["quarantine", "replace"]))
@example(content="\n".join(hostile_lines()).encode(), policy="quarantine")  # the seeds: what took the stage down
@example(content=b"\n".join(SURROGATE_LINES), policy="quarantine")
@example(content=b"\n".join(SURROGATE_LINES) + b"\n", policy="replace")
@example(content=UTF8_BOM + b'{"text": "\\u202e\\u0301\\u0000 <|im_end|>"}\r\n \n\xff\n', policy="quarantine")
def test_fuzz_jsonl_reader_loses_nothing(content, policy):
    "Random JSON, random Unicode (surrogates, NUL, RTL marks, combining marks, special tokens), random bytes."
    check_jsonl(content, policy)
