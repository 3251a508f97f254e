#!/usr/bin/env python3
"""PyTorch + transformers baseline of the GPU RL step (gpu_check.sh, stage e).

The RL step fp8rl_bench_train times on the CUDA backend, done the way a
PyTorch user does it: a Hugging Face LlamaForCausalLM of the same shapes
(random weights, tied head, SDPA attention) with FP32 master weights trained
under torch.autocast(bfloat16), and a BF16 copy of it that generates with
`generate()` (KV cache, multinomial sampling at temperature 1, no top-k or
top-p, every completion exactly --new-tokens long), as TRL and similar
trainers generate from a BF16 copy. One step:
  generation  the BF16 copy samples one completion per prompt;
  train       forward of prompt + completion, the head on the completion
              positions only, the clipped policy-gradient loss with given
              advantages (+1/-1 alternating; ratio 1 against the detached
              log-probs, as our one-mini-batch step), token mean, backward,
              gradient-norm clipping at 1.0, AdamW;
  sync        the updated masters copied into the BF16 generator (the
              analogue of our requantization after a step).
Each phase ends with torch.cuda.synchronize(); the median of --steps steps
after one warm-up step. Prints a table on stderr and one JSON object on stdout.

  torch_rl_step_baseline.py [--model llama-3.2-1b] [--sequences 32] [--prompt 128]
                            [--new-tokens 128] [--steps 2] [--device cuda]
"""

import argparse
import contextlib
import copy
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cpu"))
from torch_rollout_baseline import CONFIGS  # noqa: E402  (the benchmarks' model shapes)

try:
    import torch
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM
except ImportError as error:
    print(json.dumps({"available": False, "reason": str(error)}))
    sys.exit(0)


def llama(shape):
    c = CONFIGS[shape]
    fields = dict(vocab_size=c["vocab"], hidden_size=c["hidden"], intermediate_size=c["intermediate"],
                  num_hidden_layers=c["layers"], num_attention_heads=c["heads"], num_key_value_heads=c["kv_heads"],
                  head_dim=c["head_dim"], rms_norm_eps=c["eps"], tie_word_embeddings=True,
                  max_position_embeddings=8192, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    try:
        return LlamaConfig(rope_theta=c["rope_theta"], **fields)
    except TypeError:  # a transformers that takes RoPE settings only as rope_parameters; theta changes no work
        return LlamaConfig(**fields)


def finish(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def generate(generator, prompts, new_tokens):
    """[B, P] -> [B, P + new_tokens]; min_new_tokens keeps every completion full length."""
    with torch.no_grad():
        return generator.generate(prompts, attention_mask=torch.ones_like(prompts), do_sample=True, temperature=1.0,
                                  top_k=0, top_p=1.0, max_new_tokens=new_tokens, min_new_tokens=new_tokens)


def train(master, optimizer, sequences, prompt, advantages, device):
    """One clipped policy-gradient step on [B, P + N] sequences; returns the loss."""
    inputs, targets = sequences[:, :-1], sequences[:, prompt:]  # position p predicts token p + 1
    with torch.autocast(device.type, dtype=torch.bfloat16):
        hidden = master.model(input_ids=inputs).last_hidden_state[:, prompt - 1:, :]  # [B, N, hidden]
        logits = master.lm_head(hidden)  # [B, N, vocab]
    logp = torch.log_softmax(logits.float(), dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # [B, N]
    ratio = torch.exp(logp - logp.detach())
    clipped = torch.clamp(ratio, 0.8, 1.28)
    per_token = -torch.minimum(ratio * advantages[:, None], clipped * advantages[:, None])
    loss = per_token.mean()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(master.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss


def sync(generator, master):
    with torch.no_grad():
        for g, m in zip(generator.parameters(), master.parameters()):
            g.copy_(m)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="llama-3.2-1b", choices=sorted(CONFIGS))
    parser.add_argument("--sequences", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--device", default="cuda")
    args = parser.parse_args()
    device = torch.device(args.device)
    torch.manual_seed(0)
    # Initialized where it runs (torch >= 2 makes a device a context manager).
    with device if hasattr(device, "__enter__") else contextlib.nullcontext():
        master = LlamaForCausalLM(llama(args.model)).to(device)  # FP32 masters
    generator = copy.deepcopy(master).to(torch.bfloat16).eval()
    optimizer = torch.optim.AdamW(master.parameters(), lr=1e-6, weight_decay=0.01)
    g = torch.Generator().manual_seed(13)
    prompts = torch.randint(3, master.config.vocab_size, (args.sequences, args.prompt), generator=g).to(device)
    advantages = torch.tensor([1.0 if i % 2 == 0 else -1.0 for i in range(args.sequences)], device=device)

    phases = {"generation": [], "train": [], "sync": []}
    for step in range(args.steps + 1):  # step 0 warms up
        times = {}
        began = time.perf_counter()
        sequences = generate(generator, prompts, args.new_tokens)
        finish(device)
        times["generation"] = time.perf_counter() - began
        assert sequences.shape[1] == args.prompt + args.new_tokens, sequences.shape
        began = time.perf_counter()
        loss = train(master, optimizer, sequences, args.prompt, advantages, device)
        finish(device)
        times["train"] = time.perf_counter() - began
        began = time.perf_counter()
        sync(generator, master)
        finish(device)
        times["sync"] = time.perf_counter() - began
        print(f"torch RL step {step}: " + ", ".join(f"{k} {v:.3f} s" for k, v in times.items()) +
              f", loss {loss.item():.4f}", file=sys.stderr)
        if step > 0:
            for k, v in times.items():
                phases[k].append(v)

    medians = {k: statistics.median(v) for k, v in phases.items()}
    total = sum(medians.values())
    print(f"\nPyTorch {torch.__version__} + transformers {transformers.__version__} on {device} "
          f"({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'cpu'}): {args.model}, "
          f"{args.sequences} prompts x {args.prompt} tokens, {args.new_tokens} new tokens; median of {args.steps} "
          f"steps after a warm-up", file=sys.stderr)
    print(f"{'RL step (s)':<12} {'generation':>11} {'train':>8} {'sync':>8} {'total':>8}", file=sys.stderr)
    print(f"{'PyTorch BF16':<12} {medians['generation']:>11.2f} {medians['train']:>8.2f} {medians['sync']:>8.2f} "
          f"{total:>8.2f}", file=sys.stderr)
    print(json.dumps({"available": True, "torch_rl_step": True, "torch_version": torch.__version__,
                      "transformers_version": transformers.__version__, "device": str(device),
                      "model": args.model, "sequences": args.sequences, "prompt": args.prompt,
                      "new_tokens": args.new_tokens, "seconds": medians, "total_seconds": total}))


if __name__ == "__main__":
    main()
