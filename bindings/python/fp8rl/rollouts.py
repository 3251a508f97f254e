"""Rollouts: prompts with one completion each, their generation log-probs and why each ended."""
from __future__ import annotations

import ctypes
import functools
from typing import Any, NamedTuple, Optional

import numpy as np

from . import _raw
from ._arrays import borrowed, float_vector, pointer, token_sequences
from ._handle import Handle
from ._library import library
from .enums import FinishReason
from .errors import check, invalid


class Completion(NamedTuple):
    """One completion. For generated rollouts the arrays are read-only views of the library's memory (no copy)."""

    tokens: np.ndarray  # [length] int32
    logprobs: Optional[np.ndarray]  # [length] float32, the generator's; None if not known
    finish_reason: Optional[FinishReason]


class Rollouts:
    """A batch of prompts, each with one completion.

    Flat layout, as the C API uses it: completion i is
    ``tokens[offsets[i]:offsets[i + 1]]``, with its generation log-probs at the
    same positions of ``logprobs``; prompt i is
    ``prompt_tokens[prompt_offsets[i]:prompt_offsets[i + 1]]``.

    ``Policy.generate`` makes them; ``Rollouts.from_sequences`` wraps
    completions made elsewhere (for SFT, or scoring). A generated batch holds
    the library's copy until ``close()`` (or garbage collection) and until the
    last array view of it is gone.
    """

    def __init__(self, prompt_tokens: np.ndarray, prompt_offsets: np.ndarray, *, handle: Handle | None = None,
                 seeds: np.ndarray | None = None, generation_seconds: float = 0.0, completions: Any = None,
                 logprobs: Any = None, vocab_size: int = 0):
        self.prompt_tokens = prompt_tokens  # [prompt tokens] int32
        self.prompt_offsets = prompt_offsets  # [n + 1] int64
        self.seeds = seeds  # [n] uint64, None unless generated
        self.generation_seconds = generation_seconds  # wall time of the generation (0 if not generated here)
        self._handle = handle
        self._given = None
        if handle is None:
            tokens, offsets = token_sequences(completions, vocab_size, "completions")
            if len(offsets) != len(prompt_offsets):
                raise invalid(f"completions: {len(offsets) - 1} completions for {len(prompt_offsets) - 1} prompts")
            self._given = (tokens, None if logprobs is None else _flat_logprobs(logprobs, offsets), offsets)

    @classmethod
    def from_sequences(cls, prompts: Any, completions: Any, vocab_size: int, logprobs: Any = None) -> "Rollouts":
        """Wraps prompts and completions made elsewhere (lists of token-id sequences, one completion per prompt).

        `logprobs` (one array per completion) are the generator's log-probs; give them for importance
        correction and the mismatch metrics.
        """
        prompt_tokens, prompt_offsets = token_sequences(prompts, vocab_size, "prompts")
        return cls(prompt_tokens, prompt_offsets, completions=completions, logprobs=logprobs, vocab_size=vocab_size)

    def __len__(self) -> int:
        return len(self.prompt_offsets) - 1

    def __enter__(self) -> "Rollouts":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Releases the library's copy (once no array view of it remains). Idempotent."""
        if self._handle is not None:
            self.__dict__.pop("_flat", None)  # a closed batch is closed whether or not its arrays were read
        self._handle = None

    @property
    def _live(self) -> Handle:
        if self._handle is None:
            raise invalid("these rollouts are closed")
        return self._handle

    def __getitem__(self, index: int) -> Completion:
        count = len(self)
        if not -count <= index < count:
            raise IndexError(f"completion {index} of {count}")
        index %= count
        if self._given is not None:
            tokens, logprobs, offsets = self._given
            span = slice(offsets[index], offsets[index + 1])
            return Completion(tokens[span], None if logprobs is None else logprobs[span], None)
        c_tokens, c_logprobs = ctypes.POINTER(ctypes.c_int32)(), ctypes.POINTER(ctypes.c_float)()
        length, finish = ctypes.c_int64(), _raw.fp8rl_finish_reason()
        handle = self._live
        check(library().fp8rl_rollout_get(handle.pointer, index, ctypes.byref(c_tokens), ctypes.byref(c_logprobs),
                                          ctypes.byref(length), ctypes.byref(finish)))
        return Completion(borrowed(handle, c_tokens, length.value, np.int32),
                          borrowed(handle, c_logprobs, length.value, np.float32), FinishReason(finish.value))

    def experts(self, index: int) -> np.ndarray:
        """[positions, sparse layers, k] int32: the experts completion ``index``'s fed tokens were routed to.

        Best first, positions 0 .. prompt + completion length - 2, sparse layers
        in layer order; recorded with ``SamplingParams(record_experts=True)`` on a
        Mixture-of-Experts policy, else it has no positions. Valid while the
        rollouts are open. ``Policy.train_step`` and ``train_iteration`` pass
        recorded choices to the trainer themselves.
        """
        count = len(self)
        if not -count <= index < count:
            raise IndexError(f"completion {index} of {count}")
        if self._given is not None:
            raise invalid("rollouts built from sequences carry no expert choices")
        c_experts = ctypes.POINTER(ctypes.c_int32)()
        positions, layers, k = ctypes.c_int64(), ctypes.c_int64(), ctypes.c_int64()
        handle = self._live
        check(library().fp8rl_rollout_get_experts(handle.pointer, index % count, ctypes.byref(c_experts),
                                                  ctypes.byref(positions), ctypes.byref(layers), ctypes.byref(k)))
        flat = borrowed(handle, c_experts, positions.value * layers.value * k.value, np.int32)
        return flat.reshape(positions.value, layers.value, k.value)

    @property
    def records_experts(self) -> bool:
        """Whether these rollouts recorded their expert choices (``Rollouts.experts``).

        True for rollouts a Mixture-of-Experts policy generated with
        ``SamplingParams(record_experts=True)``; training steps on them then
        pass the choices to the trainer (routing replay, ``routing_agreement``).
        """
        return self._given is None and len(self) > 0 and self.experts(0).shape[0] > 0

    def _train_experts(self) -> Optional[np.ndarray]:
        """The recorded expert choices as a train batch takes them, or None when not recorded.

        One flat int32 array: ``experts(i)`` ([prompt + completion length - 1
        positions, sparse layers, k]) of every sequence, in order, laid end to
        end, which is how ``sequences()`` lays out the prompts and completions.
        """
        if not self.records_experts:
            return None
        prompt_lengths, lengths = np.diff(self.prompt_offsets), self.lengths
        parts = []
        for i in range(len(self)):
            experts = self.experts(i)
            fed = int(prompt_lengths[i] + lengths[i]) - 1
            if experts.shape[0] != fed:
                raise invalid(f"rollouts: completion {i} recorded experts for {experts.shape[0]} positions, but its "
                              f"prompt and completion feed {fed} tokens")
            parts.append(experts.reshape(-1))
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.int32)

    @functools.cached_property
    def _flat(self):
        if self._given is not None:
            tokens, logprobs, offsets = self._given
            return tokens, logprobs, offsets, None
        handle = self._live
        total = ctypes.c_int64()
        check(library().fp8rl_rollout_total_tokens(handle.pointer, ctypes.byref(total)))
        tokens = np.empty(total.value, dtype=np.int32)
        logprobs = np.empty(total.value, dtype=np.float32)
        offsets = np.empty(len(self) + 1, dtype=np.int64)
        finish = np.empty(len(self), dtype=np.int32)
        check(library().fp8rl_rollout_copy(handle.pointer, pointer(tokens, ctypes.c_int32),
                                           pointer(logprobs, ctypes.c_float), total.value,
                                           pointer(offsets, ctypes.c_int64), pointer(finish, _raw.fp8rl_finish_reason)))
        for array in (tokens, logprobs, offsets, finish):
            array.flags.writeable = False
        return tokens, logprobs, offsets, finish

    @property
    def tokens(self) -> np.ndarray:
        """[completion tokens] int32: all completions, one after the other."""
        return self._flat[0]

    @property
    def logprobs(self) -> Optional[np.ndarray]:
        """[completion tokens] float32: the generator's log-prob of each token (None if not known)."""
        return self._flat[1]

    @property
    def offsets(self) -> np.ndarray:
        """[n + 1] int64: completion i is tokens[offsets[i]:offsets[i + 1]]."""
        return self._flat[2]

    @property
    def lengths(self) -> np.ndarray:
        """[n] int64: completion lengths."""
        return np.diff(self.offsets)

    @property
    def finish_reasons(self) -> Optional[np.ndarray]:
        """[n] int32 FinishReason values (None for rollouts not generated here)."""
        return self._flat[3]

    def sequences(self) -> tuple:
        """(tokens int32, offsets int64 [n + 1], prompt_lengths int64 [n]): each prompt followed by its completion."""
        prompt_lengths = np.diff(self.prompt_offsets)
        lengths = prompt_lengths + self.lengths
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        tokens = np.empty(int(offsets[-1]), dtype=np.int32)
        for i in range(len(self)):
            start, split = offsets[i], offsets[i] + prompt_lengths[i]
            tokens[start:split] = self.prompt_tokens[self.prompt_offsets[i]:self.prompt_offsets[i + 1]]
            tokens[split:offsets[i + 1]] = self.tokens[self.offsets[i]:self.offsets[i + 1]]
        return tokens, offsets, prompt_lengths


def _flat_logprobs(logprobs: Any, offsets: np.ndarray) -> np.ndarray:
    """One log-prob array per completion -> one flat float32 array, checked against the completion lengths."""
    if len(logprobs) != len(offsets) - 1:
        raise invalid(f"logprobs: {len(logprobs)} arrays for {len(offsets) - 1} completions")
    for index, row in enumerate(logprobs):
        if np.size(row) != offsets[index + 1] - offsets[index]:
            raise invalid(f"logprobs[{index}]: {np.size(row)} values for a completion of "
                          f"{offsets[index + 1] - offsets[index]} tokens")
    flat = np.concatenate([np.asarray(row, dtype=np.float64).ravel() for row in logprobs])
    return float_vector(flat, int(offsets[-1]), "logprobs")
