"""Conversations from ingest to a trained adapter: ingest -> clean -> the tiny model -> tokenize (the chat template,
loss on the answers; on this CPU one conversation per example, batched by length) -> a few training steps. Checks
the loss mask token by token (no system or user token trained, every answer's <|im_end|> trained), that a
conversation too long for max_length is cut after a whole answer, that training batches group by length, and that
the train stage's model scores a packed row (chat_batches: packed) as its samples alone."""
import json, math
import pytest, torch
from datasets import load_from_disk
from llm_nb.config import demo_config
from llm_nb.run import Run
from llm_nb.pipeline import STAGES
from llm_nb.tokenize import collate_samples, pack_chats
from llm_nb.model import load_tokenizer

WORDS = ["头痛", "发热", "咳嗽", "耳机", "手机", "电池", "快递", "屏幕", "质量", "价格"]

def conversation(i:int) -> dict:
    "A record of OpenAI messages: sometimes a system prompt, one to three exchanges, a long one now and then."
    w = lambda k: WORDS[(i * 7 + k) % len(WORDS)]
    msgs = [{"role": "system", "content": "简洁回答"}] if i % 3 == 0 else []
    for k in range(1 + i % 3):
        msgs += [{"role": "user", "content": f"第{i}个问题：{w(k)}怎么样？"},
                 {"role": "assistant", "content": f"{w(k + 1)}很好。" * (12 if i % 10 == 9 and k else 1)}]
    return {"messages": msgs}

@pytest.fixture(scope="module")
def chat_run(tmp_path_factory):
    "A run of 120 conversations up to and including tokenize (max_length 64: the long ones get cut)."
    tmp = tmp_path_factory.mktemp("chat")
    (tmp/"chat.jsonl").write_text("\n".join(json.dumps(conversation(i), ensure_ascii=False) for i in range(120)) + "\n")
    cfg = demo_config(**{"run.root": str(tmp/"runs"), "ingest.sources": [{"path": str(tmp/"chat.jsonl")}],
                         "clean.near_dedup": False, "tokenize.max_length": 64, "train.max_steps": 3,
                         "train.batch_size": 4, "model.tiny.vocab_size": 400})
    run = Run.create(cfg)
    for s in ("ingest", "clean", "model", "tokenize"): STAGES[s](cfg, run)
    return run

def _samples(ex):
    "(ids, labels) of every sample of a packed example."
    start = 0
    for n in ex["seq_lengths"]:
        yield ex["input_ids"][start:start + n], ex["labels"][start:start + n]
        start += n

def expected_mask(tok, ids:list) -> list:
    "Which tokens should be trained, read from the tokens alone: an assistant turn's content and its <|im_end|>."
    start, end = tok.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"])
    want, role, head = [], "between turns", None
    for i, t in enumerate(ids):
        if t == start: role, head = None, i  # a header: the role, then a newline
        elif role is None and tok.decode(ids[head + 1:i + 1]).endswith("\n"):
            role = tok.decode(ids[head + 1:i + 1]).rstrip("\n")
            want.append(False)
            continue
        want.append(role == "assistant")
        if t == end: role = "between turns"
    return want

def test_mask_trains_the_answers_and_their_end(chat_run):
    tok = load_tokenizer(str(chat_run.dir/"tokenize"/"tokenizer"))
    end = tok.convert_tokens_to_ids("<|im_end|>")
    samples = answers = 0
    for ex in load_from_disk(str(chat_run.dir/"tokenize"/"train")):
        for ids, labels in _samples(ex):
            want = expected_mask(tok, ids)
            assert [l != -100 for l in labels] == want, tok.decode(ids)
            assert all(l == t for l, t in zip(labels, ids) if l != -100)
            samples += 1
            answers += tok.decode(ids).count("<|im_start|>assistant\n")
            assert sum(t == end and w for t, w in zip(ids, want)) == tok.decode(ids).count("<|im_start|>assistant\n")
    assert samples >= 90 and answers > samples, (samples, answers)

def test_long_conversations_cut_after_an_answer(chat_run):
    c = chat_run.manifest()["stages"]["tokenize"]["counts"]
    talk = c["conversations"]
    assert talk["records"] == 120 and talk["truncated"] >= 5 and talk["kept"] + talk["truncated"] == 120, talk
    assert 0 < talk["trained_tokens"] < talk["tokens"] / 2, talk
    assert talk["batches"] == "grouped" and "padding_share" not in c["train"], c["train"]  # auto on a CPU: SDPA
    tok = load_tokenizer(str(chat_run.dir/"tokenize"/"tokenizer"))
    for ex in load_from_disk(str(chat_run.dir/"tokenize"/"train")):
        assert len(ex["input_ids"]) <= 64
        for ids, labels in _samples(ex):
            last = max(i for i, l in enumerate(labels) if l != -100)  # ends with a whole answer (and ChatML's newline)
            assert ids[last] == tok.convert_tokens_to_ids("<|im_end|>") and last == len(ids) - 2, tok.decode(ids)

def nonpad_share(batches, pad:int) -> float:
    "Share of the batches' token slots that are not padding (the tiny tokenizer's pad token is in no text)."
    return sum(int((b["input_ids"] != pad).sum()) for b in batches) / sum(b["input_ids"].numel() for b in batches)

def test_train_batches_by_length_and_packed_rows_score_samples_alone(chat_run):
    from transformers.trainer_pt_utils import LengthGroupedSampler
    from llm_nb.train import build_trainer, save_adapter
    trainer = build_trainer(chat_run.cfg, chat_run, chat_run.dir/"train")
    ds = load_from_disk(str(chat_run.dir/"tokenize"/"train"))
    assert all(len(s) == 1 for s in ds["seq_lengths"]) and ds["length"] == [len(x) for x in ds["input_ids"]]
    assert isinstance(trainer._get_train_sampler(), LengthGroupedSampler)
    pad = trainer.processing_class.pad_token_id
    grouped = list(trainer.get_train_dataloader())
    stored = [collate_samples(ds.select(range(i, min(i + 4, len(ds)))), pad) for i in range(0, len(ds), 4)]
    share = nonpad_share(grouped, pad), nonpad_share(stored, pad)  # batches of 4 (train.batch_size), in stored order
    assert sum(len(b["input_ids"]) for b in grouped) == len(ds) and 1 - share[0] < (1 - share[1]) / 2, share
    model = trainer.model.eval()
    packed = pack_chats(ds, chat_run.cfg.tokenize, "test")
    row = next(ex for ex in packed if len(ex["seq_lengths"]) >= 2)
    batch = trainer.data_collator([row])
    with torch.no_grad():
        logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits[0]
        start = 0
        for n in row["seq_lengths"]:
            alone = model(input_ids=torch.tensor([row["input_ids"][start:start + n]])).logits[0]
            assert (logits[start:start + n] - alone).abs().max() <= 1e-4
            start += n
    res = trainer.train()
    assert math.isfinite(res.training_loss) and res.global_step == 3
    save_adapter(trainer, chat_run.dir/"train"/"adapter")

def test_merged_model_stops_at_the_end_of_an_answer(chat_run):
    "The adapter carries the training template; the merged model gets <|im_end|> as an EOS even where the base lacked it."
    from transformers import GenerationConfig
    from llm_nb.doctor import check_eos
    from llm_nb.export import merge_adapter
    from llm_nb.artifacts import base_model_path
    adapter = chat_run.dir/"train"/"adapter"
    assert (adapter/"tokenizer_config.json").exists(), "train saves the tokenizer (and its template) with the adapter"
    assert check_eos(chat_run.cfg).status == "ok", check_eos(chat_run.cfg)
    base = base_model_path(chat_run)
    gen = GenerationConfig.from_pretrained(base)
    gen.eos_token_id = 2  # a base that knows only </s>, as many do
    gen.save_pretrained(base)
    v = check_eos(chat_run.cfg)
    assert v.status == "fail" and "is not among the eos_token_id [2]" in v.found, v
    merged = merge_adapter(base, adapter, chat_run.dir/"export"/"merged", chat_run.cfg.model)
    assert GenerationConfig.from_pretrained(merged).eos_token_id == [2, 5]
    assert load_tokenizer(str(merged)).chat_template == load_tokenizer(str(chat_run.dir/"tokenize"/"tokenizer")).chat_template
    assert check_eos(chat_run.cfg).status == "ok", check_eos(chat_run.cfg)

def test_gguf_tokenizes_a_conversation_as_training_did(chat_run, tmp_path):
    "llama.cpp reads the merged model's GGUF vocabulary and gets the training ids of a rendered conversation."
    from llama_cpp import Llama
    from llm_nb.gguf import convert_to_gguf
    merged = chat_run.dir/"export"/"merged"
    tok = load_tokenizer(str(merged))
    chat = [{"role": "system", "content": "简洁回答"}, {"role": "user", "content": "手机怎么样？ The phone"},
            {"role": "assistant", "content": "很好。"}]
    ids = tok.apply_chat_template(chat, tokenize=True, return_dict=True)["input_ids"]
    llm = Llama(str(convert_to_gguf(merged, tmp_path/"m.gguf")), vocab_only=True, verbose=False)
    assert llm.tokenize(tok.apply_chat_template(chat, tokenize=False).encode(), add_bos=False, special=True) == ids
