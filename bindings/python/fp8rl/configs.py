"""Plain dataclasses for the C API's option structs.

Their defaults are the library's (a test compares each with its
``fp8rl_*_init`` function). Each knows how to fill its C struct; values are
checked by the library, which names the offending field.
"""
from __future__ import annotations

import ctypes
import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, Tuple, Type, TypeVar, cast

from . import _raw
from ._library import library
from .enums import (Aggregation, Baseline, ImportanceMode, KlEstimator, LossKind, LrSchedule, ModelFamily, Precision,
                    RopeScaling, ScaleFormat)
from .errors import check, invalid


class _CStruct:
    """Copies a dataclass's fields to and from the C struct of the same field names.

    `_c_names` maps a dataclass field to its C field where the names differ.
    """

    _c_names: ClassVar[Dict[str, str]] = {}

    def _write(self, struct: ctypes.Structure, skip: Tuple[str, ...] = ()) -> None:
        for item in dataclasses.fields(cast(Any, self)):
            if item.name not in skip:
                setattr(struct, self._c_names.get(item.name, item.name), getattr(self, item.name))

    @classmethod
    def _read(cls, struct: ctypes.Structure, **extra: Any):
        values = {}
        for item in dataclasses.fields(cast(Any, cls)):
            if item.name in extra:
                continue
            raw = getattr(struct, cls._c_names.get(item.name, item.name))
            default = item.default
            if isinstance(default, bool):
                raw = bool(raw)
            elif isinstance(default, int) and type(default) is not int:  # an IntEnum
                raw = type(default)(raw)
            values[item.name] = raw
        return cls(**values, **extra)


_Struct = TypeVar("_Struct", bound=ctypes.Structure)


def _initialized(struct_type: Type[_Struct], init_name: str) -> _Struct:
    struct = struct_type()
    check(getattr(library(), init_name)(ctypes.byref(struct)))
    return struct


@dataclass
class ModelConfig(_CStruct):
    """A decoder-only transformer's architecture; the fields are the Hugging Face ``config.json`` keys.

    The Mixture-of-Experts fields (``num_experts`` to ``router_aux_loss_coef``)
    are Qwen3-MoE's (``family=ModelFamily.QWEN3_MOE``) and stay at their
    defaults for the dense families. ``intermediate_size`` is then the width
    of the dense layers (those in ``mlp_only_layers`` or skipped by
    ``decoder_sparse_step``).
    """

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    intermediate_size: int
    max_position_embeddings: int
    family: ModelFamily = ModelFamily.LLAMA
    head_dim: int = 0  #: 0 = hidden_size / num_attention_heads
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling = RopeScaling.NONE
    rope_factor: float = 1.0
    rope_low_freq_factor: float = 1.0
    rope_high_freq_factor: float = 4.0
    rope_original_max_position_embeddings: int = 0
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    qk_norm: bool = False
    bos_token_id: int = -1
    eos_token_ids: Tuple[int, ...] = ()
    num_experts: int = 0  #: experts of each sparse layer
    num_experts_per_tok: int = 0  #: experts each token is routed to (top-k), in [1, num_experts]
    moe_intermediate_size: int = 0  #: SwiGLU width of each expert
    norm_topk_prob: bool = False  #: renormalize the chosen experts' router weights to sum 1
    decoder_sparse_step: int = 1  #: layer i is sparse when (i + 1) % decoder_sparse_step == 0 ...
    mlp_only_layers: Tuple[int, ...] = ()  #: ... and i is not one of these
    router_aux_loss_coef: float = 0.001  #: the file's load-balancing coefficient, kept with the model

    def _to_c(self) -> _raw.fp8rl_model_config:
        struct = _initialized(_raw.fp8rl_model_config, "fp8rl_model_config_init")
        eos = tuple(self.eos_token_ids)
        if len(eos) > _raw.FP8RL_MAX_EOS_TOKEN_IDS:
            raise invalid(f"eos_token_ids: at most {_raw.FP8RL_MAX_EOS_TOKEN_IDS} tokens, got {len(eos)}")
        dense = tuple(self.mlp_only_layers)
        if len(dense) > _raw.FP8RL_MAX_MLP_ONLY_LAYERS:
            raise invalid(f"mlp_only_layers: at most {_raw.FP8RL_MAX_MLP_ONLY_LAYERS} layers, got {len(dense)}")
        self._write(struct, skip=("eos_token_ids", "mlp_only_layers"))
        for index, token in enumerate(eos):
            struct.eos_token_ids[index] = token
        struct.num_eos_token_ids = len(eos)
        for index, layer in enumerate(dense):
            struct.mlp_only_layers[index] = layer
        struct.num_mlp_only_layers = len(dense)
        return struct

    @classmethod
    def _from_c(cls, struct: _raw.fp8rl_model_config) -> "ModelConfig":
        eos = tuple(struct.eos_token_ids[i] for i in range(struct.num_eos_token_ids))
        dense = tuple(struct.mlp_only_layers[i] for i in range(struct.num_mlp_only_layers))
        return cls._read(struct, eos_token_ids=eos, mlp_only_layers=dense)

    def parameter_count(self) -> int:
        """The number of weights (validates the configuration; raises InvalidArgumentError naming a bad field)."""
        count = ctypes.c_int64()
        check(library().fp8rl_model_config_parameter_count(ctypes.byref(self._to_c()), ctypes.byref(count)))
        return count.value

    def active_parameter_count(self) -> int:
        """The weights one token computes with: only num_experts_per_tok experts of a sparse layer count.

        Equals parameter_count() for a dense model; validates like it.
        """
        count = ctypes.c_int64()
        check(library().fp8rl_model_config_active_parameter_count(ctypes.byref(self._to_c()), ctypes.byref(count)))
        return count.value


@dataclass
class Recipe(_CStruct):
    """The precision recipe, for generation and training alike.

    Embedding lookups, norms, softmax and RoPE always run in BF16/FP32.
    FP8 linear layers use 128x128 weight blocks and 1x128 activation tiles;
    FP8 attention needs the FP8 KV cache. ``head`` FP8 runs the LM head's
    GEMMs in FP8 as well (off by default, as the published recipe keeps it).
    """

    linear: Precision = Precision.BF16
    scale_format: ScaleFormat = ScaleFormat.FP32
    kv_cache: Precision = Precision.BF16
    attention: Precision = Precision.BF16
    bf16_first_layers: int = 0
    bf16_last_layers: int = 0
    head: Precision = Precision.BF16

    @classmethod
    def bf16(cls) -> "Recipe":
        """Everything in BF16: the baseline."""
        return cls()

    @classmethod
    def fp8(cls, **overrides: Any) -> "Recipe":
        """FP8 linear layers (fprop, dgrad, wgrad); BF16 KV cache and attention."""
        return cls(linear=Precision.FP8, **overrides)

    @classmethod
    def fp8_full(cls, **overrides: Any) -> "Recipe":
        """FP8 linear layers, FP8 KV cache and FP8 attention."""
        return cls(linear=Precision.FP8, kv_cache=Precision.FP8, attention=Precision.FP8, **overrides)

    def _to_c(self) -> _raw.fp8rl_recipe:
        struct = _initialized(_raw.fp8rl_recipe, "fp8rl_recipe_init")
        self._write(struct)
        return struct


@dataclass
class SamplingParams(_CStruct):
    """How completions are drawn: softmax(logits / temperature) restricted to top_k, then top_p.

    temperature 0 is greedy (the recorded log-prob is then 0). ``batch_slots``
    and ``max_tokens_per_step`` change speed and memory, never the results.
    ``record_experts`` keeps, for a Mixture-of-Experts policy, the experts
    every fed token was routed to (``Rollouts.experts``).
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    max_new_tokens: int = 64
    stop_token_ids: Tuple[int, ...] = ()
    stop_at_eos: bool = True
    batch_slots: int = 0
    max_tokens_per_step: int = 2048
    record_experts: bool = False

    def _to_c(self) -> Tuple[_raw.fp8rl_sampling_options, Any]:
        """The struct and the stop-token buffer it points at (keep both alive during the call)."""
        struct = _initialized(_raw.fp8rl_sampling_options, "fp8rl_sampling_options_init")
        stops = (ctypes.c_int32 * max(1, len(self.stop_token_ids)))(*self.stop_token_ids)
        self._write(struct, skip=("stop_token_ids",))
        struct.stop_token_ids = ctypes.cast(stops, ctypes.POINTER(ctypes.c_int32)) if self.stop_token_ids else None
        struct.num_stop_token_ids = len(self.stop_token_ids)
        return struct, stops


@dataclass
class ImportanceConfig(_CStruct):
    """Token-level importance weights w = exp(logp_old - logp_gen) against the generator's log-probs.

    ``mode``: OFF (the default: w = 1; with one recipe for generation and
    training the log-probs agree bit for bit, so there is nothing to correct),
    PLAIN, TRUNCATED (w clamped to [low, high]; high is the cap), TOKEN_MASKED
    (0 outside [low, high]) or SEQUENCE_MASKED (a whole sequence gets 0 when
    the geometric mean of its weights is outside [low, high]). Any mode but
    OFF makes a policy-gradient step need the generator's log-probs.
    """

    mode: ImportanceMode = ImportanceMode.OFF
    low: float = 0.0
    high: float = 2.0

    def _to_c(self) -> _raw.fp8rl_importance_options:
        struct = _initialized(_raw.fp8rl_importance_options, "fp8rl_importance_options_init")
        self._write(struct)
        return struct


@dataclass
class LossConfig(_CStruct):
    """The training loss.

    ``kind``: GRPO/PPO clipped policy gradient (with token-level importance
    correction against the generator's log-probs, ``importance``, an optional
    KL penalty to a reference, and group-normalized advantages from rewards)
    or SFT cross-entropy. ``temperature`` is the training distribution's; use
    the sampling temperature (with top_k 0 and top_p 1) for training log-probs
    equal to the generator's.
    """

    kind: LossKind = LossKind.CLIPPED_POLICY_GRADIENT
    clip_low: float = 0.2
    clip_high: float = 0.2
    importance: ImportanceConfig = field(default_factory=ImportanceConfig)
    kl_coefficient: float = 0.0
    kl_estimator: KlEstimator = KlEstimator.K3
    aggregation: Aggregation = Aggregation.TOKEN_MEAN
    group_size: int = 1
    baseline: Baseline = Baseline.GROUP_MEAN
    normalize_by_std: bool = False
    sample_std: bool = True
    advantage_epsilon: float = 1e-6
    temperature: float = 1.0

    _c_names: ClassVar[Dict[str, str]] = {"kind": "loss"}

    def _write(self, struct: ctypes.Structure, skip: Tuple[str, ...] = ()) -> None:
        super()._write(struct, skip=skip + ("importance",))
        self.importance._write(struct.importance)  # the embedded fp8rl_importance_options keeps its struct_size


@dataclass
class OptimizerConfig(_CStruct):
    """AdamW on the FP32 master weights, with global gradient-norm clipping and a learning-rate schedule."""

    learning_rate: float = 1e-6
    schedule: LrSchedule = LrSchedule.CONSTANT
    warmup_steps: int = 0
    total_steps: int = 0
    min_lr_ratio: float = 0.0
    beta1: float = 0.9
    beta2: float = 0.999
    adam_epsilon: float = 1e-8
    weight_decay: float = 0.01  #: on matrices only
    max_grad_norm: float = 1.0  #: 0 turns clipping off


@dataclass
class CalibrationConfig(_CStruct):
    """How Q/K/V scales follow the activations: the percentile of per-token maxima, times margin, maps to max_value."""

    percentile: float = 99.9
    margin: float = 1.05
    max_value: float = 448.0

    def _to_c(self) -> _raw.fp8rl_calibration_options:
        struct = _initialized(_raw.fp8rl_calibration_options, "fp8rl_calibration_options_init")
        self._write(struct)
        return struct


@dataclass
class TrainerConfig:
    """Everything a trainer is created with.

    The last two fields concern Mixture-of-Experts (Qwen3-MoE) policies only
    and are ignored for dense ones:

    ``router_aux_loss_coef`` (finite, >= 0; default 0) weighs Hugging Face's
    Qwen3-MoE load-balancing loss in the training loss (per micro-batch, over
    its fed tokens and sparse layers). The default 0 leaves the RL loss alone,
    as NeMo RL and slime train; the model config's own ``router_aux_loss_coef``
    is not used. The metrics report the load-balancing loss
    (``router_aux_loss``, without the coefficient) whatever the coefficient.

    ``routing_replay``: the training forward routes each token to the experts
    the generator chose (recorded with ``SamplingParams(record_experts=True)``)
    instead of its router's choice, with gate weights from its own router: for
    generation and training in different recipes. The rollouts given to
    ``Policy.train_step``/``train_iteration`` must then have recorded their
    experts.
    """

    loss: LossConfig = field(default_factory=LossConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    micro_batch_tokens: int = 2048  #: activations of one micro-batch are kept for its backward pass
    minibatches: int = 1  #: optimizer steps per Policy.train_iteration (consecutive mini-batches of the rollouts)
    recalibrate_after_step: bool = True
    freeze_attention_scales: bool = False  #: keep the policy's Q/K/V scales; recalibration requantizes weights only
    seed: int = 0  #: seed of the trainer's prompt-seed stream (Policy.next_seeds)
    router_aux_loss_coef: float = 0.0  #: MoE: weight of the load-balancing loss in the loss
    routing_replay: bool = False  #: MoE: train with the generator's recorded experts

    def _to_c(self) -> _raw.fp8rl_trainer_options:
        struct = _initialized(_raw.fp8rl_trainer_options, "fp8rl_trainer_options_init")
        self.loss._write(struct)
        self.optimizer._write(struct)
        self.calibration._write(struct.calibration)  # embedded, with its own struct_size
        struct.micro_batch_tokens = self.micro_batch_tokens
        struct.minibatches = self.minibatches
        struct.recalibrate_after_step = self.recalibrate_after_step
        struct.freeze_attention_scales = self.freeze_attention_scales
        struct.seed = self.seed
        struct.router_aux_loss_coef = self.router_aux_loss_coef
        struct.routing_replay = self.routing_replay
        return struct
