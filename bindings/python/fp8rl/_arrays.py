"""Checks and converts host inputs before they reach C, and wraps C memory as numpy arrays.

Bad inputs raise InvalidArgumentError (NonFiniteError for NaN or infinity;
both are ValueErrors) naming the argument and the position; nothing reaches
the library then.
"""
from __future__ import annotations

import ctypes
from typing import Any, Sequence, Tuple

import numpy as np

from .errors import NonFiniteError, invalid


def _as_array(value: Any, name: str) -> np.ndarray:
    if isinstance(value, np.ndarray):
        if not value.flags.c_contiguous:
            raise invalid(f"{name}: the array is not C-contiguous (use np.ascontiguousarray)")
        return value
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as error:
        raise invalid(f"{name}: not an array of numbers ({error})") from None


def _integer_vector(value: Any, name: str) -> np.ndarray:
    array = _as_array(value, name)
    if array.ndim != 1:
        raise invalid(f"{name}: expected a 1-D sequence of token ids, got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise invalid(f"{name}: token ids must be integers, got dtype {array.dtype}")
    return array


def token_sequences(sequences: Any, vocab_size: int, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """Non-empty sequences of token ids in [0, vocab_size) -> (flat int32 tokens, int64 offsets [n + 1]).

    Accepts a list of 1-D sequences (lists or arrays, any lengths) or a 2-D
    integer array (one sequence per row).
    """
    if isinstance(sequences, np.ndarray):
        if sequences.ndim != 2:
            raise invalid(f"{name}: a numpy array of sequences must be 2-D [sequences, length], got shape "
                          f"{sequences.shape}")
        rows: Sequence[Any] = list(_as_array(sequences, name))
    elif isinstance(sequences, (str, bytes)) or not isinstance(sequences, Sequence):
        raise invalid(f"{name}: expected a list of token-id sequences, got {type(sequences).__name__}")
    else:
        rows = sequences
    if len(rows) == 0:
        raise invalid(f"{name}: no sequences")
    parts = []
    for index, row in enumerate(rows):
        part = _integer_vector(row, f"{name}[{index}]")
        if part.size == 0:
            raise invalid(f"{name}[{index}]: empty sequence")
        out_of_range = np.flatnonzero((part < 0) | (part >= vocab_size))
        if out_of_range.size:
            position = int(out_of_range[0])
            raise invalid(f"{name}[{index}][{position}]: token id {int(part[position])} outside the vocabulary "
                          f"[0, {vocab_size})")
        parts.append(part)
    offsets = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum([part.size for part in parts], out=offsets[1:])
    return np.concatenate(parts).astype(np.int32, copy=False), offsets


def float_vector(value: Any, length: int, name: str, allow_non_finite: bool = False) -> np.ndarray:
    """A 1-D real array of `length` finite values -> float32 (contiguous)."""
    array = _as_array(value, name)
    if array.ndim != 1 or array.size != length:
        raise invalid(f"{name}: expected {length} values (1-D), got shape {array.shape}")
    if array.dtype.kind not in "fiu":
        raise invalid(f"{name}: expected real numbers, got dtype {array.dtype}")
    with np.errstate(over="ignore"):  # a value beyond float32 becomes inf, reported just below
        converted = array.astype(np.float32, copy=False)
    if not allow_non_finite:
        bad = np.flatnonzero(~np.isfinite(converted))
        if bad.size:
            raise NonFiniteError(f"{name}[{int(bad[0])}]: {array[bad[0]]} is not finite"
                                 + (" in float32" if np.isfinite(array[bad[0]]) else ""))
    return np.ascontiguousarray(converted)


def seed_vector(value: Any, length: int) -> np.ndarray:
    array = _as_array(value, "seeds")
    if array.ndim != 1 or array.size != length:
        raise invalid(f"seeds: expected one seed per prompt ({length}), got shape {array.shape}")
    if array.size and array.dtype.kind not in "iu":
        raise invalid(f"seeds: seeds must be integers, got dtype {array.dtype}")
    if array.size and array.dtype.kind == "i" and array.min() < 0:
        raise invalid(f"seeds[{int(np.argmin(array))}]: seeds are unsigned 64-bit, got {int(array.min())}")
    return np.ascontiguousarray(array.astype(np.uint64, copy=False))


def pointer(array: np.ndarray | None, ctype: Any) -> Any:
    """A ctypes pointer to a contiguous array's data (NULL for None)."""
    if array is None:
        return None
    return array.ctypes.data_as(ctypes.POINTER(ctype))


class _Borrowed:
    """Exposes C memory to numpy read-only while holding `owner`, which keeps that memory alive."""

    def __init__(self, owner: Any, address: int, count: int, dtype: np.dtype):
        self._owner = owner
        self.__array_interface__ = {
            "shape": (count,), "typestr": np.dtype(dtype).str, "data": (address, True), "version": 3}


def borrowed(owner: Any, c_pointer: Any, count: int, dtype: Any) -> np.ndarray:
    """A read-only array over `count` C elements at `c_pointer`, owned by `owner` (no copy)."""
    if count == 0:
        return np.empty(0, dtype=dtype)
    address = ctypes.cast(c_pointer, ctypes.c_void_p).value or 0
    return np.asarray(_Borrowed(owner, address, count, dtype))
