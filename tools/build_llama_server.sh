#!/usr/bin/env bash
# Build llama.cpp's own `llama-server` from the pinned source tools/install.sh fetched (the llama-cpp-python sdist's
# vendor/llama.cpp), portable (-DGGML_NATIVE=OFF), statically linked, and cache the binary outside the repo keyed by
# version + flags + arch. Prints the binary's path on its last line. Idempotent: a cached binary is reused.
set -euo pipefail
LLAMA_CPP_VERSION=${LLAMA_CPP_VERSION:-0.3.36}
CACHE=${LLM_NB_CACHE:-$HOME/.cache/llm_nb}
src="$CACHE/llama/llama_cpp_python-$LLAMA_CPP_VERSION/vendor/llama.cpp"
[ -f "$src/CMakeLists.txt" ] || { echo "no llama.cpp source in $src: run bash tools/install.sh first" >&2; exit 1; }
flags="-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
key=$(echo "$flags $(uname -m)" | md5sum | cut -c1-8)
dest="$CACHE/bin/llama-server-$LLAMA_CPP_VERSION-$key"
if [ ! -x "$dest/llama-server" ]; then
  command -v cmake >/dev/null || python -m pip install -q cmake  # no system cmake: the PyPI one, into the active venv
  echo "building llama-server from llama.cpp $LLAMA_CPP_VERSION (portable, ~7 min on 2 cores, cached afterwards in $dest)" >&2
  build="$CACHE/build/llama-server-$key"
  rm -rf "$build" && mkdir -p "$build"
  cmake -S "$src" -B "$build" $flags >"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
  cmake --build "$build" --target llama-server -j "$(nproc)" >>"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
  mkdir -p "$dest.tmp" && cp "$build/bin/llama-server" "$dest.tmp/" && rm -rf "$dest" && mv "$dest.tmp" "$dest"
  rm -rf "$build"
fi
echo "$dest/llama-server"
