"""A context: the backend (device, CPU threads, memory) that policies run on, and its log."""
from __future__ import annotations

import ctypes
import logging
from typing import Any, Optional

from . import _raw
from ._handle import Handle
from ._library import library
from .communicator import Communicator
from .enums import Backend, LogLevel
from .errors import check

logger = logging.getLogger("fp8rl")

_PYTHON_LEVELS = {LogLevel.DEBUG: logging.DEBUG, LogLevel.INFO: logging.INFO, LogLevel.WARNING: logging.WARNING,
                  LogLevel.ERROR: logging.ERROR}


def _forward_to_logging(level: int, message: bytes, user_data: Any) -> None:
    # Runs on the thread that made the fp8rl call, inside the library: it must not raise.
    try:
        logger.log(_PYTHON_LEVELS.get(LogLevel(level), logging.ERROR), message.decode(errors="replace"))
    except Exception:
        pass


# One callback object for every context, alive as long as the module.
_LOG_CALLBACK = _raw.fp8rl_log_callback(_forward_to_logging)


class Context:
    """A backend plus logging. Library messages at or above `log_level` go to the ``fp8rl`` Python logger.

    Calls on one context are serialized by the library; policies on different
    contexts run in parallel (the library releases the GIL). A context must
    outlive its policies: ``close()`` refuses while any is open. With a
    `communicator` (data parallelism) its trainers train with the other ranks.
    """

    def __init__(self, backend: Backend = Backend.CPU, num_threads: int = 0, cuda_device: int = 0,
                 log_level: LogLevel = LogLevel.WARNING, communicator: Optional[Communicator] = None):
        options = _raw.fp8rl_context_options()
        check(library().fp8rl_context_options_init(ctypes.byref(options)))
        options.backend = backend
        options.num_threads = num_threads
        options.cuda_device = cuda_device
        options.log_level = log_level
        options.log_callback = _LOG_CALLBACK
        if communicator is not None:
            options.communicator = communicator._handle.pointer  # the context takes its own reference
        pointer = ctypes.c_void_p()
        check(library().fp8rl_context_create(ctypes.byref(options), ctypes.byref(pointer)))
        self._handle = Handle(pointer, library().fp8rl_context_destroy, "context")

    def close(self) -> None:
        """Destroys the context; raises InvalidArgumentError (and stays open) while policies on it are open."""
        self._handle.close()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def backend(self) -> Backend:
        """The backend it runs on (never AUTO)."""
        value = _raw.fp8rl_backend()
        check(library().fp8rl_context_get_backend(self._handle.pointer, ctypes.byref(value)))
        return Backend(value.value)

    @property
    def num_threads(self) -> int:
        value = ctypes.c_int32()
        check(library().fp8rl_context_get_num_threads(self._handle.pointer, ctypes.byref(value)))
        return value.value

    @property
    def description(self) -> str:
        """The device or CPU it runs on, in words."""
        value = ctypes.c_char_p()
        check(library().fp8rl_context_get_description(self._handle.pointer, ctypes.byref(value)))
        return (value.value or b"").decode()

    @property
    def rank(self) -> int:
        """This process's rank in the context's communicator (0 without one)."""
        value = ctypes.c_int32()
        check(library().fp8rl_context_get_rank(self._handle.pointer, ctypes.byref(value)))
        return value.value

    @property
    def world_size(self) -> int:
        """The number of ranks in the context's communicator (1 without one)."""
        value = ctypes.c_int32()
        check(library().fp8rl_context_get_world_size(self._handle.pointer, ctypes.byref(value)))
        return value.value
