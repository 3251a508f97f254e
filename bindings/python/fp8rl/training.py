"""The trainer behind Policy.train_step: one C trainer bound to one policy, and its step's inputs and metrics."""
from __future__ import annotations

import ctypes
from typing import Any, Dict, Tuple

import numpy as np

from . import _raw
from ._arrays import float_vector, pointer
from ._handle import Handle
from ._library import library
from .configs import ModelConfig, TrainerConfig, _initialized
from .errors import check, invalid
from .rollouts import Rollouts

_MISMATCH_FIELDS = ("token_mult_prob_error", "gen_kl_error", "is_weight_mean", "is_truncated_fraction",
                    "is_masked_fraction")
_FLAGS = ("skipped", "clipped", "has_mismatch")


def metrics_dict(metrics: _raw.fp8rl_train_metrics) -> Dict[str, Any]:
    """Every field of the C metrics; flags as bools, the mismatch fields None when logp_gen was not given, and
    routing_agreement None when no expert choices were compared (``routing_choices`` 0: a dense policy, or
    rollouts that did not record their experts).

    For an iteration, ``skipped`` and ``clipped`` are True when any of its steps was.
    """
    values: Dict[str, Any] = {}
    for name in (item[0] for item in metrics._fields_):
        if name != "struct_size":
            values[name] = bool(getattr(metrics, name)) if name in _FLAGS else getattr(metrics, name)
    if not values["has_mismatch"]:
        values.update(dict.fromkeys(_MISMATCH_FIELDS))
    if values["routing_choices"] == 0:
        values["routing_agreement"] = None
    return values


def _sparse_layer_count(model: ModelConfig) -> int:
    """The Mixture-of-Experts layers of a (valid) model config: Hugging Face's Qwen3MoeDecoderLayer rule."""
    if model.num_experts == 0:
        return 0
    return sum(1 for layer in range(model.num_layers)
               if layer not in model.mlp_only_layers and (layer + 1) % model.decoder_sparse_step == 0)


def _metrics_struct() -> _raw.fp8rl_train_metrics:
    return _initialized(_raw.fp8rl_train_metrics, "fp8rl_train_metrics_init")


class Trainer:
    """Trains a policy in place: iterations of mini-batch steps (loss forward and backward, AdamW, recalibration)."""

    def __init__(self, policy_handle: Handle, config: TrainerConfig, model: ModelConfig):
        self.config = config
        self._sparse_layers = _sparse_layer_count(model)
        options = config._to_c()
        out = ctypes.c_void_p()
        check(library().fp8rl_trainer_create(policy_handle.pointer, ctypes.byref(options), ctypes.byref(out)))
        self._handle = Handle(out, library().fp8rl_trainer_destroy, "trainer", keep=policy_handle)

    def close(self) -> None:
        self._handle.close()

    def _batch(self, rollouts: Rollouts, rewards: Any, advantages: Any, ref_logprobs: Any,
               old_logprobs: Any) -> Tuple[_raw.fp8rl_train_batch, Tuple[Any, ...]]:
        """The C batch and the arrays it points into (keep them alive during the call)."""
        tokens, offsets, prompt_lengths = rollouts.sequences()
        count, completion_tokens = len(rollouts), len(rollouts.tokens)
        wants_rewards = self.config.loss.kind == _raw.FP8RL_LOSS_CLIPPED_POLICY_GRADIENT
        if wants_rewards and (rewards is None) == (advantages is None):
            raise invalid("train_step: a policy-gradient loss takes exactly one of rewards and advantages")
        if not wants_rewards and (rewards is not None or advantages is not None):
            raise invalid("train_step: the cross-entropy loss takes neither rewards nor advantages")
        rewards = None if rewards is None else float_vector(rewards, count, "rewards")
        advantages = None if advantages is None else float_vector(advantages, count, "advantages")
        ref = None if ref_logprobs is None else float_vector(ref_logprobs, completion_tokens, "ref_logprobs")
        old = None if old_logprobs is None else float_vector(old_logprobs, completion_tokens, "old_logprobs")
        # The generator's expert choices, laid out as `tokens` lays out the sequences (prompt then completion).
        experts = rollouts._train_experts() if self._sparse_layers > 0 else None
        if experts is None and self.config.routing_replay and self._sparse_layers > 0:
            raise invalid("train_step: routing_replay trains with the generator's expert choices, but these "
                          "rollouts recorded none: generate them with SamplingParams(record_experts=True) "
                          "(rollouts built from sequences carry none), or turn routing_replay off")
        batch = _raw.fp8rl_train_batch()
        check(library().fp8rl_train_batch_init(ctypes.byref(batch)))
        batch.tokens = pointer(tokens, ctypes.c_int32)
        batch.offsets = pointer(offsets, ctypes.c_int64)
        batch.num_sequences = count
        batch.prompt_lengths = pointer(prompt_lengths, ctypes.c_int64)
        batch.num_completion_tokens = completion_tokens
        batch.logp_gen = pointer(rollouts.logprobs, ctypes.c_float)
        batch.logp_ref = pointer(ref, ctypes.c_float)
        batch.rewards = pointer(rewards, ctypes.c_float)
        batch.advantages = pointer(advantages, ctypes.c_float)
        batch.logp_old = pointer(old, ctypes.c_float)
        batch.generation_seconds = rollouts.generation_seconds
        if experts is not None:
            batch.experts = pointer(experts, ctypes.c_int32)
            batch.num_expert_choices = experts.size
        return batch, (tokens, offsets, prompt_lengths, rewards, advantages, ref, old, experts)

    def step(self, rollouts: Rollouts, rewards: Any, advantages: Any, ref_logprobs: Any,
             old_logprobs: Any = None) -> Dict[str, Any]:
        batch, alive = self._batch(rollouts, rewards, advantages, ref_logprobs, old_logprobs)
        metrics = _metrics_struct()
        check(library().fp8rl_trainer_step(self._handle.pointer, ctypes.byref(batch), ctypes.byref(metrics)))
        del alive
        return metrics_dict(metrics)

    def iterate(self, rollouts: Rollouts, rewards: Any, advantages: Any, ref_logprobs: Any,
                old_logprobs: Any) -> Dict[str, Any]:
        batch, alive = self._batch(rollouts, rewards, advantages, ref_logprobs, old_logprobs)
        total = _metrics_struct()
        steps = (_raw.fp8rl_train_metrics * self.config.minibatches)()
        for step in steps:
            check(library().fp8rl_train_metrics_init(ctypes.byref(step)))
        check(library().fp8rl_trainer_iterate(self._handle.pointer, ctypes.byref(batch), ctypes.byref(total), steps,
                                              len(steps)))
        del alive
        result = metrics_dict(total)
        result["minibatch_metrics"] = [metrics_dict(step) for step in steps]
        return result

    def recompute_logprobs(self, rollouts: Rollouts) -> np.ndarray:
        tokens, offsets, prompt_lengths = rollouts.sequences()
        out = np.empty(len(rollouts.tokens), dtype=np.float32)
        check(library().fp8rl_trainer_recompute_logprobs(
            self._handle.pointer, pointer(tokens, ctypes.c_int32), pointer(offsets, ctypes.c_int64), len(rollouts),
            pointer(prompt_lengths, ctypes.c_int64), pointer(out, ctypes.c_float), out.size))
        return out

    def recalibrate(self) -> float:
        seconds = ctypes.c_double()
        check(library().fp8rl_trainer_recalibrate(self._handle.pointer, ctypes.byref(seconds)))
        return seconds.value

    def next_seeds(self, count: int) -> np.ndarray:
        if count < 1:
            raise invalid(f"next_seeds: count must be >= 1, got {count}")
        seeds = np.empty(count, dtype=np.uint64)
        check(library().fp8rl_trainer_next_seeds(self._handle.pointer, count, pointer(seeds, ctypes.c_uint64)))
        return seeds

    def save_state(self, path: bytes) -> None:
        check(library().fp8rl_trainer_save_state(self._handle.pointer, path))

    def load_state(self, path: bytes) -> None:
        check(library().fp8rl_trainer_load_state(self._handle.pointer, path))

    def memory(self) -> _raw.fp8rl_memory_report:
        report = _initialized(_raw.fp8rl_memory_report, "fp8rl_memory_report_init")
        check(library().fp8rl_trainer_memory(self._handle.pointer, ctypes.byref(report)))
        return report
