"""Exceptions: every failing fp8rl call raises one, carrying the status and the library's message.

Each status has its own class, which also derives from the matching built-in
exception, so ``except ValueError`` catches bad arguments whether Python or
the library found them.
"""
from __future__ import annotations

from . import _raw
from ._library import library


class Fp8rlError(Exception):
    """A failed fp8rl call.

    Attributes:
        status: the ``fp8rl_status`` code (an int; ``FP8RL_ERROR_*`` in ``fp8rl._raw``).
        status_name: its name, e.g. ``"FP8RL_ERROR_INVALID_ARGUMENT"``.
        message: what the library (or the binding's own check) said.
    """

    status = _raw.FP8RL_ERROR_INTERNAL

    def __init__(self, message: str, status: int | None = None):
        if status is not None:
            self.status = status
        self.status_name = _status_name(self.status)
        self.message = message
        super().__init__(f"{message} [{self.status_name}]")


class InvalidArgumentError(Fp8rlError, ValueError):
    status = _raw.FP8RL_ERROR_INVALID_ARGUMENT


class OutOfMemoryError(Fp8rlError, MemoryError):
    status = _raw.FP8RL_ERROR_OUT_OF_MEMORY


class BackendUnavailableError(Fp8rlError, RuntimeError):
    status = _raw.FP8RL_ERROR_BACKEND_UNAVAILABLE


class NonFiniteError(Fp8rlError, ValueError):
    status = _raw.FP8RL_ERROR_NON_FINITE


class Fp8rlIOError(Fp8rlError, OSError):
    status = _raw.FP8RL_ERROR_IO


class CorruptDataError(Fp8rlError, ValueError):
    status = _raw.FP8RL_ERROR_CORRUPT_DATA


class VersionMismatchError(Fp8rlError, RuntimeError):
    status = _raw.FP8RL_ERROR_VERSION_MISMATCH


class UnsupportedError(Fp8rlError, NotImplementedError):
    status = _raw.FP8RL_ERROR_UNSUPPORTED


class CudaError(Fp8rlError, RuntimeError):
    status = _raw.FP8RL_ERROR_CUDA


class DistributedError(Fp8rlError, RuntimeError):
    """A collective of a data-parallel run failed (a peer gone, a transport error), or masters are partial."""

    status = _raw.FP8RL_ERROR_DISTRIBUTED


class InternalError(Fp8rlError, RuntimeError):
    status = _raw.FP8RL_ERROR_INTERNAL


_BY_STATUS = {cls.status: cls for cls in Fp8rlError.__subclasses__()}


def _status_name(status: int) -> str:
    return library().fp8rl_status_name(status).decode()


def check(status: int) -> None:
    """Raises the exception of `status` with this thread's last error message, unless it is FP8RL_OK."""
    if status == _raw.FP8RL_OK:
        return
    message = library().fp8rl_last_error_message()
    text = message.decode(errors="replace") if message else "(no message)"
    raise _BY_STATUS.get(status, Fp8rlError)(text, status)


def invalid(message: str) -> InvalidArgumentError:
    """The exception for a bad argument the binding catches before calling the library."""
    return InvalidArgumentError(message)
