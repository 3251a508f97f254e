#!/usr/bin/env bash
# The GPU check, run from the repository root on the GPU machine by
# `./run gpu-check`: configure and build with the CUDA backend for sm_90, run
# the GPU tests, then the GPU GEMM benchmark and the RL-step benchmark on a
# Llama-3.2-1B-shaped policy (BF16, FP8, FP8 + KV + attention; time breakdown,
# recalibration share, mismatch) against PyTorch training the same model on
# the GPU, whose tables are printed last.
#
# That machine has nvcc, CMake, ninja and Python but no package registry and
# no Debian -dev packages, so this script installs nothing. The one thing the
# build needs from outside, doctest, is copied by ./run into the ignored
# folder .deps/doctest (header in include/, CMake package in lib/cmake/doctest/).
# Debian's doctestTargets.cmake hard-codes its prefix (/usr) rather than
# deriving it from its own location, so the package is found through
# CMAKE_PREFIX_PATH and the header through an explicit -isystem.
set -euo pipefail

die() { echo "gpu-check: FAILED: $*" >&2; exit 1; }

root=$(pwd)
build="$root/build-gpu"
doctest="$root/.deps/doctest"

[[ -f "$root/CMakeLists.txt" && -d "$root/kernels/cuda" ]] || die "run this from the repository root"
[[ -f "$doctest/include/doctest/doctest.h" ]] || die "$doctest/include/doctest/doctest.h is missing (./run copies it)"
[[ -f "$doctest/lib/cmake/doctest/doctestConfig.cmake" ]] || die "$doctest/lib/cmake/doctest is missing (./run copies it)"
command -v nvcc >/dev/null || die "nvcc not found"
command -v ninja >/dev/null || die "ninja not found"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || die "nvidia-smi sees no GPU"
fi

echo "== configure ($build)"
cmake -S "$root" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DFP8RL_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DFP8RL_BUILD_TESTS=ON \
  -DFP8RL_BUILD_BENCHMARKS=ON \
  -DCMAKE_PREFIX_PATH="$doctest" \
  -DCMAKE_CXX_FLAGS="-isystem $doctest/include" \
  || die "configure"

echo "== build"
cmake --build "$build" -j "$(nproc)" || die "build"

echo "== GPU tests"
log="$build/gpu-tests.log"
ctest --test-dir "$build" -L gpu --output-on-failure --no-tests=error --timeout 300 2>&1 | tee "$log" || die "GPU tests"
# A skipped GPU test here means the device was not usable: that is a failure.
if grep -q "(Skipped)" "$log"; then die "GPU tests were skipped: no usable CUDA device"; fi

echo "== GPU benchmark"
timeout 300 "$build/benchmarks/gpu/fp8rl_bench_gpu_gemm" || die "GPU benchmark"

echo "== RL-step benchmark (Llama-3.2-1B shapes, CUDA backend; PyTorch on the same GPU)"
timeout 300 "$build/benchmarks/cpu/fp8rl_bench_train" --backend cuda --model llama-3.2-1b \
  --sequences 8 --length 512 --steps 3 --rl-sequences 32 --rl-prompt 128 --rl-new-tokens 128 --rl-steps 2 \
  --torch-python "$(command -v python3)" || die "RL-step benchmark"
