#!/usr/bin/env bash
# GPU acceptance in one script: on a machine with a CUDA GPU, install the CUDA extras and run what no CPU can check,
# then write one report (JSON: each step's command, exit status and seconds, and its output's tail).
#   bash tools/gpu_check.sh [--out DIR]             # run every step (needs `nvidia-smi -L` to list a GPU)
#   bash tools/gpu_check.sh --dry-run [--out DIR]   # say exactly what would run, run nothing (CI runs this)
# The steps, ~10 minutes on one H200 after the install (an estimate, not yet measured: no session has had a GPU so far):
#   1. the GPU and driver (nvidia-smi);
#   2. install: a venv with pip's default (CUDA) torch, llm_nb with llama.cpp and the [serve] extra (vLLM's CUDA
#      build), and bitsandbytes (tools/install.sh --vllm does the first three where nvidia-smi finds a GPU);
#   3. every `#| gpu` cell: nbdev_test --flags gpu on the notebooks that have them (01_env, 20_model, 41_serve,
#      42_load_test), which run their other cells too; LLM_NB_GPU=1 makes a cell that finds no GPU fail, not skip;
#   4. the demo with QLoRA (4-bit base, bitsandbytes) and bf16 training, through evaluate;
#   5. CUDA-event timing (llm_nb.load_test.timed_ms with cuda=True, the torch.cuda.Event path) against perf_counter
#      around the same synchronized GPU work: within 10%;
#   6. the exporter's GPU families read from real NVML: every DCGM metric has a sample per GPU, memory in use > 0;
#   7. vLLM's CUDA build serving the demo's merged model, benchmarked as the serve_bench stage does;
#   8. GRPO with its completions sampled by vLLM in the training process (preference.generation=vllm, TRL's colocate
#      mode) on the demo's SFT adapter, through evaluate.
set -uo pipefail
cd "$(dirname "$0")/.."
dry=0
out=runs/gpu-check
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --out) out=$2; shift ;;
    *) echo "usage: bash tools/gpu_check.sh [--dry-run] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
venv=${GPU_CHECK_VENV:-.venv-gpu}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline
runs="$out/runs"
demo="llm_nb demo --root $runs --set train.max_steps=20"
cuda_events='import time, torch
from llm_nb.load_test import timed_ms
x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
work = lambda: [x @ x for _ in range(50)]
work(); torch.cuda.synchronize()
pairs = []
for _ in range(5):
    t0 = time.perf_counter(); ev = timed_ms(work, cuda=True); wall = (time.perf_counter() - t0) * 1e3
    pairs.append((ev, wall))
print("cuda events vs perf_counter (ms):", [(round(e, 2), round(w, 2)) for e, w in pairs])
assert all(abs(e - w) / w < 0.10 for e, w in pairs), pairs'
nvml='from llm_nb.env import nvml_devices
from llm_nb.monitor import DCGM_METRICS, gpu_families
nv, handles, why = nvml_devices()
assert nv is not None and handles, f"NVML: {why}"
fams = {f.name: [s.value for s in f.samples] for f in gpu_families(nv, handles)}
print(fams)
assert set(DCGM_METRICS) <= set(fams) and all(len(v) == len(handles) for v in fams.values()), fams
assert all(v > 0 for v in fams["DCGM_FI_DEV_FB_USED"]), fams'
steps=(
  "gpu|nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv"
  "install|python3 -m venv $venv && . $venv/bin/activate && bash tools/install.sh --vllm && python -m pip install -q bitsandbytes"
  "gpu_cells|. $venv/bin/activate && LLM_NB_GPU=1 nbdev_test --flags gpu --do_print --timing --file_re '^(01_env|20_model|41_serve|42_load_test)'"
  "qlora_bf16|. $venv/bin/activate && $demo --name qlora --set model.quantization=4bit --set train.precision=bf16 --set model.dtype=bfloat16 --stages synth,ingest,clean,model,tokenize,train,evaluate --force"
  "cuda_events|. $venv/bin/activate && python -c '$cuda_events'"
  "nvml_exporter|. $venv/bin/activate && python -c '$nvml'"
  "vllm_cuda|. $venv/bin/activate && $demo --name vllm --set serve.engine=vllm --set serve.model=merged --set serve.compare=[] --force"
  "grpo_vllm|. $venv/bin/activate && $demo --name grpo-vllm --set preference.method=grpo --set preference.generation=vllm --set preference.learning_rate=2e-4 --set preference.batch_size=16 --set train.precision=bf16 --set model.dtype=bfloat16 --stages synth,ingest,clean,model,tokenize,train,preference,evaluate --force"
)
if [ "$dry" = 1 ]; then
  echo "gpu_check --dry-run: ${#steps[@]} steps, report to $out/report.json"
  for s in "${steps[@]}"; do printf '\n== %s\n%s\n' "${s%%|*}" "${s#*|}"; done
  exit 0
fi
if ! nvidia-smi -L >/dev/null 2>&1; then echo "gpu_check: no GPU here (nvidia-smi -L lists none); --dry-run shows the steps" >&2; exit 2; fi
mkdir -p "$out"
report="$out/report.json"
echo "[" > "$report"
failed=0
first=1
for s in "${steps[@]}"; do
  name=${s%%|*}; cmd=${s#*|}; log="$out/$name.log"
  echo "== $name"
  t0=$(date +%s)
  bash -c "$cmd" > "$log" 2>&1; rc=$?
  secs=$(( $(date +%s) - t0 ))
  [ "$rc" -eq 0 ] || failed=$((failed + 1))
  echo "   exit $rc in ${secs}s (log: $log)"
  [ "$first" = 1 ] || echo "," >> "$report"; first=0
  python3 -c 'import json, sys; print(json.dumps(dict(step=sys.argv[1], command=sys.argv[2], exit=int(sys.argv[3]),
    seconds=int(sys.argv[4]), tail=open(sys.argv[5], errors="replace").read()[-3000:]), indent=1))' \
    "$name" "$cmd" "$rc" "$secs" "$log" >> "$report"
done
echo "]" >> "$report"
echo "gpu_check: $(( ${#steps[@]} - failed )) passed, $failed failed; report: $report"
[ "$failed" -eq 0 ]
