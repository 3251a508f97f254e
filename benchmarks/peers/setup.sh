#!/usr/bin/env bash
# Prepares the peers of ./run bench peers, reaching only PyPI:
#   build/peers/venv              PyPI torch (CPU use), gguf, numpy (requirements.txt)
#   build/peers/src               llama-cpp-python's source distribution, unpacked
#   build/peers/llama.cpp-build   its vendored llama.cpp, built for this CPU: llama-bench
# Idempotent: each step is skipped when its result is already there, so a
# second call costs seconds. Usage: setup.sh [BUILD_DIR] (default: ./build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD="${1:-$ROOT/build}"
PEERS="$BUILD/peers"
VENV="$PEERS/venv"
REQUIREMENTS="$HERE/requirements.txt"
PYTHON="${PYTHON:-python3}"
JOBS="${JOBS:-2}"

log() { printf '\033[1m[peers]\033[0m %s\n' "$*" >&2; }

mkdir -p "$PEERS"
start=$SECONDS

# 1. The virtual environment. The stamp holds the requirements it was built
# from, so an edited requirements.txt reinstalls.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
if ! cmp -s "$REQUIREMENTS" "$VENV/.requirements"; then
  log "installing the pinned packages (torch's wheel and its CUDA libraries: a few GB)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  # --no-deps: exactly the pinned list, so none of the CUDA packages that
  # torch's metadata names but a CPU run never loads comes in. The
  # llama-cpp-python line is built from source below, not installed.
  grep -v '^llama-cpp-python' "$REQUIREMENTS" >"$PEERS/requirements-pip.txt"
  "$VENV/bin/python" -m pip install -q --no-deps -r "$PEERS/requirements-pip.txt"
  "$VENV/bin/python" -c "import torch, gguf, numpy"
  cp "$REQUIREMENTS" "$VENV/.requirements"
fi

# 2. llama-cpp-python's source distribution (its version pinned in requirements.txt).
version="$(sed -n 's/^llama-cpp-python==//p' "$REQUIREMENTS")"
sdist_dir="$PEERS/sdist"
source_dir="$PEERS/src/llama_cpp_python-$version"
if [ ! -d "$source_dir" ]; then
  if ! ls "$sdist_dir"/llama_cpp_python-"$version".tar.gz >/dev/null 2>&1; then
    log "downloading llama-cpp-python $version (source distribution)"
    "$VENV/bin/python" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$sdist_dir"
  fi
  mkdir -p "$PEERS/src"
  tar -xzf "$sdist_dir/llama_cpp_python-$version.tar.gz" -C "$PEERS/src"
fi

# 3. The vendored llama.cpp: static, Release, tuned for this CPU (GGML_NATIVE:
# -march=native, so AVX-512 BF16/VNNI where the CPU has them), only what
# llama-bench needs. cmake --build is itself incremental.
llama_build="$PEERS/llama.cpp-build"
if [ ! -f "$llama_build/CMakeCache.txt" ]; then
  log "configuring llama.cpp ($source_dir/vendor/llama.cpp)"
  mkdir -p "$llama_build"
  cmake -S "$source_dir/vendor/llama.cpp" -B "$llama_build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
    >"$llama_build/configure.log" 2>&1 || { cat "$llama_build/configure.log" >&2; exit 1; }
fi
if [ ! -x "$llama_build/bin/llama-bench" ]; then log "building llama-bench ($JOBS jobs)"; fi
cmake --build "$llama_build" -j "$JOBS" --target llama-bench >"$llama_build/build.log" 2>&1 ||
  { tail -50 "$llama_build/build.log" >&2; exit 1; }

log "ready in $((SECONDS - start)) s: $VENV, $llama_build/bin/llama-bench"
