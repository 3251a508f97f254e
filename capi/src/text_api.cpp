// The text group of the C API (fp8rl.h: fp8rl_tokenizer, fp8rl_encoding) over
// fp8rl::text::Tokenizer. Results the caller sizes (ids, text, a piece) use one
// rule: a NULL buffer with capacity 0 is a size query (OK, the size written);
// a buffer too small is INVALID_ARGUMENT with the size still written, and no
// byte of the buffer touched.
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api_guard.h"
#include "handles.h"
#include "struct_output.h"

using namespace fp8rl::capi;

namespace {

// (pointer, count) of a caller's array: count >= 0, pointer non-NULL unless count is 0.
void check_array(const void* data, int64_t count, const char* data_name, const char* count_name) {
  fp8rl::require(count >= 0, std::string(count_name) + " is " + std::to_string(count) + "; it must be >= 0");
  fp8rl::require(data != nullptr || count == 0,
                 std::string(data_name) + " is NULL and " + count_name + " is " + std::to_string(count));
}

// A caller-owned output buffer: NULL only with capacity 0, capacity >= 0.
void check_buffer(const void* buffer, int64_t capacity, const char* buffer_name) {
  fp8rl::require(capacity >= 0, "capacity is " + std::to_string(capacity) + "; it must be >= 0");
  fp8rl::require(buffer != nullptr || capacity == 0,
                 std::string(buffer_name) + " is NULL and capacity is " + std::to_string(capacity) +
                     " (a size query passes NULL with capacity 0)");
}

// Writes the size, then the items where they fit (or the size query allows
// none); otherwise refuses, naming capacity, with the size still written.
template <class T>
void deliver(const T* items, int64_t count, T* buffer, int64_t capacity, int64_t* out_count, const char* unit,
             const char* out_name) {
  *out_count = count;
  if (buffer == nullptr) return;  // size query (capacity is 0)
  fp8rl::require(count <= capacity, "capacity is " + std::to_string(capacity) + "; the result needs " +
                                        std::to_string(count) + " " + unit + " (" + out_name + " holds that number)");
  if (count > 0) std::memcpy(buffer, items, static_cast<size_t>(count) * sizeof(T));
}

std::string_view text_view(const char* text, int64_t bytes) {
  return bytes == 0 ? std::string_view() : std::string_view(text, static_cast<size_t>(bytes));
}

void load_into(const std::string& folder, fp8rl_tokenizer** out_tokenizer) {
  auto handle = std::make_unique<fp8rl_tokenizer>(fp8rl_tokenizer{fp8rl::text::Tokenizer::load(folder)});
  *out_tokenizer = handle.release();
}

}  // namespace

extern "C" {

FP8RL_API fp8rl_status fp8rl_special_token_ids_init(fp8rl_special_token_ids* ids) {
  return guarded(__func__, [&] {
    init_struct(ids, "ids");
    ids->bos = ids->pad = ids->add_bos_token = -1;
    for (int32_t& eos : ids->eos) eos = -1;
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_load(const char* folder, fp8rl_tokenizer** out_tokenizer) {
  return guarded(__func__, [&] {
    require_path(folder, "folder");
    fp8rl::require(out_tokenizer != nullptr, "out_tokenizer is NULL");
    load_into(folder, out_tokenizer);
  });
}

FP8RL_API fp8rl_status fp8rl_policy_load_tokenizer(const fp8rl_policy* policy, fp8rl_tokenizer** out_tokenizer) {
  return guarded(__func__, [&] {
    fp8rl::require(policy != nullptr, "policy is NULL");
    fp8rl::require(out_tokenizer != nullptr, "out_tokenizer is NULL");
    fp8rl::require(!policy->folder.empty(),
                   "policy was not loaded from a folder (fp8rl_policy_load), so it has no tokenizer; "
                   "use fp8rl_tokenizer_load with the model's folder");
    load_into(policy->folder, out_tokenizer);
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_destroy(fp8rl_tokenizer* tokenizer) {
  return guarded(__func__, [&] { delete tokenizer; });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_encode(const fp8rl_tokenizer* tokenizer, const char* text, int64_t text_bytes,
                                              int32_t add_special_tokens, int32_t* ids, int64_t capacity,
                                              int64_t* out_count) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_array(text, text_bytes, "text", "text_bytes");
    check_buffer(ids, capacity, "ids");
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    const std::vector<int32_t> result = impl.encode(text_view(text, text_bytes), add_special_tokens != 0);
    deliver(result.data(), static_cast<int64_t>(result.size()), ids, capacity, out_count, "ids", "out_count");
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_encode_batch(const fp8rl_tokenizer* tokenizer, const char* const* texts,
                                                    const int64_t* text_bytes, int64_t count,
                                                    int32_t add_special_tokens, fp8rl_encoding** out_encoding) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_array(texts, count, "texts", "count");
    check_array(text_bytes, count, "text_bytes", "count");
    fp8rl::require(out_encoding != nullptr, "out_encoding is NULL");
    for (int64_t i = 0; i < count; ++i) {
      const std::string index = "[" + std::to_string(i) + "]";
      check_array(texts[i], text_bytes[i], ("texts" + index).c_str(), ("text_bytes" + index).c_str());
    }
    auto encoding = std::make_unique<fp8rl_encoding>();
    encoding->offsets.reserve(static_cast<size_t>(count) + 1);
    encoding->offsets.push_back(0);
    for (int64_t i = 0; i < count; ++i) {
      const std::vector<int32_t> ids = impl.encode(text_view(texts[i], text_bytes[i]), add_special_tokens != 0);
      encoding->ids.insert(encoding->ids.end(), ids.begin(), ids.end());
      encoding->offsets.push_back(static_cast<int64_t>(encoding->ids.size()));
    }
    *out_encoding = encoding.release();
  });
}

FP8RL_API fp8rl_status fp8rl_encoding_count(const fp8rl_encoding* encoding, int64_t* out_count) {
  return guarded(__func__, [&] {
    const auto& impl = encoding_of(encoding);
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    *out_count = static_cast<int64_t>(impl.offsets.size()) - 1;
  });
}

FP8RL_API fp8rl_status fp8rl_encoding_get(const fp8rl_encoding* encoding, int64_t index, const int32_t** out_ids,
                                          int64_t* out_count) {
  return guarded(__func__, [&] {
    const auto& impl = encoding_of(encoding);
    const auto count = static_cast<int64_t>(impl.offsets.size()) - 1;
    fp8rl::require(index >= 0 && index < count,
                   "index is " + std::to_string(index) + "; the encoding has " + std::to_string(count) + " texts");
    fp8rl::require(out_ids != nullptr, "out_ids is NULL");
    fp8rl::require(out_count != nullptr, "out_count is NULL");
    static const int32_t no_ids = 0;  // a valid pointer for an empty text
    const auto begin = static_cast<size_t>(impl.offsets[static_cast<size_t>(index)]);
    const int64_t length = impl.offsets[static_cast<size_t>(index) + 1] - impl.offsets[static_cast<size_t>(index)];
    *out_ids = length == 0 ? &no_ids : impl.ids.data() + begin;
    *out_count = length;
  });
}

FP8RL_API fp8rl_status fp8rl_encoding_destroy(fp8rl_encoding* encoding) {
  return guarded(__func__, [&] { delete encoding; });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_decode(const fp8rl_tokenizer* tokenizer, const int32_t* ids, int64_t count,
                                              int32_t skip_special_tokens, char* text, int64_t capacity,
                                              int64_t* out_bytes) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_array(ids, count, "ids", "count");
    check_buffer(text, capacity, "text");
    fp8rl::require(out_bytes != nullptr, "out_bytes is NULL");
    for (int64_t i = 0; i < count; ++i) {
      fp8rl::require(ids[i] >= 0, "ids[" + std::to_string(i) + "] is " + std::to_string(ids[i]) +
                                      "; ids are >= 0 (ids above the vocabulary are skipped)");
    }
    const std::string result = impl.decode(ids, static_cast<size_t>(count), skip_special_tokens != 0);
    deliver(result.data(), static_cast<int64_t>(result.size()), text, capacity, out_bytes, "bytes", "out_bytes");
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_token_to_id(const fp8rl_tokenizer* tokenizer, const char* piece,
                                                   int64_t piece_bytes, int32_t* out_id) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_array(piece, piece_bytes, "piece", "piece_bytes");
    fp8rl::require(out_id != nullptr, "out_id is NULL");
    *out_id = impl.token_to_id(text_view(piece, piece_bytes));
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_id_to_piece(const fp8rl_tokenizer* tokenizer, int32_t id, char* piece,
                                                   int64_t capacity, int64_t* out_bytes) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_buffer(piece, capacity, "piece");
    fp8rl::require(out_bytes != nullptr, "out_bytes is NULL");
    const std::optional<std::string_view> spelling = impl.id_to_token(id);
    fp8rl::require(spelling.has_value(), "id " + std::to_string(id) + " names no token (vocab_size " +
                                             std::to_string(impl.vocab_size()) + ")");
    deliver(spelling->data(), static_cast<int64_t>(spelling->size()), piece, capacity, out_bytes, "bytes", "out_bytes");
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_vocab_size(const fp8rl_tokenizer* tokenizer, int64_t* out_size) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    fp8rl::require(out_size != nullptr, "out_size is NULL");
    *out_size = static_cast<int64_t>(impl.vocab_size());
  });
}

FP8RL_API fp8rl_status fp8rl_tokenizer_special_ids(const fp8rl_tokenizer* tokenizer, fp8rl_special_token_ids* out_ids) {
  return guarded(__func__, [&] {
    const auto& impl = tokenizer_of(tokenizer);
    check_out_struct(out_ids, "out_ids");
    const fp8rl::text::SpecialTokenIds& special = impl.special_ids();
    fp8rl_special_token_ids value;
    std::memset(static_cast<void*>(&value), 0, sizeof value);
    value.struct_size = sizeof value;
    value.bos = special.bos;
    value.pad = special.pad;
    value.add_bos_token = special.add_bos_token;
    value.num_eos = 0;
    for (int32_t& eos : value.eos) eos = -1;
    for (const int32_t eos : special.eos) {
      if (value.num_eos == FP8RL_MAX_EOS_IDS) break;
      value.eos[value.num_eos++] = eos;
    }
    write_struct(out_ids, value, "out_ids");
  });
}

}  // extern "C"
