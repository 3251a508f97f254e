// The bad-input table of issue 16 (bad_input_table_test.cpp runs it; the rows
// are in bad_input_rows_*.cpp): every public C function with NULL for each
// pointer that may not be NULL, sizes of 0, -1 and overflowing products,
// struct_size 0, 4 (the size field alone) and too long, enum values outside
// their lists as raw integers, NaN and infinities in float inputs, token ids
// -1 and vocab_size, malformed offsets, and special paths (missing, empty, a
// folder, /dev/zero, a named pipe, a symlink loop, an 8,000-character path;
// for saves, a named pipe or folder in place of the file).
//
// Each row must return the status the header promises, with a message that
// starts with the function's name and names the argument or field, write
// none of the out-parameters (they hold a sentinel pattern before the call),
// and leave the policy, its trainer and the context as they were (a
// fingerprint of scores, recipe, attention scales and the saved training
// state, taken before and after). The ASan+UBSan build runs this table too,
// so an enum read before its range check is reported there.
//
// A struct_size below the caller's struct but above 4 is not in the table:
// that is an older header's struct, which the library accepts with defaults
// for the fields it lacks (api_guard.h; capi_errors_test.cpp tests it).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "capi/capi_policy_fixture.h"
#include "capi/tiny_tokenizer.h"

namespace capi_test::bad_input {

inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr double kNaN64 = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf64 = std::numeric_limits<double>::infinity();
inline constexpr int32_t kBadEnums[] = {-1, 57, std::numeric_limits<int32_t>::min(), 0x7FFFFFFF};
inline constexpr int64_t kHugeCount = std::numeric_limits<int64_t>::max() / 2 + 3;  // products of it overflow

// What a call may write: every out-parameter of the table's calls points in
// here, filled with a sentinel pattern (struct outputs then _init'ed) before
// each call and compared byte for byte after it.
struct Outs {
  fp8rl_context* context;
  fp8rl_policy* policy;
  fp8rl_trainer* trainer;
  fp8rl_rollout* rollout;
  fp8rl_communicator* communicator;
  fp8rl_tokenizer* tokenizer;
  fp8rl_encoding* encoding;
  int32_t rank, world_size, id;
  uint64_t fingerprint;
  fp8rl_backend backend;
  int32_t num_threads;
  uint32_t features;
  const char* description;
  int64_t count, total, code_count, scale_count, length;
  double seconds;
  const int32_t* tokens_view;
  const float* logprobs_view;
  fp8rl_finish_reason finish;
  fp8rl_model_config config;
  fp8rl_recipe recipe;
  fp8rl_memory_report report;
  fp8rl_mismatch_metrics mismatch;
  fp8rl_train_metrics metrics, minibatches[2];
  float q[8], k[8], v[8];
  float logprobs[256];
  int32_t tokens[256];
  int64_t offsets[16];
  fp8rl_finish_reason reasons[16];
  uint64_t seeds[16];
  uint8_t codes[4096];
  uint8_t nccl_id[128];
  float scales[64];
  float c[1024];
  uint16_t bf16[4096];
  char text[256];
  fp8rl_special_token_ids special_ids;

  void reset() {
    std::memset(static_cast<void*>(this), 0xA5, sizeof *this);
    REQUIRE(fp8rl_model_config_init(&config) == FP8RL_OK);
    REQUIRE(fp8rl_recipe_init(&recipe) == FP8RL_OK);
    REQUIRE(fp8rl_memory_report_init(&report) == FP8RL_OK);
    REQUIRE(fp8rl_mismatch_metrics_init(&mismatch) == FP8RL_OK);
    REQUIRE(fp8rl_train_metrics_init(&metrics) == FP8RL_OK);
    for (fp8rl_train_metrics& m : minibatches) REQUIRE(fp8rl_train_metrics_init(&m) == FP8RL_OK);
    REQUIRE(fp8rl_special_token_ids_init(&special_ids) == FP8RL_OK);
  }
};

inline std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A scratch folder holding the special paths, removed at scope exit.
class Scratch {
 public:
  Scratch() {
    char pattern[] = "/tmp/fp8rl_bad_input_XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    root_ = pattern;
    REQUIRE(mkfifo(path("fifo").c_str(), 0600) == 0);
    REQUIRE(symlink(path("loop_b").c_str(), path("loop_a").c_str()) == 0);
    REQUIRE(symlink(path("loop_a").c_str(), path("loop_b").c_str()) == 0);
    REQUIRE(mkdir(path("folder").c_str(), 0700) == 0);
    REQUIRE(mkdir(path("fifo_model").c_str(), 0700) == 0);
    REQUIRE(mkfifo(path("fifo_model/config.json").c_str(), 0600) == 0);
    std::ofstream(path("empty_file")).flush();
    REQUIRE(mkdir(path("empty_model").c_str(), 0700) == 0);
    std::ofstream(path("empty_model/config.json")).flush();
  }
  ~Scratch() {
    std::error_code ignored;  // a leftover temporary folder is not worth failing the run for
    std::filesystem::remove_all(root_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  std::string path(const std::string& name) const { return root_ + "/" + name; }

  // Paths no load may accept: the status each must give and a fragment of
  // its message (the file or folder named).
  struct SpecialPath {
    std::string what, path;
    fp8rl_status expected;
    std::string names;
  };
  std::vector<SpecialPath> unreadable_files() const {
    return {{"missing file", path("missing"), FP8RL_ERROR_IO, "missing"},
            {"empty file", path("empty_file"), FP8RL_ERROR_CORRUPT_DATA, "empty_file"},
            {"folder", path("folder"), FP8RL_ERROR_IO, "folder"},
            {"/dev/zero", "/dev/zero", FP8RL_ERROR_IO, "/dev/zero"},
            {"named pipe", path("fifo"), FP8RL_ERROR_IO, "fifo"},
            {"symlink loop", path("loop_a"), FP8RL_ERROR_IO, "loop_a"},
            {"8000-character path", long_path(), FP8RL_ERROR_IO, "xxxxxxxx"},
            {"empty path", "", FP8RL_ERROR_INVALID_ARGUMENT, "path"}};
  }
  std::vector<SpecialPath> unreadable_folders() const {
    return {{"missing folder", path("missing"), FP8RL_ERROR_IO, "missing"},
            {"empty folder", path("folder"), FP8RL_ERROR_IO, "config.json"},
            {"config.json empty", path("empty_model"), FP8RL_ERROR_CORRUPT_DATA, "config.json"},
            {"config.json a named pipe", path("fifo_model"), FP8RL_ERROR_IO, "config.json"},
            {"a regular file", path("empty_file"), FP8RL_ERROR_IO, "empty_file"},
            {"/dev/zero", "/dev/zero", FP8RL_ERROR_IO, "/dev/zero"},
            {"symlink loop", path("loop_a"), FP8RL_ERROR_IO, "loop_a"},
            {"8000-character path", long_path(), FP8RL_ERROR_IO, "xxxxxxxx"},
            {"empty path", "", FP8RL_ERROR_INVALID_ARGUMENT, "folder"}};
  }
  // Where no save may write: the file or folder named, or the argument. A
  // save must never replace what is not a regular file: the named pipe here
  // stands for a device node, which a save running as root could replace
  // (one did replace /dev/zero before the check existed; the table keeps
  // its writes inside its own folder).
  std::vector<SpecialPath> unwritable_files() const {
    return {{"inside a missing folder", path("missing/inner/x"), FP8RL_ERROR_IO, "missing"},
            {"a named pipe", path("fifo"), FP8RL_ERROR_IO, "fifo"},
            {"a folder", path("folder"), FP8RL_ERROR_IO, "folder"},
            {"8000-character path", long_path(), FP8RL_ERROR_IO, "xxxxxxxx"},
            {"empty path", "", FP8RL_ERROR_INVALID_ARGUMENT, "path"}};
  }
  std::vector<SpecialPath> unwritable_folders() const {
    return {{"under a regular file", path("empty_file/model"), FP8RL_ERROR_IO, "empty_file"},
            {"a named pipe", path("fifo"), FP8RL_ERROR_IO, "fifo"},
            {"config.json a named pipe", path("fifo_model"), FP8RL_ERROR_IO, "config.json"},
            {"8000-character path", long_path(), FP8RL_ERROR_IO, "xxxxxxxx"},
            {"empty path", "", FP8RL_ERROR_INVALID_ARGUMENT, "folder"}};
  }

 private:
  std::string long_path() const { return root_ + "/" + std::string(8000, 'x'); }

  std::string root_;
};

// One row of the table.
struct BadCall {
  std::string what;      // the function and the bad input, for the report
  std::string function;  // the message starts with "<function>: "
  fp8rl_status expected;
  std::string names;  // the message holds this: the argument or field
  std::function<fp8rl_status()> call;
};

// Everything the calls use: valid handles and inputs that a row spoils one
// field of, and the out-parameter block.
struct World {
  Scratch scratch;
  CpuContext context{1};
  fp8rl_model_config config = rl_loop_config();
  Policy policy{context.get(), config};
  Policy other{context.get(), llama_config()};  // another architecture
  fp8rl_trainer* trainer = nullptr;
  fp8rl_rollout* rollout = nullptr;
  // The tiny tokenizer (tiny_tokenizer.h) and an encoding of two texts by it;
  // NULL in a build without the tokenizer (the text rows are then left out).
  fp8rl_tokenizer* tokenizer = nullptr;
  fp8rl_encoding* encoding = nullptr;
  Outs outs{};

  // Four sequences: prompt 3 tokens, completion 2 (the rollout's, for logp_gen).
  std::vector<int32_t> prompt_tokens{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
  std::vector<int64_t> prompt_offsets{0, 3, 6, 9, 12};
  std::vector<uint64_t> seeds{1, 2, 3, 4};
  std::vector<int32_t> tokens;
  std::vector<int64_t> offsets{0};
  std::vector<int64_t> prompt_lengths{3, 3, 3, 3};
  std::vector<float> logp_gen, rewards{1, 0, 1, 0};
  std::vector<float> q_scales, k_scales, v_scales;

  World() {
    fp8rl_trainer_options options = trainer_options();
    REQUIRE(fp8rl_trainer_create(policy.get(), &options, &trainer) == FP8RL_OK);
    const fp8rl_sampling_options sampling = sampling_options();
    REQUIRE(fp8rl_policy_generate(policy.get(), prompt_tokens.data(), prompt_offsets.data(), 4, seeds.data(),
                                  &sampling, &rollout) == FP8RL_OK);
    for (int64_t i = 0; i < 4; ++i) {
      const int32_t* completion = nullptr;
      const float* logprobs = nullptr;
      int64_t length = 0;
      REQUIRE(fp8rl_rollout_get(rollout, i, &completion, &logprobs, &length, nullptr) == FP8RL_OK);
      REQUIRE(length == 2);
      tokens.insert(tokens.end(), prompt_tokens.begin() + 3 * i, prompt_tokens.begin() + 3 * (i + 1));
      tokens.insert(tokens.end(), completion, completion + length);
      logp_gen.insert(logp_gen.end(), logprobs, logprobs + length);
      offsets.push_back(static_cast<int64_t>(tokens.size()));
    }
    q_scales.assign(2, 0.5f);
    k_scales = v_scales = q_scales;
    REQUIRE(mkdir(scratch.path("tokenizer").c_str(), 0700) == 0);
    capi_test::write_tiny_tokenizer(scratch.path("tokenizer"));
    if (fp8rl_tokenizer_load(scratch.path("tokenizer").c_str(), &tokenizer) == FP8RL_OK) {
      const char* texts[] = {"hello", "world"};
      const int64_t bytes[] = {5, 5};
      REQUIRE(fp8rl_tokenizer_encode_batch(tokenizer, texts, bytes, 2, 1, &encoding) == FP8RL_OK);
    }
  }
  ~World() {
    fp8rl_encoding_destroy(encoding);
    fp8rl_tokenizer_destroy(tokenizer);
    fp8rl_rollout_destroy(rollout);
    fp8rl_trainer_destroy(trainer);
  }
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  static fp8rl_trainer_options trainer_options() {
    fp8rl_trainer_options options;
    REQUIRE(fp8rl_trainer_options_init(&options) == FP8RL_OK);
    options.group_size = 2;
    options.learning_rate = 1e-2;
    return options;
  }
  static fp8rl_sampling_options sampling_options() {
    fp8rl_sampling_options options;
    REQUIRE(fp8rl_sampling_options_init(&options) == FP8RL_OK);
    options.max_new_tokens = 2;
    options.stop_at_eos = 0;
    return options;
  }
  fp8rl_train_batch batch() const { return four_sequence_batch(tokens, offsets, prompt_lengths, logp_gen, rewards); }

  // Four sequences with 8 completion tokens in all, views of the arrays.
  static fp8rl_train_batch four_sequence_batch(const std::vector<int32_t>& tokens, const std::vector<int64_t>& offsets,
                                               const std::vector<int64_t>& prompt_lengths,
                                               const std::vector<float>& logp_gen, const std::vector<float>& rewards) {
    fp8rl_train_batch b;
    REQUIRE(fp8rl_train_batch_init(&b) == FP8RL_OK);
    b.tokens = tokens.data();
    b.offsets = offsets.data();
    b.num_sequences = 4;
    b.prompt_lengths = prompt_lengths.data();
    b.num_completion_tokens = 8;
    b.logp_gen = logp_gen.data();
    b.rewards = rewards.data();
    return b;
  }

  // What a wrongly accepted call could have changed.
  std::vector<uint8_t> fingerprint() {
    std::vector<float> scores(8);
    const fp8rl_sampling_options sampling = sampling_options();
    REQUIRE(fp8rl_policy_score(policy.get(), tokens.data(), offsets.data(), 4, prompt_lengths.data(), &sampling,
                               scores.data(), 8) == FP8RL_OK);
    fp8rl_recipe recipe;
    REQUIRE(fp8rl_recipe_init(&recipe) == FP8RL_OK);
    REQUIRE(fp8rl_policy_get_recipe(policy.get(), &recipe) == FP8RL_OK);
    float q[2], k[2], v[2];
    REQUIRE(fp8rl_policy_get_attention_scales(policy.get(), q, k, v, 2) == FP8RL_OK);
    int32_t threads = 0;
    REQUIRE(fp8rl_context_get_num_threads(context.get(), &threads) == FP8RL_OK);
    const std::string state = scratch.path("fingerprint.state");
    REQUIRE(fp8rl_trainer_save_state(trainer, state.c_str()) == FP8RL_OK);
    std::vector<uint8_t> print = file_bytes(state);
    const auto append = [&print](const void* data, size_t bytes) {
      print.insert(print.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + bytes);
    };
    append(scores.data(), scores.size() * sizeof(float));
    append(&recipe, sizeof recipe);
    append(q, sizeof q);
    append(k, sizeof k);
    append(v, sizeof v);
    append(&threads, sizeof threads);
    return print;
  }
};

// The field a message names: "options->top_p" is reported as top_p, the
// core's name for it.
inline std::string bare(const std::string& field) {
  const size_t arrow = field.rfind("->"), dot = field.rfind('.');
  const size_t cut = arrow == std::string::npos ? dot : (dot == std::string::npos ? arrow + 1 : std::max(arrow + 1, dot));
  return cut == std::string::npos ? field : field.substr(cut + 1);
}

class Table {
 public:
  explicit Table(World& world) : w_(world) {}

  void add(const std::string& function, const std::string& what, fp8rl_status expected, const std::string& names,
           std::function<fp8rl_status()> call) {
    rows_.push_back({function + ": " + what, function, expected, names, std::move(call)});
  }
  void invalid(const std::string& function, const std::string& what, const std::string& names,
               std::function<fp8rl_status()> call) {
    add(function, what, FP8RL_ERROR_INVALID_ARGUMENT, names, std::move(call));
  }

  // struct_size 0, 4 and one past the struct: the version check, naming `field`.
  template <class Options>
  void struct_sizes(const std::string& function, const std::string& field, const Options& valid,
                    std::function<fp8rl_status(const Options&)> call) {
    for (const uint32_t size : {0u, 4u, static_cast<uint32_t>(sizeof(Options) + 8)}) {
      Options options = valid;
      std::memcpy(static_cast<void*>(&options), &size, sizeof size);  // struct_size is the first field
      add(function, field + " = " + std::to_string(size), FP8RL_ERROR_VERSION_MISMATCH, field,
          [call, options] { return call(options); });
    }
  }

  // Enum values outside the list, as the raw integers a C caller can pass.
  template <class Options, class Enum>
  void enums(const std::string& function, const std::string& field, const Options& valid, Enum Options::*member,
             std::function<fp8rl_status(const Options&)> call) {
    for (const int32_t raw : kBadEnums) {
      Options options = valid;
      std::memcpy(static_cast<void*>(&(options.*member)), &raw, sizeof raw);
      invalid(function, field + " = " + std::to_string(raw), bare(field), [call, options] { return call(options); });
    }
  }

  // NaN, +Inf and -Inf in a float or double field.
  template <class Options, class Real>
  void non_finite(const std::string& function, const std::string& field, const Options& valid, Real Options::*member,
                  std::function<fp8rl_status(const Options&)> call) {
    for (const Real bad : {std::numeric_limits<Real>::quiet_NaN(), std::numeric_limits<Real>::infinity(),
                           -std::numeric_limits<Real>::infinity()}) {
      Options options = valid;
      options.*member = bad;
      invalid(function, field + " = " + std::to_string(bad), bare(field), [call, options] { return call(options); });
    }
  }

  void run() {
    int64_t checked = 0;
    for (const BadCall& row : rows_) {
      CAPTURE(row.what);
      const std::vector<uint8_t> before = w_.fingerprint();
      w_.outs.reset();
      Outs expected_outs;
      std::memcpy(static_cast<void*>(&expected_outs), &w_.outs, sizeof expected_outs);
      REQUIRE(fp8rl_build_features(nullptr) != FP8RL_OK);  // a stale message names another function
      const fp8rl_status status = row.call();
      const std::string message = fp8rl_last_error_message();
      CAPTURE(message);
      CHECK(status == row.expected);
      CHECK(message.rfind(row.function + ": ", 0) == 0);
      CHECK(message.find(row.names) != std::string::npos);
      CHECK(std::memcmp(&expected_outs, &w_.outs, sizeof expected_outs) == 0);
      CHECK(w_.fingerprint() == before);
      ++checked;
    }
    MESSAGE(checked, " bad calls checked");
  }

 private:
  World& w_;
  std::vector<BadCall> rows_;
};


// The rows, by part of the API (bad_input_rows_*.cpp).
void init_functions(Table& t);
void context_functions(Table& t, World& w);
void model_functions(Table& t, World& w);
void policy_functions(Table& t, World& w);
void rollout_functions(Table& t, World& w);
void mismatch_functions(Table& t, World& w);
void trainer_functions(Table& t, World& w);
void numerics_functions(Table& t, World& w);
void distributed_functions(Table& t, World& w);
void text_functions(Table& t, World& w);

// Malformed token sequences for a call taking (tokens, offsets, count): ids
// -1 and vocab_size, offsets that do not start at 0 or decrease, counts 0
// and -1, and NULL arrays.
void bad_sequences(Table& t, const std::string& function, const std::vector<int32_t>& tokens,
                   const std::vector<int64_t>& offsets, int64_t vocab,
                   const std::function<fp8rl_status(const int32_t*, const int64_t*, int64_t)>& call,
                   const std::string& tokens_name = "tokens", const std::string& offsets_name = "offsets",
                   const std::string& count_name = "num_sequences");

}  // namespace capi_test::bad_input
