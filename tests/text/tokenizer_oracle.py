"""Oracle test of fp8rl's tokenizer against Hugging Face `tokenizers`.

Trains byte-level BPE tokenizers with `tokenizers` on a generated multilingual
corpus in the settings of Llama 3, Qwen2 and GPT-2, writes each as a model
folder, encodes and decodes random and adversarial strings with both, and
requires identical ids (with and without special tokens) and identical
decodes (skip_special_tokens both ways).

    tokenizer_oracle.py DUMP_TOKENS WORKDIR [--strings N] [--seed S]

Exit 0: no mismatch; 1: mismatches (the first few are printed); 77: skipped
(a build without the tokenizer).
"""

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import time
import unicodedata

try:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from tokenizers import normalizers
except ImportError:
    print("tokenizers is not installed (pip install tokenizers): skipped")
    sys.exit(77)

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                  r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                 r"|\s*[\r\n]+|\s+(?!\S)|\s+")

SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>"]


# ---------------------------------------------------------------- text generation

def chars(lo, hi):
    return [chr(c) for c in range(lo, hi + 1)]


SCRIPTS = {
    "latin": list("abcdefghijklmnopqrstuvwxyz") * 3 + list("ABCDEFGHIJKLMNOPQRSTUVWXYZ") + list("éèàüöäßçñøåœ"),
    "cyrillic": chars(0x430, 0x44F) + chars(0x410, 0x42F),
    "greek": chars(0x3B1, 0x3C9) + chars(0x391, 0x3A9),
    "cjk": chars(0x4E00, 0x4FFF) + chars(0x3040, 0x309F) + chars(0x30A0, 0x30FF),
    "hangul": chars(0xAC00, 0xAD00),
    "arabic": chars(0x627, 0x64A),
    "hebrew": chars(0x5D0, 0x5EA),
    "devanagari": chars(0x905, 0x939) + chars(0x93E, 0x94D),
    "thai": chars(0xE01, 0xE3A),
}
DIGITS = list("0123456789") + chars(0x660, 0x669) + chars(0x966, 0x96F) + ["²", "½", "Ⅻ", "①"]
PUNCT = list(".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`\"'") + ["«", "»", "—", "…", "¿", "¡", "、", "。", "・", "€", "£"]
SPACES = [" ", " ", " ", "\t", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u2002", "\u2009", "\u202f", "\u0085",
          "\u2028", "\u2029", "\u000b", "\u000c", "\u200b", "\u180e", "\u1680", "\ufeff"]
EMOJI = chars(0x1F600, 0x1F64F) + chars(0x1F300, 0x1F33F) + ["❤️", "✨", "☕", "⚽"]
SKIN = chars(0x1F3FB, 0x1F3FF)
ZWJ_SEQUENCES = ["👨‍👩‍👧‍👦", "🏳️‍🌈", "👩🏽‍💻", "🧑‍🤝‍🧑", "❤️‍🔥", "👁️‍🗨️"]
FLAGS = ["🇫🇷", "🇯🇵", "🇺🇸", "🇩🇪", "🏴󠁧󠁢󠁳󠁣󠁴󠁿"]
COMBINING = chars(0x300, 0x36F) + ["\u0651", "\u05b4", "\u093f", "\u20dd", "\u200d", "\u200c"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M", "'LL", "'D", "'ſ", "’s", "'x"]
DECOMPOSED = ["e\u0301", "a\u0308", "n\u0303", "A\u030a", "\u1100\u1161", "\u1100\u1161\u11a8", "o\u0302\u0301", "\u212b",
              "\u2126", "ﬁ", "Å"]


LEXICON = []  # words that recur, so that training finds merges worth making


def word(rng):
    if LEXICON and rng.random() < 0.7:
        return rng.choice(LEXICON)
    script = rng.choice(list(SCRIPTS))
    letters = SCRIPTS[script]
    length = rng.choice([1, 1, 2, 3, 4, 5, 6, 8, 12])
    return "".join(rng.choice(letters) for _ in range(length))


def number(rng):
    n = rng.choice([1, 2, 3, 4, 5, 7, 10, 16])
    if rng.random() < 0.8:
        return "".join(rng.choice("0123456789") for _ in range(n))
    return "".join(rng.choice(DIGITS) for _ in range(n))


def piece(rng, specials):
    r = rng.random()
    if r < 0.40:
        return word(rng)
    if r < 0.50:
        return number(rng)
    if r < 0.60:
        return rng.choice(PUNCT) * rng.choice([1, 1, 1, 2, 3])
    if r < 0.66:
        return rng.choice(CONTRACTIONS)
    if r < 0.72:
        e = rng.choice(EMOJI)
        if rng.random() < 0.4:
            e += rng.choice(SKIN)
        return e
    if r < 0.75:
        return rng.choice(ZWJ_SEQUENCES + FLAGS)
    if r < 0.80:
        return word(rng)[:2] + "".join(rng.choice(COMBINING) for _ in range(rng.choice([1, 1, 2, 3])))
    if r < 0.84:
        return rng.choice(DECOMPOSED)
    if r < 0.89:
        return rng.choice(specials) if specials else word(rng)
    if r < 0.91 and specials:
        s = rng.choice(specials)
        return s[: rng.randint(1, len(s) - 1)]  # a prefix of a special token
    if r < 0.95:
        return "".join(rng.choice(SPACES) for _ in range(rng.choice([1, 2, 3, 5, 17, 40])))
    # any code point assigned by Unicode 3.2: PCRE2 10.42 (Unicode 14) and Oniguruma (newer) may
    # class characters assigned since then differently (docs/tokenizer.md)
    while True:
        c = rng.randrange(0x20, 0x30000)
        if not (0xD800 <= c <= 0xDFFF) and unicodedata.ucd_3_2_0.category(chr(c)) != "Cn":
            return chr(c)


def sentence(rng, specials, max_pieces=30):
    parts = []
    for _ in range(rng.randint(0, max_pieces)):
        parts.append(piece(rng, specials))
        if rng.random() < 0.6:
            parts.append(" " if rng.random() < 0.85 else rng.choice(SPACES))
    return "".join(parts)


def invalid_utf8(rng, text):
    data = bytearray(text.encode("utf-8"))
    junk = [b"\xff", b"\xfe", b"\x80", b"\xc0\xaf", b"\xe0\x80\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc3",
            b"\xe2\x82", b"\xf0\x9f\x98", b"\xf8\x88\x80\x80\x80", b"\xbf\xbf", b"\xc2\x41", b"\x00"]
    for _ in range(rng.randint(1, 4)):
        at = rng.randint(0, len(data))
        data[at:at] = rng.choice(junk)
    if data and rng.random() < 0.3:  # cut inside a character
        data = data[: rng.randint(0, len(data))]
    return bytes(data)


def adversarial(specials):
    fixed = ["", " ", "  ", "\n", "\r\n", "\t\t\n  \n", " " * 1000, "\n" * 500, "\t " * 300, "a" * 5000,
             "1234567890" * 50, "'s'S'ſ'll'LL", "don't DON'T Don'T we'Ve they'RE", "hello world", "Hello World",
             "x" + " " * 40 + "y", " \u00a0 \u3000x", "\u0085a\u0085 \u0085", "😀" * 100, "👍🏿👍🏻",
             "e\u0301\u0301\u0301", "한국어 텍스트", "עברית ومعها العربية", "日本語のテキスト、中文文本。",
             "hello world!hello worldhello world", "<mask>", " <mask> ", "a<mask>b", "<mask><mask>",
             "café cafe\u0301 CAFÉ", "ﬁ ﬁne", "\u212b\u2126"]
    for s in specials:
        fixed += [s, s + s, " " + s + " ", "x" + s + "y", s[:-1], s + s[:-1], "\n" + s + "\n", s.upper()]
    return fixed


# ---------------------------------------------------------------- tokenizers

def train(kind, corpus, vocab_size):
    if kind == "llama3":
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
        specials = ["<|begin_of_text|>", "<|end_of_text|>"]
    elif kind == "qwen2":
        tok = Tokenizer(models.BPE())
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
        specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    else:  # gpt2
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=kind == "gpt2_prefix", use_regex=True)
        specials = ["<|endoftext|>"]
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A $B:1",
                                          special_tokens=[("<|begin_of_text|>", bos)])])
        tok.add_special_tokens([AddedToken(f"<|reserved_special_token_{i}|>", special=True, normalized=False)
                                for i in range(3)])
    elif kind == "qwen2":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        tok.add_tokens([AddedToken("café", normalized=True), AddedToken("Ångström", normalized=True)])
    else:
        eot = tok.token_to_id("<|endoftext|>")
        tok.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>", pair="$A $B <|endoftext|>",
                                                           special_tokens=[("<|endoftext|>", eot)])
        tok.add_tokens([AddedToken("<mask>", lstrip=True, rstrip=True, normalized=False),
                        AddedToken("hello world", single_word=True, normalized=True),
                        AddedToken("!hello", single_word=True, lstrip=True, normalized=False)])
    config = json.loads(tok.to_str())
    if kind == "llama3":
        config["model"]["ignore_merges"] = True
    if kind.startswith("gpt2"):  # the older merges format: "a b" strings
        config["model"]["merges"] = [" ".join(pair) if isinstance(pair, list) else pair
                                     for pair in config["model"]["merges"]]
    text = json.dumps(config, ensure_ascii=False)
    return Tokenizer.from_str(text), text, specials


def write_folder(folder, text, specials, kind):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        f.write(text)
    config = {"bos_token": specials[0], "eos_token": {"content": specials[-1], "special": True},
              "pad_token": None, "add_bos_token": kind == "llama3"}
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False)


# ---------------------------------------------------------------- comparison

def pack_strings(items):
    out = [struct.pack("<I", len(items))]
    for b in items:
        out.append(struct.pack("<I", len(b)))
        out.append(b)
    return b"".join(out)


def pack_id_lists(lists):
    out = [struct.pack("<I", len(lists))]
    for ids in lists:
        out.append(struct.pack(f"<I{len(ids)}i", len(ids), *ids))
    return b"".join(out)


def check(kind, dump, workdir, count, rng, corpus):
    hf, text, specials = train(kind, corpus, vocab_size=3000)
    folder = os.path.join(workdir, kind)
    write_folder(folder, text, specials, kind)
    all_specials = [t.content for t in hf.get_added_tokens_decoder().values()]
    inputs = [s.encode("utf-8") for s in adversarial(all_specials)]
    while len(inputs) < count:
        s = sentence(rng, all_specials)
        inputs.append(invalid_utf8(rng, s) if rng.random() < 0.08 else s.encode("utf-8"))
    texts = [b.decode("utf-8", "replace") for b in inputs]
    start = time.perf_counter()
    with_special = [e.ids for e in hf.encode_batch(texts, add_special_tokens=True)]
    without = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    hf_seconds = time.perf_counter() - start
    vocab = hf.get_vocab_size(with_added_tokens=True)
    id_lists = list(with_special)
    for _ in range(count // 10):  # arbitrary ids: byte sequences that are not UTF-8, unknown ids
        id_lists.append([rng.randrange(0, vocab + 3) for _ in range(rng.randint(0, 12))])
    decoded = [hf.decode_batch(id_lists, skip_special_tokens=skip) for skip in (False, True)]

    paths = [os.path.join(folder, name) for name in ("strings.bin", "ids.bin", "out.bin")]
    with open(paths[0], "wb") as f:
        f.write(pack_strings(inputs))
    with open(paths[1], "wb") as f:
        f.write(pack_id_lists(id_lists))
    result = subprocess.run([dump, folder, *paths], capture_output=True, text=True)
    if result.returncode == 77:
        print(result.stderr.strip())
        sys.exit(77)
    if result.returncode != 0:
        print(f"{kind}: dump_tokens failed ({result.returncode}): {result.stderr}")
        return len(inputs), len(inputs)
    print(f"{kind}: {result.stderr.strip()} (tokenizers, batch on all cores: {hf_seconds:.3f} s)")

    data = open(paths[2], "rb").read()
    pos = 0

    def u32():
        nonlocal pos
        value = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        return value

    def ids():
        nonlocal pos
        n = u32()
        values = list(struct.unpack_from(f"<{n}i", data, pos))
        pos += 4 * n
        return values

    mismatches = 0
    shown = 0
    for i, raw in enumerate(inputs):
        ours = (ids(), ids())
        if ours != (with_special[i], without[i]):
            mismatches += 1
            if shown < 5:
                shown += 1
                print(f"{kind}: encode mismatch for {raw!r}\n  tokenizers {without[i]}\n  fp8rl      {ours[1]}")
    decode_mismatches = 0
    for i, id_list in enumerate(id_lists):
        for skip in (0, 1):
            n = u32()
            ours = data[pos:pos + n].decode("utf-8")
            pos += n
            if ours != decoded[skip][i]:
                decode_mismatches += 1
                if shown < 10:
                    shown += 1
                    print(f"{kind}: decode mismatch (skip={bool(skip)}) for {id_list}: "
                          f"tokenizers {decoded[skip][i]!r}, fp8rl {ours!r}")
    print(f"{kind}: {len(inputs)} strings encoded both ways, {mismatches} mismatches; "
          f"{len(id_lists)} id lists decoded both ways, {decode_mismatches} mismatches")
    return len(inputs), mismatches + decode_mismatches


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dump")
    parser.add_argument("workdir")
    parser.add_argument("--strings", type=int, default=105000, help="in all, over the tokenizers")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--kinds", default="llama3,qwen2,gpt2,gpt2_prefix")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    LEXICON.extend(word(rng) for _ in range(2000))
    corpus = [sentence(rng, [], 40) for _ in range(4000)]
    kinds = args.kinds.split(",")
    tried = failed = 0
    for kind in kinds:
        n, bad = check(kind, args.dump, args.workdir, args.strings // len(kinds), rng, corpus)
        tried += n
        failed += bad
    print(f"total: {tried} strings, {failed} mismatches")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
