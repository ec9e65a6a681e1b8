#!/usr/bin/env bash
# A separate, lean venv holding vLLM's benchmark client (`vllm bench serve`) for bench/peer_agreement.py:
# CPU torch + the client's dependencies + vLLM itself with --no-deps (its pinned CUDA stack is ~9 GB and
# unneeded to send requests). Idempotent. Usage: bash bench/setup_vllm_client.sh [VENV] (default ~/.cache/llm_nb/vllm-client)
set -euo pipefail
venv=${1:-${LLM_NB_CACHE:-$HOME/.cache/llm_nb}/vllm-client}
reqs=${VLLM_CLIENT_REQS:-$(dirname "$0")/vllm-client-requirements.txt}
VLLM_VERSION=${VLLM_VERSION:-0.33.0}
if [ -x "$venv/bin/vllm" ] && "$venv/bin/python" -c "import vllm, pandas" 2>/dev/null; then echo "$venv"; exit 0; fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q -r "$reqs" pandas  # pandas: vLLM's `custom` (JSONL) dataset reader
"$venv/bin/python" -m pip install -q --no-deps "vllm==$VLLM_VERSION"
echo "$venv"
