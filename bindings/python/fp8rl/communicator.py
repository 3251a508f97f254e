"""Communicators: the processes (ranks) that train one policy together, for data parallelism.

With mpi4py, every rank runs::

    from mpi4py import MPI
    import fp8rl

    with fp8rl.Communicator.from_mpi4py(MPI.COMM_WORLD) as communicator:
        context = fp8rl.Context(communicator=communicator)   # keeps its own reference
    policy = fp8rl.Policy.random(config, seed=1, context=context)
    policy.start_training(...)   # then generate and train_step on this rank's prompts

Every rank makes the same training calls in the same order (they are
collective); the metrics they return are global. ``from_mpi4py`` needs
libfp8rl_mpi, the companion library built against the host's MPI, looked
up in this order:

1. the path in the environment variable ``FP8RL_MPI_LIBRARY``;
2. ``libfp8rl_mpi.so`` beside the loaded libfp8rl (the package's, or
   ``FP8RL_LIBRARY``'s build folder).

It must use the MPI library mpi4py uses.
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any

from ._handle import Handle
from ._library import library, library_path
from .errors import check, invalid
from .host_collectives import create_from_collectives

MPI_LIBRARY_ENV = "FP8RL_MPI_LIBRARY"
MPI_LIBRARY_NAME = "libfp8rl_mpi.so"

_lock = threading.Lock()
_mpi_loaded: ctypes.CDLL | None = None


def mpi_library_path() -> Path:
    """Where libfp8rl_mpi is looked for (the file need not exist for the second rule)."""
    override = os.environ.get(MPI_LIBRARY_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise ImportError(f"{MPI_LIBRARY_ENV}={override!r} does not name a file")
        return path
    return library_path().parent / MPI_LIBRARY_NAME


def mpi_library() -> ctypes.CDLL:
    """libfp8rl_mpi, loaded on the first call (after libfp8rl, whose SONAME satisfies its dependency)."""
    global _mpi_loaded
    with _lock:
        if _mpi_loaded is None:
            path = mpi_library_path()
            if not path.is_file():
                raise ImportError(f"fp8rl: no {MPI_LIBRARY_NAME} beside {library_path()}: build fp8rl where MPI is "
                                  f"found (CMake option FP8RL_MPI), or set {MPI_LIBRARY_ENV}")
            try:
                loaded = ctypes.CDLL(str(path))
            except OSError as error:
                raise ImportError(f"fp8rl: cannot load {path}: {error}") from error
            create = loaded.fp8rl_mpi_communicator_create
            create.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p)]
            create.restype = ctypes.c_int32  # fp8rl_status
            _mpi_loaded = loaded
        return _mpi_loaded


class Communicator:
    """A group of ranks training one policy; give it to ``Context(communicator=...)``.

    The context keeps its own reference, so the communicator may be closed
    once the context exists. Close contexts and communicators before MPI is
    finalized (mpi4py finalizes at interpreter exit; one released after that
    is left to MPI's finalization).
    """

    def __init__(self, pointer: ctypes.c_void_p):
        self._handle = Handle(pointer, library().fp8rl_communicator_destroy, "communicator")

    @classmethod
    def from_mpi4py(cls, comm: Any) -> "Communicator":
        """A communicator over a duplicate of an mpi4py intracommunicator; collective over `comm`.

        The library keeps its own duplicate (MPI_Comm_dup), so `comm` may be
        freed afterwards. Raises InvalidArgumentError for an object without
        ``py2f()``, MPI_COMM_NULL or an intercommunicator.
        """
        py2f = getattr(comm, "py2f", None)
        if py2f is None:
            raise invalid(f"from_mpi4py: expected an mpi4py communicator, got {type(comm).__name__}")
        out = ctypes.c_void_p()
        check(mpi_library().fp8rl_mpi_communicator_create(py2f(), ctypes.byref(out)))
        return cls(out)

    @classmethod
    def from_collectives(cls, collectives: Any, rank: int, world_size: int,
                         name: str = "host collectives") -> "Communicator":
        """A communicator over the host's own collectives (torch.distributed, Ray, ...).

        `collectives` has ``all_reduce_sum(array)``, ``all_gather(array, counts)``,
        ``broadcast(array, root)`` and optionally ``reduce_scatter_sum(array, counts)``
        and ``barrier()``, in place on NumPy arrays (fp8rl.host_collectives says more).
        """
        return cls(create_from_collectives(collectives, rank, world_size, name))

    def close(self) -> None:
        """Releases this reference; contexts created with the communicator keep theirs. Idempotent."""
        self._handle.close()

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _rank_and_size(self) -> tuple[int, int]:
        rank, size = ctypes.c_int32(), ctypes.c_int32()
        check(library().fp8rl_communicator_get_rank(self._handle.pointer, ctypes.byref(rank), ctypes.byref(size)))
        return rank.value, size.value

    @property
    def rank(self) -> int:
        """This process's rank, in [0, world_size)."""
        return self._rank_and_size()[0]

    @property
    def world_size(self) -> int:
        """The number of ranks."""
        return self._rank_and_size()[1]
