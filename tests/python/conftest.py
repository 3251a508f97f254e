"""Shared helpers of the Python binding's tests.

The tests run against the library FP8RL_LIBRARY names and the package on
PYTHONPATH (tests/python/CMakeLists.txt sets both). Every model is the tiny
Llama of examples/rl_loop.c, so a whole suite takes seconds on two cores.
"""
from __future__ import annotations

import ctypes
import os

import numpy as np
import pytest

import fp8rl
from fp8rl._library import library

SANITIZED = os.environ.get("FP8RL_SANITIZED") == "1"

#: The tiny Llama of examples/rl_loop.c.
TINY = dict(vocab_size=32, hidden_size=64, num_layers=2, num_attention_heads=4, num_key_value_heads=2,
            intermediate_size=128, max_position_embeddings=32)

#: Metrics that are wall-clock times (never compared for equality).
TIMING_METRICS = {"tokens_per_second", "generation_seconds", "recompute_seconds", "train_seconds",
                  "recalibration_seconds", "recalibration_fraction"}


def tiny_config(**overrides) -> fp8rl.ModelConfig:
    return fp8rl.ModelConfig(**{**TINY, **overrides})


def tiny_policy(seed: int = 1, recipe: fp8rl.Recipe | None = None, **kwargs) -> fp8rl.Policy:
    return fp8rl.Policy.random(tiny_config(), seed=seed, recipe=recipe or fp8rl.Recipe.fp8_full(), **kwargs)


def deterministic_metrics(metrics: dict) -> dict:
    """The metrics without the wall-clock ones: what must repeat exactly for the same work."""
    return {key: value for key, value in metrics.items() if key not in TIMING_METRICS}


def bits(array: np.ndarray) -> list:
    """The bit patterns of a float32 array, so that comparisons are bitwise (and NaN-safe)."""
    return np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).tolist()


def last_error_message() -> str:
    return library().fp8rl_last_error_message().decode()


def build_features() -> int:
    features = ctypes.c_uint32()
    fp8rl.errors.check(library().fp8rl_build_features(ctypes.byref(features)))
    return features.value


@pytest.fixture
def policy():
    """A fresh tiny policy with the FP8 recipe of the C example, closed after the test."""
    with tiny_policy() as made:
        yield made


@pytest.fixture
def forbid_c(monkeypatch):
    """forbid_c("fp8rl_policy_generate", ...): replaces those library functions with spies that fail the test if
    called, so an error raised afterwards must have come from the binding's own checks, before C.

    The library object caches each bound function as an attribute; the package looks it up on every call
    (``library().fp8rl_...``), so replacing the attribute intercepts every call; monkeypatch restores it.
    """
    lib = library()
    calls = []

    def install(*names):
        for name in names:
            getattr(lib, name)  # a typo must not silently install a spy for a function nobody calls

            def spy(*args, _name=name):
                calls.append(_name)
                raise AssertionError(f"{_name} reached the library")

            monkeypatch.setattr(lib, name, spy)
        return calls

    return install

