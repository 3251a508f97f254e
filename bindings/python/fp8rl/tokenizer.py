"""Tokenizer: a Hugging Face model folder's byte-level BPE tokenizer (tokenizer.json), encoding and decoding exactly
as the ``tokenizers`` library does (docs/tokenizer.md lists what is supported)."""
from __future__ import annotations

import ctypes
import os
from typing import Any, List, NamedTuple, Optional, Sequence

import numpy as np

from . import _raw
from ._handle import Handle
from ._library import library
from .errors import check, invalid


class SpecialTokenIds(NamedTuple):
    """The special ids a model folder names (tokenizer_config.json, then generation_config.json)."""

    bos: Optional[int]  # None where the folder names no BOS
    eos: List[int]  # tokenizer_config.json's EOS, then generation_config.json's (no repeats); may be empty
    pad: Optional[int]
    add_bos_token: Optional[bool]  # tokenizer_config.json's add_bos_token; None when not stated


def _text_bytes(text: Any, name: str) -> bytes:
    """str as UTF-8; bytes-like as given (bytes that are not UTF-8 are repaired by the library, as
    bytes.decode("utf-8", "replace") does)."""
    if isinstance(text, str):
        # surrogatepass: a lone surrogate becomes ED A0 80 etc., which the library repairs to U+FFFD
        return text.encode("utf-8", "surrogatepass")
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    raise invalid(f"{name}: expected str or bytes, got {type(text).__name__}")


def _int32_ids(ids: Any) -> np.ndarray:
    array = np.asarray(ids) if not isinstance(ids, np.ndarray) else ids
    if array.ndim != 1:
        raise invalid(f"ids: expected a 1-D sequence of token ids, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int32)
    if array.dtype.kind not in "iu":
        raise invalid(f"ids: token ids must be integers, got dtype {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array > np.iinfo(np.int32).max))
    if bad.size:
        raise invalid(f"ids[{int(bad[0])}]: {int(array[bad[0]])} is not a token id (ids are in [0, 2^31))")
    return np.ascontiguousarray(array, dtype=np.int32)


class Tokenizer:
    """A loaded tokenizer: ``Tokenizer.load(folder)``, or ``policy.tokenizer()`` for a policy loaded from a folder.

    Immutable and safe to use from several threads at once. Release it with ``close()`` or a ``with`` block
    (garbage collection also does).
    """

    def __init__(self, pointer_: ctypes.c_void_p):
        self._handle = Handle(pointer_, library().fp8rl_tokenizer_destroy, "tokenizer")

    @classmethod
    def load(cls, folder: "str | os.PathLike[str]") -> "Tokenizer":
        """Loads <folder>/tokenizer.json and, where present, tokenizer_config.json and generation_config.json."""
        out = ctypes.c_void_p()
        check(library().fp8rl_tokenizer_load(os.fsencode(folder), ctypes.byref(out)))
        return cls(out)

    def close(self) -> None:
        """Destroys the tokenizer. Idempotent."""
        self._handle.close()

    @property
    def closed(self) -> bool:
        return self._handle.closed

    def __enter__(self) -> "Tokenizer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---- encoding

    def encode(self, text: "str | bytes", add_special_tokens: bool = True) -> np.ndarray:
        """The ids of `text` (int32). Bytes that are not UTF-8 are repaired first, each ill-formed sequence becoming
        U+FFFD, so the ids are those tokenizers gives for ``text.decode("utf-8", "replace")``."""
        data = _text_bytes(text, "text")
        # One call where the guess fits (a byte gives at most 3 ids: U+FFFD repairs), a second where it does not.
        capacity = 3 * len(data) + 16
        while True:
            ids = np.empty(capacity, dtype=np.int32)
            count = ctypes.c_int64(-1)
            status = library().fp8rl_tokenizer_encode(
                self._handle.pointer, data, len(data), int(bool(add_special_tokens)),
                ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), capacity, ctypes.byref(count))
            if status != _raw.FP8RL_OK and count.value > capacity:
                capacity = count.value
                continue
            check(status)
            return ids[:count.value].copy()

    def encode_batch(self, texts: Sequence["str | bytes"], add_special_tokens: bool = True) -> List[np.ndarray]:
        """The ids of each text, as ``encode`` gives them."""
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
            raise invalid(f"texts: expected a list of str or bytes, got {type(texts).__name__}")
        data = [_text_bytes(text, f"texts[{i}]") for i, text in enumerate(texts)]
        count = len(data)
        pointers = (ctypes.c_char_p * max(count, 1))(*data)
        sizes = (ctypes.c_int64 * max(count, 1))(*[len(d) for d in data])
        encoding = ctypes.c_void_p()
        check(library().fp8rl_tokenizer_encode_batch(self._handle.pointer, pointers, sizes, count,
                                                     int(bool(add_special_tokens)), ctypes.byref(encoding)))
        try:
            result = []
            view = ctypes.POINTER(ctypes.c_int32)()
            length = ctypes.c_int64()
            for i in range(count):
                check(library().fp8rl_encoding_get(encoding, i, ctypes.byref(view), ctypes.byref(length)))
                result.append(np.ctypeslib.as_array(view, shape=(length.value,)).copy() if length.value
                              else np.zeros(0, dtype=np.int32))
            return result
        finally:
            check(library().fp8rl_encoding_destroy(encoding))

    # ---- decoding

    def decode(self, ids: Any, skip_special_tokens: bool = False) -> str:
        """The text of `ids`. Ids that name no token are skipped (as tokenizers does); bytes that do not form UTF-8
        (a sequence cut inside a character) become U+FFFD."""
        array = _int32_ids(ids)
        capacity = 16 * len(array) + 64
        while True:
            buffer = ctypes.create_string_buffer(capacity)
            size = ctypes.c_int64(-1)
            status = library().fp8rl_tokenizer_decode(
                self._handle.pointer, array.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), len(array),
                int(bool(skip_special_tokens)), buffer, capacity, ctypes.byref(size))
            if status != _raw.FP8RL_OK and size.value > capacity:
                capacity = size.value
                continue
            check(status)
            return buffer.raw[:size.value].decode("utf-8")

    # ---- vocabulary

    def token_to_id(self, token: "str | bytes") -> Optional[int]:
        """The id of a token by its spelling in tokenizer.json (a space is "Ġ" in a byte-level vocabulary), or an
        added token's content; None when no token is spelled so."""
        data = _text_bytes(token, "token")
        out = ctypes.c_int32()
        check(library().fp8rl_tokenizer_token_to_id(self._handle.pointer, data, len(data), ctypes.byref(out)))
        return None if out.value < 0 else out.value

    def id_to_piece(self, id: int) -> str:
        """The spelling of token `id` in tokenizer.json (byte-level: "Ġworld"). InvalidArgumentError for an id
        that names no token."""
        if not isinstance(id, (int, np.integer)) or isinstance(id, bool):
            raise invalid(f"id: expected an integer, got {type(id).__name__}")
        if not -2 ** 31 <= int(id) < 2 ** 31:
            raise invalid(f"id: {id} is not a token id")
        size = ctypes.c_int64(-1)
        check(library().fp8rl_tokenizer_id_to_piece(self._handle.pointer, int(id), None, 0, ctypes.byref(size)))
        buffer = ctypes.create_string_buffer(max(size.value, 1))
        check(library().fp8rl_tokenizer_id_to_piece(self._handle.pointer, int(id), buffer, size.value,
                                                    ctypes.byref(size)))
        return buffer.raw[:size.value].decode("utf-8")

    @property
    def vocab_size(self) -> int:
        """One past the largest id, added tokens included."""
        out = ctypes.c_int64()
        check(library().fp8rl_tokenizer_vocab_size(self._handle.pointer, ctypes.byref(out)))
        return out.value

    @property
    def special_ids(self) -> SpecialTokenIds:
        struct = _raw.fp8rl_special_token_ids()
        check(library().fp8rl_special_token_ids_init(ctypes.byref(struct)))
        check(library().fp8rl_tokenizer_special_ids(self._handle.pointer, ctypes.byref(struct)))
        return SpecialTokenIds(bos=None if struct.bos < 0 else struct.bos,
                               eos=[int(struct.eos[i]) for i in range(struct.num_eos)],
                               pad=None if struct.pad < 0 else struct.pad,
                               add_bos_token=None if struct.add_bos_token < 0 else bool(struct.add_bos_token))
