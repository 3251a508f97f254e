#!/bin/sh
# The text demo: a Hugging Face model folder (a byte-level BPE trained here
# and a random policy of its vocabulary) learns arithmetic questions in words,
# by SFT then GRPO with the number reward. About a minute on two cores.
#
# usage: examples/text_demo/run_demo.sh [BUILD_DIR [OUT_DIR]]   (from the repository root)
set -eu
BUILD=${1:-build}
OUT=${2:-/tmp/fp8rl_text_demo}
FP8RL="$BUILD/tools/fp8rl/fp8rl"
export FP8RL_LIBRARY="${FP8RL_LIBRARY:-$(pwd)/$BUILD/capi/libfp8rl.so}"
PYTHON=${PYTHON:-python3}   # needs numpy and the `tokenizers` package

rm -rf "$OUT/run"
"$PYTHON" examples/text_demo/make_demo.py "$OUT"
echo "== before training"
"$FP8RL" eval --init-from "$OUT/model" --data "$OUT/val.jsonl" --reward number
echo "== training"
"$FP8RL" train --init-from "$OUT/model" --data "$OUT/train.jsonl" --val "$OUT/val.jsonl" --reward number \
  --sft-steps 250 --sft-batch 32 --sft-lr 3e-3 --steps 300 --prompts-per-step 16 --group-size 8 --lr 3e-4 \
  --eval-every 25 --out "$OUT/run"
echo "== after training (the trained folder, tokenizer included)"
"$FP8RL" eval --init-from "$OUT/run/model" --data "$OUT/val.jsonl" --reward number --show 3
"$FP8RL" generate --init-from "$OUT/run/model" --prompt "What is seven plus 2?" --temperature 0
