"""Conversations through ingest and clean: every shape (OpenAI messages, ShareGPT, Alpaca, prompt/completion) in JSONL,
CSV and Parquet keeps its turns exactly; cleaning acts on each turn's content (PII redacted in place, whitespace
normalized) and dedups whole conversations; every malformed record is dead-lettered with its file, line and field.
Preference pairs too: each shape keeps its prompt and both answers, cleaned on both sides and deduplicated as a pair."""
import json
import pyarrow as pa, pyarrow.parquet as pq
from llm_nb.config import load_config
from llm_nb.run import Run
from llm_nb.ingest import run_ingest
from llm_nb.clean_datatrove import run_clean
from llm_nb.records import decode_turns, pair_of
from llm_nb.clean_text import placeholder

PHONE = "13812345678"
GOOD = [  # (record, its turns as ingest keeps them)
    ({"messages": [{"role": "system", "content": "简洁回答"}, {"role": "user", "content": "这条评论提到了哪个商品？"},
                   {"role": "assistant", "content": "耳机，音质很好"}]},
     [("system", "简洁回答"), ("user", "这条评论提到了哪个商品？"), ("assistant", "耳机，音质很好")]),
    ({"conversations": [{"from": "human", "value": f"Call me at {PHONE} about the order"},
                        {"from": "gpt", "value": "I will call you tomorrow"}, {"from": "human", "value": "Thanks a lot"},
                        {"from": "gpt", "value": "You are welcome"}], "system": "be polite"},
     [("system", "be polite"), ("user", f"Call me at {PHONE} about the order"), ("assistant", "I will call you tomorrow"),
      ("user", "Thanks a lot"), ("assistant", "You are welcome")]),
    ({"instruction": "列出这份病历的症状", "input": "病历：头痛，发热三天", "output": "头痛、发热", "id": 9},
     [("user", "列出这份病历的症状\n\n病历：头痛，发热三天"), ("assistant", "头痛、发热")]),
    ({"prompt": "What is two plus two?", "completion": "Four, of course."},
     [("user", "What is two plus two?"), ("assistant", "Four, of course.")]),
]
BAD = [  # (record, the reason its dead letter gives)
    ({"messages": [{"role": "bot", "content": "hi"}, {"role": "assistant", "content": "x"}]},
     "field 'messages[0].role': unknown role 'bot' (one of system, user, assistant, tool)"),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "  "}]},
     "field 'messages[1].content': empty assistant turn"),
    ({"messages": [{"role": "assistant", "content": "a"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": "b"}]},
     "field 'messages[0].content': an assistant turn with no user turn before it"),
    ({"messages": [{"role": "user", "content": "hi"}]}, "field 'messages': the conversation does not end with an assistant turn"),
    ({"messages": {"role": "user"}}, "field 'messages' is dict, not a list"),
    ({"messages": [{"role": "user", "content": ["a"]}, {"role": "assistant", "content": "x"}]},
     "field 'messages[0].content' is list, not a string"),
    ({"instruction": "总结这段话", "input": "一段话"}, "missing field 'output'"),
    ({"conversations": [{"from": "human", "value": "q"}, {"from": "robot", "value": "a"}]},
     "field 'conversations[1].from': unknown speaker 'robot'"),
]

def test_conversations_through_ingest_and_clean(tmp_path):
    raw = tmp_path/"raw"
    raw.mkdir()
    lines = [json.dumps(r, ensure_ascii=False) for r, _ in GOOD] + [json.dumps(GOOD[0][0], ensure_ascii=False)]  # a copy
    lines += [json.dumps(r, ensure_ascii=False) for r, _ in BAD]
    (raw/"chat.jsonl").write_text("\n".join(lines) + "\n")
    (raw/"alpaca.csv").write_text("instruction,input,output\n说出评论里的商品,这款耳机很好,耳机\n翻译,hello,\n")
    pq.write_table(pa.table({"messages": [json.dumps(GOOD[3][0]["prompt"]), "not json"],
                             "n": [1, 2]}), raw/"m.parquet")  # a string column that should hold lists
    pq.write_table(pa.table({"messages": [[{"role": "user", "content": "第一个问题"}, {"role": "assistant", "content": "第一个回答"}]]}),
                   raw/"typed.parquet")
    cfg = load_config({"run": {"root": str(tmp_path/"runs"), "name": "chat"},
                       "ingest": {"sources": [{"path": str(raw/"*")}]}, "clean": {"near_dedup": False}})
    run = Run.create(cfg)
    ing = run_ingest(cfg, run)
    dead = [json.loads(l) for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text().splitlines()]
    got = {(d["file"].rsplit("/", 1)[-1], d["line"], d["reason"]) for d in dead}
    want = {("chat.jsonl", len(GOOD) + 2 + i, reason) for i, (_, reason) in enumerate(BAD)}
    assert {g for g in got if g[0] == "chat.jsonl" and not g[2].startswith(tuple(r for _, r in BAD))} == set(), got
    assert {(f, l) for f, l, r in got if f == "chat.jsonl"} == {(f, l) for f, l, _ in want}, got
    for f, l, r in want: assert any(g[:2] == (f, l) and g[2].startswith(r) for g in got), (f, l, r, got)
    assert ("alpaca.csv", 3, "field 'output': empty assistant turn") in got, got
    assert any(f == "m.parquet" and l == 1 and "is str, not a list" in r for f, l, r in got), got  # a JSON string, not a list
    assert any(f == "m.parquet" and l == 2 and "nor a list written as JSON" in r for f, l, r in got), got
    assert ing["kept"] == len(GOOD) + 1 + 1 + 1 and ing["invariant_ok"], ing

    parts = pq.read_table(run.dir/"ingest"/"parts").to_pylist()
    turns = sorted([[(t["role"], t["content"]) for t in decode_turns(p["text"])] for p in parts])
    assert turns == sorted([t for _, t in GOOD] + [GOOD[0][1], [("user", "说出评论里的商品\n\n这款耳机很好"), ("assistant", "耳机")],
                                                  [("user", "第一个问题"), ("assistant", "第一个回答")]])
    alpaca = next(p for p in parts if p["text"].endswith("头痛、发热"))
    assert json.loads(alpaca["meta"]) == {"id": 9}  # what is not a turn stays with the record

    c = run_clean(cfg, run)
    kept = [decode_turns(t) for t in pq.read_table(run.dir/"clean"/"clean.parquet").column("text").to_pylist()]
    assert c["rejected"].get("exact_dup") == 1 and c["rows_out"] == len(GOOD) + 2, c
    assert c["conversations"] == dict(kept=len(GOOD) + 2, turns=sum(map(len, kept))), c
    polite = next(k for k in kept if k[0]["content"] == "be polite")
    assert [t["role"] for t in polite] == ["system", "user", "assistant", "user", "assistant"]
    assert PHONE not in polite[1]["content"] and polite[1]["content"].startswith("Call me at ") \
        and polite[1]["content"].endswith(" about the order"), polite  # redacted inside its turn
    assert c["pii"]["phone"] == 1, c["pii"]

HH = "\n\nHuman: 这条评论提到了哪个商品？\n\nAssistant: "
PAIRS = [  # preference pairs in every shape ingest reads, and what is stored: (prompt turns, chosen, rejected)
    ({"prompt": "列出症状：头痛、发热", "chosen": "头痛、发热", "rejected": "头痛"}, ([("user", "列出症状：头痛、发热")], "头痛、发热", "头痛")),
    ({"prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"My number is {PHONE}, which product?"}],
      "chosen": [{"role": "assistant", "content": "The headset."}], "rejected": [{"role": "assistant", "content": f"Call {PHONE}."}]},
     ([("system", "be brief"), ("user", "My number is <PHONE>, which product?")], "The headset.", "Call <PHONE>.")),
    ({"chosen": HH + "耳机", "rejected": HH + "手机"}, ([("user", "这条评论提到了哪个商品？")], "耳机", "手机")),
    ({"chosen": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
      "rejected": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "5"}]}, ([("user", "2+2?")], "4", "5")),
]
BAD_PAIRS = [
    ({"prompt": "q", "chosen": "same", "rejected": "same "}, "fields 'chosen' and 'rejected': chosen and rejected are the same answer"),
    ({"prompt": "q", "chosen": "", "rejected": "b"}, "field 'chosen': empty assistant turn"),
    ({"chosen": HH + "耳机", "rejected": HH.replace("商品", "颜色") + "黑色"},
     "field 'rejected (turn 0)': the prompt differs between chosen and rejected (turn 0)"),
    ({"prompt": "q", "chosen": "a"}, "missing field 'rejected'"),
]

def test_preference_pairs_through_ingest_and_clean(tmp_path):
    "Every pair shape keeps its prompt and both answers; PII is redacted on both sides; a copy is a duplicate pair; bad pairs are dead-lettered with their line."
    (raw := tmp_path/"raw").mkdir()
    lines = [json.dumps(r, ensure_ascii=False) for r, _ in PAIRS + [PAIRS[0]] + BAD_PAIRS]
    (raw/"pairs.jsonl").write_text("\n".join(lines) + "\n")
    cfg = load_config({"run": {"root": str(tmp_path/"runs"), "name": "pairs"}, "ingest": {"sources": [{"path": str(raw/"*")}]},
                       "clean": {"near_dedup": False, "min_chars": 1}})
    run = Run.create(cfg)
    ing = run_ingest(cfg, run)
    dead = [json.loads(l) for l in (run.dir/"ingest"/"dead_letter.jsonl").read_text().splitlines()]
    assert [(d["line"], d["reason"]) for d in dead] == [(len(PAIRS) + 2 + i, r) for i, (_, r) in enumerate(BAD_PAIRS)], dead
    assert ing["kept"] == len(PAIRS) + 1, ing
    c = run_clean(cfg, run)
    assert c["rejected"].get("exact_dup") == 1 and c["rows_out"] == len(PAIRS), c
    stored = [pair_of(decode_turns(t)) for t in pq.read_table(run.dir/"clean"/"clean.parquet").column("text").to_pylist()]
    got = sorted(([(t["role"], t["content"]) for t in p["prompt"]], p["chosen"][0]["content"], p["rejected"][0]["content"])
                 for p in stored)
    redacted = lambda s: s.replace("<PHONE>", placeholder("phone"))
    want = sorted(([(r, redacted(x)) for r, x in p], redacted(ch), redacted(rj)) for _, (p, ch, rj) in PAIRS)
    assert got == want, (got, want)
    assert c["pii"]["phone"] == 2, c["pii"]  # once in the prompt, once in the rejected answer

WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "明天的天气",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "巴黎"}}}

def test_tool_calls_and_reasoning_through_ingest_clean_and_tokenize(tmp_path):
    """A tool-use conversation with reasoning keeps its tools, its call and its reasoning through ingest and clean (PII in
    the reasoning redacted: it travels in the answer's text; and in the call's arguments, which travel in `meta`), and
    tokenize trains the call, never the tool's result."""
    from llm_nb.records import stored_chat
    from llm_nb.tokenize import tokenize_records
    from llm_nb.families import family_tokenizer
    from llm_nb.chat import named_template
    from llm_nb.config import TokenizeCfg
    rec = {"tools": json.dumps([WEATHER], ensure_ascii=False), "messages": [  # tools as LLaMA-Factory writes them: JSON text
        {"role": "user", "content": "巴黎明天天气怎样？"},
        {"role": "assistant", "content": None, "reasoning_content": f"先查天气，有事打 {PHONE}。",
         "tool_calls": [dict(CALL, function=dict(CALL["function"], arguments=json.dumps({"city": "巴黎", "note": f"回电 {PHONE}"})))]},
        {"role": "tool", "tool_call_id": "c1", "content": "晴 20°C"},
        {"role": "assistant", "content": "<think>\n工具说晴。\n</think>\n\n巴黎明天晴。"}]}
    (raw := tmp_path/"raw").mkdir()
    (raw/"tools.jsonl").write_text(json.dumps(rec, ensure_ascii=False) + "\n")
    cfg = load_config({"run": {"root": str(tmp_path/"runs"), "name": "tools"}, "ingest": {"sources": [{"path": str(raw/"*")}]},
                       "clean": {"near_dedup": False}})
    run = Run.create(cfg)
    assert run_ingest(cfg, run)["kept"] == 1 and (c := run_clean(cfg, run))["rows_out"] == 1
    assert c["pii"]["phone"] == 2, c["pii"]  # the reasoning's and the call's
    (row,) = pq.read_table(run.dir/"clean"/"clean.parquet").to_pylist()
    chat = stored_chat(row["text"], json.loads(row["meta"]))
    assert chat["tools"] == [WEATHER]
    call, result, answer = chat["messages"][1:]
    redacted = dict(CALL, function=dict(CALL["function"], arguments={"city": "巴黎", "note": f"回电 {placeholder('phone')}"}))
    assert (call["content"], call["tool_calls"]) == ("", [redacted])  # arguments an object, whatever the record wrote
    assert call["reasoning_content"] == f"先查天气，有事打 {placeholder('phone')}。"
    assert (result["role"], result["tool_call_id"], result["content"]) == ("tool", "c1", "晴 20°C")
    assert (answer["reasoning_content"], answer["content"]) == ("工具说晴。", "巴黎明天晴。")
    tok = family_tokenizer("qwen3")
    r = tokenize_records({"text": [row["text"]], "meta": [row["meta"]]}, tok, named_template("qwen3", {"enable_thinking": True}),
                         TokenizeCfg(max_length=512))
    trained = tok.decode([t for t in r["labels"][0] if t != -100])
    assert '{"name": "get_weather", "arguments": {"city": "巴黎", "note": "回电 <PHONE>"}}' in trained, trained
    assert "巴黎明天晴。" in trained and PHONE not in trained, trained
    assert "晴 20°C" not in trained and "巴黎明天天气" not in trained, trained
