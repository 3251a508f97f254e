"""Finds, loads and version-checks libfp8rl, once per process.

The library is looked up in this order:

1. the path in the environment variable ``FP8RL_LIBRARY`` (another build);
2. ``libfp8rl.so`` inside this package, where ``pip install`` puts it.

The loaded library must have the major version these bindings were generated
for, and at least their minor version (it then has every function they bind).
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

from . import _raw

LIBRARY_ENV = "FP8RL_LIBRARY"
PACKAGED_NAME = "libfp8rl.so"

_lock = threading.Lock()
_loaded: ctypes.CDLL | None = None
_loaded_path: Path | None = None


def _candidate_path() -> Path:
    override = os.environ.get(LIBRARY_ENV)
    if override:
        path = Path(override)
        if not path.is_file():
            raise ImportError(f"{LIBRARY_ENV}={override!r} does not name a file")
        return path
    path = Path(__file__).resolve().parent / PACKAGED_NAME
    if not path.is_file():
        raise ImportError(
            f"fp8rl: no {PACKAGED_NAME} beside the package ({path.parent}); install it with "
            f"`pip install ./bindings/python`, or set {LIBRARY_ENV} to a built libfp8rl.so")
    return path


def _version_triple(code: int) -> tuple[int, int, int]:
    return code // 10000, code // 100 % 100, code % 100


def check_version(library_code: int, path: Path) -> None:
    """Raises ImportError unless a library of version `library_code` can serve these bindings."""
    have = _version_triple(library_code)
    want = (_raw.FP8RL_VERSION_MAJOR, _raw.FP8RL_VERSION_MINOR, _raw.FP8RL_VERSION_PATCH)
    if have[0] != want[0] or have[1] < want[1]:
        raise ImportError(
            f"fp8rl: {path} is version {'.'.join(map(str, have))}, but these bindings need "
            f"{want[0]}.{want[1]}.x or a later {want[0]}.y (they were generated from {'.'.join(map(str, want))})")


def library() -> ctypes.CDLL:
    """The loaded, bound and version-checked library (loaded on the first call)."""
    global _loaded, _loaded_path
    with _lock:
        if _loaded is None:
            path = _candidate_path()
            try:
                raw = ctypes.CDLL(str(path))
            except OSError as error:
                raise ImportError(f"fp8rl: cannot load {path}: {error}") from error
            version = ctypes.CFUNCTYPE(ctypes.c_uint32)(("fp8rl_version", raw))
            check_version(version(), path)
            try:
                _loaded = _raw.bind(raw)
            except AttributeError as error:
                raise ImportError(f"fp8rl: {path} lacks a function of the header: {error}") from error
            _loaded_path = path
        return _loaded


def library_path() -> Path:
    """The file the library was loaded from."""
    library()
    assert _loaded_path is not None
    return _loaded_path
