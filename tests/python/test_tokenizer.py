"""fp8rl.Tokenizer through the C API against Hugging Face `tokenizers`, the oracle.

Trains byte-level BPE tokenizers in the settings of Llama 3, Qwen2 and GPT-2 with
tests/text/tokenizer_oracle.py (its training and folder writing, reused), then requires
equal ids for a few thousand varied strings (scripts, emoji, whitespace runs, special
tokens inside text, invalid UTF-8 bytes), equal decodes, encode_batch equal to encode
one by one, and the special ids the folder's configs name. Also the binding's own
behaviour: str or bytes input, context manager, Policy.tokenizer(), errors.
"""
from __future__ import annotations

import json
import os
import random
import sys

import numpy as np
import pytest

import fp8rl
from conftest import tiny_policy

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' batch threads: the test machines are small
tokenizers = pytest.importorskip("tokenizers")

sys.path.insert(0, os.path.join(os.environ.get("FP8RL_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                                "tests", "text"))
import tokenizer_oracle as oracle  # noqa: E402

STRINGS_PER_KIND = 2000


def _tokenizer_available(folder) -> bool:
    try:
        fp8rl.Tokenizer.load(folder).close()
    except fp8rl.UnsupportedError as error:
        if "PCRE2" in str(error):
            return False
        raise
    return True


@pytest.fixture(scope="module")
def corpus():
    rng = random.Random(19)
    if not oracle.LEXICON:
        oracle.LEXICON.extend(oracle.word(rng) for _ in range(2000))
    return [oracle.sentence(rng, [], 40) for _ in range(1500)]


@pytest.fixture(scope="module", params=["llama3", "qwen2", "gpt2"])
def trained(request, corpus, tmp_path_factory):
    """(kind, the tokenizers oracle, the folder, its specials)."""
    kind = request.param
    hf, text, specials = oracle.train(kind, corpus, vocab_size=1200)
    folder = tmp_path_factory.mktemp(kind)
    oracle.write_folder(str(folder), text, specials, kind)
    if kind == "qwen2":  # eos from generation_config.json too: after the tokenizer config's, without repeats
        with open(folder / "generation_config.json", "w") as f:
            json.dump({"bos_token_id": hf.token_to_id(specials[0]), "eos_token_id": [hf.token_to_id(specials[-1]),
                                                                                      hf.token_to_id(specials[1])]}, f)
    if not _tokenizer_available(folder):
        pytest.skip("this library was built without the tokenizer (PCRE2)")
    return kind, hf, folder, specials


def _inputs(hf, seed):
    rng = random.Random(seed)
    specials = [t.content for t in hf.get_added_tokens_decoder().values()]
    inputs = [s.encode("utf-8") for s in oracle.adversarial(specials)]
    while len(inputs) < STRINGS_PER_KIND:
        s = oracle.sentence(rng, specials)
        inputs.append(oracle.invalid_utf8(rng, s) if rng.random() < 0.15 else s.encode("utf-8"))
    return inputs


def test_encode_and_decode_equal_tokenizers(trained):
    kind, hf, folder, _ = trained
    inputs = _inputs(hf, seed=len(kind))
    assert any(b.decode("utf-8", "replace").encode() != b for b in inputs), "no invalid UTF-8 among the inputs"
    texts = [b.decode("utf-8", "replace") for b in inputs]
    with fp8rl.Tokenizer.load(folder) as tok:
        assert tok.vocab_size == hf.get_vocab_size(with_added_tokens=True)
        for special in (True, False):
            expected = [e.ids for e in hf.encode_batch(texts, add_special_tokens=special)]
            for raw, text, ids in zip(inputs, texts, expected):
                got = tok.encode(raw, add_special_tokens=special)
                assert got.dtype == np.int32
                assert got.tolist() == ids, (kind, raw)
                if raw.decode("utf-8", "replace").encode() == raw:  # valid UTF-8: the str gives the same
                    assert tok.encode(text, add_special_tokens=special).tolist() == ids
        rng = random.Random(7)
        vocab = hf.get_vocab_size(with_added_tokens=True)
        id_lists = [e.ids for e in hf.encode_batch(texts[:500], add_special_tokens=True)]
        id_lists += [[rng.randrange(0, vocab + 3) for _ in range(rng.randint(0, 12))] for _ in range(300)]
        for skip in (False, True):
            expected = hf.decode_batch(id_lists, skip_special_tokens=skip)
            for ids, text in zip(id_lists, expected):
                assert tok.decode(ids, skip_special_tokens=skip) == text, (kind, ids, skip)
                assert tok.decode(np.asarray(ids, dtype=np.int64), skip_special_tokens=skip) == text


def test_encode_batch_equals_encode_one_by_one(trained):
    kind, hf, folder, _ = trained
    inputs = _inputs(hf, seed=100 + len(kind))[:600]
    mixed = [raw if i % 2 else raw.decode("utf-8", "replace") for i, raw in enumerate(inputs)]
    with fp8rl.Tokenizer.load(folder) as tok:
        for special in (True, False):
            batch = tok.encode_batch(mixed, add_special_tokens=special)
            assert len(batch) == len(mixed)
            for text, ids in zip(mixed, batch):
                assert ids.dtype == np.int32
                assert ids.tolist() == tok.encode(text, add_special_tokens=special).tolist()
        assert tok.encode_batch([]) == []


def test_vocabulary_lookups_equal_tokenizers(trained):
    kind, hf, folder, _ = trained
    with fp8rl.Tokenizer.load(folder) as tok:
        for token_id in range(hf.get_vocab_size(with_added_tokens=True)):
            piece = hf.id_to_token(token_id)
            assert tok.id_to_piece(token_id) == piece
            assert tok.token_to_id(piece) == hf.token_to_id(piece) == token_id
            assert tok.token_to_id(piece.encode("utf-8")) == token_id
        assert tok.token_to_id("no such token, surely") is None
        with pytest.raises(fp8rl.InvalidArgumentError, match="names no token"):
            tok.id_to_piece(tok.vocab_size)


def test_special_ids_are_the_folders(trained):
    kind, hf, folder, specials = trained
    with fp8rl.Tokenizer.load(folder) as tok:
        ids = tok.special_ids
    config = json.loads((folder / "tokenizer_config.json").read_text())
    assert ids.bos == hf.token_to_id(config["bos_token"])
    eos = [hf.token_to_id(config["eos_token"]["content"])]
    generation = folder / "generation_config.json"
    if generation.exists():
        for extra in json.loads(generation.read_text())["eos_token_id"]:
            if extra not in eos:
                eos.append(extra)
    assert ids.eos == eos
    assert ids.pad is None
    assert ids.add_bos_token is (kind == "llama3")


def test_policy_tokenizer_reads_the_folder_the_policy_was_loaded_from(trained, tmp_path):
    kind, hf, folder, _ = trained
    with tiny_policy() as random_policy:
        with pytest.raises(fp8rl.InvalidArgumentError, match="policy was not loaded from a folder"):
            random_policy.tokenizer()
        random_policy.save(tmp_path / "model")
    for name in os.listdir(folder):
        if name.endswith(".json"):
            (tmp_path / "model" / name).write_bytes((folder / name).read_bytes())
    with fp8rl.Policy.load(tmp_path / "model") as policy:
        tok = policy.tokenizer()
    # The tokenizer outlives the policy.
    assert tok.encode("hello world").tolist() == hf.encode("hello world").ids
    tok.close()
    assert tok.closed
    with pytest.raises(fp8rl.InvalidArgumentError, match="closed"):
        tok.encode("x")


def test_bad_inputs_raise_naming_the_argument(trained):
    _, _, folder, _ = trained
    with fp8rl.Tokenizer.load(folder) as tok:
        with pytest.raises(fp8rl.InvalidArgumentError, match="text"):
            tok.encode(17)
        with pytest.raises(fp8rl.InvalidArgumentError, match=r"texts\[1\]"):
            tok.encode_batch(["a", None])
        with pytest.raises(fp8rl.InvalidArgumentError, match=r"ids\[1\]"):
            tok.decode([3, -1])
        with pytest.raises(fp8rl.InvalidArgumentError, match="integers"):
            tok.decode([1.5])
        with pytest.raises(fp8rl.InvalidArgumentError, match="id -1"):
            tok.id_to_piece(-1)
    with pytest.raises(fp8rl.Fp8rlIOError, match="tokenizer.json"):
        fp8rl.Tokenizer.load(folder / "missing")


def test_a_long_run_of_invalid_bytes_encodes_as_its_repair(trained):
    _, hf, folder, _ = trained
    text = "\xff" * 3000  # each byte repairs to U+FFFD: up to 3 ids a byte, the most any byte gives
    with fp8rl.Tokenizer.load(folder) as tok:
        ids = tok.encode(text.encode("latin-1"), add_special_tokens=False)
        assert ids.tolist() == hf.encode("\ufffd" * 3000, add_special_tokens=False).ids
        assert tok.decode(ids) == hf.decode(ids.tolist(), skip_special_tokens=False)
