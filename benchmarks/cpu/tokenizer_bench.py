#!/usr/bin/env python3
"""Encode throughput, fp8rl's tokenizer against Hugging Face `tokenizers`.

Trains a Llama-3-style byte-level BPE tokenizer (vocabulary 32,000) with
`tokenizers` on a generated multilingual corpus (tests/text/tokenizer_oracle.py's
generator), writes it as a model folder, and encodes the same documents with
both, single-threaded (RAYON_NUM_THREADS=1 for `tokenizers`, whose
encode_batch then runs on one thread; fp8rl_bench_tokenizer is one thread).
Both encode without special tokens; both warm up once; medians of --repeats.
`tokenizers` pays its Python wrapping of the batch and the offsets it always
computes: that is what a Python user of it pays too.

    tokenizer_bench.py FP8RL_BENCH_TOKENIZER [--megabytes M] [--repeats N]
"""

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import json

os.environ["RAYON_NUM_THREADS"] = "1"
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "text"))
import tokenizer_oracle as oracle  # noqa: E402  (exits 77 without tokenizers)


def corpus(megabytes, seed):
    rng = random.Random(seed)
    documents, size = [], 0
    while size < megabytes * 1_000_000:
        document = " ".join(oracle.sentence(rng, []) for _ in range(8))
        documents.append(document)
        size += len(document.encode("utf-8"))
    return documents


def hf_rate(tokenizer, documents, repeats):
    times, tokens = [], 0
    for r in range(repeats + 1):
        start = time.perf_counter()
        encodings = tokenizer.encode_batch(documents, add_special_tokens=False)
        if r > 0:
            times.append(time.perf_counter() - start)
        tokens = sum(len(e.ids) for e in encodings)
    return tokens, statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bench")
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    documents = corpus(args.megabytes, 1)
    hf, text, specials = oracle.train("llama3", documents[: max(1, len(documents) // 4)], vocab_size=32000)
    with tempfile.TemporaryDirectory(prefix="fp8rl_tok_bench_") as work:
        folder = os.path.join(work, "model")
        oracle.write_folder(folder, text, specials, "llama3")
        corpus_path = os.path.join(work, "corpus.bin")
        with open(corpus_path, "wb") as f:
            f.write(b"\0".join(d.encode("utf-8") for d in documents))
        ours = json.loads(subprocess.run([args.bench, folder, corpus_path, "--repeats", str(args.repeats)],
                                         check=True, capture_output=True, text=True).stdout)
    hf_tokens, hf_seconds = hf_rate(hf, documents, args.repeats)
    if hf_tokens != ours["tokens"]:
        sys.exit(f"token counts differ: tokenizers {hf_tokens}, fp8rl {ours['tokens']}")
    megabytes = ours["bytes"] / 1e6
    print(f"\ntokenizer encode, one thread: {megabytes:.1f} MB of generated multilingual text, "
          f"Llama-3-style BPE (32,000), medians of {args.repeats}")
    print(f"{'':14} {'MB/s':>10} {'tokens/s':>12}")
    print(f"{'tokenizers':14} {megabytes / hf_seconds:10.2f} {hf_tokens / hf_seconds:12.0f}")
    print(f"{'fp8rl':14} {megabytes / ours['seconds']:10.2f} {ours['tokens'] / ours['seconds']:12.0f}")
    print(f"{'fp8rl/tokenizers':14} {hf_seconds / ours['seconds']:10.2f}")


if __name__ == "__main__":
    main()
