// A hand-written byte-level BPE tokenizer folder, small enough that its ids
// can be worked out by hand (capi_text_test.cpp, bad_input_rows_text.cpp):
//
//   ids 0..255  the 256 bytes, id = byte value, each spelled with GPT-2's
//               byte-to-character table ("Ġ" is the space, id 32)
//   256 he = h e     257 ll = l l     258 hell = he ll    259 hello = hell o
//   260 Ġw = Ġ w     261 or = o r     262 Ġwor = Ġw or    (merge ranks in that order)
//   263 <s>, 264 </s>, 265 <pad>: special added tokens
//
// Pre-tokenizer ByteLevel (GPT-2 regex, no prefix space), decoder ByteLevel,
// post-processor "<s> $A". So "hello world" is [263, 259, 262, 108, 100] with
// special tokens ("hello" -> he, ll, hell, hello; " world" -> Ġw, or, Ġwor, l, d)
// and [259, 262, 108, 100] without. Hugging Face tokenizers gives the same.
//
// tokenizer_config.json: bos "<s>", eos "</s>", pad "<pad>", add_bos_token true;
// generation_config.json: eos_token_id [264, 10] (so eos is 264, then 10).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace capi_test {

// GPT-2's bytes_to_unicode: the character (as UTF-8) that spells byte b.
inline std::string byte_level_char(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  uint32_t code = static_cast<uint32_t>(b);
  if (!printable) {
    uint32_t n = 0;
    for (int c = 0; c < b; ++c) {
      const bool p = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
      if (!p) ++n;
    }
    code = 256 + n;
  }
  std::string out;
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else {  // below U+0800 here
    out.push_back(static_cast<char>(0xC0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
  }
  return out;
}

// The JSON string literal of a byte-level spelling (only '"' and '\\' need escapes).
inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

inline std::string tiny_tokenizer_json() {
  const std::string space = byte_level_char(' ');  // "Ġ"
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {space, "w"}, {"o", "r"}, {space + "w", "or"}};
  std::string vocab;
  for (int b = 0; b < 256; ++b) vocab += json_string(byte_level_char(b)) + ":" + std::to_string(b) + ",";
  std::string merge_list;
  for (size_t i = 0; i < merges.size(); ++i) {
    vocab += json_string(merges[i].first + merges[i].second) + ":" + std::to_string(256 + i) + ",";
    merge_list += (i ? "," : "") + json_string(merges[i].first + " " + merges[i].second);
  }
  vocab.pop_back();
  const auto added = [](int id, const char* content) {
    return std::string("{\"id\":") + std::to_string(id) + ",\"content\":\"" + content +
           "\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":true}";
  };
  return std::string("{\"version\":\"1.0\",\"added_tokens\":[") + added(263, "<s>") + "," + added(264, "</s>") + "," +
         added(265, "<pad>") +
         "],\"normalizer\":null,"
         "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,"
         "\"use_regex\":true},"
         "\"post_processor\":{\"type\":\"TemplateProcessing\","
         "\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],"
         "\"pair\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},"
         "{\"Sequence\":{\"id\":\"B\",\"type_id\":1}}],"
         "\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[263],\"tokens\":[\"<s>\"]}}},"
         "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},"
         "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
         "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,"
         "\"vocab\":{" +
         vocab + "},\"merges\":[" + merge_list + "]}}";
}

// Writes tokenizer.json, tokenizer_config.json and generation_config.json into `folder` (which must exist).
inline void write_tiny_tokenizer(const std::string& folder) {
  std::ofstream(folder + "/tokenizer.json", std::ios::binary) << tiny_tokenizer_json();
  std::ofstream(folder + "/tokenizer_config.json", std::ios::binary)
      << R"({"bos_token": "<s>", "eos_token": {"content": "</s>", "special": true}, "pad_token": "<pad>",)"
      << R"( "add_bos_token": true})";
  std::ofstream(folder + "/generation_config.json", std::ios::binary) << R"({"eos_token_id": [264, 10]})";
}

}  // namespace capi_test
