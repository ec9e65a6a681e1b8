"""Peer agreement: llm_nb's endpoint benchmark against `vllm bench serve`, same server, same prompts, same load.

Starts a server (llm_nb.serve) on a model (given, or built here: a random-weight Llama of `--hidden` width on a
SentencePiece vocabulary of the `--data` corpus; big enough that the server, not the client, sets the pace on 2
cores), writes the prompts once as JSONL (vLLM's `custom` dataset format, read by both tools), then runs the two
clients, each as its own command (`vllm bench serve`, `llm_nb bench`), in alternation for `--rounds` rounds.
Prints the side-by-side table of medians over the rounds, with the relative difference; exits 1 if TTFT, TPOT or
output throughput differ by more than 5%.

The load is sent at a finite rate by default (`--request-rate 0.5`, Poisson arrivals, `--burstiness 1`, `--seed 0`):
both clients draw the same arrival times for the same seed (llm_nb.load.arrival_times follows vLLM's get_request),
so the server sees the same load from each. With `--request-rate inf` (a closed loop: all requests at once,
`--max-concurrency` in flight) the load depends on the client itself: how soon each sends the next request after
one completes decides which requests a server batches together, and on llama-server the completions of a batch
come together, so that mean TTFT there differs between clients by more than the tolerance. That case is reported,
not a peer-agreement target; nor is a rate near the server's capacity, where queueing turns small changes in the
server's speed into large ones in latency (measured in the notebook 41a_load).
With `--engine fake` the stand-in server writes when each request came in, and the two clients' schedules are
compared as well (target: the same arrival offsets within 20 ms).

`--engine` picks the server:
- `llama_server` (default) or `llama_cpp_python`: llama.cpp on the model exported to Q8_0 GGUF by llm_nb.gguf;
- `vllm`: vLLM itself on the HF folder (its CPU build from tools/install.sh on a machine without CUDA);
- `fake`: llm_nb.testing's FakeOpenAI (fixed TTFT and inter-token gaps, no model noise): it checks the metric
  definitions alone, and builds only the tokenizer.

vLLM's client comes from the same install that serves vLLM (`llm_nb.serve.vllm_python()`: this Python when it
has vLLM, else the CPU build's venv), run as `python -m vllm.entrypoints.cli.main bench serve`.

The corpus (plain text, paragraphs separated by blank lines; its last 10% gives the held-out prompts) is
`--data PATH`, by default ../shared/data/tinyshakespeare.txt beside the repository when it is there.

Targets: TTFT, TPOT and output throughput each within 5% of vLLM's (one line each); with `--engine fake` at a finite
rate, the arrival offsets of the two clients' requests within 20 ms of each other. `--smoke` serves a model of
width 64, one layer, built on the corpus' first 100,000 characters, sends 2 prompts of 16 tokens for 8 tokens at
concurrency 2 at 20 requests/s, one round of both clients, and judges nothing (tools/bench_smoke.sh).

    bash tools/install.sh --vllm                 # once, for vLLM (server and client)
    python bench/peer_agreement.py [--data FILE.txt] [--engine vllm] [--model FILE.gguf --tokenizer HF_DIR] [--rounds 3]
                                   [--request-rate 0.5] [--burstiness 1] [--seed 0] [--chars N] [--smoke]
"""
import argparse, json, os, re, shutil, subprocess, sys, tempfile
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))
from _data import Targets, add_smoke_arg
from llm_nb.load import arrival_times, text_prompts
from llm_nb.load_metrics import bench_metrics
from llm_nb.config import ServeCfg, TinyCfg
from llm_nb.gguf import convert_to_gguf, quantize_gguf
from llm_nb.model import build_tiny_model, load_tokenizer
from llm_nb.env import cuda_available
from llm_nb.serve import Server, llama_server_cmd, llama_cpp_python_cmd, vllm_cmd, vllm_python, ENGINES
from llm_nb.env import free_port
from llm_nb.llama_cpp import llama_server_bin
from llm_nb.testing import FAKE_OPENAI_CMD

CORPUS = "tinyshakespeare.txt"
DEFAULT_DATA = Path(__file__).resolve().parents[2]/"shared"/"data"/CORPUS  # beside the repository, when present
TRAIN_SHARE = 0.9  # the corpus' first 90% builds the tokenizer, the rest gives the prompts
FAKE_TTFT, FAKE_ITL = 0.05, 0.02  # s: the fake server's time to first chunk and between chunks
TOLERANCE = 5.0  # %: the largest difference allowed on a checked metric
ARRIVAL_TOLERANCE_MS = 20.0  # the largest difference allowed between the two clients' arrival offsets (fake server)
STARTUP_TIMEOUT = 600  # s to wait for the server's health check (vLLM's CPU build compiles on its first start)
CTX_MARGIN = 16  # tokens of context beyond prompt + output
METRICS = [("mean TTFT (ms)", "mean_ttft_ms", ("ttft_ms", "mean")),
           ("median TTFT (ms)", "median_ttft_ms", ("ttft_ms", "median")),
           ("mean TPOT (ms)", "mean_tpot_ms", ("tpot_ms", "mean")),
           ("median TPOT (ms)", "median_tpot_ms", ("tpot_ms", "median")),
           ("mean ITL (ms)", "mean_itl_ms", ("itl_ms", "mean")),
           ("mean E2EL (ms)", "mean_e2el_ms", ("e2el_ms", "mean")),
           ("output throughput (tok/s)", "output_throughput", ("output_throughput",)),
           ("peak output throughput (tok/s)", "max_output_tokens_per_s", ("max_output_tokens_per_s",)),
           ("peak concurrent requests", "max_concurrent_requests", ("max_concurrent_requests",)),
           ("request throughput (req/s)", "request_throughput", ("request_throughput",))]
CHECKED = {"mean TTFT (ms)", "mean TPOT (ms)", "output throughput (tok/s)"}


def parse_args(argv=None):
    "The command line."
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=None,
                    help=f"the text corpus (paragraphs separated by blank lines); default: {DEFAULT_DATA} if present")
    ap.add_argument("--model", type=Path, help="GGUF file (vllm: HF folder) to serve (default: build one)")
    ap.add_argument("--tokenizer", type=Path, help="HF folder with the model's tokenizer (default: --model's folder)")
    ap.add_argument("--hidden", type=int, default=1024, help="width of the model built when --model is not given")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0, help="server threads (0 = all cores)")
    ap.add_argument("--engine", default="llama_server", choices=["llama_server", "llama_cpp_python", "vllm", "fake"],
                    help="fake: llm_nb.testing.FakeOpenAI, fixed TTFT and inter-token gaps (no model noise)")
    ap.add_argument("--vllm-python", type=Path, default=None,
                    help="the Python whose vLLM runs `vllm bench serve` (default: llm_nb.serve.vllm_python())")
    ap.add_argument("--num-prompts", type=int, default=32)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=64)
    ap.add_argument("--max-concurrency", type=int, default=4, help="0: no limit")
    ap.add_argument("--request-rate", type=float, default=0.5,
                    help="requests per second (Poisson at burstiness 1); inf: all at once, a closed loop")
    ap.add_argument("--burstiness", type=float, default=1.0, help="gamma shape of the gaps: 1 = Poisson, < 1 burstier")
    ap.add_argument("--seed", type=int, default=0, help="the arrivals' seed, the same for both clients")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--served-name", default="model")
    ap.add_argument("--no-pin", action="store_true",
                    help="don't pin the server to CPU 0 and the clients to the other CPUs")
    ap.add_argument("--chars", type=int, default=None, help="use the corpus' first N characters only (default: all)")
    add_smoke_arg(ap, "--chars 100000 --hidden 64 --layers 1 --num-prompts 2 --input-len 16 --output-len 8 "
                      "--max-concurrency 2 --parallel 2 --rounds 1 --request-rate 20")
    a = ap.parse_args(argv)
    if a.smoke:
        a.chars, a.hidden, a.layers, a.num_prompts, a.input_len, a.output_len = 100_000, 64, 1, 2, 16, 8
        a.max_concurrency, a.parallel, a.rounds, a.request_rate = 2, 2, 1, 20.0
    return a


def corpus(data:Path|None) -> Path:
    "The corpus to read: `--data`, else DEFAULT_DATA when it exists; otherwise one line saying what to pass, exit 2."
    path = data or DEFAULT_DATA
    if path.is_file(): return path
    why = f"{data} is not a file" if data else f"{DEFAULT_DATA} does not exist"
    print(f"peer_agreement: no corpus: pass --data PATH to {CORPUS} or another plain-text file ({why})",
          file=sys.stderr)
    raise SystemExit(2)


def paragraphs(text:str) -> tuple[list[str], list[str]]:
    "The corpus' paragraphs: (the first TRAIN_SHARE, for the tokenizer; the rest, for the prompts)."
    cut = int(len(text) * TRAIN_SHARE)
    split = lambda t: [p for p in t.split("\n\n") if p.strip()]
    return split(text[:cut]), split(text[cut:])


def build_model(a, train:list[str], tmp:Path):
    "A random-weight tiny Llama on a vocabulary of `train`: sets `a.tokenizer`, and `a.model` (Q8_0 GGUF or HF folder)."
    tiny = TinyCfg(vocab_size=2000, hidden_size=a.hidden, intermediate_size=max(a.hidden * 11 // 4 // 256 * 256, 2 * a.hidden),
                   num_layers=a.layers, num_heads=a.hidden // 64, max_position_embeddings=1024)
    a.tokenizer = build_tiny_model(train, tmp/"model", tiny)
    if a.engine == "fake": return  # the fake server needs no weights, only the prompts' tokenizer
    if a.engine == "vllm":
        a.model = a.tokenizer  # vLLM serves the HF folder itself
        return
    a.model = quantize_gguf(convert_to_gguf(a.tokenizer, tmp/"model-f16.gguf"), tmp/"model-q8_0.gguf", "q8_0")
    mib = a.model.stat().st_size / 2**20
    print(f"built {a.model}: {mib:.0f} MiB (hidden {a.hidden}, {a.layers} layers, random weights)")


def write_prompts(a, tok, held:list[str], path:Path) -> Path:
    "The prompts, once, as JSONL (vLLM's `custom` dataset format); exits if too few paragraphs are long enough."
    prompts = text_prompts(held, tok, a.num_prompts, a.input_len)
    if len(prompts) < a.num_prompts: sys.exit(f"only {len(prompts)} held-out paragraphs have {a.input_len} tokens")
    path.write_text("".join(json.dumps(dict(prompt=p["prompt"]), ensure_ascii=False) + "\n" for p in prompts))
    return path


NO_PROMPT_CACHE = {"llama_server": ["--no-cache-prompt"], "vllm": ["--no-enable-prefix-caching"]}

def server_cmd(a, port:int) -> list[str]:
    "The command that serves on `port`: llama-server, llama-cpp-python, vLLM or the fake server."
    if a.engine == "fake":
        return [sys.executable, *FAKE_OPENAI_CMD, str(port), "--ttft", str(FAKE_TTFT), "--itl", str(FAKE_ITL),
                "--arrivals", str(a.arrivals)]
    # no prompt cache: the same prompts are sent in every round, and cache hits would depend on the slot a request gets
    sc = ServeCfg(served_name=a.served_name, parallel=a.parallel, n_ctx=a.input_len + a.output_len + CTX_MARGIN,
                  threads=a.threads, extra_args=NO_PROMPT_CACHE.get(a.engine, []))
    if a.engine == "llama_server": return llama_server_cmd(llama_server_bin(), a.model, sc, port)
    if a.engine == "vllm": return vllm_cmd(a.model, sc, port, cpu=not cuda_available(), python=a.vllm_python)
    return llama_cpp_python_cmd(a.model, sc, port)


def pin(a, cmd:list[str]) -> list[str]:
    "Pin the server to the first CPU and the clients (`a.client_prefix`) to the others, unless --no-pin."
    # Pinning keeps the clients off the server's core: on 2 cores their run-to-run spread was ~±10% without it
    a.client_prefix = []
    cpus = sorted(os.sched_getaffinity(0))
    if a.no_pin or len(cpus) < 2: return cmd
    a.client_prefix = ["taskset", "-c", ",".join(map(str, cpus[1:]))]
    # vLLM's CPU build binds its compute threads itself: to the first CPU, keeping the last for its front end
    if a.engine == "vllm" and not cuda_available(): return cmd
    return ["taskset", "-c", str(cpus[0]), *cmd]


def run_vllm(a, base_url:str, prompts:Path, out:Path) -> dict:
    "One `vllm bench serve` run; its saved result JSON."
    cmd = [*a.client_prefix, str(a.vllm_python), "-m", "vllm.entrypoints.cli.main", "bench", "serve", "--backend", "openai", "--base-url", base_url,
           "--endpoint", "/v1/completions", "--model", a.served_name, "--tokenizer", str(a.tokenizer),
           "--dataset-name", "custom", "--dataset-path", str(prompts), "--custom-output-len", str(a.output_len),
           "--skip-chat-template", "--disable-shuffle", "--num-prompts", str(a.num_prompts),
           *(["--max-concurrency", str(a.max_concurrency)] if a.max_concurrency else []), "--request-rate", str(a.request_rate),
           "--burstiness", str(a.burstiness), "--seed", str(a.seed), "--ignore-eos", "--temperature", "0",
           "--num-warmups", "1", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
           "--save-result", "--save-detailed", "--result-dir", str(out.parent), "--result-filename", out.name,
           "--disable-tqdm"]
    offline = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    r = subprocess.run(cmd, capture_output=True, text=True, env=offline)
    if r.returncode != 0: sys.exit(f"vllm bench serve failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return json.loads(out.read_text())


def run_ours(a, base_url:str, prompts:Path, out:Path) -> dict:
    "One `llm_nb bench` run in its own process, like vLLM's client; its summary."
    sets = {"bench.dataset": prompts, "bench.num_prompts": a.num_prompts, "bench.output_len": a.output_len,
            "bench.max_concurrency": a.max_concurrency, "bench.ignore_eos": "true", "bench.warmup": 1,
            "bench.percentiles": "[50,90,99]", "bench.request_rate": a.request_rate, "bench.burstiness": a.burstiness,
            "bench.seed": a.seed}
    cmd = [*a.client_prefix, "llm_nb", "bench", base_url, "--tokenizer", str(a.tokenizer), "--model", a.served_name,
           "--out", str(out), *[arg for k, v in sets.items() for arg in ("--set", f"{k}={v}")]]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0: sys.exit(f"llm_nb bench failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}")
    return json.loads((out/"results.json").read_text())["summary"]


def on_vllm_basis(m:dict, theirs:dict, results:Path, tok) -> dict:
    "Add to our summary `m` the metrics on vLLM's token count (`as_vllm`) and which count that is (`basis`)."
    # vLLM reads `usage` only from a chunk without choices; llama-server sends it in the last chunk *with* choices, so
    # vLLM re-tokenizes the text instead. To compare timing definitions, also count llm_nb's tokens that way.
    reqs = [dict(r, output_tokens=None) for r in json.loads(results.read_text())["requests"]]
    count = lambda text: len(tok(text, add_special_tokens=False)["input_ids"])
    recounted = bench_metrics(reqs, m["duration_s"], count, (50, 90, 99))
    # compare on vLLM's token count: the server's usage when vLLM read it too (same total), else the re-count
    m["as_vllm"] = m if theirs["total_output_tokens"] == m["output_tokens"] else recounted
    m["basis"] = "usage" if m["as_vllm"] is m else "re-counted"
    return m


EVAL_TIME = re.compile(r"\|\s+eval time =\s+([\d.]+) ms /\s+(\d+) tokens")  # llama-server's timing of each request

def observed(a, client, *args):
    "Run `client(a, *args)`: its result; the fake server's arrival offsets (s) of its load, from the first; and llama-server's own decode time per token (ms) over its load."
    seen = len(a.arrivals.read_text().split()) if a.engine == "fake" else 0
    logged = a.server_log.stat().st_size if a.server_log.exists() else 0
    out = client(a, *args)
    offsets = server_ms = None
    if a.engine == "fake":
        times = np.array([float(x) for x in a.arrivals.read_text().split()[seen:]])[-a.num_prompts:]  # after the warm-ups
        offsets = times - times[0]
    if a.engine == "llama_server" and a.server_log.exists():
        with open(a.server_log, "rb") as f: f.seek(logged); new = f.read().decode("utf-8", "replace")
        timed = [(float(ms), int(n)) for ms, n in EVAL_TIME.findall(new)][-a.num_prompts:]
        server_ms = sum(ms for ms, _ in timed) / max(sum(n for _, n in timed), 1) if timed else None
    return out, offsets, server_ms


def run_rounds(a, srv, pfile:Path, tmp:Path, tok) -> tuple[list[dict], list[dict]]:
    "`a.rounds` alternating rounds of both clients: (our summaries, vLLM's results); arrival offsets in `a.offsets`."
    ours, theirs = [], []
    for i in range(a.rounds):
        if i % 2: m, mine, ours_ms = observed(a, run_ours, srv.base_url, pfile, tmp/f"llm_nb-{i}")  # who goes first alternates
        t, vllms, vllm_ms = observed(a, run_vllm, srv.base_url, pfile, tmp/f"vllm-{i}.json")
        theirs.append(t)
        if not i % 2: m, mine, ours_ms = observed(a, run_ours, srv.base_url, pfile, tmp/f"llm_nb-{i}")
        if mine is not None: a.offsets.append((vllms, mine))
        if ours_ms is not None and vllm_ms is not None: a.server_ms.append((vllm_ms, ours_ms))
        ours.append(on_vllm_basis(m, theirs[-1], tmp/f"llm_nb-{i}"/"results.json", tok))
        t = theirs[-1]
        print(f"round {i + 1}/{a.rounds}: vLLM {t['completed']} ok, {t['output_throughput']:.1f} tok/s; "
              f"llm_nb {m['completed']} ok, {m['output_throughput']:.1f} tok/s", flush=True)
    return ours, theirs


def report(a, ours:list[dict], theirs:list[dict], tmp:Path) -> dict:
    "Print the side-by-side table of medians and the token and failure counts; the checked metrics' differences (%), None where llm_nb did not measure one."
    get = lambda m, path: m[path[0]] if len(path) == 1 else (m[path[0]] or {}).get(path[1])  # None: not measured
    fake = f"FakeOpenAI (fixed TTFT {FAKE_TTFT * 1000:g} ms, {FAKE_ITL * 1000:g} ms between tokens)"
    served = fake if a.engine == "fake" else a.model.name
    pinned = ", pinned apart from the clients" if a.client_prefix else ""
    rate = ("all at once (closed loop)" if np.isinf(a.request_rate) else
            f"{a.request_rate:g} requests/s (burstiness {a.burstiness:g}, seed {a.seed})")
    print(f"\n{a.engine} serving {served} ({a.parallel} slots, {a.threads or 'all'} threads{pinned}); "
          f"{a.num_prompts} prompts of {a.input_len} tokens, {a.output_len} output tokens (ignore_eos), "
          f"concurrency {a.max_concurrency}, {rate}; medians of {a.rounds} alternating rounds\n")
    bases = ", ".join(sorted({m["basis"] for m in ours}))
    print(f"| metric | vllm bench serve | llm_nb, on vLLM's token count ({bases}) | difference "
          "| llm_nb, tokens from usage |")
    print("|---|--:|--:|--:|--:|")
    checked = {}
    for name, vk, ok in METRICS:
        v = float(np.median([t[vk] for t in theirs]))
        os_, us = [get(m["as_vllm"], ok) for m in ours], [get(m, ok) for m in ours]
        if None in os_ or None in us:  # llm_nb's client saw the tokens arrive together: TPOT/ITL not measured
            why = next((w for m in ours for x in (m, m["as_vllm"]) if (w := (x.get("tpot_itl") or {}).get("not_measured"))), "")
            if name in CHECKED: checked[name] = None
            print(f"| {name}{' *' if name in CHECKED else ''} | {v:.2f} | not measured | - | not measured |"
                  + (f" ({why})" if why else ""))
            continue
        o, u = float(np.median(os_)), float(np.median(us))
        d = 100 * (o - v) / v
        if name in CHECKED: checked[name] = d
        print(f"| {name}{' *' if name in CHECKED else ''} | {v:.2f} | {o:.2f} | {d:+.2f}% | {u:.2f} |")
    print(f"\noutput tokens per run: vLLM {[t['total_output_tokens'] for t in theirs]}, llm_nb on vLLM's basis "
          f"{[m['as_vllm']['output_tokens'] for m in ours]} ({[m['basis'] for m in ours]}), "
          f"llm_nb from usage {[m['output_tokens'] for m in ours]} "
          f"(the server generated {a.num_prompts} x {a.output_len} = {a.num_prompts * a.output_len})")
    print(f"failed requests per run: vLLM {[t['failed'] for t in theirs]}, llm_nb {[m['failed'] for m in ours]}")
    for i, t in enumerate(theirs):  # vLLM's errors, by request (llm_nb's are counted by kind in its summary)
        for e in {e.strip().splitlines()[-1] for e in t.get("errors", []) if e}: print(f"  vLLM round {i + 1}: {e}")
    for i, m in enumerate(ours):
        if m["errors"]: print(f"  llm_nb round {i + 1}: {m['errors']}")
    print(f"* = checked (target within {TOLERANCE:g}% of vLLM's)" + ("" if a.smoke else f"; files in {tmp}"))
    if a.server_ms:  # a difference the server's own clock shows too is the server's, not the clients' definitions
        print("llama-server's own decode time per token (its log), per round, during vLLM's load / llm_nb's: "
              + "; ".join(f"{v:.2f} / {o:.2f} ms" for v, o in a.server_ms))
    return checked


def report_arrivals(a) -> float|None:
    "Print how far apart the two clients' arrivals came, and from the schedule both draw; the largest gap (ms)."
    if not a.offsets or np.isinf(a.request_rate): return None
    at = arrival_times(a.num_prompts, a.request_rate, a.burstiness, a.seed)
    planned = at - at[0]
    worst = max(float(np.abs(v - o).max()) for v, o in a.offsets) * 1000
    late = max(float(np.abs(x - planned).max()) for pair in a.offsets for x in pair) * 1000
    print(f"arrivals at the server, offsets from each load's first request: vLLM's vs llm_nb's differ by at most "
          f"{worst:.1f} ms; each from llm_nb.load.arrival_times' schedule by at most {late:.1f} ms "
          f"({a.num_prompts} requests over {planned[-1]:.2f} s, {len(a.offsets)} rounds; later than the schedule where "
          f"--max-concurrency held a request back)")
    return worst


def main(argv=None):
    "Build or take the model, serve it, run both clients in rounds, print the comparison; exit 1 beyond TOLERANCE."
    a = parse_args(argv)
    text = corpus(a.data).read_text(encoding="utf-8")[:a.chars]
    a.vllm_python = a.vllm_python or vllm_python()
    if a.vllm_python is None: sys.exit("no vLLM here (server or client): run bash tools/install.sh --vllm")
    if a.model is not None and a.tokenizer is None:
        if not a.model.is_dir(): sys.exit("--model FILE.gguf needs --tokenizer (the HF folder of its tokenizer)")
        a.tokenizer = a.model
    tmp = Path(tempfile.mkdtemp(prefix="llm_nb_peer_"))
    a.arrivals, a.offsets, a.server_log, a.server_ms = tmp/"arrivals.txt", [], tmp/"server.log", []
    a.arrivals.touch()
    train, held = paragraphs(text)
    if a.model is None: build_model(a, train, tmp)
    tok = load_tokenizer(str(a.tokenizer))
    pfile = write_prompts(a, tok, held, tmp/"prompts.jsonl")
    port = free_port()
    cmd = pin(a, server_cmd(a, port))
    health = ENGINES.get(a.engine, dict(health="/v1/models", key_env="API_KEY"))
    env = {"VLLM_CPU_KVCACHE_SPACE": "1"} if a.engine == "vllm" else None
    server = Server(cmd, f"http://127.0.0.1:{port}", a.server_log, model_name=a.served_name, env=env, **health)
    with server.start(STARTUP_TIMEOUT) as srv:
        ours, theirs = run_rounds(a, srv, pfile, tmp, tok)
    checked, apart = report(a, ours, theirs, tmp), report_arrivals(a)
    t = Targets("peer_agreement", a.smoke)
    for name, d in checked.items():  # a checked figure llm_nb could not measure shows no agreement: a miss
        if d is None: t.check(f"llm_nb measured {name} (its tokens arrived apart)", False, "==", True)
        else: t.check(f"|llm_nb - vLLM| / vLLM, {name}, %", abs(d), "<=", TOLERANCE)
    if apart is not None: t.check("the two clients' arrival offsets apart (ms)", apart, "<=", ARRIVAL_TOLERANCE_MS)
    if a.smoke: shutil.rmtree(tmp, ignore_errors=True)  # nothing to look at later
    sys.exit(t.finish())


if __name__ == "__main__": main()
