"""Peer agreement: llm_nb's endpoint benchmark against `vllm bench serve`, same server, same prompts, same load.

Starts a llama.cpp server (llm_nb.serve) on a GGUF file (given, or built here: a random-weight Llama of
`--hidden` width on a SentencePiece vocabulary of tiny Shakespeare, exported to Q8_0 by llm_nb.export; big
enough that the server, not the client, sets the pace on 2 cores), writes the prompts once as JSONL (vLLM's `custom`
dataset format, read by both tools), then runs the two clients, each as its own command (`vllm bench serve`, `llm_nb bench`), in alternation for `--rounds` rounds
(vLLM's from a separate lean venv made by bench/setup_vllm_client.sh). Prints the side-by-side table of
medians over the rounds, with the relative difference; exits 1 if TTFT, TPOT or output throughput differ by
more than 5%.

    bash bench/setup_vllm_client.sh             # once: ~/.cache/llm_nb/vllm-client
    python bench/peer_agreement.py [--model FILE.gguf --tokenizer HF_DIR] [--rounds 3]
"""
import argparse, json, os, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
from llm_nb.config import ServeCfg
from llm_nb.model import load_tokenizer
from llm_nb.serve import Server, free_port, llama_server_bin, llama_server_cmd, llama_cpp_python_cmd, ENGINES
from llm_nb.bench import bench_metrics, text_prompts
from llm_nb.config import TinyCfg
from llm_nb.model import build_tiny_model
from llm_nb.export import cache_dir, convert_to_gguf, quantize_gguf

TEXT = Path(__file__).resolve().parents[2]/"shared"/"data"/"tinyshakespeare.txt"
METRICS = [("mean TTFT (ms)", "mean_ttft_ms", ("ttft_ms", "mean")), ("median TTFT (ms)", "median_ttft_ms", ("ttft_ms", "median")),
           ("mean TPOT (ms)", "mean_tpot_ms", ("tpot_ms", "mean")), ("median TPOT (ms)", "median_tpot_ms", ("tpot_ms", "median")),
           ("mean ITL (ms)", "mean_itl_ms", ("itl_ms", "mean")), ("mean E2EL (ms)", "mean_e2el_ms", ("e2el_ms", "mean")),
           ("output throughput (tok/s)", "output_throughput", ("output_throughput",)),
           ("request throughput (req/s)", "request_throughput", ("request_throughput",))]
CHECKED = {"mean TTFT (ms)", "mean TPOT (ms)", "output throughput (tok/s)"}

def run_vllm(venv:Path, a, base_url:str, prompts:Path, out:Path) -> dict:
    "One `vllm bench serve` run; its saved result JSON."
    cmd = [*a.client_prefix, str(venv/"bin"/"vllm"), "bench", "serve", "--backend", "openai", "--base-url", base_url, "--endpoint", "/v1/completions",
           "--model", a.served_name, "--tokenizer", str(a.tokenizer), "--dataset-name", "custom", "--dataset-path", str(prompts),
           "--custom-output-len", str(a.output_len), "--skip-chat-template", "--disable-shuffle", "--num-prompts", str(a.num_prompts),
           "--max-concurrency", str(a.max_concurrency), "--request-rate", "inf", "--ignore-eos", "--temperature", "0",
           "--num-warmups", "1", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
           "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name, "--disable-tqdm"]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    if r.returncode != 0: sys.exit(f"vllm bench serve failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return json.loads(out.read_text())

def run_ours(a, base_url:str, prompts:Path, out:Path) -> dict:
    "One `llm_nb bench` run in its own process, like vLLM's client; its summary."
    cmd = [*a.client_prefix, "llm_nb", "bench", base_url, "--tokenizer", str(a.tokenizer), "--model", a.served_name, "--out", str(out),
           "--set", f"bench.dataset={prompts}", "--set", f"bench.num_prompts={a.num_prompts}", "--set", f"bench.output_len={a.output_len}",
           "--set", f"bench.max_concurrency={a.max_concurrency}", "--set", "bench.ignore_eos=true", "--set", "bench.warmup=1",
           "--set", "bench.percentiles=[50,90,99]"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0: sys.exit(f"llm_nb bench failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return json.loads((out/"results.json").read_text())["summary"]

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, help="GGUF file to serve (default: build one)")
    ap.add_argument("--tokenizer", type=Path, help="HF folder with the model's tokenizer (with --model)")
    ap.add_argument("--hidden", type=int, default=1024, help="width of the model built when --model is not given")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0, help="server threads (0 = all cores)")
    ap.add_argument("--engine", default="llama_server", choices=["llama_server", "llama_cpp_python", "fake"],
                    help="fake: bench/_fake_openai.py, a server with fixed TTFT and inter-token gaps (no model noise)")
    ap.add_argument("--vllm-venv", type=Path, default=cache_dir()/"vllm-client")
    ap.add_argument("--num-prompts", type=int, default=32); ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64); ap.add_argument("--max-concurrency", type=int, default=4)
    ap.add_argument("--parallel", type=int, default=4); ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--served-name", default="model")
    ap.add_argument("--no-pin", action="store_true", help="don't pin the server to CPU 0 and the clients to the other CPUs")
    a = ap.parse_args()
    if not (a.vllm_venv/"bin"/"vllm").exists(): sys.exit(f"no vLLM client in {a.vllm_venv}: run bash bench/setup_vllm_client.sh")
    tmp = Path(tempfile.mkdtemp(prefix="llm_nb_peer_"))
    text = TEXT.read_text(encoding="utf-8")
    if a.model is None:
        tiny = TinyCfg(vocab_size=2000, hidden_size=a.hidden, intermediate_size=a.hidden * 11 // 4 // 256 * 256,
                       num_layers=a.layers, num_heads=a.hidden // 64, max_position_embeddings=1024)
        a.tokenizer = build_tiny_model([p for p in text[:int(len(text) * 0.9)].split("\n\n") if p.strip()], tmp/"model", tiny)
        a.model = quantize_gguf(convert_to_gguf(a.tokenizer, tmp/"model-f16.gguf"), tmp/"model-q8_0.gguf", "q8_0")
        print(f"built {a.model}: {a.model.stat().st_size / 2**20:.0f} MiB (hidden {a.hidden}, {a.layers} layers, random weights)")
    elif a.tokenizer is None: sys.exit("--model needs --tokenizer (the HF folder of its tokenizer)")
    tok = load_tokenizer(str(a.tokenizer))
    held = [p for p in text[int(len(text) * 0.9):].split("\n\n") if p.strip()]
    prompts = text_prompts(held, tok, a.num_prompts, a.input_len)
    if len(prompts) < a.num_prompts: sys.exit(f"only {len(prompts)} held-out paragraphs have {a.input_len} tokens")
    pfile = tmp/"prompts.jsonl"
    pfile.write_text("".join(json.dumps(dict(prompt=p["prompt"]), ensure_ascii=False) + "\n" for p in prompts))
    # no prompt cache: the same prompts are sent in every round, and cache hits would depend on which slot a request lands in
    sc = ServeCfg(served_name=a.served_name, parallel=a.parallel, n_ctx=a.input_len + a.output_len + 16, threads=a.threads,
                  extra_args=["--no-cache-prompt"] if a.engine == "llama_server" else [])
    port = free_port()
    cmd = (llama_server_cmd(llama_server_bin(), a.model, sc, port) if a.engine == "llama_server"
           else llama_cpp_python_cmd(a.model, sc, port) if a.engine == "llama_cpp_python"
           else [sys.executable, str(Path(__file__).parent/"_fake_openai.py"), str(port)])
    # Pinning keeps the clients off the server's core: on 2 cores their run-to-run spread was ~±10% without it
    a.client_prefix = []
    cpus = sorted(os.sched_getaffinity(0))
    if not a.no_pin and len(cpus) >= 2:
        cmd = ["taskset", "-c", str(cpus[0]), *cmd]
        a.client_prefix = ["taskset", "-c", ",".join(map(str, cpus[1:]))]
    ours, theirs = [], []
    health = ENGINES.get(a.engine, dict(health="/v1/models", key_env="API_KEY"))
    with Server(cmd, f"http://127.0.0.1:{port}", tmp/"server.log", model_name=a.served_name, **health).start(120) as srv:
        for i in range(a.rounds):
            if i % 2: m = run_ours(a, srv.base_url, pfile, tmp/f"llm_nb-{i}")  # who goes first alternates too
            theirs.append(run_vllm(a.vllm_venv, a, srv.base_url, pfile, tmp/f"vllm-{i}.json"))
            if not i % 2: m = run_ours(a, srv.base_url, pfile, tmp/f"llm_nb-{i}")
            # vLLM reads `usage` only from a chunk without choices; llama-server sends it in the last chunk *with* choices, so
            # vLLM re-tokenizes the text instead. To compare timing definitions, also count llm_nb's tokens that way.
            reqs = [dict(r, output_tokens=None) for r in json.loads((tmp/f"llm_nb-{i}"/"results.json").read_text())["requests"]]
            count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])
            recounted = bench_metrics(reqs, m["duration_s"], count, (50, 90, 99))
            # compare on vLLM's token count: the server's usage when vLLM read it too (same total), else the re-count
            m["as_vllm"] = m if theirs[-1]["total_output_tokens"] == m["output_tokens"] else recounted
            m["basis"] = "usage" if m["as_vllm"] is m else "re-counted"
            ours.append(m)
            print(f"round {i + 1}/{a.rounds}: vLLM {theirs[-1]['completed']} ok, {theirs[-1]['output_throughput']:.1f} tok/s; "
                  f"llm_nb {m['completed']} ok, {m['output_throughput']:.1f} tok/s", flush=True)
    get = lambda m, path: m[path[0]] if len(path) == 1 else m[path[0]][path[1]]
    served = "bench/_fake_openai.py (fixed TTFT 50 ms, 20 ms between tokens)" if a.engine == "fake" else a.model.name
    print(f"\n{a.engine} serving {served} ({a.parallel} slots, {a.threads or 'all'} threads{', pinned apart from the clients' if a.client_prefix else ''}); {a.num_prompts} prompts of {a.input_len} tokens, "
          f"{a.output_len} output tokens (ignore_eos), concurrency {a.max_concurrency}; medians of {a.rounds} alternating rounds\n")
    print(f"| metric | vllm bench serve | llm_nb, on vLLM's token count ({', '.join(sorted({m['basis'] for m in ours}))}) | difference | llm_nb, tokens from usage |\n|---|--:|--:|--:|--:|")
    worst = 0.0
    for name, vk, ok in METRICS:
        v = float(np.median([t[vk] for t in theirs]))
        o = float(np.median([get(m["as_vllm"], ok) for m in ours]))
        u = float(np.median([get(m, ok) for m in ours]))
        d = 100 * (o - v) / v
        if name in CHECKED: worst = max(worst, abs(d))
        print(f"| {name}{' *' if name in CHECKED else ''} | {v:.2f} | {o:.2f} | {d:+.2f}% | {u:.2f} |")
    print(f"\noutput tokens per run: vLLM {[t['total_output_tokens'] for t in theirs]}, llm_nb on vLLM's basis "
          f"{[m['as_vllm']['output_tokens'] for m in ours]} ({[m['basis'] for m in ours]}), llm_nb from usage {[m['output_tokens'] for m in ours]} "
          f"(the server generated {a.num_prompts} x {a.output_len} = {a.num_prompts * a.output_len})")
    print(f"failed requests per run: vLLM {[t['failed'] for t in theirs]}, "
          f"llm_nb {[m['failed'] for m in ours]}")
    print(f"* = checked (target within 5%): worst {worst:.2f}% -> {'PASS' if worst <= 5 else 'FAIL'}; files in {tmp}")
    sys.exit(0 if worst <= 5 else 1)

if __name__ == "__main__": main()
