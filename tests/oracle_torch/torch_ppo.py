#!/usr/bin/env python3
"""One PPO iteration of four mini-batches against an independent PyTorch PPO.

For each model family (torch_reference.py's random tiny Hugging Face
folders, with smaller embedding and head gains: logits / temperature of
standard deviation ~0.5-0.9, so that BF16 rounding flips, whose effect on a
log-prob scales with the logits, move log-probs little) this script writes
a GRPO batch: 3 prompts x 6 completions (group_size 6), three of them
copies of earlier ones (sampling repeats completions; the copies sit in a
later mini-batch, so the first updates move their ratios coherently and the
clip acts), per-token logp_gen = the float64 model's log-probs plus a
deterministic uniform shift in [-GEN_SHIFT, GEN_SHIFT] (so importance
weights are not 1 and some exceed the cap) and rewards. It runs our trainer
on it through

    fp8rl_dump_ppo --model DIR --recipe bf16 --batch BATCH.json --out OUT.safetensors

(Trainer::iterate once, minibatches = 4, micro_batch_tokens small enough for
2-3 micro-batches per mini-batch) and compares what it writes with this PPO,
written from the formulas in float64 on torch_reference.Reference with the
BF16 recipe's rounding points as straight-through estimators (torch_grads.py's
oracle 1) and the compute copies of the weights (matrices: BF16 of the master
weights) the policy refits after every step:
  logp_old   the initial weights' log-probs of every completion token, once;
  advantages per group of group_size consecutive sequences:
             A = (r - mean) / (sample std + std_epsilon);
  IS weights w = min(exp(logp_old - logp_gen), is_cap), fixed;
  mini-batch k = sequences [k n / 4, (k + 1) n / 4) (sizes 4, 5, 4, 5 here):
             r = exp(logp - logp_old), L_k = -(1/N_k) sum w min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)
             over its N_k tokens; autograd; torch.nn.utils.clip_grad_norm_;
             one torch.optim.AdamW step (float64, weight decay on 2-D tensors
             only, constant learning rate).
Adam's epsilon (1e-3) is about the RMS of a clipped gradient element (norm 1
over ~0.5M elements), so most updates are lr g / (|g| + eps), close to
linear in g: a gradient error of x% is an update error of about x%, and the
sign flips of near-zero elements that dominate a sign-like Adam update do
not arise. The learning rate (1e-3) makes the ratios move by up to a factor
of several after one step (clip fractions 4-32% from the second mini-batch
on); every gradient norm is above max_grad_norm, so clipping acts in every
step.

Checks, per family:
  exact      ours in mini-batch 1: ratio mean/min/max exactly 1, clip fraction
             and old KL 0 (logp_old is that mini-batch's own forward);
             mini-batches 2-4: clip fraction > 0 and ratio min < 1 < max;
             tokens per mini-batch; no step skipped; the same clipped flags.
  bounds     our per-token errors stay within budgets (below) of what
             FP32-vs-FP64 arithmetic between the shared rounding points
             costs; from them each metric gets a first-order bound on the
             reference's tokens (Cauchy-Schwarz; x = logp - logp_old):
               loss_k        RMS(w max(r, clip(r)) |A|) (LOGP_OLD_ERR + LOG_RATIO_ERR [k > 1])
               ratio_mean    RMS(r) LOG_RATIO_ERR
               ratio_min/max a factor exp(+-LOG_RATIO_MAX)
               old_kl_k3     RMS(e^x - 1) LOG_RATIO_ERR
               is_weight     RMS(w) LOGP_OLD_ERR
             and the mismatch metrics (y = logp_old - logp_gen) RMS(e^|y|),
             RMS(e^y - 1), 1, RMS(1 - e^-y), RMS(w) times LOGP_OLD_ERR.
  flips      clip fraction: no token may flip (CLIP_FLIPS). A PPO gradient
             jumps where a token crosses its clip boundary, and one flipped
             token changes that step's gradient by several % and the rest of
             the trajectory with it (seen: 9% update error); so SEEDS are
             chosen (searched) so that no reference token of mini-batches
             2-4 is within LOG_RATIO_MAX of its active boundary, which is
             asserted ("choose another seed"); roughly one seed in 20-40
             qualifies. Truncated fraction: at most the reference tokens
             within LOGP_OLD_MAX of the cap may flip (w is a constant: a
             flip there moves nothing else).
  gradients  grad norm relative error <= GRAD_NORM_TOL (first mini-batch:
             the initial weights, only the backward's BF16 roundings; later
             ones also the trajectory's).
  weights    per tensor, the relative L2 error of our update (w_final -
             w_initial) against the reference's <= UPDATE_TOL; and the
             least-squares scale s of all our updates onto the reference's,
             |s - 1| <= UPDATE_SCALE_TOL (a uniform scale error, e.g. of the
             learning rate or bias correction, that per-tensor errors let
             through).

TOLERANCES. Measured over the four families (ours; in brackets --self-test's
stand-in: torch_grads.BackwardEmulation, i.e. BF16-rounded output gradients
in the backward GEMMs, with FP32-level noise on the embeddings and FP32
log-probs and master weights):
  per-token errors of the stand-in: logp_old RMS <= 8.5e-4 (max 6.4e-3),
    log-ratio in mini-batches 2-4 RMS <= 9.6e-3 (max 2.6e-2); ours' ratio
    min/max log errors <= 2.0e-2 (1.6e-2);
  metrics as fractions of their bounds: loss <= 0.07 (0.04), ratio mean
    <= 0.11, old KL <= 0.13, IS weight <= 0.06, mismatch <= 0.02: the bounds
    are worst cases (aligned errors), the errors average out;
  clip and truncation flips 0 (0); grad norm first mini-batch <= 5.0e-4
    (2.3e-4), later <= 7.4e-3 (5.2e-3); update per tensor <= 1.4e-2
    (1.4e-2), scale <= 1.2e-4 (1.2e-4).
Budgets: LOGP_OLD_ERR 6x, LOGP_OLD_MAX 3x, LOG_RATIO_ERR 2x and
LOG_RATIO_MAX 1.5x the stand-in's; GRAD_NORM_TOL 10x / 4x and UPDATE_TOL
3.5x ours. A wrong trainer fails them (temporary mutations of core/train,
each reverted; every family fails), with what catches them:
  logp_old recomputed after each update: clip fraction 0 and ratio 1 in
    mini-batches 2-4, ratio, KL, IS weight, loss;
  IS weight left out of the loss: mini-batch 1's loss (2-6x its bound), IS
    statistics, grad norms, updates 18-23%;
  IS weight left out of the gradient only: mini-batch 1's grad norm, ratio
    min/max, updates 18-23%, scale 0.7-1%;
  token mean over the batch instead of the mini-batch: every loss and grad
    norm (x1/4);
  weight decay on every tensor: updates of norm weights and biases 60-220%;
  logp_old's scoring pass at temperature 1: IS weights, ratios, KL, grad
    norms of mini-batches 2-4;
  advantages without the std normalization: every loss and grad norm.

--self-test runs every comparison with the stand-in in place of our program.

Usage: torch_ppo.py --dump-ppo PATH --family llama|smollm2|qwen2|qwen3|all
       torch_ppo.py --self-test --family ...
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
import torch_grads as tg  # noqa: E402
from torch_reference import F64, np, torch  # noqa: E402

# Per group (one prompt, group_size completions): (prompt length, completion
# lengths); None: a copy (reward included) of the completion DUPLICATES
# names, which is in an earlier mini-batch (bounds 0, 4, 9, 13, 18).
GROUPS = [(4, [6, 1, 9, 7, None, 3]), (1, [7, 4, 3, None, 5, 8]), (6, [2, None, 5, 10, 4, 6])]
DUPLICATES = {4: 0, 9: 6, 13: 12}
OPTIONS = {
    "minibatches": 4, "group_size": 6, "normalize_by_std": True, "std_epsilon": 1e-6,
    "clip_low": 0.2, "clip_high": 0.28, "is_cap": 1.2,
    "learning_rate": 1e-3, "beta1": 0.9, "beta2": 0.99, "adam_eps": 1e-3, "weight_decay": 0.1,
    "max_grad_norm": 1.0, "temperature": 0.7, "micro_batch_tokens": 20,
}
PPO_GAINS = {"embed": 0.04, "head": 0.35}
GEN_SHIFT = 0.3  # importance weights in [0.74, 1.35], ~20% above is_cap
# Per family: weights from the seed, the batch from seed + 1, the stand-in's noise from seed + 100.
SEEDS = {"llama": 57, "smollm2": 124, "qwen2": 95, "qwen3": 39}

LOGP_OLD_ERR = 5e-3
LOGP_OLD_MAX = 2e-2
LOG_RATIO_ERR = 2e-2
LOG_RATIO_MAX = 4e-2
CLIP_FLIPS = 0
GRAD_NORM_TOL = (5e-3, 3e-2)  # the first mini-batch (initial weights), the later ones
UPDATE_TOL = 5e-2
UPDATE_SCALE_TOL = 5e-3

MINIBATCH_FIELDS = ["loss", "grad_norm", "clipped", "skipped", "tokens", "clip_fraction", "ratio_mean", "ratio_min",
                    "ratio_max", "old_kl_k3_mean", "is_weight_mean", "is_truncated_fraction"]
MISMATCH_FIELDS = ["token_mult_prob_error", "gen_kl_error", "gen_kl_k1", "policy_kl_error", "is_weight_mean",
                   "is_truncated_fraction"]


def f32(t):
    return t.to(torch.float32).to(F64)


def rms(t):
    return t.pow(2).mean().sqrt().item()


# ----------------------------------------------------------------- model ---

def compute_weights(master):
    """The weights the forward reads: matrices (linear layers, embeddings,
    head) rounded to BF16 as the policy's compute copies are, straight
    through to the master weights; norms and biases as they are (FP32)."""
    return {n: tr.straight_through(tr.bf16, p) if p.dim() == 2 else p for n, p in master.items()}


def completion_logp(model, master, batch, begin, end, noise_seed=None):
    """logp of the completion tokens of sequences [begin, end) under
    softmax(logits / temperature) with the master weights' compute copies.
    noise_seed: the stand-in's FP32-level noise, the same for a sequence at
    every call (as ours computes a sequence the same way every time)."""
    model.w = compute_weights(master)
    temperature = batch["options"]["temperature"]
    parts = []
    for i in range(begin, end):
        tokens, prompt = batch["sequences"][i], batch["prompt_lengths"][i]
        noise = None if noise_seed is None else torch.Generator().manual_seed(noise_seed + i)
        logits = model.forward(tokens, "bf16", emulate=True, noise=noise)
        logp = torch.log_softmax(logits[prompt - 1:-1] / temperature, dim=-1)
        parts.append(logp.gather(1, torch.tensor(tokens[prompt:])[:, None])[:, 0])
    return torch.cat(parts)


def make_batch(config, weights, seed):
    g = torch.Generator().manual_seed(seed)
    vocab = config["vocab_size"]
    sequences, prompt_lengths = [], []
    for prompt_length, completions in GROUPS:
        prompt = torch.randint(0, vocab, (prompt_length,), generator=g).tolist()
        for n in completions:
            sequences.append(None if n is None else prompt + torch.randint(0, vocab, (n,), generator=g).tolist())
            prompt_lengths.append(prompt_length)
    rewards = (torch.randint(0, 9, (len(sequences),), generator=g).double() / 8).tolist()
    for copy, original in DUPLICATES.items():
        sequences[copy], rewards[copy] = sequences[original], rewards[original]
    batch = {"sequences": sequences, "prompt_lengths": prompt_lengths, "rewards": rewards, "options": OPTIONS}
    master = {n: t.to(F64) for n, t in weights.items() if tr.is_parameter(n)}
    with torch.no_grad():
        logp = completion_logp(tr.Reference(config, weights), master, batch, 0, len(sequences))
    shift = (2 * torch.rand(logp.shape, generator=g, dtype=F64) - 1) * GEN_SHIFT
    batch["logp_gen"] = f32(logp + shift).tolist()  # F32 values: both sides read the same numbers
    return batch


# ------------------------------------------------------------- reference ---

def group_advantages(rewards, options):
    r = torch.tensor(rewards, dtype=F64).reshape(-1, options["group_size"])
    a = r - r.mean(dim=1, keepdim=True)
    if options["normalize_by_std"]:
        a = a / (r.std(dim=1, keepdim=True) + options["std_epsilon"])  # torch.std: the sample std
    return a.reshape(-1)


def ppo_iteration(config, weights, batch, stand_in=False, noise_seed=None):
    """One iteration in float64: {"minibatches": [per mini-batch metrics and
    per-token arrays], "mismatch": {...}, "log_w" and "is_weight": [tokens],
    "final": {name: master weight}}. stand_in: the prediction of our program's numerics
    instead (BackwardEmulation, FP32-level noise, FP32 log-probs and master
    weights)."""
    o = batch["options"]
    master = {n: t.to(F64).clone().requires_grad_(True) for n, t in weights.items() if tr.is_parameter(n)}
    model = (tg.BackwardEmulation if stand_in else tr.Reference)(config, weights)
    to_fp32 = f32 if stand_in else (lambda t: t)
    count = len(batch["sequences"])
    lengths = [len(s) - p for s, p in zip(batch["sequences"], batch["prompt_lengths"])]
    offsets = np.cumsum([0] + lengths)

    # Fixed for the iteration: logp_old (the initial weights), importance weights, advantages.
    with torch.no_grad():
        logp_old = to_fp32(completion_logp(model, master, batch, 0, count, noise_seed))
    log_w = logp_old - torch.tensor(batch["logp_gen"], dtype=F64)
    is_weight = torch.exp(log_w).clamp(max=o["is_cap"])
    per_sequence = group_advantages(batch["rewards"], o)
    advantages = torch.cat([per_sequence[i].repeat(n) for i, n in enumerate(lengths)])
    mismatch = dict(token_mult_prob_error=torch.exp(log_w.abs()).mean().item(),
                    gen_kl_error=(torch.exp(log_w) - log_w - 1).mean().item(), gen_kl_k1=(-log_w).mean().item(),
                    policy_kl_error=(torch.exp(-log_w) + log_w - 1).mean().item(),
                    is_weight_mean=is_weight.mean().item(),
                    is_truncated_fraction=(torch.exp(log_w) > o["is_cap"]).double().mean().item())

    params = list(master.values())
    optimizer = torch.optim.AdamW(
        [{"params": [p for p in params if p.dim() == 2], "weight_decay": o["weight_decay"]},
         {"params": [p for p in params if p.dim() != 2], "weight_decay": 0.0}],
        lr=o["learning_rate"], betas=(o["beta1"], o["beta2"]), eps=o["adam_eps"])
    low, high = 1 - o["clip_low"], 1 + o["clip_high"]
    minibatches = []
    for k in range(o["minibatches"]):
        begin, end = k * count // o["minibatches"], (k + 1) * count // o["minibatches"]
        tokens = slice(offsets[begin], offsets[end])
        logp = completion_logp(model, master, batch, begin, end, noise_seed)
        if stand_in:
            logp = tr.straight_through(f32, logp)
        a, w, x = advantages[tokens], is_weight[tokens], logp - logp_old[tokens]
        ratio = torch.exp(x)
        loss = -(w * torch.minimum(ratio * a, ratio.clamp(low, high) * a)).sum() / logp.numel()
        optimizer.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(params, o["max_grad_norm"]).item()
        optimizer.step()
        if stand_in:
            with torch.no_grad():
                for p in params:
                    p.copy_(f32(p))
        r, x = ratio.detach(), x.detach()
        clipped = ((a > 0) & (r > high)) | ((a < 0) & (r < low))
        # Distance in log-ratio from the boundary where the clip starts to act (A = 0 never clips).
        boundary = torch.where(a > 0, math.log(high), math.log(low))
        minibatches.append(dict(
            loss=loss.item(), grad_norm=norm, clipped=float(norm > o["max_grad_norm"]), skipped=0.0,
            tokens=float(logp.numel()), clip_fraction=clipped.double().mean().item(), ratio_mean=r.mean().item(),
            ratio_min=r.min().item(), ratio_max=r.max().item(), old_kl_k3_mean=(torch.exp(x) - x - 1).mean().item(),
            is_weight_mean=w.mean().item(),
            is_truncated_fraction=(torch.exp(log_w[tokens]) > o["is_cap"]).double().mean().item(),
            x=x, w=w, log_w=log_w[tokens], clip_distance=torch.where(a != 0, (x - boundary).abs(), math.inf),
            loss_scale=w * torch.maximum(r, r.clamp(low, high)) * a.abs()))
    return dict(minibatches=minibatches, mismatch=mismatch, log_w=log_w, is_weight=is_weight,
                final={n: p.detach() for n, p in master.items()})


def as_output(result):
    """What fp8rl_dump_ppo writes (F32), from a ppo_iteration result."""
    out = {n: t.to(torch.float32) for n, t in result["final"].items()}
    for field in MINIBATCH_FIELDS:
        out["minibatch." + field] = torch.tensor([m[field] for m in result["minibatches"]], dtype=torch.float32)
    for field in MISMATCH_FIELDS:
        out["mismatch." + field] = torch.tensor([result["mismatch"][field]], dtype=torch.float32)
    return out


# ------------------------------------------------------------ comparisons ---

def run_ours(args, folder, config, weights, batch, workdir, seed):
    batch_path = os.path.join(workdir, "batch.json")
    with open(batch_path, "w") as f:
        json.dump(batch, f)
    out = os.path.join(workdir, "ppo.safetensors")
    if args.self_test:
        tr.write_safetensors(out, as_output(ppo_iteration(config, weights, batch, stand_in=True, noise_seed=seed)))
    else:
        command = [args.dump_ppo, "--model", folder, "--recipe", "bf16", "--batch", batch_path, "--out", out]
        result = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if result.returncode != 0:
            raise RuntimeError(f"fp8rl_dump_ppo exited {result.returncode}: {result.stderr.strip()[-2000:]}")
    return tr.read_safetensors(out)


def check_output(ours, weights, minibatches):
    problems = []
    expected = {name: list(t.shape) for name, t in weights.items() if tr.is_parameter(name)}
    expected.update({"minibatch." + f: [minibatches] for f in MINIBATCH_FIELDS})
    expected.update({"mismatch." + f: [1] for f in MISMATCH_FIELDS})
    for name, shape in expected.items():
        if name not in ours:
            problems.append(f"missing tensor {name}")
        elif list(ours[name].shape) != shape:
            problems.append(f"{name} has shape {list(ours[name].shape)}, expected {shape}")
        elif not torch.isfinite(ours[name]).all():
            problems.append(f"{name} has non-finite values")
    return problems + [f"unexpected tensor {name}" for name in ours if name not in expected]


def truncation_margin_tokens(log_w, cap):
    """Reference tokens whose truncation our logp_old errors may flip."""
    return int(((log_w - math.log(cap)).abs() <= LOGP_OLD_MAX).sum())


def compare_minibatch(k, ours, m, cap, failures, name):
    """Row of the table for mini-batch k; appends failures."""
    get = lambda field: ours["minibatch." + field][k].item()  # noqa: E731
    n = int(m["tokens"])
    # The first mini-batch's ratio is exactly 1 (checked below): only logp_old's errors enter its loss.
    bounds = dict(loss=rms(m["loss_scale"]) * (LOGP_OLD_ERR + (LOG_RATIO_ERR if k > 0 else 0.0)),
                  is_weight_mean=rms(m["w"]) * LOGP_OLD_ERR)
    if k > 0:
        bounds.update(ratio_mean=rms(torch.exp(m["x"])) * LOG_RATIO_ERR,
                      old_kl_k3_mean=rms(torch.expm1(m["x"])) * LOG_RATIO_ERR)
    count = lambda fraction: round(fraction * n)  # noqa: E731  (token counts from fractions)
    row = dict(name=f"{name}/mb{k + 1}", tokens=n, clip=(count(get("clip_fraction")), count(m["clip_fraction"])),
               trunc=(count(get("is_truncated_fraction")), count(m["is_truncated_fraction"])),
               trunc_allowed=truncation_margin_tokens(m["log_w"], cap),
               nearest=m["clip_distance"].min().item(), grad_rel=abs(get("grad_norm") / m["grad_norm"] - 1),
               log_rmin=abs(math.log(get("ratio_min") / m["ratio_min"])),
               log_rmax=abs(math.log(get("ratio_max") / m["ratio_max"])))
    for field, bound in bounds.items():
        row[field] = abs(get(field) - m[field]) / bound  # as a fraction of its bound
    for field in ("tokens", "skipped", "clipped"):
        if get(field) != m[field]:
            failures.append(f"{row['name']}: {field} is {get(field):g}, expected {m[field]:g}")
    if k == 0:
        if not (get("ratio_mean") == get("ratio_min") == get("ratio_max") == 1.0 and get("clip_fraction") == 0.0
                and get("old_kl_k3_mean") == 0.0):
            failures.append(f"{row['name']}: the first mini-batch's ratio must be exactly 1 (logp_old is its own "
                            f"forward): ratio mean/min/max {get('ratio_mean')!r}/{get('ratio_min')!r}/"
                            f"{get('ratio_max')!r}, clip fraction {get('clip_fraction')!r}, "
                            f"old KL {get('old_kl_k3_mean')!r}")
    else:
        if not (get("clip_fraction") > 0 and get("ratio_min") < 1.0 < get("ratio_max")):
            failures.append(f"{row['name']}: the clip must act after the first update: clip fraction "
                            f"{get('clip_fraction'):g}, ratio min/max {get('ratio_min'):g}/{get('ratio_max'):g}")
        if not (m["clip_fraction"] > 0 and row["nearest"] > LOG_RATIO_MAX):
            failures.append(f"{row['name']}: this batch does not test the clip (reference clip fraction "
                            f"{m['clip_fraction']:g}, a token {row['nearest']:.3g} from its clip boundary, at least "
                            f"{LOG_RATIO_MAX:g} needed): choose another seed")
    for field in bounds:
        if not row[field] <= 1.0:
            failures.append(f"{row['name']}: {field} {get(field):.7g}, reference {m[field]:.7g}: error "
                            f"{row[field]:.3g} times its bound {bounds[field]:.3g}")
    if abs(row["clip"][0] - row["clip"][1]) > CLIP_FLIPS:
        failures.append(f"{row['name']}: {row['clip'][0]} clipped tokens, reference {row['clip'][1]} "
                        f"(at most {CLIP_FLIPS} may differ)")
    if abs(row["trunc"][0] - row["trunc"][1]) > row["trunc_allowed"]:
        failures.append(f"{row['name']}: {row['trunc'][0]} truncated importance weights, reference "
                        f"{row['trunc'][1]} ({row['trunc_allowed']} within {LOGP_OLD_MAX:g} of the cap)")
    if not max(row["log_rmin"], row["log_rmax"]) <= LOG_RATIO_MAX:
        failures.append(f"{row['name']}: ratio min/max {get('ratio_min'):.6g}/{get('ratio_max'):.6g}, reference "
                        f"{m['ratio_min']:.6g}/{m['ratio_max']:.6g} (log error at most {LOG_RATIO_MAX:g})")
    grad_tol = GRAD_NORM_TOL[min(k, 1)]
    if not row["grad_rel"] <= grad_tol:
        failures.append(f"{row['name']}: grad norm {get('grad_norm'):.6g}, reference {m['grad_norm']:.6g} "
                        f"(relative tolerance {grad_tol:g})")
    return row


def compare_mismatch(ours, ref, cap, failures, name):
    y, w = ref["log_w"], ref["is_weight"]
    bounds = dict(token_mult_prob_error=rms(torch.exp(y.abs())), gen_kl_error=rms(torch.expm1(y)), gen_kl_k1=1.0,
                  policy_kl_error=rms(-torch.expm1(-y)), is_weight_mean=rms(w))
    row = dict(name=f"{name}/mismatch")
    for field, scale in bounds.items():
        row[field] = abs(ours["mismatch." + field].item() - ref["mismatch"][field]) / (scale * LOGP_OLD_ERR)
        if not row[field] <= 1.0:
            failures.append(f"{name}: mismatch {field} {ours['mismatch.' + field].item():.7g}, reference "
                            f"{ref['mismatch'][field]:.7g}: error {row[field]:.3g} times its bound")
    n = y.numel()
    flips = abs(round(ours["mismatch.is_truncated_fraction"].item() * n)
                - round(ref["mismatch"]["is_truncated_fraction"] * n))
    allowed = truncation_margin_tokens(y, cap)
    if flips > allowed:
        failures.append(f"{name}: mismatch truncated fraction differs by {flips} tokens ({allowed} within "
                        f"{LOGP_OLD_MAX:g} of the cap)")
    return row


def compare_updates(ours, weights, final, failures, name):
    rel, num, den = {}, 0.0, 0.0
    for n, w in final.items():
        u_ref, u = w - weights[n].to(F64), ours[n] - weights[n].to(F64)
        rel[n] = ((u - u_ref).norm() / u_ref.norm()).item()
        num += torch.dot(u.flatten(), u_ref.flatten()).item()
        den += torch.dot(u_ref.flatten(), u_ref.flatten()).item()
    worst = max(rel, key=rel.get)
    row = dict(name=f"{name}/update", update=rel[worst], update_at=worst,
               update_median=float(np.median(list(rel.values()))), scale_err=abs(num / den - 1))
    if not row["update"] <= UPDATE_TOL:
        failures.append(f"{name}: the update of {worst} has relative L2 error {row['update']:.3g} "
                        f"(tolerance {UPDATE_TOL:g})")
    if not row["scale_err"] <= UPDATE_SCALE_TOL:
        failures.append(f"{name}: our updates are {num / den:.5f} times the reference's (least squares; "
                        f"tolerance {UPDATE_SCALE_TOL:g})")
    return row


# ------------------------------------------------------------------- run ---

def run_family(family, args, workdir):
    started = time.time()
    config = tr.FAMILIES[family]
    seed = SEEDS[family] if args.seed is None else args.seed
    weights = tr.random_weights(config, seed, PPO_GAINS)
    folder = os.path.join(workdir, family)
    tr.write_folder(folder, config, weights)
    batch = make_batch(config, weights, seed + 1)
    ref = ppo_iteration(config, weights, batch)
    try:
        ours = run_ours(args, folder, config, weights, batch, workdir, seed + 100)
    except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as error:
        return [], [f"{family}: {error}"]
    failures = [f"{family}: {p}" for p in check_output(ours, weights, OPTIONS["minibatches"])]
    if failures:
        return [], failures
    cap = OPTIONS["is_cap"]
    rows = [compare_minibatch(k, ours, m, cap, failures, family) for k, m in enumerate(ref["minibatches"])]
    rows.append(compare_mismatch(ours, ref, cap, failures, family))
    rows.append(compare_updates(ours, weights, ref["final"], failures, family))
    print(f"{family}: seed {seed}, {sum(int(m['tokens']) for m in ref['minibatches'])} completion tokens, "
          f"{time.time() - started:.1f} s")
    return rows, failures


def exact(row, field):
    """A bound fraction, or 'exact' for the first mini-batch's ratio statistics."""
    return f"{row[field]:.2f}" if field in row else "exact"


def print_table(rows):
    print("One PPO iteration (4 mini-batches) of ours vs a float64 PyTorch PPO on the straight-through BF16 model.")
    print("  loss, ratio mean, old KL (k3), IS weight mean and the mismatch metrics: |ours - ref| as a fraction of")
    print("  its first-order bound (<= 1 passes); clip, trunc: token counts ours/ref (trunc: flips allowed);")
    print("  nearest: the reference's smallest log-ratio distance to a clip boundary; log r min/max: |log ours/ref|;")
    print("  grad: relative error of the grad norm; update: relative L2 error of the tensor updates, scale |s - 1|.")
    print(f"{'run':16} {'tok':>3} {'loss':>5} {'clip':>5} {'nearest':>7} {'r mean':>6} {'r min':>7} {'r max':>7} "
          f"{'old KL':>6} {'IS w':>5} {'trunc':>7} {'grad':>7}")
    for r in rows:
        if "loss" in r:
            print(f"{r['name']:16} {r['tokens']:3} {r['loss']:5.2f} {r['clip'][0]:2}/{r['clip'][1]:<2} "
                  f"{r['nearest']:7.3f} {exact(r, 'ratio_mean'):>6} {r['log_rmin']:7.1e} {r['log_rmax']:7.1e} "
                  f"{exact(r, 'old_kl_k3_mean'):>6} {r['is_weight_mean']:5.2f} "
                  f"{r['trunc'][0]:2}/{r['trunc'][1]:<2}({r['trunc_allowed']}) "
                  f"{r['grad_rel']:7.1e}")
        elif "update" in r:
            print(f"{r['name']:16} update max {r['update']:.2e} ({tg.short(r['update_at'])}), median "
                  f"{r['update_median']:.2e}, scale {r['scale_err']:.1e}")
        else:
            print(f"{r['name']:16} " + ", ".join(f"{f} {r[f]:.2f}" for f in MISMATCH_FIELDS if f in r))
    print(f"Asserted: per-token budgets logp_old RMS {LOGP_OLD_ERR:g} (max {LOGP_OLD_MAX:g}), log-ratio RMS "
          f"{LOG_RATIO_ERR:g} (max {LOG_RATIO_MAX:g}); clip flips <= {CLIP_FLIPS}; "
          f"grad norm <= {GRAD_NORM_TOL[0]:g} / {GRAD_NORM_TOL[1]:g}; "
          f"update <= {UPDATE_TOL:g}, scale <= {UPDATE_SCALE_TOL:g}.")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dump-ppo", help="path of the fp8rl_dump_ppo executable")
    parser.add_argument("--self-test", action="store_true",
                        help="use the torch stand-in (BF16-rounded backward GEMMs, FP32-level noise) instead of ours")
    parser.add_argument("--family", default="all", choices=list(tr.FAMILIES) + ["all"])
    parser.add_argument("--seed", type=int, help="instead of SEEDS (the batch must keep tokens off the clip boundary)")
    args = parser.parse_args()
    if not args.self_test and not args.dump_ppo:
        parser.error("--dump-ppo or --self-test is required")
    torch.set_num_threads(1)
    return tr.run_families(args.family, run_family, args, "fp8rl_oracle_ppo_", print_table)


if __name__ == "__main__":
    sys.exit(main())
