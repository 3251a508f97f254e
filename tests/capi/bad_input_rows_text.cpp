// The bad-input table's rows for the text group: tokenizers and encodings
// (bad_input_table.h says how each row is checked). A too small capacity is
// not here: it writes the needed count, by contract (capi_text_test.cpp).
#include <sys/stat.h>

#include <fstream>
#include <string>

#include "capi/bad_input_table.h"

namespace capi_test::bad_input {
namespace {

// Folders no tokenizer loads from: the status and what the message names.
std::vector<Scratch::SpecialPath> unreadable_tokenizer_folders(const Scratch& s) {
  REQUIRE(mkdir(s.path("empty_tokenizer").c_str(), 0700) == 0);
  std::ofstream(s.path("empty_tokenizer/tokenizer.json")).flush();
  REQUIRE(mkdir(s.path("fifo_tokenizer").c_str(), 0700) == 0);
  REQUIRE(mkfifo(s.path("fifo_tokenizer/tokenizer.json").c_str(), 0600) == 0);
  return {{"missing folder", s.path("missing"), FP8RL_ERROR_IO, "missing"},
          {"folder without tokenizer.json", s.path("folder"), FP8RL_ERROR_IO, "tokenizer.json"},
          {"tokenizer.json empty", s.path("empty_tokenizer"), FP8RL_ERROR_CORRUPT_DATA, "tokenizer.json"},
          {"tokenizer.json a named pipe", s.path("fifo_tokenizer"), FP8RL_ERROR_IO, "tokenizer.json"},
          {"a regular file", s.path("empty_file"), FP8RL_ERROR_IO, "empty_file"},
          {"/dev/zero", "/dev/zero", FP8RL_ERROR_IO, "/dev/zero"},
          {"symlink loop", s.path("loop_a"), FP8RL_ERROR_IO, "loop_a"},
          {"empty path", "", FP8RL_ERROR_INVALID_ARGUMENT, "folder"}};
}

void load_rows(Table& t, World& w) {
  Outs& o = w.outs;
  const std::string good = w.scratch.path("tokenizer");
  t.invalid("fp8rl_special_token_ids_init", "ids NULL", "ids", [] { return fp8rl_special_token_ids_init(nullptr); });
  t.invalid("fp8rl_tokenizer_load", "folder NULL", "folder",
            [&o] { return fp8rl_tokenizer_load(nullptr, &o.tokenizer); });
  t.invalid("fp8rl_tokenizer_load", "out NULL", "out_tokenizer",
            [good] { return fp8rl_tokenizer_load(good.c_str(), nullptr); });
  for (const Scratch::SpecialPath& special : unreadable_tokenizer_folders(w.scratch))
    t.add("fp8rl_tokenizer_load", special.what, special.expected, special.names,
          [&o, path = special.path] { return fp8rl_tokenizer_load(path.c_str(), &o.tokenizer); });
  const std::string from_policy = "fp8rl_policy_load_tokenizer";
  fp8rl_policy* p = w.policy.get();
  t.invalid(from_policy, "policy NULL", "policy", [&o] { return fp8rl_policy_load_tokenizer(nullptr, &o.tokenizer); });
  t.invalid(from_policy, "out NULL", "out_tokenizer", [p] { return fp8rl_policy_load_tokenizer(p, nullptr); });
  t.invalid(from_policy, "a random policy (no folder)", "policy",
            [&o, p] { return fp8rl_policy_load_tokenizer(p, &o.tokenizer); });
}

void encode_rows(Table& t, World& w) {
  Outs& o = w.outs;
  const fp8rl_tokenizer* tok = w.tokenizer;
  const std::string encode = "fp8rl_tokenizer_encode";
  t.invalid(encode, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_encode(nullptr, "hello", 5, 1, o.tokens, 256, &o.count); });
  t.invalid(encode, "text NULL with text_bytes 5", "text",
            [&o, tok] { return fp8rl_tokenizer_encode(tok, nullptr, 5, 1, o.tokens, 256, &o.count); });
  for (const int64_t bad : {int64_t{-1}, std::numeric_limits<int64_t>::min()})
    t.invalid(encode, "text_bytes " + std::to_string(bad), "text_bytes",
              [&o, tok, bad] { return fp8rl_tokenizer_encode(tok, "hello", bad, 1, o.tokens, 256, &o.count); });
  t.invalid(encode, "capacity -1", "capacity",
            [&o, tok] { return fp8rl_tokenizer_encode(tok, "hello", 5, 1, o.tokens, -1, &o.count); });
  t.invalid(encode, "ids NULL with capacity 256", "ids",
            [&o, tok] { return fp8rl_tokenizer_encode(tok, "hello", 5, 1, nullptr, 256, &o.count); });
  t.invalid(encode, "out_count NULL", "out_count",
            [&o, tok] { return fp8rl_tokenizer_encode(tok, "hello", 5, 1, o.tokens, 256, nullptr); });

  const std::string batch = "fp8rl_tokenizer_encode_batch";
  static const char* const texts[] = {"hello", nullptr};
  static const int64_t bytes[] = {5, 3};
  static const int64_t negative[] = {5, -1};
  t.invalid(batch, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_encode_batch(nullptr, texts, bytes, 1, 1, &o.encoding); });
  t.invalid(batch, "texts NULL", "texts",
            [&o, tok] { return fp8rl_tokenizer_encode_batch(tok, nullptr, bytes, 1, 1, &o.encoding); });
  t.invalid(batch, "text_bytes NULL", "text_bytes",
            [&o, tok] { return fp8rl_tokenizer_encode_batch(tok, texts, nullptr, 1, 1, &o.encoding); });
  t.invalid(batch, "count -1", "count",
            [&o, tok] { return fp8rl_tokenizer_encode_batch(tok, texts, bytes, -1, 1, &o.encoding); });
  t.invalid(batch, "texts[1] NULL", "texts[1]",
            [&o, tok] { return fp8rl_tokenizer_encode_batch(tok, texts, bytes, 2, 1, &o.encoding); });
  t.invalid(batch, "text_bytes[1] -1", "text_bytes[1]",
            [&o, tok] { return fp8rl_tokenizer_encode_batch(tok, texts, negative, 2, 1, &o.encoding); });
  t.invalid(batch, "out NULL", "out_encoding",
            [tok] { return fp8rl_tokenizer_encode_batch(tok, texts, bytes, 1, 1, nullptr); });

  const fp8rl_encoding* e = w.encoding;
  t.invalid("fp8rl_encoding_count", "encoding NULL", "encoding",
            [&o] { return fp8rl_encoding_count(nullptr, &o.count); });
  t.invalid("fp8rl_encoding_count", "out NULL", "out_count", [e] { return fp8rl_encoding_count(e, nullptr); });
  const std::string get = "fp8rl_encoding_get";
  t.invalid(get, "encoding NULL", "encoding",
            [&o] { return fp8rl_encoding_get(nullptr, 0, &o.tokens_view, &o.count); });
  for (const int64_t bad : {int64_t{-1}, int64_t{2}, kHugeCount})
    t.invalid(get, "index " + std::to_string(bad), "index",
              [&o, e, bad] { return fp8rl_encoding_get(e, bad, &o.tokens_view, &o.count); });
  t.invalid(get, "out_ids NULL", "out_ids", [&o, e] { return fp8rl_encoding_get(e, 0, nullptr, &o.count); });
  t.invalid(get, "out_count NULL", "out_count",
            [&o, e] { return fp8rl_encoding_get(e, 0, &o.tokens_view, nullptr); });
}

void decode_rows(Table& t, World& w) {
  Outs& o = w.outs;
  const fp8rl_tokenizer* tok = w.tokenizer;
  static const int32_t ids[] = {263, 259, -1};
  const std::string decode = "fp8rl_tokenizer_decode";
  t.invalid(decode, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_decode(nullptr, ids, 2, 0, o.text, 256, &o.length); });
  t.invalid(decode, "ids NULL with count 2", "ids",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, nullptr, 2, 0, o.text, 256, &o.length); });
  t.invalid(decode, "count -1", "count",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, ids, -1, 0, o.text, 256, &o.length); });
  t.invalid(decode, "ids[2] -1", "ids[2]",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, ids, 3, 0, o.text, 256, &o.length); });
  t.invalid(decode, "capacity -1", "capacity",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, ids, 2, 0, o.text, -1, &o.length); });
  t.invalid(decode, "text NULL with capacity 256", "text",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, ids, 2, 0, nullptr, 256, &o.length); });
  t.invalid(decode, "out_bytes NULL", "out_bytes",
            [&o, tok] { return fp8rl_tokenizer_decode(tok, ids, 2, 0, o.text, 256, nullptr); });

  const std::string to_id = "fp8rl_tokenizer_token_to_id";
  t.invalid(to_id, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_token_to_id(nullptr, "hello", 5, &o.id); });
  t.invalid(to_id, "piece NULL with piece_bytes 5", "piece",
            [&o, tok] { return fp8rl_tokenizer_token_to_id(tok, nullptr, 5, &o.id); });
  t.invalid(to_id, "piece_bytes -1", "piece_bytes",
            [&o, tok] { return fp8rl_tokenizer_token_to_id(tok, "hello", -1, &o.id); });
  t.invalid(to_id, "out NULL", "out_id", [tok] { return fp8rl_tokenizer_token_to_id(tok, "hello", 5, nullptr); });

  const std::string to_piece = "fp8rl_tokenizer_id_to_piece";
  t.invalid(to_piece, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_id_to_piece(nullptr, 259, o.text, 256, &o.length); });
  for (const int32_t bad : {-1, 266, std::numeric_limits<int32_t>::max()})
    t.invalid(to_piece, "id " + std::to_string(bad), "id " + std::to_string(bad),
              [&o, tok, bad] { return fp8rl_tokenizer_id_to_piece(tok, bad, o.text, 256, &o.length); });
  t.invalid(to_piece, "capacity -1", "capacity",
            [&o, tok] { return fp8rl_tokenizer_id_to_piece(tok, 259, o.text, -1, &o.length); });
  t.invalid(to_piece, "piece NULL with capacity 256", "piece",
            [&o, tok] { return fp8rl_tokenizer_id_to_piece(tok, 259, nullptr, 256, &o.length); });
  t.invalid(to_piece, "out_bytes NULL", "out_bytes",
            [&o, tok] { return fp8rl_tokenizer_id_to_piece(tok, 259, o.text, 256, nullptr); });

  t.invalid("fp8rl_tokenizer_vocab_size", "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_vocab_size(nullptr, &o.count); });
  t.invalid("fp8rl_tokenizer_vocab_size", "out NULL", "out_size",
            [tok] { return fp8rl_tokenizer_vocab_size(tok, nullptr); });
  const std::string special = "fp8rl_tokenizer_special_ids";
  t.invalid(special, "tokenizer NULL", "tokenizer",
            [&o] { return fp8rl_tokenizer_special_ids(nullptr, &o.special_ids); });
  t.invalid(special, "out NULL", "out_ids", [tok] { return fp8rl_tokenizer_special_ids(tok, nullptr); });
  for (const uint32_t size : {0u, 4u, static_cast<uint32_t>(sizeof(fp8rl_special_token_ids) + 8)}) {
    t.add(special, "out_ids->struct_size = " + std::to_string(size), FP8RL_ERROR_VERSION_MISMATCH,
          "out_ids->struct_size", [&o, tok, size] {
            o.special_ids.struct_size = size;  // the outs were reset just before: restore after the call
            const fp8rl_status status = fp8rl_tokenizer_special_ids(tok, &o.special_ids);
            o.special_ids.struct_size = sizeof(fp8rl_special_token_ids);
            return status;
          });
  }
}

}  // namespace

void text_functions(Table& t, World& w) {
  if (w.tokenizer == nullptr) {
    MESSAGE("the text rows are left out: this library has no tokenizer (built without PCRE2)");
    return;
  }
  load_rows(t, w);
  encode_rows(t, w);
  decode_rows(t, w);
}

}  // namespace capi_test::bad_input
