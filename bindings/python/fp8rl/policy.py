"""Policy: a model's weights and precision recipe, which generates rollouts and trains on them in place."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Optional, Tuple

import numpy as np

from . import _raw
from ._arrays import float_vector, pointer, seed_vector, token_sequences
from ._handle import Handle
from ._library import library
from .configs import CalibrationConfig, ModelConfig, Recipe, SamplingParams, TrainerConfig, _initialized
from .context import Context
from .enums import Backend, SaveDtype
from .errors import check, invalid
from .rollouts import Rollouts
from .tokenizer import Tokenizer
from .training import Trainer


class Policy:
    """A policy: FP32 master weights, a precision recipe and the compute copies it implies.

    Make one with ``Policy.random(config, seed)`` or ``Policy.load(folder)``.
    By default each policy gets its own CPU context, so policies used from
    different threads run in parallel; pass ``context=`` to share one.

    Release it with ``close()`` or a ``with`` block (garbage collection also
    does). Calls on one policy are serialized by the library.
    """

    def __init__(self, pointer_: ctypes.c_void_p, context: Context, owns_context: bool):
        self._context = context
        self._owns_context = owns_context
        self._handle = Handle(pointer_, library().fp8rl_policy_destroy, "policy", keep=context._handle)
        self._trainer: Optional[Trainer] = None
        self._next_seed = 0
        self.config = self._read_config()

    # ---- construction and lifetime

    @classmethod
    def random(cls, config: ModelConfig, seed: int = 0, *, recipe: Optional[Recipe] = None,
               context: Optional[Context] = None, backend: Backend = Backend.CPU, num_threads: int = 0) -> "Policy":
        """A policy with random weights, the same for the same config and seed on every platform."""
        if not 0 <= seed < 2 ** 64:
            raise invalid(f"seed: must be in [0, 2^64), got {seed}")
        return cls._create(lambda ctx, out: library().fp8rl_policy_create_random(
            ctx._handle.pointer, ctypes.byref(config._to_c()), seed, ctypes.byref(out)), recipe, context, backend,
            num_threads)

    @classmethod
    def load(cls, folder: "str | os.PathLike[str]", *, recipe: Optional[Recipe] = None,
             context: Optional[Context] = None, backend: Backend = Backend.CPU, num_threads: int = 0) -> "Policy":
        """Loads a Hugging Face model folder (config.json, BF16/F16/F32 safetensors, or an FP8 block-quantized
        checkpoint such as export_fp8 writes: that one loads with FP8 linear layers running its stored codes and
        scales, unless `recipe` is given, which requantizes from the dequantized weights)."""
        path = os.fsencode(folder)
        return cls._create(lambda ctx, out: library().fp8rl_policy_load(ctx._handle.pointer, path,
                                                                        ctypes.byref(out)),
                           recipe, context, backend, num_threads)

    @classmethod
    def _create(cls, make, recipe, context, backend, num_threads) -> "Policy":
        owns_context = context is None
        ctx = Context(backend=backend, num_threads=num_threads) if owns_context else context
        out = ctypes.c_void_p()
        try:
            check(make(ctx, out))
        except BaseException:
            if owns_context:
                ctx.close()
            raise
        policy = cls(out, ctx, owns_context)
        if recipe is not None:
            try:
                policy.recipe = recipe
            except BaseException:
                policy.close()  # at once, not when the traceback that references it is collected
                raise
        return policy

    def close(self) -> None:
        """Destroys the trainer, the policy and (if it made it) its context. Idempotent."""
        if self._trainer is not None:
            self._trainer.close()
            self._trainer = None
        self._handle.close()
        if self._owns_context:
            self._context.close()

    def __enter__(self) -> "Policy":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def context(self) -> Context:
        return self._context

    # ---- properties

    def _read_config(self) -> ModelConfig:
        struct = _raw.fp8rl_model_config()
        check(library().fp8rl_model_config_init(ctypes.byref(struct)))
        check(library().fp8rl_policy_get_config(self._handle.pointer, ctypes.byref(struct)))
        return ModelConfig._from_c(struct)

    @property
    def recipe(self) -> Recipe:
        """The precision recipe; setting it requantizes the compute copies."""
        struct = _raw.fp8rl_recipe()
        check(library().fp8rl_recipe_init(ctypes.byref(struct)))
        check(library().fp8rl_policy_get_recipe(self._handle.pointer, ctypes.byref(struct)))
        return Recipe._read(struct)

    @recipe.setter
    def recipe(self, recipe: Recipe) -> None:
        check(library().fp8rl_policy_set_recipe(self._handle.pointer, ctypes.byref(recipe._to_c())))

    @property
    def parameter_count(self) -> int:
        count = ctypes.c_int64()
        check(library().fp8rl_policy_parameter_count(self._handle.pointer, ctypes.byref(count)))
        return count.value

    @property
    def fingerprint(self) -> int:
        """A 64-bit hash of what the policy computes with: compute weights, block scales, attention scales, recipe.

        Data-parallel ranks hold equal fingerprints after every step. As slow as copying the weights.
        """
        value = ctypes.c_uint64()
        check(library().fp8rl_policy_fingerprint(self._handle.pointer, ctypes.byref(value)))
        return value.value

    def memory(self) -> Dict[str, int]:
        """Bytes held, by component (with the trainer's gradients, optimizer state and backward copies if training)."""
        if self._trainer is not None:
            report = self._trainer.memory()
        else:
            report = _initialized(_raw.fp8rl_memory_report, "fp8rl_memory_report_init")
            check(library().fp8rl_policy_memory(self._handle.pointer, ctypes.byref(report)))
        return {item[0]: getattr(report, item[0]) for item in report._fields_ if item[0] != "struct_size"}

    @property
    def attention_scales(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per-layer Q, K and V scales (each [num_layers] float32) of the FP8 KV cache and attention."""
        layers = self.config.num_layers
        q, k, v = (np.empty(layers, dtype=np.float32) for _ in range(3))
        check(library().fp8rl_policy_get_attention_scales(self._handle.pointer, pointer(q, ctypes.c_float),
                                                          pointer(k, ctypes.c_float), pointer(v, ctypes.c_float),
                                                          layers))
        return q, k, v

    @attention_scales.setter
    def attention_scales(self, scales: Tuple[Any, Any, Any]) -> None:
        layers = self.config.num_layers
        if len(scales) != 3:
            raise invalid("attention_scales: expected (q, k, v)")
        q, k, v = (float_vector(s, layers, f"attention_scales[{i}]") for i, s in enumerate(scales))
        check(library().fp8rl_policy_set_attention_scales(self._handle.pointer, pointer(q, ctypes.c_float),
                                                          pointer(k, ctypes.c_float), pointer(v, ctypes.c_float),
                                                          layers))

    # ---- generation

    def generate(self, prompts: Any, sampling: Optional[SamplingParams] = None, *, seeds: Any = None) -> Rollouts:
        """One completion per prompt.

        Args:
            prompts: token-id sequences (a list of lists or 1-D integer arrays, or a 2-D integer array).
            sampling: how to sample; SamplingParams() by default.
            seeds: one unsigned seed per prompt; it alone decides that prompt's draws. By default the
                trainer's seed stream (``next_seeds``) while training, else 0, 1, 2, ... continuing per policy.
        """
        sampling = sampling or SamplingParams()
        tokens, offsets = token_sequences(prompts, self.config.vocab_size, "prompts")
        count = len(offsets) - 1
        seeds = self.next_seeds(count) if seeds is None else seed_vector(seeds, count)
        options, _stops = sampling._to_c()  # _stops: the stop-token buffer options point at
        out = ctypes.c_void_p()
        check(library().fp8rl_policy_generate(self._handle.pointer, pointer(tokens, ctypes.c_int32),
                                              pointer(offsets, ctypes.c_int64), count,
                                              pointer(seeds, ctypes.c_uint64), ctypes.byref(options),
                                              ctypes.byref(out)))
        handle = Handle(out, library().fp8rl_rollout_destroy, "rollout")
        seconds = ctypes.c_double()
        check(library().fp8rl_rollout_seconds(out, ctypes.byref(seconds)))
        return Rollouts(tokens, offsets, handle=handle, seeds=seeds, generation_seconds=seconds.value)

    def score(self, rollouts: Rollouts, sampling: Optional[SamplingParams] = None) -> np.ndarray:
        """Log-probs of the rollouts' completion tokens under this policy, as generation with `sampling` records them."""
        options, _stops = (sampling or SamplingParams())._to_c()
        tokens, offsets, prompt_lengths = rollouts.sequences()
        out = np.empty(len(rollouts.tokens), dtype=np.float32)
        check(library().fp8rl_policy_score(self._handle.pointer, pointer(tokens, ctypes.c_int32),
                                           pointer(offsets, ctypes.c_int64), len(rollouts),
                                           pointer(prompt_lengths, ctypes.c_int64), ctypes.byref(options),
                                           pointer(out, ctypes.c_float), out.size))
        return out

    def rollouts(self, prompts: Any, completions: Any, logprobs: Any = None) -> Rollouts:
        """Wraps prompts and completions made elsewhere, checked against this policy's vocabulary."""
        return Rollouts.from_sequences(prompts, completions, self.config.vocab_size, logprobs)

    def next_seeds(self, count: int) -> np.ndarray:
        """The next `count` prompt seeds ([count] uint64): the trainer's stream while training, else a counter."""
        if self._trainer is not None:
            return self._trainer.next_seeds(count)
        if count < 1:
            raise invalid(f"next_seeds: count must be >= 1, got {count}")
        seeds = np.arange(self._next_seed, self._next_seed + count, dtype=np.uint64)
        self._next_seed += count
        return seeds

    # ---- training

    def start_training(self, config: Optional[TrainerConfig] = None, **fields: Any) -> None:
        """Creates the trainer (replacing any previous one, whose optimizer state is dropped).

        Pass a TrainerConfig, or its fields as keywords: ``loss=LossConfig(...)``,
        ``optimizer=OptimizerConfig(...)``, ``calibration=...``, ``micro_batch_tokens``,
        ``minibatches``, ``recalibrate_after_step``, ``freeze_attention_scales``, ``seed``, and
        for Mixture-of-Experts policies ``router_aux_loss_coef`` and ``routing_replay``.
        """
        if config is not None and fields:
            raise invalid("start_training: pass a TrainerConfig or keyword fields, not both")
        config = config or TrainerConfig(**fields)
        trainer = Trainer(self._handle, config, self.config)
        if self._trainer is not None:
            self._trainer.close()
        self._trainer = trainer

    @property
    def training(self) -> Optional[TrainerConfig]:
        """The trainer's configuration, or None before start_training()."""
        return None if self._trainer is None else self._trainer.config

    def _live_trainer(self) -> Trainer:
        self._handle.pointer  # raises if closed
        if self._trainer is None:
            self.start_training()
        assert self._trainer is not None
        return self._trainer

    def train_step(self, rollouts: Rollouts, rewards: Any = None, advantages: Any = None, *,
                   ref_logprobs: Any = None, old_logprobs: Any = None) -> Dict[str, Any]:
        """One training step on the rollouts; the policy then generates with the new weights and scales.

        Recomputes the log-probs, measures the mismatch against the generator's,
        forms advantages from `rewards` (per sequence, normalized within groups of
        ``loss.group_size`` consecutive sequences) or takes `advantages`, runs the
        loss forward and backward, clips the gradient, takes an AdamW step and
        recalibrates. Creates a trainer with the defaults if start_training() was
        not called. `ref_logprobs` (per completion token) feed the KL penalty;
        `old_logprobs` (per completion token) replace the policy's own logp_old.
        It is train_iteration() with one mini-batch.

        Mixture-of-Experts policies: when the rollouts recorded their experts
        (``SamplingParams(record_experts=True)``), the step is given the
        generator's choices; the metrics then report how many (fed token, sparse
        layer, slot) choices were compared (``routing_choices``) and the share
        the training router made alike (``routing_agreement``, exactly 1 when
        generation and training run one recipe; None when none were compared),
        and a trainer with ``routing_replay`` routes with them (it raises
        InvalidArgumentError for rollouts without them). ``router_aux_loss`` is the
        load-balancing loss (0 for a dense policy), weighed into ``loss`` by the
        trainer's ``router_aux_loss_coef``.

        Returns the step's metrics: loss, grad_norm, learning_rate, clip_fraction,
        entropy, token_mult_prob_error, gen_kl_error, the routing metrics, the
        time breakdown and more (the fields of ``fp8rl_train_metrics``). A
        non-finite gradient is not an error: ``skipped`` is then True and nothing
        changed.
        """
        if not isinstance(rollouts, Rollouts):
            raise invalid(f"train_step: expected Rollouts, got {type(rollouts).__name__}")
        return self._live_trainer().step(rollouts, rewards, advantages, ref_logprobs, old_logprobs)

    def train_iteration(self, rollouts: Rollouts, rewards: Any = None, advantages: Any = None, *,
                        ref_logprobs: Any = None, old_logprobs: Any = None) -> Dict[str, Any]:
        """One PPO iteration: ``minibatches`` optimizer steps on consecutive mini-batches of the rollouts.

        logp_old (the policy before the iteration, or `old_logprobs`), the
        advantages and the importance weights are fixed once, so from the
        second mini-batch on the ratio departs from 1 and the clip acts. Returns
        the iteration's metrics (as train_step(); ``skipped``/``clipped`` then
        say whether any step was) with ``minibatch_metrics``, one dict per step.
        Recorded expert choices are passed as train_step() passes them, each
        mini-batch taking its sequences' share.
        """
        if not isinstance(rollouts, Rollouts):
            raise invalid(f"train_iteration: expected Rollouts, got {type(rollouts).__name__}")
        return self._live_trainer().iterate(rollouts, rewards, advantages, ref_logprobs, old_logprobs)

    def recompute_logprobs(self, rollouts: Rollouts) -> np.ndarray:
        """The completion tokens' log-probs under the training distribution ([tokens] float32)."""
        return self._live_trainer().recompute_logprobs(rollouts)

    def recalibrate(self, calibration_prompts: Any = None, calibration: Optional[CalibrationConfig] = None) -> float:
        """Requantizes the weights with fresh block scales and refreshes the Q/K/V scales.

        While training, the scales come from the last step's forward pass and
        this returns the seconds it took. With `calibration_prompts` (token-id
        sequences), the Q/K/V scales are measured on them instead (and 0 is returned).
        """
        if calibration_prompts is None:
            if self._trainer is None:
                raise invalid("recalibrate: without calibration prompts it applies the last training step's "
                              "measurements, so it needs start_training() first")
            return self._trainer.recalibrate()
        tokens, offsets = token_sequences(calibration_prompts, self.config.vocab_size, "calibration_prompts")
        options = (calibration or CalibrationConfig())._to_c()
        check(library().fp8rl_policy_recalibrate_attention_scales(
            self._handle.pointer, pointer(tokens, ctypes.c_int32), pointer(offsets, ctypes.c_int64),
            len(offsets) - 1, ctypes.byref(options)))
        return 0.0

    def save_training_state(self, path: "str | os.PathLike[str]") -> None:
        """Writes master weights, AdamW moments, step counters, seed stream, recipe and scales to one file, atomically."""
        self._live_trainer().save_state(os.fsencode(path))

    def load_training_state(self, path: "str | os.PathLike[str]") -> None:
        """Restores a state save_training_state() wrote; on any error nothing changes."""
        self._live_trainer().load_state(os.fsencode(path))

    # ---- files

    def save(self, folder: "str | os.PathLike[str]", dtype: SaveDtype = SaveDtype.BF16) -> None:
        """Writes a Hugging Face folder (config.json, model.safetensors) of the master weights in `dtype`."""
        check(library().fp8rl_policy_save(self._handle.pointer, os.fsencode(folder), dtype))

    def export_fp8(self, folder: "str | os.PathLike[str]") -> None:
        """Writes the FP8 compute weights with their block scales as a Hugging Face folder (``weight_scale_inv``)."""
        check(library().fp8rl_policy_export_fp8(self._handle.pointer, os.fsencode(folder)))

    def tokenizer(self) -> Tokenizer:
        """The tokenizer of the folder this policy was loaded from (``Policy.load``): its tokenizer.json and configs,
        read now. InvalidArgumentError for a policy not loaded from a folder (``Policy.random``). The tokenizer is
        independent of the policy: it may outlive it."""
        out = ctypes.c_void_p()
        check(library().fp8rl_policy_load_tokenizer(self._handle.pointer, ctypes.byref(out)))
        return Tokenizer(out)

    def copy_weights_from(self, source: "Policy") -> None:
        """Takes `source`'s master weights and attention scales, requantized in this policy's own recipe."""
        check(library().fp8rl_policy_copy_weights(self._handle.pointer, source._handle.pointer))
