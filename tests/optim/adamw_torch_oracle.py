#!/usr/bin/env python3
"""Independent oracle for core/train/adamw: torch.optim.AdamW (single-tensor
path) and torch.nn.utils.clip_grad_norm_ on the inputs the C++ test writes.

usage: adamw_torch_oracle.py CONFIG.json INPUT.f32 OUTPUT.f32
  CONFIG: {"sizes": [...], "decay": [0|1,...], "beta1", "beta2", "eps",
           "weight_decay", "lrs": [lr per step], "max_norm": 0 (no clipping) or > 0}
  INPUT:  float32 little-endian: initial params (slots concatenated), then
          the gradients of every step (slots concatenated, step after step)
  OUTPUT: per step: params, exp_avg, exp_avg_sq (each slots concatenated),
          then one float64 per step: the pre-clip total norm torch reports
Exit 77 when torch cannot be imported."""
import json
import sys

try:
    import numpy as np
    import torch
except ImportError as exc:  # pragma: no cover
    print(f"SKIPPED: {exc}")
    sys.exit(77)


def main():
    config_path, input_path, output_path = sys.argv[1:4]
    with open(config_path) as f:
        cfg = json.load(f)
    sizes = cfg["sizes"]
    total = sum(sizes)
    lrs = cfg["lrs"]
    raw = np.fromfile(input_path, dtype="<f4")
    assert raw.size == total * (1 + len(lrs)), (raw.size, total, len(lrs))

    def split(flat):
        out, off = [], 0
        for n in sizes:
            out.append(flat[off:off + n])
            off += n
        return out

    params = [torch.nn.Parameter(torch.from_numpy(a.copy())) for a in split(raw[:total])]
    decay = [p for p, d in zip(params, cfg["decay"]) if d]
    no_decay = [p for p, d in zip(params, cfg["decay"]) if not d]
    groups = []
    if decay:
        groups.append({"params": decay, "weight_decay": cfg["weight_decay"]})
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    opt = torch.optim.AdamW(groups, lr=lrs[0], betas=(cfg["beta1"], cfg["beta2"]), eps=cfg["eps"],
                            amsgrad=False, foreach=False, maximize=False, capturable=False)
    outputs, norms = [], []
    for step, lr in enumerate(lrs):
        grads = split(raw[total * (1 + step):total * (2 + step)])
        for p, g in zip(params, grads):
            p.grad = torch.from_numpy(g.copy())
        if cfg["max_norm"] > 0:
            norms.append(float(torch.nn.utils.clip_grad_norm_(params, cfg["max_norm"])))
        else:
            norms.append(0.0)
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        outputs.append(np.concatenate([p.detach().numpy() for p in params]))
        outputs.append(np.concatenate([opt.state[p]["exp_avg"].numpy() for p in params]))
        outputs.append(np.concatenate([opt.state[p]["exp_avg_sq"].numpy() for p in params]))
    with open(output_path, "wb") as f:
        f.write(np.concatenate(outputs).astype("<f4").tobytes())
        f.write(np.asarray(norms, dtype="<f8").tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
