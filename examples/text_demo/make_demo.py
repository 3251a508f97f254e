#!/usr/bin/env python3
"""Writes the text demo's files: a small Hugging Face model folder and JSONL data.

usage: make_demo.py OUT [--max-number N] [--vocab-size V] [--seed S] [--hidden H] [--layers L]

OUT/model/        tokenizer.json, tokenizer_config.json, generation_config.json
                  (a byte-level BPE trained here with Hugging Face `tokenizers`),
                  config.json and model.safetensors (a random Llama of that
                  vocabulary, written by the fp8rl Python binding)
OUT/train.jsonl   {"prompt": "What is twelve plus seven?", "answer": "19"}, ...
OUT/val.jsonl     held-out questions of the same kind

The questions add or subtract two numbers from 0 to N; each one is asked
twice, in words ("What is twelve plus seven?") and with digits ("What is 12
plus seven?"); answers are in digits. About one in five questions is held out
for validation, chosen by a hash of its text: most held-out questions have
their twin in the training rows, so validation measures whether the policy
carries what it learned across spellings (a tiny policy does not learn
arithmetic itself in a minute; held-out facts stay near chance).

The binding is taken from this repository (bindings/python), its library
from FP8RL_LIBRARY, else from build/capi/libfp8rl.so.
"""
import argparse
import hashlib
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))
_BUILT = os.path.join(HERE, "..", "..", "build", "capi", "libfp8rl.so")
if "FP8RL_LIBRARY" not in os.environ and os.path.exists(_BUILT):
    os.environ["FP8RL_LIBRARY"] = os.path.abspath(_BUILT)  # ./run's build folder

WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
         "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
BOS, EOS = "<|bos|>", "<|eos|>"


def mixed(a, b):
    """The operands with at least one in digits: "12 plus seven", "twelve plus 7" or "12 plus 7"."""
    return [(str(a), WORDS[b]), (WORDS[a], str(b)), (str(a), str(b))]


def questions(max_number, rng):
    """(prompt, answer): each sum and difference twice, in words and in a random mix of words and digits."""
    rows = []
    for a in range(max_number + 1):
        for b in range(max_number + 1):
            for op, value in (("plus", a + b), ("minus", a - b)):
                if value < 0:
                    continue
                for x, y in ((WORDS[a], WORDS[b]), rng.choice(mixed(a, b))):
                    rows.append((f"What is {x} {op} {y}?", str(value)))
    return rows


def held_out(prompt):
    return hashlib.sha256(prompt.encode()).digest()[0] % 5 == 0


def train_tokenizer(texts, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[BOS, EOS],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    # Llama 3's way: the post-processor puts BOS before every prompt.
    tokenizer.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, 0)])
    return tokenizer


def write_model(folder, tokenizer, hidden, layers, seed):
    import fp8rl
    vocab = tokenizer.get_vocab_size()
    config = fp8rl.ModelConfig(vocab_size=(vocab + 7) // 8 * 8, hidden_size=hidden, num_layers=layers,
                               num_attention_heads=4, num_key_value_heads=2, intermediate_size=2 * hidden,
                               max_position_embeddings=64, bos_token_id=0, eos_token_ids=(1,))
    with fp8rl.Policy.random(config, seed=seed) as policy:
        policy.save(folder, fp8rl.SaveDtype.F32)
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": BOS, "eos_token": EOS,
                   "add_bos_token": True, "model_max_length": 64}, f, indent=2)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 0, "eos_token_id": 1}, f, indent=2)


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for prompt, answer in rows:
            f.write(json.dumps({"prompt": prompt, "answer": answer}) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--max-number", type=int, default=9, help="operands from 0 to N (N <= 20)")
    parser.add_argument("--vocab-size", type=int, default=400)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 1 <= args.max_number < len(WORDS):
        sys.exit(f"--max-number must be in [1, {len(WORDS) - 1}]")
    rng = random.Random(args.seed)
    rows = questions(args.max_number, rng)
    train = [r for r in rows if not held_out(r[0])]
    val = [r for r in rows if held_out(r[0])]
    # The tokenizer's corpus: the questions, the answers and every number both ways.
    corpus = [p + " " + a for p, a in rows] + WORDS + [str(n) for n in range(2 * len(WORDS))]
    tokenizer = train_tokenizer(corpus * 4, args.vocab_size)
    os.makedirs(args.out, exist_ok=True)
    folder = os.path.join(args.out, "model")
    write_model(folder, tokenizer, args.hidden, args.layers, args.seed)
    write_jsonl(os.path.join(args.out, "train.jsonl"), train)
    write_jsonl(os.path.join(args.out, "val.jsonl"), val)
    print(f"{folder}: vocabulary {tokenizer.get_vocab_size()}; {len(train)} training and {len(val)} validation rows")
    print(f"e.g. {train[0][0]!r} -> {train[0][1]!r}: {tokenizer.encode(train[0][0]).tokens}")


if __name__ == "__main__":
    main()
