#!/bin/sh
# Runs cargo in the Rust workspace for CTest, or skips (77) without cargo.
# Usage: cargo.sh CARGO WORKSPACE_DIR ARGS...; the environment (FP8RL_LIB_DIR,
# CARGO_TARGET_DIR, ...) comes from the test's ENVIRONMENT property.
set -eu
cargo=$1
workspace=$2
shift 2
if [ ! -x "$cargo" ]; then
  echo "cargo not found: the Rust bindings are not tested (install Rust, e.g. with rustup)"
  exit 77
fi
cd "$workspace"
exec "$cargo" "$@"
