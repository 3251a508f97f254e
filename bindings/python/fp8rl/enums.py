"""The C API's enums as IntEnums; each value is the generated raw constant, so the header stays the one source."""
from __future__ import annotations

import enum

from . import _raw as r


class Backend(enum.IntEnum):
    AUTO = r.FP8RL_BACKEND_AUTO
    CPU = r.FP8RL_BACKEND_CPU
    CUDA = r.FP8RL_BACKEND_CUDA


class LogLevel(enum.IntEnum):
    DEBUG = r.FP8RL_LOG_DEBUG
    INFO = r.FP8RL_LOG_INFO
    WARNING = r.FP8RL_LOG_WARNING
    ERROR = r.FP8RL_LOG_ERROR
    OFF = r.FP8RL_LOG_OFF


class Precision(enum.IntEnum):
    BF16 = r.FP8RL_PRECISION_BF16
    FP8 = r.FP8RL_PRECISION_FP8


class ScaleFormat(enum.IntEnum):
    FP32 = r.FP8RL_SCALE_FP32
    POW2 = r.FP8RL_SCALE_POW2


class SaveDtype(enum.IntEnum):
    """Weight dtypes fp8rl_policy_save() writes."""

    F32 = r.FP8RL_DTYPE_F32
    BF16 = r.FP8RL_DTYPE_BF16


class ModelFamily(enum.IntEnum):
    LLAMA = r.FP8RL_MODEL_FAMILY_LLAMA
    QWEN2 = r.FP8RL_MODEL_FAMILY_QWEN2
    QWEN3 = r.FP8RL_MODEL_FAMILY_QWEN3
    QWEN3_MOE = r.FP8RL_MODEL_FAMILY_QWEN3_MOE  #: Qwen3 attention; sparse layers of routed experts


class RopeScaling(enum.IntEnum):
    NONE = r.FP8RL_ROPE_SCALING_NONE
    LLAMA3 = r.FP8RL_ROPE_SCALING_LLAMA3


class FinishReason(enum.IntEnum):
    STOP = r.FP8RL_FINISH_STOP
    LENGTH = r.FP8RL_FINISH_LENGTH
    CONTEXT_FULL = r.FP8RL_FINISH_CONTEXT_FULL


class ImportanceMode(enum.IntEnum):
    OFF = r.FP8RL_IMPORTANCE_OFF
    PLAIN = r.FP8RL_IMPORTANCE_PLAIN
    TRUNCATED = r.FP8RL_IMPORTANCE_TRUNCATED
    TOKEN_MASKED = r.FP8RL_IMPORTANCE_TOKEN_MASKED
    SEQUENCE_MASKED = r.FP8RL_IMPORTANCE_SEQUENCE_MASKED


class LossKind(enum.IntEnum):
    CLIPPED_POLICY_GRADIENT = r.FP8RL_LOSS_CLIPPED_POLICY_GRADIENT
    CROSS_ENTROPY = r.FP8RL_LOSS_CROSS_ENTROPY


class KlEstimator(enum.IntEnum):
    K1 = r.FP8RL_KL_K1
    K3 = r.FP8RL_KL_K3


class Aggregation(enum.IntEnum):
    TOKEN_MEAN = r.FP8RL_AGGREGATION_TOKEN_MEAN
    SEQUENCE_MEAN = r.FP8RL_AGGREGATION_SEQUENCE_MEAN


class Baseline(enum.IntEnum):
    GROUP_MEAN = r.FP8RL_BASELINE_GROUP_MEAN
    LEAVE_ONE_OUT = r.FP8RL_BASELINE_LEAVE_ONE_OUT


class LrSchedule(enum.IntEnum):
    CONSTANT = r.FP8RL_LR_CONSTANT
    WARMUP_CONSTANT = r.FP8RL_LR_WARMUP_CONSTANT
    WARMUP_COSINE = r.FP8RL_LR_WARMUP_COSINE
