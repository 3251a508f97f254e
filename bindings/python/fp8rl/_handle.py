"""Ownership of one C handle: destroyed exactly once, by close() or at garbage collection."""
from __future__ import annotations

import ctypes
from typing import Any, Callable, Optional

from .errors import check, invalid


class Handle:
    """Owns a C pointer and the function that destroys it.

    `keep` holds what the handle depends on (a policy's context, a trainer's
    policy), so that garbage collection never destroys those first.
    """

    def __init__(self, pointer: ctypes.c_void_p, destroy: Callable[[ctypes.c_void_p], int], kind: str, keep: Any = None):
        self._pointer: Optional[ctypes.c_void_p] = pointer
        self._destroy = destroy
        self._kind = kind
        self._keep = keep

    @property
    def pointer(self) -> ctypes.c_void_p:
        if self._pointer is None:
            raise invalid(f"this {self._kind} is closed")
        return self._pointer

    @property
    def closed(self) -> bool:
        return self._pointer is None

    def close(self) -> None:
        """Destroys the C object; the library may refuse (e.g. a context with live policies), and then raises."""
        if self._pointer is not None:
            check(self._destroy(self._pointer))
            self._pointer = None
            self._keep = None

    def __del__(self) -> None:
        # At interpreter exit the module globals close() needs may be gone, and
        # a refused destroy has no one to report to: leave it to the process end.
        try:
            self.close()
        except Exception:
            pass
