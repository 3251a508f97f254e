// The C++ side of the tokenizer oracle test (tokenizer_oracle.py): encodes a
// file of strings and decodes a file of id lists with fp8rl's tokenizer, for
// the script to compare with Hugging Face `tokenizers`.
//
//   dump_tokens MODEL_FOLDER STRINGS IDS OUT
// STRINGS: u32 count, then per string u32 length + bytes. IDS: u32 count,
// then per list u32 length + i32 ids. OUT: per string the ids with and
// without special tokens (u32 length + i32 ids each), then per id list its
// decode without and with skip_special_tokens (u32 length + bytes each).
// Exit code 77 (skipped) in a build without the tokenizer.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/text/tokenizer.h"
#include "kernels/error.h"

namespace {

struct Reader {
  std::string data;
  size_t pos = 0;
  uint32_t u32() {
    if (pos + 4 > data.size()) throw std::runtime_error("truncated input");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) value |= uint32_t{static_cast<uint8_t>(data[pos + i])} << (8 * i);
    pos += 4;
    return value;
  }
  std::string bytes(size_t count) {
    if (pos + count > data.size()) throw std::runtime_error("truncated input");
    std::string out = data.substr(pos, count);
    pos += count;
    return out;
  }
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void put_u32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

void put_ids(std::string& out, const std::vector<int32_t>& ids) {
  put_u32(out, static_cast<uint32_t>(ids.size()));
  for (const int32_t id : ids) put_u32(out, static_cast<uint32_t>(id));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: dump_tokens MODEL_FOLDER STRINGS IDS OUT\n";
    return 2;
  }
  if (!fp8rl::text::tokenizer_available()) {
    std::cerr << "dump_tokens: built without PCRE2, no tokenizer: skipped\n";
    return 77;
  }
  try {
    const auto tokenizer = fp8rl::text::Tokenizer::load(argv[1]);
    Reader strings{read_file(argv[2])};
    Reader id_lists{read_file(argv[3])};
    std::vector<std::string> texts(strings.u32());
    size_t total_bytes = 0;
    for (std::string& text : texts) {
      text = strings.bytes(strings.u32());
      total_bytes += text.size();
    }
    std::string out;
    size_t total_tokens = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const std::string& text : texts) {
      const std::vector<int32_t> with = tokenizer.encode(text, true);
      put_ids(out, with);
      put_ids(out, tokenizer.encode(text, false));
      total_tokens += with.size();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint32_t lists = id_lists.u32();
    for (uint32_t i = 0; i < lists; ++i) {
      std::vector<int32_t> ids(id_lists.u32());
      for (int32_t& id : ids) id = static_cast<int32_t>(id_lists.u32());
      for (const bool skip : {false, true}) {
        const std::string text = tokenizer.decode(ids.data(), ids.size(), skip);
        put_u32(out, static_cast<uint32_t>(text.size()));
        out += text;
      }
    }
    std::ofstream(argv[4], std::ios::binary).write(out.data(), static_cast<std::streamsize>(out.size()));
    std::fprintf(stderr, "dump_tokens: %zu strings, %zu bytes, %zu tokens, encode (both ways) %.3f s: %.2f MB/s\n",
                 texts.size(), total_bytes, total_tokens, seconds,
                 2.0 * static_cast<double>(total_bytes) / seconds / 1e6);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "dump_tokens: " << error.what() << "\n";
    return 1;
  }
}
