"""A communicator over the host's own collectives: torch.distributed, Ray, a simulator's transport.

Give ``Communicator.from_collectives`` an object with these methods; each
works in place on a NumPy array viewing the library's host buffer (float32,
float64, int64 or uint8), and every rank calls them in the same order:

- ``all_reduce_sum(array)``: ``array`` = its element-wise sum over the ranks;
- ``all_gather(array, counts)``: rank r's part (``counts[r]`` elements, after
  those of ranks 0..r-1) reaches every rank;
- ``broadcast(array, root)``: ``array`` = rank ``root``'s;
- optionally ``reduce_scatter_sum(array, counts)`` (rank r's part = that
  part's sum; the rest may be anything afterwards) and ``barrier()``.

With torch.distributed, for instance, ``all_reduce_sum`` is
``dist.all_reduce(torch.from_numpy(array))``. An exception in a method fails
the training call with a DistributedError naming the collective and the
exception. The library calls the methods on the thread that makes the
training call.
"""
from __future__ import annotations

import ctypes
import threading
from typing import Any

import numpy as np

from . import _raw
from ._library import library
from .errors import check, invalid

_DTYPES = {_raw.FP8RL_ELEMENT_F32: np.float32, _raw.FP8RL_ELEMENT_F64: np.float64,
           _raw.FP8RL_ELEMENT_I64: np.int64, _raw.FP8RL_ELEMENT_U8: np.uint8}

# Each live communicator's trampolines and collectives, by user_data, until
# the library calls destroy: ctypes callbacks must outlive every call into them.
_live: dict[int, "_Trampolines"] = {}
_live_lock = threading.Lock()
_next_key = iter(range(1, 1 << 62))


def _array(data: int, count: int, element_type: int) -> np.ndarray:
    dtype = _DTYPES[element_type]
    if count == 0:
        return np.empty(0, dtype=dtype)
    buffer = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(data)
    return np.frombuffer(buffer, dtype=dtype)


class _Trampolines:
    """The C callbacks of one communicator, forwarding to the host's collectives."""

    def __init__(self, collectives: Any, world_size: int):
        self.collectives, self.world_size = collectives, world_size
        self.error = b""
        self.functions = {
            "all_reduce_sum": _raw.fp8rl_all_reduce_sum_callback(self._all_reduce_sum),
            "all_gather": _raw.fp8rl_parts_callback(self._parts("all_gather")),
            "broadcast": _raw.fp8rl_broadcast_callback(self._broadcast),
            "error_message": _raw.fp8rl_error_message_callback(lambda _: self.error),
            "destroy": _raw.fp8rl_destroy_callback(_forget),
        }
        if hasattr(collectives, "reduce_scatter_sum"):
            self.functions["reduce_scatter_sum"] = _raw.fp8rl_parts_callback(self._parts("reduce_scatter_sum"))
        if hasattr(collectives, "barrier"):
            self.functions["barrier"] = _raw.fp8rl_barrier_callback(
                lambda _: self._run("barrier", collectives.barrier))

    def _run(self, name: str, call: Any) -> int:
        """0 when call() returns, 1 (and the error kept for error_message) when it raises."""
        try:
            call()
            return 0
        except Exception as error:  # noqa: BLE001 -- any host failure becomes the library's error
            self.error = f"{name}: {type(error).__name__}: {error}".encode("utf-8", "replace")
            return 1

    def _all_reduce_sum(self, data: int, count: int, element_type: int, _: Any) -> int:
        return self._run("all_reduce_sum",
                         lambda: self.collectives.all_reduce_sum(_array(data, count, element_type)))

    def _parts(self, name: str) -> Any:
        def forward(data: int, counts: Any, element_type: int, _: Any) -> int:
            parts = [int(counts[r]) for r in range(self.world_size)]
            return self._run(name, lambda: getattr(self.collectives, name)(_array(data, sum(parts), element_type),
                                                                           parts))
        return forward

    def _broadcast(self, data: int, count: int, element_type: int, root: int, _: Any) -> int:
        return self._run("broadcast", lambda: self.collectives.broadcast(_array(data, count, element_type), root))


def _forget(user_data: int) -> None:
    with _live_lock:
        _live.pop(user_data, None)


def create_from_collectives(collectives: Any, rank: int, world_size: int, name: str) -> ctypes.c_void_p:
    """The new communicator's handle (see the module's documentation)."""
    for method in ("all_reduce_sum", "all_gather", "broadcast"):
        if not callable(getattr(collectives, method, None)):
            raise invalid(f"from_collectives: collectives has no method {method}()")
    trampolines = _Trampolines(collectives, world_size)
    with _live_lock:
        key = next(_next_key)
        _live[key] = trampolines
    callbacks = _raw.fp8rl_collective_callbacks(struct_size=ctypes.sizeof(_raw.fp8rl_collective_callbacks),
                                                rank=rank, world_size=world_size, name=name.encode(),
                                                user_data=key, **trampolines.functions)
    out = ctypes.c_void_p()
    try:
        check(library().fp8rl_communicator_create_from_callbacks(ctypes.byref(callbacks), ctypes.byref(out)))
    except BaseException:
        _forget(key)  # refused: the library keeps nothing and never calls destroy
        raise
    return out
