// Writes the next-token logits our forward pass computes for a Hugging Face
// folder, so that tests/oracle_torch/torch_reference.py can compare them with
// an independent PyTorch implementation of the same model.
//
//   dump_logits <hf_folder> <recipe> <tokens.bin> <offsets.bin> <out.bin>
//
// tokens.bin:  int32 [total_tokens], the sequences back to back
// offsets.bin: int64 [count + 1], sequence i is tokens[offsets[i] .. offsets[i + 1])
// out.bin:     float32 [total_tokens, vocab], rollout::full_logits
// recipe:      bf16 | fp8 | fp8-pow2 | fp8-kv | fp8-kv-attn | fp8-edges | fp8-head
//   fp8         linear layers E4M3 (FP32 block scales), KV cache and attention BF16
//   fp8-pow2    as fp8 with power-of-two block scales
//   fp8-kv      fp8 plus an E4M3 KV cache
//   fp8-kv-attn fp8-kv plus FP8 attention math
//   fp8-edges   fp8-kv-attn with the first and the last layer entirely BF16
// Runs on the CPU backend with FP8RL_THREADS threads (default 2). Exit status
// 0 on success, 2 for bad arguments, 1 for a library error (message on stderr).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "core/context.h"
#include "core/model/model_params.h"
#include "core/policy/policy.h"
#include "core/policy/recipe.h"
#include "core/rollout/rollout.h"

namespace {

using fp8rl::policy::Precision;
using fp8rl::policy::Recipe;

bool parse_recipe(const std::string& name, Recipe& recipe) {
  recipe = Recipe{};
  if (name == "bf16") return true;
  recipe.linear = Precision::fp8;
  if (name == "fp8") return true;
  if (name == "fp8-head") {
    recipe.head = Precision::fp8;
    return true;
  }
  if (name == "fp8-pow2") {
    recipe.scale_format = fp8rl::ScaleFormat::pow2;
    return true;
  }
  recipe.kv_cache = Precision::fp8;
  if (name == "fp8-kv") return true;
  recipe.attention = Precision::fp8;
  if (name == "fp8-kv-attn") return true;
  if (name == "fp8-edges") {
    recipe.bf16_first_layers = 1;
    recipe.bf16_last_layers = 1;
    return true;
  }
  return false;
}

template <class T>
std::vector<T> read_array(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) throw std::runtime_error("cannot open " + path);
  const std::streamsize bytes = file.tellg();
  if (bytes % static_cast<std::streamsize>(sizeof(T)) != 0)
    throw std::runtime_error(path + ": size is not a multiple of the element size");
  std::vector<T> values(static_cast<size_t>(bytes) / sizeof(T));
  file.seekg(0);
  file.read(reinterpret_cast<char*>(values.data()), bytes);
  if (!file) throw std::runtime_error("cannot read " + path);
  return values;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s <hf_folder> <recipe> <tokens.bin> <offsets.bin> <out.bin>\n", argv[0]);
    return 2;
  }
  Recipe recipe;
  if (!parse_recipe(argv[2], recipe)) {
    std::fprintf(stderr, "unknown recipe '%s' (bf16, fp8, fp8-pow2, fp8-kv, fp8-kv-attn, fp8-edges, fp8-head)\n", argv[2]);
    return 2;
  }
  try {
    const std::vector<int32_t> tokens = read_array<int32_t>(argv[3]);
    const std::vector<int64_t> offsets = read_array<int64_t>(argv[4]);
    if (offsets.size() < 2 || offsets.back() != static_cast<int64_t>(tokens.size())) {
      std::fprintf(stderr, "offsets.bin must hold count + 1 offsets ending at the token count\n");
      return 2;
    }
    const char* threads = std::getenv("FP8RL_THREADS");
    fp8rl::BackendRequest request;
    request.choice = fp8rl::BackendChoice::cpu;
    request.num_threads = threads != nullptr ? std::atoi(threads) : 2;
    fp8rl::Context context(request, fp8rl::Logger());

    fp8rl::policy::Policy policy(context, fp8rl::model::load_hf_model(argv[1]), recipe);
    fp8rl::rollout::TokenSequences sequences;
    sequences.tokens = tokens.data();
    sequences.offsets = offsets.data();
    sequences.count = static_cast<int64_t>(offsets.size()) - 1;
    const std::vector<float> logits = fp8rl::rollout::full_logits(policy, sequences);

    std::ofstream out(argv[5], std::ios::binary);
    out.write(reinterpret_cast<const char*>(logits.data()),
              static_cast<std::streamsize>(logits.size() * sizeof(float)));
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[5]);
    std::fprintf(stderr, "%s: %s on %s\n", argv[1], fp8rl::policy::describe_recipe(recipe).c_str(),
                 context.description().c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "dump_logits: %s\n", error.what());
    return 1;
  }
  return 0;
}
