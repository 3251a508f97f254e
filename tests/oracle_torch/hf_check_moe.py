#!/usr/bin/env python3
"""torch_moe.py's plain reference against Hugging Face transformers itself.

Not part of CI (transformers is not a test dependency): run by hand, with a
Python that has transformers >= 4.51 (the first with Qwen3-MoE), e.g.

  python3 -m venv --system-site-packages /tmp/hfvenv
  /tmp/hfvenv/bin/pip install transformers==4.51.3
  /tmp/hfvenv/bin/python tests/oracle_torch/hf_check_moe.py

For every torch_moe variant it writes the same random folder the test
writes, runs Qwen3MoeForCausalLM on it in float64 and compares the logits of
the same sequences with MoeReference's plain mode (float64, no rounding),
errors relative to max |logit|. Two runs:
  as shipped  HF computes RMSNorm, the RoPE angles and both softmaxes
              (router, eager attention) in float32 even in a float64 model,
              so agreement is FP32-level.
  float64     those four computed in float64 (patched below, for the check
              only): what is left is the model itself, and it agrees to
              rounding level (1e-10 asserted).
Measured (transformers 4.51.3 on Debian's torch 1.13): float64 throughout
8.3e-16 to 2.1e-15 on top2, top4_norm, mlp_only and sparse_step2; as
shipped 2.2e-7 to 8.7e-7. The variant "tie" differs by 0.28 either way, as
it should: HF picks among exactly tied experts with torch.topk, which does
not promise the lowest index (it picked the higher one for some tokens);
the library's contract is stricter, so "tie" is reported, not asserted.
The routing of the two must be the same for the comparison to mean
anything; the margins torch_moe asserts (>= 1e-3 in the router logits) are
far above FP32-level differences.

Debian's python3-torch is 1.13; transformers 4.51 imports a few torch 2
names at module level that this model never uses. Where they are missing
they are stubbed (torch_2_stubs), so the check runs on that torch too.
"""

import argparse
import contextlib
import os
import sys
import tempfile
import types

import torch_moe as moe  # noqa: E402  (exits 77 when torch is missing)
import torch_reference as tr  # noqa: E402
from torch_reference import F64, torch  # noqa: E402

AGREEMENT = 1e-10


def torch_2_stubs():
    """Module-level names transformers 4.51 imports from torch >= 2 and the
    model does not use: torch.distributed.tensor.DTensor, torch.compiler and
    the float8 / unsigned dtypes (keys of its dtype tables only)."""
    if "torch.distributed.tensor" not in sys.modules and not hasattr(torch.distributed, "tensor"):
        stub = types.ModuleType("torch.distributed.tensor")
        stub.DTensor = type("DTensor", (), {})
        sys.modules["torch.distributed.tensor"] = torch.distributed.tensor = stub
    if not hasattr(torch, "compiler"):
        stub = types.ModuleType("torch.compiler")
        stub.disable = lambda fn=None, recursive=True: fn if fn is not None else (lambda f: f)
        stub.is_compiling = lambda: False
        sys.modules["torch.compiler"] = torch.compiler = stub
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, torch.int16)


@contextlib.contextmanager
def float64_throughout(modeling):
    """Makes HF's Qwen3-MoE compute in the tensors' own dtype where it forces
    float32: RMSNorm, the RoPE angles (inverse frequencies and cos / sin)
    and softmax(dtype=float32) (router and eager attention)."""
    norm_forward, rope_forward, softmax = (modeling.Qwen3MoeRMSNorm.forward, modeling.Qwen3MoeRotaryEmbedding.forward,
                                           torch.nn.functional.softmax)

    def norm(self, x):  # x [..., dim]
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.variance_epsilon))

    def rope(self, x, position_ids):  # position_ids [B, T] -> cos, sin [B, T, head_dim]
        c = self.config
        dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        inv = 1.0 / c.rope_theta ** (torch.arange(0, dim, 2, dtype=F64) / dim)
        angles = position_ids[..., None].to(F64) * inv
        emb = torch.cat((angles, angles), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def softmax64(x, dim=None, _stacklevel=3, dtype=None):
        return softmax(x, dim=dim, dtype=x.dtype if x.dtype == F64 else dtype)

    modeling.Qwen3MoeRMSNorm.forward, modeling.Qwen3MoeRotaryEmbedding.forward = norm, rope
    torch.nn.functional.softmax = softmax64
    try:
        yield
    finally:
        modeling.Qwen3MoeRMSNorm.forward, modeling.Qwen3MoeRotaryEmbedding.forward = norm_forward, rope_forward
        torch.nn.functional.softmax = softmax


def load_model(folder, modeling):
    """Qwen3MoeForCausalLM of the folder in float64, eager attention. The
    config is read by transformers; the weights go in by load_state_dict
    (from_pretrained needs torch >= 2), every file tensor by its HF name: no
    parameter may be missing (lm_head aside when tied) and nothing but the
    rotary buffer left over."""
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(folder)
    config._attn_implementation = "eager"
    model = modeling.Qwen3MoeForCausalLM(config).to(F64).eval()
    state = tr.read_safetensors(os.path.join(folder, "model.safetensors"))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if config.tie_word_embeddings:
        missing = [m for m in missing if m != "lm_head.weight"]
    if missing or [u for u in unexpected if not u.endswith("rotary_emb.inv_freq")]:
        raise RuntimeError(f"{folder}: missing {missing}, unexpected {unexpected}")
    return model


def check_variant(name, workdir, modeling):
    """(as-shipped error, float64 error) of HF vs the plain reference."""
    config, seed, tied = moe.VARIANTS[name]
    weights = moe.random_moe_weights(config, seed, tied)
    folder = os.path.join(workdir, name)
    tr.write_folder(folder, config, weights)
    sequences = tr.random_sequences(config, seed + 1, moe.MOE_SEQUENCE_LENGTHS)
    reference = moe.MoeReference(config, weights)
    ours = torch.cat([reference.forward(s, "bf16", emulate=False) for s in sequences])  # [tokens, vocab]
    model = load_model(folder, modeling)
    result = []
    for patched in (False, True):
        with float64_throughout(modeling) if patched else contextlib.nullcontext(), torch.no_grad():
            hf = torch.cat([model(torch.tensor([s])).logits[0] for s in sequences])
        result.append(((hf - ours).abs().max() / ours.abs().max()).item())
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="all", choices=list(moe.VARIANTS) + ["all"])
    args = parser.parse_args()
    torch_2_stubs()
    import transformers
    from transformers.models.qwen3_moe import modeling_qwen3_moe as modeling
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; "
          "max |HF - plain reference| / max |logit|:")
    failures = []
    with tempfile.TemporaryDirectory(prefix="fp8rl_hf_moe_") as workdir:
        for name in moe.VARIANTS if args.variant == "all" else [args.variant]:
            shipped, exact = check_variant(name, workdir, modeling)
            tied = moe.VARIANTS[name][2] is not None
            print(f"  {name:14} as shipped {shipped:.2e}   float64 throughout {exact:.2e}"
                  + ("   (exact ties: HF's torch.topk picks either index, not asserted)" if tied else ""))
            if not tied and not exact <= AGREEMENT:
                failures.append(f"{name}: {exact:.3g} > {AGREEMENT:g}")
    for failure in failures:
        print("FAIL:", failure)
    print("PASS" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
