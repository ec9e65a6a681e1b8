#!/usr/bin/env bash
# Build llama.cpp once from the pinned source tools/install.sh fetched (the llama-cpp-python sdist's vendor/llama.cpp),
# portable (-DGGML_NATIVE=OFF), with shared libraries: one CMake tree gives `llama-server`, `llama-imatrix` and
# `llama-quantize` (the export stage's importance matrix: llama-cpp-python's quantize API cannot take one) and the
# libllama/libggml that tools/install.sh packs into the llama-cpp-python wheel. The binary and its libraries are cached together (RUNPATH
# $ORIGIN) outside the repo, keyed by version + flags + arch. Prints the binary's path on its last line. Idempotent.
set -euo pipefail
LLAMA_CPP_VERSION=${LLAMA_CPP_VERSION:-0.3.36}
CACHE=${LLM_NB_CACHE:-$HOME/.cache/llm_nb}
src="$CACHE/llama/llama_cpp_python-$LLAMA_CPP_VERSION/vendor/llama.cpp"
[ -f "$src/CMakeLists.txt" ] || { echo "no llama.cpp source in $src: run bash tools/install.sh first" >&2; exit 1; }
flags="-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=ON -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON"
flags="$flags -DCMAKE_INSTALL_RPATH=\$ORIGIN -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF"
flags="$flags -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
key=$(echo "$flags $(uname -m)" | md5sum | cut -c1-8)
dest="$CACHE/bin/llama-server-$LLAMA_CPP_VERSION-$key"
tools="llama-server llama-imatrix llama-quantize"
missing=0; for t in $tools; do [ -x "$dest/$t" ] || missing=1; done
if [ $missing = 1 ] || [ ! -f "$dest/libllama.so" ]; then
  command -v cmake >/dev/null || python -m pip install -q cmake  # no system cmake: the PyPI one, into the active venv
  echo "building llama.cpp $LLAMA_CPP_VERSION: $tools + shared libraries (portable, cached afterwards in $dest)" >&2
  t0=$(date +%s)
  build="$CACHE/build/llama-server-$key"
  rm -rf "$build" && mkdir -p "$build"
  # Ninja where there is one: it compiles a target's objects while the libraries it links are still being built
  gen=""; command -v ninja >/dev/null && gen="-G Ninja"
  cmake $gen -S "$src" -B "$build" $flags >"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
  # their dependencies include llama and ggml: no other target is needed
  cmake --build "$build" --target $tools -j "$(nproc)" >>"$build.log" 2>&1 || { tail -30 "$build.log" >&2; exit 1; }
  rm -rf "$dest.tmp" && mkdir -p "$dest.tmp" && for t in $tools; do cp "$build/bin/$t" "$dest.tmp/"; done && cp -P "$build"/bin/lib*.so* "$dest.tmp/"
  "$dest.tmp/llama-server" --version >>"$build.log" 2>&1 || { tail -5 "$build.log" >&2; exit 1; }  # libraries via $ORIGIN
  rm -rf "$dest" && mv "$dest.tmp" "$dest"
  rm -rf "$build"
  echo "llama.cpp built in $(( $(date +%s) - t0 ))s" >&2
fi
# llm_nb.serve takes the last llama-server-$VERSION-* in sorted order: keep only this build
for d in "$CACHE/bin/llama-server-$LLAMA_CPP_VERSION-"*; do [ "$d" = "$dest" ] || rm -rf "$d"; done
echo "$dest/llama-server"
