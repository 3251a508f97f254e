"""fp8rl: FP8 end-to-end reinforcement learning for LLM policies, from Python.

The same FP8 numerics in generation and training (block-scaled E4M3 linear
layers, optional FP8 KV cache and attention), scales recalibrated after every
step, token-level importance correction with mismatch metrics.

A whole GRPO step::

    import fp8rl
    policy = fp8rl.Policy.random(fp8rl.ModelConfig(vocab_size=32, hidden_size=64, num_layers=2,
                                                   num_attention_heads=4, num_key_value_heads=2,
                                                   intermediate_size=128, max_position_embeddings=32),
                                 seed=1, recipe=fp8rl.Recipe.fp8_full())
    policy.start_training(loss=fp8rl.LossConfig(group_size=4), optimizer=fp8rl.OptimizerConfig(learning_rate=1e-2))
    rollouts = policy.generate([[8, 9, 10]] * 4, fp8rl.SamplingParams(max_new_tokens=6))
    rewards = [float((c.tokens == 7).mean()) for c in rollouts]        # the host's environment
    metrics = policy.train_step(rollouts, rewards=rewards)

Text: ``fp8rl.Tokenizer.load(folder)`` (or ``policy.tokenizer()`` for ``Policy.load(folder)``) encodes and decodes
as Hugging Face ``tokenizers`` does for byte-level BPE (Llama 3, Qwen2/2.5/3, GPT-2)::

    with fp8rl.Tokenizer.load("models/Qwen2.5-0.5B") as tokenizer:
        ids = tokenizer.encode("Hello")                     # np.ndarray[int32]
        text = tokenizer.decode(ids, skip_special_tokens=True)

The library is loaded at import (``FP8RL_LIBRARY`` names another build) and
its version checked. ``fp8rl._raw`` mirrors the C header one to one.
"""
from ._library import library as _load, library_path
from .configs import (CalibrationConfig, ImportanceConfig, LossConfig, ModelConfig, OptimizerConfig, Recipe,
                      SamplingParams, TrainerConfig)
from .communicator import Communicator
from .context import Context
from .enums import (Aggregation, Backend, Baseline, FinishReason, ImportanceMode, KlEstimator, LogLevel, LossKind,
                    LrSchedule, ModelFamily, Precision, RopeScaling, SaveDtype, ScaleFormat)
from .errors import (BackendUnavailableError, CorruptDataError, CudaError, DistributedError, Fp8rlError, Fp8rlIOError,
                     InternalError, InvalidArgumentError, NonFiniteError, OutOfMemoryError, UnsupportedError,
                     VersionMismatchError)
from .policy import Policy
from .rollouts import Completion, Rollouts
from .tokenizer import SpecialTokenIds, Tokenizer

_load()  # fail at import, not at the first call, if the library is missing or of another version

__version__ = _load().fp8rl_version_string().decode()

__all__ = [
    "Aggregation", "Backend", "BackendUnavailableError", "Baseline", "CalibrationConfig", "Communicator", "Completion",
    "Context", "CorruptDataError", "CudaError", "DistributedError", "FinishReason", "Fp8rlError", "Fp8rlIOError", "ImportanceConfig",
    "ImportanceMode", "InternalError", "InvalidArgumentError", "KlEstimator", "LogLevel", "LossConfig", "LossKind",
    "LrSchedule", "ModelConfig", "ModelFamily", "NonFiniteError", "OptimizerConfig", "OutOfMemoryError", "Policy",
    "Precision", "Recipe", "RopeScaling", "Rollouts", "SamplingParams", "SaveDtype", "ScaleFormat", "SpecialTokenIds",
    "Tokenizer", "TrainerConfig", "UnsupportedError", "VersionMismatchError", "library_path",
]
