#!/usr/bin/env bash
# A data-parallel MPI job in which one rank exits with status 3 before a
# collective (mpi_fault_rank.c) must end, with a failure, well within the
# time limit: the launcher ends the job rather than let the survivors wait.
# Usage: run_fault_test.sh <limit-seconds> <launcher command line...>
set -uo pipefail
limit="$1"
shift
start=$(date +%s)
timeout --kill-after=10 "$limit" "$@"
status=$?
elapsed=$(( $(date +%s) - start ))
echo "the job ended with status $status after ${elapsed}s (limit ${limit}s)"
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
  echo "FAIL: the job hung until the time limit"
  exit 1
fi
if [ "$status" -eq 0 ]; then
  echo "FAIL: the job succeeded although a rank exited with status 3"
  exit 1
fi
if [ "$elapsed" -gt $(( limit / 2 )) ]; then
  echo "FAIL: the job took more than half the limit to end"
  exit 1
fi
echo "ok: the launcher ended the job"
