#!/usr/bin/env python3
"""Training gradients against independent PyTorch oracles.

For each model family (torch_reference.py's random tiny Hugging Face
folders, here with smaller embedding/head gains so that logits are O(1-5)
and the softmax is not saturated) this script writes one batch of sequences
with prompts, completions and per-sequence advantages, runs our training
backward on it through

    fp8rl_dump_grads --model DIR --recipe bf16|fp8 --batch BATCH.json --out OUT.safetensors

and checks what it writes: the gradient dL/dW of every parameter under its
Hugging Face name (F32; a tied model has no lm_head.weight and its
embedding gradient includes the head's), "logp" (the completion tokens'
log-probs) and "loss".

The loss (the same formulas here, written independently):
  logp_t = log_softmax(logits[p - 1] / temperature)[token p] for the
           completion positions p >= prompt_length of each sequence;
  N      = completion tokens in the batch (token-mean aggregation);
  cross_entropy    L = -(1/N) sum_t logp_t;
  policy_gradient  L = -(1/N) sum_t r_t A_s with r_t = exp(logp_t - logp_old_t)
           and logp_old the same weights' log-probs, so r = 1 (the PPO clip is
           inactive there) and dL/dW = -(1/N) sum_t A_s dlogp_t/dW. Written
           as r = exp(logp - logp.detach()).

Oracles (all in float64, torch_reference.Reference's model):
 1. autograd, BF16 recipe: the forward with the recipe's rounding points
    (torch_reference.py's docstring) as straight-through estimators
    (rounded value forward, identity backward; the rounded attention
    probabilities get the softmax Jacobian of the unrounded ones), exactly
    the estimator our backward implements. Ours differs from it by FP32
    arithmetic (and the rounding flips it causes) and, mostly, by computing
    its backward GEMMs on BF16-rounded output gradients. Per tensor: the
    relative L2 error ||g - g_ref|| / ||g_ref|| and the cosine; logp (max,
    mean, and the share of early tokens that match to FP32 level, which a
    misplaced forward rounding point destroys) and loss. Every family, both
    losses.
 2. finite differences, unquantized: the same model with no rounding at
    all; central differences (4-point stencil) of both losses with respect
    to ~35 coordinates spread over every kind of tensor (embedding rows of
    the batch and, tied, one outside it; q/k/v/o/gate/up/down and both norms
    of the first and last layer; q_norm/k_norm; q/k/v biases; final norm;
    lm_head). (a) plain float64 autograd must match them to 1e-7 of the
    tensor's gradient RMS (validates this oracle's model and loss); (b) our
    BF16-recipe gradient must match them within what the recipe's roundings
    cost, errors normalized by the tensor's gradient RMS (so that
    coordinates with a near-zero gradient do not dominate): their max and
    their RMS over the coordinates. Every family, both losses.
 3. FP8 recipe: the straight-through model with the FP8 recipe's fake
    quantization; our backward also quantizes output gradients to E4M3 in
    1x128 tiles, so only loose bounds are asserted. Policy gradient only.

--self-test runs every comparison with a torch stand-in for our program
(the oracle-1 model whose linear layers' backward rounds the output
gradient to BF16 / E4M3 tiles before the dgrad and wgrad GEMMs, written as
F32 safetensors and read back): it validates this script end to end and
predicts the errors the tolerances below must cover.

Usage: torch_grads.py --dump-grads PATH --family llama|smollm2|qwen2|qwen3|all
       torch_grads.py --self-test --family ...
Exit status: 0 pass, 1 fail, 77 skipped (torch not importable).
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_reference as tr  # noqa: E402  (exits 77 when torch is missing)
from torch_reference import F64, np, torch  # noqa: E402

# Smaller embedding (tied models: also the head) and head gains than the
# logits test: logits with a standard deviation of ~2-4, so that the
# completion tokens' softmax is spread and every logit's gradient matters.
GRAD_GAINS = {"embed": 0.15, "head": 2.0}
TEMPERATURE = 0.8
# (sequence length, prompt length, advantage): one completion token only,
# prompts of one token, advantages of both signs, and short sequences whose
# early tokens (positions <= EARLY) few rounding flips reach (see TOLERANCES).
BATCH = [(14, 1, 1.0), (23, 9, -0.7), (31, 18, 0.4), (4, 3, -1.3), (6, 2, 0.9), (5, 1, -0.2), (7, 3, 0.6)]
EARLY = 5
LOSSES = ["policy_gradient", "cross_entropy"]
FD_STEP = 1e-3

# TOLERANCES. The emulated reference and ours put values through the same
# BF16 / E4M3 roundings but compute between them in FP64 and FP32, so now and
# then an element lands on the other side of a rounding boundary and that
# flip moves every later token of its sequence (torch_reference.py's
# TOLERANCES). The "floor" columns measure it: the reference against itself
# with FP32-level noise on the embeddings. Measured over 7 seeds x 4 families
# (bf16 / fp8), ours and, in brackets where it differs, --self-test's
# stand-in (that noise plus BF16 / E4M3-rounded output gradients in the
# backward GEMMs):
#   logp max 3.5e-2 / 0.59 (0.91), mean 4.6e-3 / 0.14; tokens at positions
#     <= EARLY within LOGP_EXACT >= 53% / 59% (47%), while a missing rounding
#     point of p, q or the down projection's input leaves <= 18% (its max
#     error, 3e-2 to 1.2e-1, is no larger than the flips' own);
#   loss: policy_gradient 1.1e-8 (L = -(1/N) sum A as r = 1; FP32 output),
#     cross_entropy 1.8e-3 (= the mean signed logp error);
#   gradient relative L2 error, max over tensors 9.3e-3 (1.4e-2) / 0.16
#     (0.24); the floor alone 2.0e-2 / 0.22; min cosine 0.99996 / 0.987
#     (0.972); |s - 1| of the least-squares scale s of all gradients
#     together onto the reference's 1.1e-3 (0.8e-3) / 2.3e-2 (2.1e-2), so a
#     uniform scale error (a wrong N or temperature factor, 1/53 = 1.9%) that
#     the relative errors alone would let through is caught;
#   finite differences: plain torch autograd 1.2e-9 of the gradient RMS
#     (4-point stencil, h = 1e-3); ours max 0.12 and RMS 0.032, which is the
#     BF16 recipe's forward itself (the straight-through model: 0.14 / 0.032;
#     BF16 and plain gradients differ by 1-3% relative L2 per tensor, and
#     the max over ~40 coordinates sees the tails).
# Bounds: about 3-4x those (FP32 arithmetic can flip more than the noise
# model); the FP8 bounds are loose by design (E4M3 flips are 1/8 steps).
LOGP_EXACT = 1e-4
LOGP_MAX_TOL = {"bf16": 0.15, "fp8": 2.0}
LOGP_MEAN_TOL = {"bf16": 0.02, "fp8": 0.4}
LOGP_MIN_EXACT = {"bf16": 0.35, "fp8": 0.35}
GRAD_REL_TOL = {"bf16": 0.05, "fp8": 0.5}
GRAD_COS_MIN = {"bf16": 0.998, "fp8": 0.94}
GRAD_SCALE_TOL = {"bf16": 5e-3, "fp8": 0.1}
# fp8-head (FP8 linear layers and LM head) is judged as fp8.
for _bounds in (LOGP_MAX_TOL, LOGP_MEAN_TOL, LOGP_MIN_EXACT, GRAD_REL_TOL, GRAD_COS_MIN, GRAD_SCALE_TOL):
    _bounds["fp8-head"] = _bounds["fp8"]
FD_SELF_TOL = 1e-7
FD_OURS_MAX_TOL = 0.4
FD_OURS_RMS_TOL = 0.1


# ----------------------------------------------------------------- batch ---

def make_batch(config, seed):
    g = torch.Generator().manual_seed(seed)
    sequences = [torch.randint(0, config["vocab_size"], (n,), generator=g).tolist() for n, _, _ in BATCH]
    return {"temperature": TEMPERATURE, "sequences": sequences,
            "prompt_lengths": [p for _, p, _ in BATCH], "advantages": [a for _, _, a in BATCH]}


def completion_logp(model, batch, recipe, emulate, noise=None):
    """logp_t of every completion token, sequence by sequence, position order."""
    parts = []
    for tokens, prompt in zip(batch["sequences"], batch["prompt_lengths"]):
        logits = model.forward(tokens, recipe, emulate, noise=noise)
        logp = torch.log_softmax(logits[prompt - 1:-1] / batch["temperature"], dim=-1)
        parts.append(logp.gather(1, torch.tensor(tokens[prompt:])[:, None])[:, 0])
    return torch.cat(parts)


def early_tokens(batch):
    """Mask of the completion tokens at positions <= EARLY."""
    return torch.tensor([p <= EARLY for tokens, prompt in zip(batch["sequences"], batch["prompt_lengths"])
                         for p in range(prompt, len(tokens))])


def token_advantages(batch):
    return torch.tensor([a for tokens, prompt, a in zip(batch["sequences"], batch["prompt_lengths"],
                                                         batch["advantages"])
                         for _ in range(len(tokens) - prompt)], dtype=F64)


def loss_of(logp, batch, kind, logp_old=None):
    """The loss from the completion log-probs; logp_old defaults to logp's
    own value (the ratio is 1 but carries logp's gradient)."""
    n = logp.numel()
    if kind == "cross_entropy":
        return -logp.sum() / n
    old = logp.detach() if logp_old is None else logp_old
    ratio = torch.exp(logp - old)
    return -(ratio * token_advantages(batch)).sum() / n


def autograd(model, batch, kind, recipe, emulate, noise=None):
    """(gradients name -> tensor, logp, loss) of a Reference built with
    requires_grad=True."""
    for w in model.w.values():
        w.grad = None
    logp = completion_logp(model, batch, recipe, emulate, noise)
    loss = loss_of(logp, batch, kind)
    loss.backward()
    grads = {name: w.grad.clone() for name, w in model.w.items() if w.requires_grad}
    return grads, logp.detach(), loss.detach()


# ------------------------------------------------ stand-in for our program ---

class _EmulatedGemm(torch.autograd.Function):
    """y = x^ W^T with the backward our linear layers compute: the output
    gradient rounded to BF16 (BF16 recipe) before dgrad (dy W^) and wgrad
    (dy^T x^); FP8: dy fake-quantized in 1x128 tiles along the output
    features for dgrad, dy and x in 1x128 tiles along the tokens for wgrad."""

    @staticmethod
    def forward(ctx, x, w, x_hat, w_hat, fp8, pow2):
        ctx.save_for_backward(x, x_hat, w_hat)
        ctx.fp8, ctx.pow2 = fp8, pow2
        return x_hat @ w_hat.T

    @staticmethod
    def backward(ctx, dy):
        x, x_hat, w_hat = ctx.saved_tensors
        if ctx.fp8:
            dx = tr.fake_quant_tiles(dy, ctx.pow2) @ w_hat
            dw = tr.fake_quant_tiles(dy.T.contiguous(), ctx.pow2) @ tr.fake_quant_tiles(x.T.contiguous(), ctx.pow2).T
        else:
            dy = tr.bf16(dy)
            dx, dw = dy @ w_hat, dy.T @ x_hat
        return dx, dw, None, None, None, None


class BackwardEmulation(tr.Reference):
    """The oracle-1 model with _EmulatedGemm in every linear layer."""

    def linear(self, x, name, mode, emulate, pow2, bias=None):
        fp8 = mode == "fp8"
        x_hat = tr.fake_quant_tiles(x.detach(), pow2) if fp8 else tr.bf16(x.detach())
        w_hat = self.weight(name + ".weight", fp8, pow2).detach()
        y = _EmulatedGemm.apply(x, self.w[name + ".weight"], x_hat, w_hat, fp8, pow2)
        if bias is not None and (name + ".bias") in self.w:
            y = y + self.w[name + ".bias"]
        return y


def stand_in_program(config, weights, batch, kind, recipe, out, seed):
    """What fp8rl_dump_grads should write, computed by BackwardEmulation with
    FP32-level noise on the embeddings (the rounding flips FP32 arithmetic
    causes)."""
    model = BackwardEmulation(config, weights, requires_grad=True)
    noise = torch.Generator().manual_seed(seed)
    grads, logp, loss = autograd(model, batch, kind, recipe, emulate=True, noise=noise)
    tensors = {name: g.to(torch.float32) for name, g in grads.items()}
    tensors["logp"] = logp.to(torch.float32)
    tensors["loss"] = loss.reshape(1).to(torch.float32)
    tr.write_safetensors(out, tensors)


# ------------------------------------------------------------ comparisons ---

def run_ours(args, folder, config, weights, batch, kind, recipe, workdir, seed):
    """name -> float64 tensor of our output file, or raises RuntimeError."""
    batch_path = os.path.join(workdir, f"batch-{kind}.json")
    with open(batch_path, "w") as f:
        json.dump(dict(batch, loss=kind), f)
    out = os.path.join(workdir, f"grads-{recipe}-{kind}.safetensors")
    if args.self_test:
        stand_in_program(config, weights, batch, kind, recipe, out, seed)
    else:
        command = [args.dump_grads, "--model", folder, "--recipe", recipe, "--batch", batch_path, "--out", out]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"fp8rl_dump_grads exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    return tr.read_safetensors(out)


def check_output(ours, weights, n_tokens):
    """Problems with the names / shapes / finiteness of our output."""
    problems = []
    expected = {name: list(t.shape) for name, t in weights.items() if tr.is_parameter(name)}
    expected["logp"], expected["loss"] = [n_tokens], [1]
    for name, shape in expected.items():
        if name not in ours:
            problems.append(f"missing tensor {name}")
        elif list(ours[name].shape) != shape:
            problems.append(f"{name} has shape {list(ours[name].shape)}, expected {shape}")
        elif not torch.isfinite(ours[name]).all():
            problems.append(f"{name} has non-finite values")
    problems += [f"unexpected tensor {name}" for name in ours if name not in expected]
    return problems


def rel_l2(g, ref):
    return ((g - ref).norm() / ref.norm()).item()


def cosine(g, ref):
    return (torch.dot(g.flatten(), ref.flatten()) / (g.norm() * ref.norm())).item()


def grad_errors(ours, ref):
    """(max rel L2 and its tensor, median rel L2, min cosine and its tensor)."""
    rel = {name: rel_l2(ours[name], g) for name, g in ref.items()}
    cos = {name: cosine(ours[name], g) for name, g in ref.items()}
    worst = max(rel, key=rel.get)
    least = min(cos, key=cos.get)
    flat, flat_ref = torch.cat([ours[name].flatten() for name in ref]), torch.cat([g.flatten() for g in ref.values()])
    scale = (torch.dot(flat, flat_ref) / torch.dot(flat_ref, flat_ref)).item()
    return dict(scale=scale, scale_err=abs(scale - 1), rel=rel[worst], rel_at=worst, rel_median=float(np.median(list(rel.values()))),
                cos=cos[least], cos_at=least)


def short(name):
    return name.replace("model.", "").replace("layers.", "L").replace("self_attn.", "").replace("mlp.", "")


# ---------------------------------------------------- finite differences ---

def sample_coordinates(config, weights, batch, seed):
    """[(tensor name, flat index)] over every kind of tensor."""
    g = torch.Generator().manual_seed(seed)
    last = config["num_hidden_layers"] - 1
    hidden = config["hidden_size"]

    def anywhere(name, count=1):
        return [(name, int(torch.randint(0, weights[name].numel(), (1,), generator=g))) for _ in range(count)]

    used = sorted({t for s in batch["sequences"] for t in s})
    pick = lambda values: values[int(torch.randint(0, len(values), (1,), generator=g))]  # noqa: E731
    embed = "model.embed_tokens.weight"
    coords = [(embed, pick(used) * hidden + int(torch.randint(0, hidden, (1,), generator=g))) for _ in range(2)]
    if config["tie_word_embeddings"]:  # a row only the head uses
        unused = [t for t in range(config["vocab_size"]) if t not in set(used)]
        coords.append((embed, pick(unused) * hidden + int(torch.randint(0, hidden, (1,), generator=g))))
    for layer in (0, last):
        p = f"model.layers.{layer}."
        for name in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                     "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"):
            coords += anywhere(p + name + ".weight", 2)
        for name in ("input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm"):
            if p + name + ".weight" in weights:
                coords += anywhere(p + name + ".weight")
        for name in ("q_proj", "k_proj", "v_proj"):
            if p + "self_attn." + name + ".bias" in weights:
                coords += anywhere(p + "self_attn." + name + ".bias")
    coords += anywhere("model.norm.weight")
    if "lm_head.weight" in weights:
        target = batch["sequences"][0][-1]
        coords += [("lm_head.weight", target * hidden + int(torch.randint(0, hidden, (1,), generator=g)))]
        coords += anywhere("lm_head.weight")
    return coords


def finite_differences(config, weights, batch, coords):
    """{loss kind: [d loss / d coordinate]} by the 4-point central stencil
    (f(-2h) - 8 f(-h) + 8 f(h) - f(2h)) / 12h on the plain float64 model;
    the policy-gradient loss keeps logp_old at the unperturbed weights."""
    model = tr.Reference(config, weights)
    with torch.no_grad():
        logp_old = completion_logp(model, batch, "bf16", emulate=False)
        result = {kind: [] for kind in LOSSES}
        for name, index in coords:
            flat = model.w[name].view(-1)
            center = flat[index].item()
            values = {}
            for k in (-2, -1, 1, 2):
                flat[index] = center + k * FD_STEP
                logp = completion_logp(model, batch, "bf16", emulate=False)
                for kind in LOSSES:
                    values[kind, k] = loss_of(logp, batch, kind, logp_old).item()
            flat[index] = center
            for kind in LOSSES:
                v = lambda k: values[kind, k]  # noqa: E731
                result[kind].append((v(-2) - 8 * v(-1) + 8 * v(1) - v(2)) / (12 * FD_STEP))
    return result


def fd_errors(grads, fd, coords, rms):
    """|g - fd| / rms(tensor) over the coordinates: (max, where, RMS)."""
    errors = np.array([abs(grads[name].view(-1)[index].item() - d) / rms[name] for (name, index), d in zip(coords, fd)])
    worst = int(np.argmax(errors))
    return errors[worst], f"{short(coords[worst][0])}[{coords[worst][1]}]", float(np.sqrt(np.mean(errors ** 2)))


# ------------------------------------------------------------------- run ---

def run_family(family, args, workdir):
    started = time.time()
    config = tr.FAMILIES[family]
    seed = args.seed + 10 * list(tr.FAMILIES).index(family)
    weights = tr.random_weights(config, seed, GRAD_GAINS)
    folder = os.path.join(workdir, family)
    tr.write_folder(folder, config, weights)
    batch = make_batch(config, seed + 1)
    n_tokens = sum(len(s) - p for s, p in zip(batch["sequences"], batch["prompt_lengths"]))
    early = early_tokens(batch)
    rows, failures = [], []

    # Oracle 2's references: plain float64 autograd and finite differences.
    coords = sample_coordinates(config, weights, batch, seed + 2)
    fd = finite_differences(config, weights, batch, coords)
    plain = {}
    for kind in LOSSES:
        plain[kind], _, _ = autograd(tr.Reference(config, weights, requires_grad=True), batch, kind, "bf16", False)

    for recipe in args.recipes:
        for kind in LOSSES if recipe == "bf16" else LOSSES[:1]:
            name = f"{family}/{recipe}/{kind}"
            model = tr.Reference(config, weights, requires_grad=True)
            ref, ref_logp, ref_loss = autograd(model, batch, kind, recipe, emulate=True)
            noise = torch.Generator().manual_seed(seed + 100)
            floor, floor_logp, _ = autograd(model, batch, kind, recipe, emulate=True, noise=noise)
            try:
                ours = run_ours(args, folder, config, weights, batch, kind, recipe, workdir, seed + 200)
            except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as error:
                failures.append(f"{name}: {error}")
                continue
            problems = check_output(ours, weights, n_tokens)
            if problems:
                failures += [f"{name}: {p}" for p in problems]
                continue
            row = dict(name=name, recipe=recipe, kind=kind)
            logp_diff = (ours["logp"] - ref_logp).abs()
            row.update(logp_max=logp_diff.max().item(), logp_mean=logp_diff.mean().item(),
                       logp_exact=(logp_diff <= LOGP_EXACT).double().mean().item(),
                       logp_early=(logp_diff <= LOGP_EXACT)[early].double().mean().item(),
                       floor_exact=((floor_logp - ref_logp).abs() <= LOGP_EXACT).double().mean().item(),
                       logp_floor=(floor_logp - ref_logp).abs().max().item(),
                       loss_err=abs(ours["loss"].item() - ref_loss.item()))
            row.update(grad_errors(ours, ref))
            row["floor_rel"] = grad_errors(floor, ref)["rel"]
            if not row["logp_max"] <= LOGP_MAX_TOL[recipe] or not row["logp_mean"] <= LOGP_MEAN_TOL[recipe]:
                failures.append(f"{name}: logp error max {row['logp_max']:.3g} / mean {row['logp_mean']:.3g} "
                                f"exceeds {LOGP_MAX_TOL[recipe]:g} / {LOGP_MEAN_TOL[recipe]:g}")
            if not row["logp_early"] >= LOGP_MIN_EXACT[recipe]:
                failures.append(f"{name}: only {row['logp_early']:.0%} of the tokens at positions <= {EARLY} match the "
                                f"emulated forward's logp to {LOGP_EXACT:g} (at least {LOGP_MIN_EXACT[recipe]:.0%} "
                                f"expected): a rounding "
                                f"point of the forward differs")
            loss_tol = 1e-6 * (1 + abs(ref_loss.item())) if kind == "policy_gradient" else LOGP_MEAN_TOL[recipe]
            if not row["loss_err"] <= loss_tol:
                failures.append(f"{name}: loss {ours['loss'].item():.9g}, reference {ref_loss.item():.9g} "
                                f"(tolerance {loss_tol:.3g})")
            if not row["rel"] <= GRAD_REL_TOL[recipe]:
                failures.append(f"{name}: gradient of {row['rel_at']} has relative L2 error {row['rel']:.3g} "
                                f"(tolerance {GRAD_REL_TOL[recipe]:g})")
            if not row["cos"] >= GRAD_COS_MIN[recipe]:
                failures.append(f"{name}: gradient of {row['cos_at']} has cosine {row['cos']:.6f} "
                                f"(at least {GRAD_COS_MIN[recipe]:g})")
            if not row["scale_err"] <= GRAD_SCALE_TOL[recipe]:
                failures.append(f"{name}: our gradients are {row['scale']:.4f} times the reference's (least squares; "
                                f"tolerance {GRAD_SCALE_TOL[recipe]:g})")
            if recipe == "bf16":
                rms = {n: g.pow(2).mean().sqrt().item() for n, g in plain[kind].items()}
                row["fd_torch"], row["fd_torch_at"], _ = fd_errors(plain[kind], fd[kind], coords, rms)
                row["fd_ours"], row["fd_ours_at"], row["fd_ours_rms"] = fd_errors(ours, fd[kind], coords, rms)
                row["fd_st"], _, row["fd_st_rms"] = fd_errors(ref, fd[kind], coords, rms)
                if not row["fd_torch"] <= FD_SELF_TOL:
                    failures.append(f"{name}: torch float64 autograd differs from finite differences by "
                                    f"{row['fd_torch']:.3g} of the gradient RMS at {row['fd_torch_at']} "
                                    f"(tolerance {FD_SELF_TOL:g}): the oracle itself is broken")
                if not row["fd_ours"] <= FD_OURS_MAX_TOL:
                    failures.append(f"{name}: our gradient differs from finite differences by {row['fd_ours']:.3g} "
                                    f"of the gradient RMS at {row['fd_ours_at']} (tolerance {FD_OURS_MAX_TOL:g})")
                if not row["fd_ours_rms"] <= FD_OURS_RMS_TOL:
                    failures.append(f"{name}: our gradient differs from finite differences by an RMS of "
                                    f"{row['fd_ours_rms']:.3g} of the gradient RMS (tolerance {FD_OURS_RMS_TOL:g})")
            rows.append(row)
    print(f"{family}: {len(coords)} finite-difference coordinates, {n_tokens} completion tokens, "
          f"{time.time() - started:.1f} s")
    return rows, failures


def print_table(rows):
    print("Our training gradients vs PyTorch float64 (straight-through emulated recipe, autograd):")
    print(f"  logp: |ours - ref| max / mean, early: share of the tokens at positions <= {EARLY} within {LOGP_EXACT:g}")
    print("  (all: of all tokens); floor: ref vs itself with FP32-level")
    print("  noise on the embeddings (the rounding flips FP32 arithmetic causes); loss: |ours - ref|;")
    print("  grads: per-tensor relative L2 error (max, its tensor, median; floor) and min cosine; scale: |s - 1|")
    print("  for the least-squares scale s of all our gradients onto the reference's;")
    print("  FD: |g - fd| / rms(tensor grad) over the sampled coordinates, max and RMS, for plain torch")
    print("  autograd, the straight-through BF16 torch model (the recipe's own effect) and ours.")
    print(f"{'run':28} {'logp max':>8} {'mean':>7} {'early':>5} {'all':>4} {'floor':>7} {'all':>4} {'loss':>7} | {'grad rel':>8} "
          f"{'at':15} {'median':>7} {'floor':>7} {'min cos':>8} {'scale':>7} | {'FD torch':>8} {'ST max':>6} {'rms':>6} "
          f"{'ours max':>8} {'rms':>6}")
    for r in rows:
        line = (f"{r['name']:28} {r['logp_max']:8.1e} {r['logp_mean']:7.1e} {r['logp_early']:5.0%} {r['logp_exact']:4.0%} "
                f"{r['logp_floor']:7.1e} {r['floor_exact']:4.0%} {r['loss_err']:7.1e} | {r['rel']:8.1e} "
                f"{short(r['rel_at'])[:15]:15} {r['rel_median']:7.1e} {r['floor_rel']:7.1e} {r['cos']:8.6f} {r['scale_err']:7.1e} |")
        if "fd_ours" in r:
            line += (f" {r['fd_torch']:8.1e} {r['fd_st']:6.3f} {r['fd_st_rms']:6.3f} {r['fd_ours']:8.3f} "
                     f"{r['fd_ours_rms']:6.3f}")
        print(line)
    print(f"Asserted (bf16 / fp8): logp max <= {LOGP_MAX_TOL['bf16']:g} / {LOGP_MAX_TOL['fp8']:g}, mean <= "
          f"{LOGP_MEAN_TOL['bf16']:g} / {LOGP_MEAN_TOL['fp8']:g}, early >= {LOGP_MIN_EXACT['bf16']:.0%}; "
          f"grad rel <= {GRAD_REL_TOL['bf16']:g} / {GRAD_REL_TOL['fp8']:g}, cos >= {GRAD_COS_MIN['bf16']:g} / "
          f"{GRAD_COS_MIN['fp8']:g}, scale <= {GRAD_SCALE_TOL['bf16']:g} / {GRAD_SCALE_TOL['fp8']:g};")
    print(f"  FD torch <= {FD_SELF_TOL:g}; FD ours max <= {FD_OURS_MAX_TOL:g}, rms <= {FD_OURS_RMS_TOL:g}; "
          f"loss: policy_gradient 1e-6 (1 + |L|), cross_entropy as logp mean.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump-grads", help="path of the fp8rl_dump_grads executable")
    parser.add_argument("--self-test", action="store_true",
                        help="use the torch stand-in (BF16/E4M3-rounded backward GEMMs) instead of our program")
    parser.add_argument("--family", default="all", choices=list(tr.FAMILIES) + ["all"])
    parser.add_argument("--recipes", default="bf16,fp8,fp8-head", help="comma-separated subset of bf16,fp8,fp8-head")
    parser.add_argument("--seed", type=int, default=4048)
    args = parser.parse_args()
    if not args.self_test and not args.dump_grads:
        parser.error("--dump-grads or --self-test is required")
    args.recipes = args.recipes.split(",")
    if not set(args.recipes) <= {"bf16", "fp8", "fp8-head"}:
        parser.error("--recipes: a subset of bf16, fp8, fp8-head")
    torch.set_num_threads(1)
    return tr.run_families(args.family, run_family, args, "fp8rl_oracle_grads_", print_table)


if __name__ == "__main__":
    sys.exit(main())
