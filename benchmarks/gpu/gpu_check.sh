#!/usr/bin/env bash
# The GPU check, run from the repository root on the GPU machine by
# `./run gpu-check [--stages LETTERS] [--budget SECONDS]`. It builds the GPU
# targets for sm_90, then runs, most informative first:
#   a  the GPU unit tests (every CUDA kernel against the CPU backend) and the
#      NCCL communicator's (its multi-GPU cases run where the machine has 2+ GPUs)
#   b  compute-sanitizer memcheck and racecheck on small GEMM, quantize,
#      attention and sampling tests
#   c  the whole-policy tests (CUDA policy against the CPU policy, bitwise
#      rollout/training agreement on the GPU, a 20-step RL run)
#   d  the GEMM table (FP8 block-scaled vs BF16, squares and Llama-3.1-8B)
#   e  the RL step on a Llama-3.2-1B-shaped policy (BF16, FP8, FP8+KV+attn),
#      then PyTorch/transformers generating and training the same model
#   f  where that step's device time goes, kernel by kernel (profile_rl_step.py)
# and prints the targets table last (gpu_check_summary.py).
#
# A lent GPU is held for minutes, so no stage may take the others with it:
# each runs under `timeout` with a share of the budget, writes its log under
# $OUT (the device tool brings that folder back, at most 8 files: one log per
# stage and the summary; elsewhere build-gpu/check), and a failure is
# recorded and the next stage runs. The exit status is
# nonzero when any stage failed.
#
# That machine has nvcc, CMake, ninja and Python (PyTorch, transformers) but no
# package registry and no Debian -dev packages, so this script installs
# nothing. The one thing the build needs from outside, doctest, is copied by
# ./run into the ignored folder .deps/doctest. Debian's doctestTargets.cmake
# hard-codes its prefix (/usr), so the package is found through
# CMAKE_PREFIX_PATH and the header through an explicit -isystem.
set -uo pipefail

root=$(pwd)
build="$root/build-gpu"
doctest="$root/.deps/doctest"
here="$root/benchmarks/gpu"
stages="abcdef"
budget=450
sanitizer_tools="memcheck racecheck"
torch=1

usage() {
  echo "usage: ./run gpu-check [--stages LETTERS from abcdef] [--budget SECONDS] [--sanitizers memcheck,racecheck]" \
    "[--no-torch]" >&2
  exit 2
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitizers) [[ $# -ge 2 && "$2" =~ ^(memcheck|racecheck)(,(memcheck|racecheck))*$ ]] || usage
      sanitizer_tools="${2//,/ }"; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --stages) [[ $# -ge 2 && "$2" =~ ^[abcdef]+$ ]] || usage; stages="$2"; shift 2 ;;
    --budget) [[ $# -ge 2 && "$2" =~ ^[0-9]+$ ]] || usage; budget="$2"; shift 2 ;;
    *) usage ;;
  esac
done

out="${OUT:-$build/check}"
mkdir -p "$out" "$build"
rm -f "$out"/*.log "$out/summary.md"  # a summary of this run only
status_file="$build/stages.tsv"  # stage, result, seconds: read by the summary
: >"$status_file"
start=$SECONDS

die() { echo "gpu-check: FAILED: $*" >&2; exit 1; }

[[ -f "$root/CMakeLists.txt" && -d "$root/kernels/cuda" ]] || die "run this from the repository root"
[[ -f "$doctest/include/doctest/doctest.h" ]] || die "$doctest/include/doctest/doctest.h is missing (./run copies it)"
[[ -f "$doctest/lib/cmake/doctest/doctestConfig.cmake" ]] || die "$doctest/lib/cmake/doctest is missing (./run copies it)"
command -v nvcc >/dev/null || die "nvcc not found"
command -v ninja >/dev/null || die "ninja not found"
python=$(command -v python3) || die "python3 not found"

# Seconds left of the budget, less what the summary needs.
remaining() { echo $((budget - (SECONDS - start) - 10)); }

# run_stage NAME LOG MAX_SECONDS COMMAND...: runs COMMAND under timeout (the
# smaller of MAX_SECONDS and what is left), appends its output to LOG and
# records the result. Never exits the script.
run_stage() {
  local name="$1" log="$2" limit="$3" left rc began
  shift 3
  left=$(remaining)
  ((left < limit)) && limit=$left
  if ((limit < 15)); then
    printf '%s\tnot run (budget spent)\t0\n' "$name" >>"$status_file"
    echo "== $name: not run, the budget is spent" | tee -a "$log"
    return 0
  fi
  echo "== $name (at most ${limit} s)" | tee -a "$log"
  began=$SECONDS
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local result=passed
  ((rc == 124 || rc == 137)) && result="timed out"
  ((rc != 0 && rc != 124 && rc != 137)) && result="failed (exit $rc)"
  printf '%s\t%s\t%d\n' "$name" "$result" $((SECONDS - began)) >>"$status_file"
  [[ "$result" == passed ]]
}

has_stage() { [[ "$stages" == *"$1"* ]]; }

{
  echo "gpu-check at $(date -u +%FT%TZ), stages $stages, budget ${budget} s"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv,noheader || true
  nvcc --version | tail -2
} | tee "$out/build.log"

configure_and_build() {
  cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DFP8RL_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DFP8RL_BUILD_TESTS=ON \
    -DFP8RL_BUILD_BENCHMARKS=ON \
    -DPython3_EXECUTABLE="$python" \
    -DCMAKE_PREFIX_PATH="$doctest" \
    -DCMAKE_CXX_FLAGS="-isystem $doctest/include" &&
    cmake --build "$build" -j "$(nproc)" --target test_gpu_kernels test_gpu_nccl test_gpu_model fp8rl_bench_gpu_gemm fp8rl_bench_train
}
# Functions run under timeout in a child bash, which needs them and their variables exported.
export root build doctest python out
export -f configure_and_build
run_stage build "$out/build.log" 300 bash -c configure_and_build || {
  "$python" "$here/gpu_check_summary.py" "$out" "$status_file"
  exit 1
}

failed=0
# A GPU test that skips here means the device was not usable: a failure.
gpu_tests() {
  ctest --test-dir "$build" -R "$1" -j "$2" --output-on-failure --no-tests=error --timeout 240 \
    | tee "$out/ctest.tmp"
  local rc=${PIPESTATUS[0]}
  if grep -q "(Skipped)" "$out/ctest.tmp"; then echo "GPU tests were skipped: no usable CUDA device"; rc=1; fi
  rm -f "$out/ctest.tmp"
  return "$rc"
}
export -f gpu_tests

if has_stage a; then
  run_stage "a unit tests" "$out/a_unit_tests.log" 150 bash -c 'gpu_tests "$@"' _ '^gpu/test_gpu_(kernels|nccl)/' 8 || failed=1
fi

if has_stage b; then
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
  # Small cases of each kernel family; doctest filters are comma-separated globs.
  cases="cuda gemm_fp8: matches the CPU backend*,cuda quantize: bit-identical to the CPU backend on random*"
  cases+=",cuda attention: bit-identical to the CPU backend (prefill*"
  cases+=",cuda attention_backward: bit-identical to the CPU backend (prefill*"
  cases+=",cuda sample: the CPU backend's tokens*,cuda log_softmax_backward*"
  if [[ -z "$sanitizer" ]]; then
    echo "compute-sanitizer not found" | tee -a "$out/b_sanitizer.log"
    printf 'b sanitizer\tnot run (no compute-sanitizer)\t0\n' >>"$status_file"
  else
    # FP8RL_GPU_TEST_SANITIZER: the tests' smaller sizes that still take every path.
    for tool in $sanitizer_tools; do
      run_stage "b $tool" "$out/b_sanitizer.log" 120 env FP8RL_GPU_TEST_SANITIZER=1 "$sanitizer" --tool "$tool" \
        --error-exitcode 3 "$build/tests/gpu/test_gpu_kernels" "--test-case=$cases" || failed=1
    done
  fi
fi

if has_stage c; then
  run_stage "c policy tests" "$out/c_policy_tests.log" 200 bash -c 'gpu_tests "$@"' _ '^gpu/test_gpu_model/' 4 || failed=1
fi

if has_stage d; then
  run_stage "d gemm table" "$out/d_gemm.log" 90 "$build/benchmarks/gpu/fp8rl_bench_gpu_gemm" || failed=1
fi

if has_stage e; then
  # 32 prompts of 128 tokens, 128 new tokens each: the RL batch of a small
  # GRPO run; the throughput batch is 8 x 512. PyTorch trains the same batch.
  bench_args=(--backend cuda --model llama-3.2-1b --sequences 8 --length 512 --steps 3
    --rl-sequences 32 --rl-prompt 128 --rl-new-tokens 128 --rl-steps 2 --torch-python "$python")
  ((torch)) || bench_args+=(--no-torch)
  run_stage "e rl step (ours)" "$out/e_rl_step.log" 240 "$build/benchmarks/cpu/fp8rl_bench_train" \
    "${bench_args[@]}" || failed=1
  if ((torch)); then
    run_stage "e rl step (PyTorch)" "$out/e_rl_step.log" 180 "$python" "$here/torch_rl_step_baseline.py" \
      --model llama-3.2-1b --sequences 32 --prompt 128 --new-tokens 128 --steps 2 || failed=1
  fi
fi

if has_stage f; then
  for recipe in bf16 fp8_full; do
    run_stage "f profile $recipe" "$out/f_profile.log" 90 env FP8RL_LIBRARY="$build/capi/libfp8rl.so" \
      "$python" "$here/profile_rl_step.py" --recipe "$recipe" || failed=1
  done
fi

"$python" "$here/gpu_check_summary.py" "$out" "$status_file" | tee "$out/summary.md"
exit "$failed"
