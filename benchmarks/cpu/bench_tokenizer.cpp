// Encode throughput of fp8rl's tokenizer (core/text) on one thread:
//
//   fp8rl_bench_tokenizer MODEL_FOLDER CORPUS [--repeats N]
//
// CORPUS: UTF-8 documents separated by NUL bytes. Encodes every document
// (without special tokens) --repeats times after one warm-up and prints one
// JSON line: {"bytes", "tokens", "seconds"} of the median run.
// tokenizer_bench.py runs it beside Hugging Face `tokenizers` on the same
// corpus and prints the table with the ratio.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "bench_support.h"
#include "core/text/tokenizer.h"

namespace {

using fp8rl::bench::Clock;
using fp8rl::bench::median;
using fp8rl::bench::seconds_since;

std::vector<std::string> read_documents(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "fp8rl_bench_tokenizer: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  const std::string all((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  std::vector<std::string> documents;
  size_t begin = 0;
  for (size_t end; (end = all.find('\0', begin)) != std::string::npos; begin = end + 1)
    documents.push_back(all.substr(begin, end - begin));
  if (begin < all.size()) documents.push_back(all.substr(begin));
  return documents;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--repeats")) {
    std::fprintf(stderr, "usage: fp8rl_bench_tokenizer MODEL_FOLDER CORPUS [--repeats N]\n");
    return 2;
  }
  const int repeats = argc == 5 ? std::max(1, std::atoi(argv[4])) : 5;
  const fp8rl::text::Tokenizer tokenizer = fp8rl::text::Tokenizer::load(argv[1]);
  const std::vector<std::string> documents = read_documents(argv[2]);
  size_t bytes = 0, tokens = 0;
  for (const std::string& d : documents) bytes += d.size();
  std::vector<double> times;
  for (int r = 0; r <= repeats; ++r) {
    size_t count = 0;
    const Clock::time_point start = Clock::now();
    for (const std::string& d : documents) count += tokenizer.encode(d, false).size();
    if (r > 0) times.push_back(seconds_since(start));  // the first run warms the word cache up
    tokens = count;
  }
  std::printf("{\"bytes\": %zu, \"tokens\": %zu, \"seconds\": %.6f}\n", bytes, tokens, median(times));
  return 0;
}
