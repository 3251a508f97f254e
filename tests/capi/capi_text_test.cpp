// The text group of the C API (fp8rl_tokenizer, fp8rl_encoding) on the
// hand-written tokenizer of tiny_tokenizer.h, whose ids are worked out there.
// The oracle comparison with Hugging Face tokenizers over thousands of strings
// is tests/python/test_tokenizer.py (and tests/text for the core).
#include <doctest/doctest.h>
#include <fp8rl/fp8rl.h>
#include <stdlib.h>

#include <cstddef>
#include <cstring>
#include <fstream>
#include <functional>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "capi/capi_policy_fixture.h"
#include "capi/tiny_tokenizer.h"

namespace {

using capi_test::Policy;

// A scratch folder holding the tiny tokenizer, removed at scope exit.
class Folder {
 public:
  Folder() {
    char pattern[] = "/tmp/fp8rl_capi_text_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path_ = pattern;
    capi_test::write_tiny_tokenizer(path_);
  }
  ~Folder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  Folder(const Folder&) = delete;
  Folder& operator=(const Folder&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A tokenizer destroyed at scope exit.
class Tokenizer {
 public:
  explicit Tokenizer(const std::string& folder) {
    REQUIRE_MESSAGE(fp8rl_tokenizer_load(folder.c_str(), &tokenizer_) == FP8RL_OK,
                    std::string(fp8rl_last_error_message()));
  }
  explicit Tokenizer(fp8rl_tokenizer* adopted) : tokenizer_(adopted) {}
  ~Tokenizer() { fp8rl_tokenizer_destroy(tokenizer_); }
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;
  fp8rl_tokenizer* get() const { return tokenizer_; }

 private:
  fp8rl_tokenizer* tokenizer_ = nullptr;
};

std::vector<int32_t> encode(const fp8rl_tokenizer* tokenizer, const std::string& text, bool special = true) {
  int64_t count = -1;
  REQUIRE(fp8rl_tokenizer_encode(tokenizer, text.data(), static_cast<int64_t>(text.size()), special ? 1 : 0, nullptr,
                                 0, &count) == FP8RL_OK);
  std::vector<int32_t> ids(static_cast<size_t>(count));
  int64_t written = -1;
  REQUIRE(fp8rl_tokenizer_encode(tokenizer, text.data(), static_cast<int64_t>(text.size()), special ? 1 : 0,
                                 ids.data(), count, &written) == FP8RL_OK);
  CHECK(written == count);
  return ids;
}

std::string decode(const fp8rl_tokenizer* tokenizer, const std::vector<int32_t>& ids, bool skip = false) {
  int64_t bytes = -1;
  REQUIRE(fp8rl_tokenizer_decode(tokenizer, ids.data(), static_cast<int64_t>(ids.size()), skip ? 1 : 0, nullptr, 0,
                                 &bytes) == FP8RL_OK);
  std::string text(static_cast<size_t>(bytes), '\0');
  REQUIRE(fp8rl_tokenizer_decode(tokenizer, ids.data(), static_cast<int64_t>(ids.size()), skip ? 1 : 0, text.data(),
                                 bytes, &bytes) == FP8RL_OK);
  return text;
}

std::string piece(const fp8rl_tokenizer* tokenizer, int32_t id) {
  int64_t bytes = -1;
  REQUIRE(fp8rl_tokenizer_id_to_piece(tokenizer, id, nullptr, 0, &bytes) == FP8RL_OK);
  std::string text(static_cast<size_t>(bytes), '\0');
  REQUIRE(fp8rl_tokenizer_id_to_piece(tokenizer, id, text.data(), bytes, &bytes) == FP8RL_OK);
  return text;
}

std::string message() { return fp8rl_last_error_message(); }

// Builds without PCRE2 have no tokenizer: the load says so.
bool skip_without_tokenizer(const Folder& folder) {
  fp8rl_tokenizer* tokenizer = nullptr;
  if (fp8rl_tokenizer_load(folder.path().c_str(), &tokenizer) == FP8RL_ERROR_UNSUPPORTED) {
    MESSAGE("skipped: ", message());
    return true;
  }
  fp8rl_tokenizer_destroy(tokenizer);
  return false;
}

}  // namespace

TEST_CASE("text: the hand-computed ids of the tiny tokenizer, with and without special tokens") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  CHECK(encode(tok.get(), "hello world") == std::vector<int32_t>{263, 259, 262, 108, 100});
  CHECK(encode(tok.get(), "hello world", false) == std::vector<int32_t>{259, 262, 108, 100});
  CHECK(encode(tok.get(), "", true) == std::vector<int32_t>{263});
  CHECK(encode(tok.get(), "", false).empty());
  // Special tokens in text are matched whole; é is its two bytes; "ll" merges, "llo" does not.
  CHECK(encode(tok.get(), "h\xc3\xa9llo</s><s>x", false) == std::vector<int32_t>{104, 195, 169, 257, 111, 264, 263, 120});
  // A byte that is not UTF-8 becomes U+FFFD (EF BF BD) before encoding.
  CHECK(encode(tok.get(), std::string("\xff", 1), false) == std::vector<int32_t>{239, 191, 189});
  // A text with a NUL byte inside: the byte count decides, not the NUL.
  CHECK(encode(tok.get(), std::string("a\0b", 3), false) == std::vector<int32_t>{97, 0, 98});
  int64_t size = 0;
  REQUIRE(fp8rl_tokenizer_vocab_size(tok.get(), &size) == FP8RL_OK);
  CHECK(size == 266);
}

TEST_CASE("text: size queries, and a capacity too small is an error that still reports the count") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  const std::string text = "hello world";
  const auto bytes = static_cast<int64_t>(text.size());

  int64_t count = -1;
  CHECK(fp8rl_tokenizer_encode(tok.get(), text.data(), bytes, 1, nullptr, 0, &count) == FP8RL_OK);
  CHECK(count == 5);
  int32_t ids[8] = {-7, -7, -7, -7, -7, -7, -7, -7};
  count = -1;
  CHECK(fp8rl_tokenizer_encode(tok.get(), text.data(), bytes, 1, ids, 4, &count) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(count == 5);
  CHECK(message().find("capacity") != std::string::npos);
  CHECK(ids[0] == -7);  // nothing written
  count = -1;  // a buffer with capacity 0 is not a size query: the ids do not fit
  CHECK(fp8rl_tokenizer_encode(tok.get(), text.data(), bytes, 1, ids, 0, &count) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(count == 5);
  CHECK(fp8rl_tokenizer_encode(tok.get(), text.data(), bytes, 1, ids, 8, &count) == FP8RL_OK);
  CHECK(count == 5);
  CHECK(ids[4] == 100);
  CHECK(ids[5] == -7);  // only count entries written
  // An empty text without special tokens fits a NULL buffer.
  CHECK(fp8rl_tokenizer_encode(tok.get(), nullptr, 0, 0, nullptr, 0, &count) == FP8RL_OK);
  CHECK(count == 0);

  const int32_t hello[] = {263, 259, 262, 108, 100};
  int64_t out_bytes = -1;
  CHECK(fp8rl_tokenizer_decode(tok.get(), hello, 5, 0, nullptr, 0, &out_bytes) == FP8RL_OK);
  CHECK(out_bytes == 14);  // "<s>hello world"
  char buffer[16];
  std::memset(buffer, '#', sizeof buffer);
  out_bytes = -1;
  CHECK(fp8rl_tokenizer_decode(tok.get(), hello, 5, 0, buffer, 13, &out_bytes) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(out_bytes == 14);
  CHECK(buffer[0] == '#');
  CHECK(fp8rl_tokenizer_decode(tok.get(), hello, 5, 0, buffer, 16, &out_bytes) == FP8RL_OK);
  CHECK(std::string(buffer, 14) == "<s>hello world");
  CHECK(buffer[14] == '#');  // not NUL-terminated
  CHECK(fp8rl_tokenizer_decode(tok.get(), hello, 5, 1, buffer, 16, &out_bytes) == FP8RL_OK);
  CHECK(std::string(buffer, static_cast<size_t>(out_bytes)) == "hello world");

  out_bytes = -1;
  CHECK(fp8rl_tokenizer_id_to_piece(tok.get(), 262, buffer, 2, &out_bytes) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(out_bytes == 5);  // "Ġwor": Ġ is two bytes
}

TEST_CASE("text: decode skips ids that name no token, as tokenizers does, and repairs split characters") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  CHECK(decode(tok.get(), {259, 266, 100000, 262}) == "hello wor");
  CHECK(decode(tok.get(), {195, 169}) == "\xc3\xa9");
  CHECK(decode(tok.get(), {195}) == "\xef\xbf\xbd");  // half of é: U+FFFD
  CHECK(decode(tok.get(), {}).empty());
  CHECK(decode(tok.get(), {264, 32, 265}, true) == " ");
}

TEST_CASE("text: id_to_piece and token_to_id are inverse on every id") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  CHECK(piece(tok.get(), 32) == "\xc4\xa0");  // Ġ
  CHECK(piece(tok.get(), 262) == "\xc4\xa0wor");
  CHECK(piece(tok.get(), 263) == "<s>");
  for (int32_t id = 0; id < 266; ++id) {
    const std::string p = piece(tok.get(), id);
    int32_t back = -5;
    REQUIRE(fp8rl_tokenizer_token_to_id(tok.get(), p.data(), static_cast<int64_t>(p.size()), &back) == FP8RL_OK);
    CHECK(back == id);
  }
  int32_t id = 0;
  CHECK(fp8rl_tokenizer_token_to_id(tok.get(), "hello", 5, &id) == FP8RL_OK);
  CHECK(id == 259);
  CHECK(fp8rl_tokenizer_token_to_id(tok.get(), " ", 1, &id) == FP8RL_OK);  // the space is spelled Ġ
  CHECK(id == -1);
  CHECK(fp8rl_tokenizer_token_to_id(tok.get(), nullptr, 0, &id) == FP8RL_OK);
  CHECK(id == -1);
  int64_t bytes = 0;
  for (const int32_t bad : {266, -1, 1 << 30}) {
    CHECK(fp8rl_tokenizer_id_to_piece(tok.get(), bad, nullptr, 0, &bytes) == FP8RL_ERROR_INVALID_ARGUMENT);
    CHECK(message().find("id " + std::to_string(bad)) != std::string::npos);
  }
}

TEST_CASE("text: encode_batch equals encode text by text; the encoding's accessors") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  const std::vector<std::string> texts = {"hello world", "", "\xff", "hello</s>", std::string(300, 'l')};
  std::vector<const char*> pointers;
  std::vector<int64_t> sizes;
  for (const std::string& t : texts) {
    pointers.push_back(t.data());
    sizes.push_back(static_cast<int64_t>(t.size()));
  }
  for (const int32_t special : {0, 1}) {
    fp8rl_encoding* encoding = nullptr;
    REQUIRE(fp8rl_tokenizer_encode_batch(tok.get(), pointers.data(), sizes.data(), 5, special, &encoding) ==
            FP8RL_OK);
    int64_t count = 0;
    REQUIRE(fp8rl_encoding_count(encoding, &count) == FP8RL_OK);
    CHECK(count == 5);
    for (int64_t i = 0; i < count; ++i) {
      const int32_t* ids = nullptr;
      int64_t length = -1;
      REQUIRE(fp8rl_encoding_get(encoding, i, &ids, &length) == FP8RL_OK);
      REQUIRE(ids != nullptr);  // also for an empty text
      CHECK(std::vector<int32_t>(ids, ids + length) == encode(tok.get(), texts[static_cast<size_t>(i)], special));
    }
    const int32_t* ids = nullptr;
    int64_t length = 0;
    CHECK(fp8rl_encoding_get(encoding, 5, &ids, &length) == FP8RL_ERROR_INVALID_ARGUMENT);
    CHECK(message().find("index is 5") != std::string::npos);
    CHECK(fp8rl_encoding_get(encoding, -1, &ids, &length) == FP8RL_ERROR_INVALID_ARGUMENT);
    CHECK(fp8rl_encoding_destroy(encoding) == FP8RL_OK);
  }
  fp8rl_encoding* empty = nullptr;
  REQUIRE(fp8rl_tokenizer_encode_batch(tok.get(), nullptr, nullptr, 0, 1, &empty) == FP8RL_OK);
  int64_t count = -1;
  CHECK(fp8rl_encoding_count(empty, &count) == FP8RL_OK);
  CHECK(count == 0);
  CHECK(fp8rl_encoding_destroy(empty) == FP8RL_OK);
  CHECK(fp8rl_encoding_destroy(nullptr) == FP8RL_OK);
  CHECK(fp8rl_tokenizer_destroy(nullptr) == FP8RL_OK);
}

TEST_CASE("text: special ids from tokenizer_config.json and generation_config.json; struct_size rules") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  fp8rl_special_token_ids ids;
  REQUIRE(fp8rl_special_token_ids_init(&ids) == FP8RL_OK);
  CHECK(ids.struct_size == sizeof ids);
  CHECK(ids.bos == -1);
  CHECK(ids.pad == -1);
  CHECK(ids.add_bos_token == -1);
  CHECK(ids.num_eos == 0);
  CHECK(ids.eos[0] == -1);
  REQUIRE(fp8rl_tokenizer_special_ids(tok.get(), &ids) == FP8RL_OK);
  CHECK(ids.bos == 263);
  CHECK(ids.pad == 265);
  CHECK(ids.add_bos_token == 1);
  CHECK(ids.num_eos == 2);
  CHECK(ids.eos[0] == 264);
  CHECK(ids.eos[1] == 10);
  CHECK(ids.eos[2] == -1);
  // An older, shorter struct receives only the fields it has.
  fp8rl_special_token_ids shorter;
  std::memset(&shorter, 0x5A, sizeof shorter);
  shorter.struct_size = offsetof(fp8rl_special_token_ids, pad);
  REQUIRE(fp8rl_tokenizer_special_ids(tok.get(), &shorter) == FP8RL_OK);
  CHECK(shorter.bos == 263);
  CHECK(shorter.pad == 0x5A5A5A5A);
  shorter.struct_size = sizeof shorter + 4;
  CHECK(fp8rl_tokenizer_special_ids(tok.get(), &shorter) == FP8RL_ERROR_VERSION_MISMATCH);
  CHECK(message().find("out_ids->struct_size") != std::string::npos);
  // Without the config files there are no special ids.
  std::filesystem::remove(folder.path() + "/tokenizer_config.json");
  std::filesystem::remove(folder.path() + "/generation_config.json");
  Tokenizer bare(folder.path());
  REQUIRE(fp8rl_tokenizer_special_ids(bare.get(), &ids) == FP8RL_OK);
  CHECK(ids.bos == -1);
  CHECK(ids.num_eos == 0);
  CHECK(ids.add_bos_token == -1);
}

TEST_CASE("text: NULL and negative arguments are refused, naming the argument") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  Tokenizer tok(folder.path());
  const fp8rl_tokenizer* t = tok.get();
  int32_t ids[4];
  int64_t count = 0;
  char text[4];
  struct Case {
    const char* names;
    std::function<fp8rl_status()> call;
  };
  const Case cases[] = {
      {"tokenizer is NULL", [&] { return fp8rl_tokenizer_encode(nullptr, "a", 1, 1, ids, 4, &count); }},
      {"text is NULL", [&] { return fp8rl_tokenizer_encode(t, nullptr, 1, 1, ids, 4, &count); }},
      {"text_bytes is -1", [&] { return fp8rl_tokenizer_encode(t, "a", -1, 1, ids, 4, &count); }},
      {"capacity is -1", [&] { return fp8rl_tokenizer_encode(t, "a", 1, 1, ids, -1, &count); }},
      {"ids is NULL", [&] { return fp8rl_tokenizer_encode(t, "a", 1, 1, nullptr, 4, &count); }},
      {"out_count is NULL", [&] { return fp8rl_tokenizer_encode(t, "a", 1, 1, ids, 4, nullptr); }},
      {"ids is NULL", [&] { return fp8rl_tokenizer_decode(t, nullptr, 2, 0, text, 4, &count); }},
      {"count is -1", [&] { return fp8rl_tokenizer_decode(t, ids, -1, 0, text, 4, &count); }},
      {"out_bytes is NULL", [&] { return fp8rl_tokenizer_decode(t, ids, 0, 0, text, 4, nullptr); }},
      {"text is NULL", [&] { return fp8rl_tokenizer_decode(t, ids, 0, 0, nullptr, 4, &count); }},
      {"piece_bytes is -3", [&] { return fp8rl_tokenizer_token_to_id(t, "a", -3, ids); }},
      {"out_id is NULL", [&] { return fp8rl_tokenizer_token_to_id(t, "a", 1, nullptr); }},
      {"out_size is NULL", [&] { return fp8rl_tokenizer_vocab_size(t, nullptr); }},
      {"out_ids is NULL", [&] { return fp8rl_tokenizer_special_ids(t, nullptr); }},
      {"folder is NULL", [&] { return fp8rl_tokenizer_load(nullptr, nullptr); }},
      {"out_tokenizer is NULL", [&] { return fp8rl_tokenizer_load(folder.path().c_str(), nullptr); }},
      {"ids is NULL", [&] { return fp8rl_special_token_ids_init(nullptr); }},
  };
  for (const Case& c : cases) {
    CAPTURE(c.names);
    CHECK(c.call() == FP8RL_ERROR_INVALID_ARGUMENT);
    CHECK(message().find(c.names) != std::string::npos);
  }
  const int32_t negative[] = {5, -2};
  CHECK(fp8rl_tokenizer_decode(t, negative, 2, 0, nullptr, 0, &count) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(message().find("ids[1] is -2") != std::string::npos);
  const char* texts[] = {"a", nullptr};
  const int64_t sizes[] = {1, 1};
  fp8rl_encoding* encoding = nullptr;
  CHECK(fp8rl_tokenizer_encode_batch(t, texts, sizes, 2, 1, &encoding) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(message().find("texts[1] is NULL") != std::string::npos);
  CHECK(encoding == nullptr);
}

TEST_CASE("text: files that are missing or malformed are IO and CORRUPT_DATA errors naming the file") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  fp8rl_tokenizer* tokenizer = nullptr;
  const std::string missing = folder.path() + "/nothing";
  CHECK(fp8rl_tokenizer_load(missing.c_str(), &tokenizer) == FP8RL_ERROR_IO);
  CHECK(message().find("tokenizer.json") != std::string::npos);
  std::ofstream(folder.path() + "/tokenizer.json") << "{\"model\": ";
  CHECK(fp8rl_tokenizer_load(folder.path().c_str(), &tokenizer) == FP8RL_ERROR_CORRUPT_DATA);
  CHECK(message().find("tokenizer.json") != std::string::npos);
  CHECK(tokenizer == nullptr);
}

TEST_CASE("text: a policy loaded from a folder loads the tokenizer beside its weights; a random one has none") {
  Folder folder;
  if (skip_without_tokenizer(folder)) return;
  CpuContext context(1);
  fp8rl_model_config config = capi_test::rl_loop_config();
  Policy random(context.get(), config);
  fp8rl_tokenizer* tokenizer = nullptr;
  CHECK(fp8rl_policy_load_tokenizer(random.get(), &tokenizer) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(message().rfind("fp8rl_policy_load_tokenizer: policy", 0) == 0);
  CHECK(tokenizer == nullptr);
  CHECK(fp8rl_policy_load_tokenizer(nullptr, &tokenizer) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(message().find("policy is NULL") != std::string::npos);
  CHECK(fp8rl_policy_load_tokenizer(random.get(), nullptr) == FP8RL_ERROR_INVALID_ARGUMENT);
  CHECK(message().find("out_tokenizer is NULL") != std::string::npos);

  const std::string model = folder.path() + "/model";
  REQUIRE(fp8rl_policy_save(random.get(), model.c_str(), FP8RL_DTYPE_F32) == FP8RL_OK);
  fp8rl_policy* loaded = nullptr;
  REQUIRE_MESSAGE(fp8rl_policy_load(context.get(), model.c_str(), &loaded) == FP8RL_OK, message());
  Policy owner(loaded);
  // Saved weights only: no tokenizer.json yet.
  CHECK(fp8rl_policy_load_tokenizer(loaded, &tokenizer) == FP8RL_ERROR_IO);
  CHECK(message().find(model + "/tokenizer.json") != std::string::npos);
  for (const char* name : {"tokenizer.json", "tokenizer_config.json", "generation_config.json"})
    std::filesystem::copy_file(folder.path() + "/" + name, model + "/" + name);
  REQUIRE_MESSAGE(fp8rl_policy_load_tokenizer(loaded, &tokenizer) == FP8RL_OK, message());
  Tokenizer tok(tokenizer);
  CHECK(encode(tok.get(), "hello world") == std::vector<int32_t>{263, 259, 262, 108, 100});
  fp8rl_special_token_ids ids;
  REQUIRE(fp8rl_special_token_ids_init(&ids) == FP8RL_OK);
  REQUIRE(fp8rl_tokenizer_special_ids(tok.get(), &ids) == FP8RL_OK);
  CHECK(ids.bos == 263);
}
