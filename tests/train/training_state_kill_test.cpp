// A process killed (SIGKILL) in the middle of save_training_state must leave
// at the checkpoint path either the file it replaced or the one it wrote,
// never a mixture or a partial file. A forked child saves two states in turn
// on the same path until the parent kills it after a random few ms.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/model/model_params.h"
#include "core/train/training_state.h"
#include "io/io_test_support.h"
#include "kernels/error.h"

namespace fp8rl::test {
namespace {

using train::TrainingState;

// About 6.7 MB on disk (555k weights, three copies with the moments), so
// that a save takes long enough for most kills to land inside it.
model::ModelConfig kill_test_config() {
  model::ModelConfig c;
  c.family = model::ModelFamily::llama;
  c.vocab_size = 512;
  c.hidden_size = 128;
  c.num_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 32;
  c.intermediate_size = 384;
  c.max_position_embeddings = 64;
  c.rms_norm_eps = 1e-5;
  return c;
}

// Two calls with different seeds differ in every weight, moment, scale and counter.
TrainingState kill_test_state(uint64_t seed) {
  TrainingState state;
  state.params = model::random_model_params(kill_test_config(), seed);
  model::for_each_tensor(state.params, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& t) {
    std::vector<float> first = t.data, second = t.data;
    for (float& value : first) value *= 0.5f;
    for (float& value : second) value = value * value;
    state.exp_avg.push_back(std::move(first));
    state.exp_avg_sq.push_back(std::move(second));
  });
  const float scale = 1.0f + static_cast<float>(seed);
  state.scales.q.assign(2, scale);
  state.scales.k.assign(2, 2.0f * scale);
  state.scales.v.assign(2, 3.0f * scale);
  state.steps = static_cast<int64_t>(seed) * 10;
  state.optimizer_steps = static_cast<int64_t>(seed) * 5;
  state.rng_seed = seed;
  state.rng_counter = seed * 1000;
  return state;
}

// The child: only host I/O, then _exit, so that it never returns into the
// test framework it inherited. It starts with b so that the first save
// already replaces the file.
[[noreturn]] void save_in_turn(const std::string& path, const TrainingState& a, const TrainingState& b) {
  try {
    for (int i = 0; i < 100000; ++i) train::save_training_state(path, i % 2 == 0 ? b : a);
  } catch (...) {
    _exit(2);
  }
  _exit(0);
}

// The whole file in one read (byte-by-byte stream iteration is slow under ASan).
std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<uint8_t> bytes(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(in.good());
  return bytes;
}

// Temporary files a killed writer left behind (write_safetensors names them
// "<path>.tmp.<pid>.<n>"), removed; returns how many there were.
int remove_leftovers(const TempDir& dir, const std::string& file_name) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    if (entry.path().filename().string().rfind(file_name + ".tmp.", 0) == 0) {
      std::filesystem::remove(entry.path());
      ++count;
    }
  }
  return count;
}

TEST_CASE("training state: a save killed at a random moment leaves one whole checkpoint") {
  const TempDir dir;
  const TrainingState a = kill_test_state(1);
  const TrainingState b = kill_test_state(2);
  const std::string path = dir.file("state.safetensors");
  train::save_training_state(dir.file("b.safetensors"), b);
  train::save_training_state(path, a);
  const std::vector<uint8_t> a_bytes = file_bytes(path);
  const std::vector<uint8_t> b_bytes = file_bytes(dir.file("b.safetensors"));
  REQUIRE(a_bytes.size() > (size_t{4} << 20));
  REQUIRE(a_bytes != b_bytes);

  // About half of a save's time lies outside the temporary file's life
  // (checks, header, rename), so kill until several kills have landed inside
  // it: those are the ones the test is about.
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> delay_ms(1, 40);
  constexpr int kWantedMidWrite = 6, kMaxTrials = 40;
  int trials = 0, killed_mid_write = 0;
  for (; trials < kMaxTrials && killed_mid_write < kWantedMidWrite; ++trials) {
    const int delay = delay_ms(rng);
    CAPTURE(trials);
    CAPTURE(delay);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) save_in_turn(path, a, b);
    std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    REQUIRE(kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(waitpid(child, &status, 0) == child);
    // Still saving when killed: it neither failed (exit 2) nor ran out of saves.
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    // A temporary file left behind means the kill landed mid-write.
    killed_mid_write += remove_leftovers(dir, "state.safetensors") > 0 ? 1 : 0;

    const std::vector<uint8_t> bytes = file_bytes(path);
    const bool is_a = bytes == a_bytes, is_b = bytes == b_bytes;
    CHECK((is_a || is_b));
    const TrainingState loaded = train::load_training_state(path);
    CHECK(loaded.steps == (is_a ? a.steps : b.steps));
    CHECK(loaded.rng_counter == (is_a ? a.rng_counter : b.rng_counter));
  }
  MESSAGE(killed_mid_write << " of " << trials << " kills landed mid-write");
  CHECK(killed_mid_write == kWantedMidWrite);
}

}  // namespace
}  // namespace fp8rl::test
