#include "numerics/oracle_data.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#ifndef FP8RL_ORACLE_SCRIPT
#error "FP8RL_ORACLE_SCRIPT must name tests/oracles/fp8_oracle.py"
#endif

namespace fp8rl::test {
namespace {

constexpr char kMagic[8] = {'F', 'P', '8', 'O', 'R', 'C', 'L', '1'};
constexpr uint64_t kMinValues = 1000000;

std::string python_interpreter() {
  const char* python = std::getenv("FP8RL_PYTHON");
  return python && *python ? python : "python3";
}

// Runs a shell command, returning its exit status and combined output.
int run_capturing(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return -1;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
  return pclose(pipe);
}

std::string describe_status(int status) {
  if (status == -1) return "could not start a shell";
  if (WIFEXITED(status)) return "exit status " + std::to_string(WEXITSTATUS(status));
  return "wait status " + std::to_string(status);
}

template <typename T, size_t N>
void read_array(std::ifstream& in, std::array<T, N>& out) {
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(N * sizeof(T)));
}

template <typename T>
void read_vector(std::ifstream& in, std::vector<T>& out, uint64_t n) {
  out.resize(n);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n * sizeof(T)));
}

// The file is little-endian; so is every machine this project targets (x86-64, aarch64).
OracleData read_oracle_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("oracle: cannot open " + path.string());
  char magic[8];
  uint64_t n = 0;
  in.read(magic, sizeof magic);
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  if (!in || std::memcmp(magic, kMagic, sizeof magic) != 0) throw std::runtime_error("oracle: bad file header");
  if (n < kMinValues) throw std::runtime_error("oracle: only " + std::to_string(n) + " values (< 10^6)");
  OracleData data;
  read_vector(in, data.input_bits, n);
  read_vector(in, data.e4m3, n);
  read_vector(in, data.e5m2, n);
  read_vector(in, data.bf16, n);
  read_vector(in, data.category, n);
  read_array(in, data.e4m3_table);
  read_array(in, data.e5m2_table);
  if (!in || in.peek() != std::char_traits<char>::eof())
    throw std::runtime_error("oracle: truncated or oversized file");
  return data;
}

OracleData load_oracle() {
  const auto path =
      std::filesystem::temp_directory_path() / ("fp8rl_oracle_" + std::to_string(static_cast<long>(getpid())) + ".bin");
  const std::string command = "\"" + python_interpreter() + "\" \"" FP8RL_ORACLE_SCRIPT "\" \"" + path.string() + "\"";
  std::string output;
  const int status = run_capturing(command, output);
  if (status != 0) {
    std::filesystem::remove(path);
    throw std::runtime_error(
        "oracle: `" + command + "` failed (" + describe_status(status) +
        "); the FP8/BF16 tests need Python 3 with numpy and ml_dtypes (set FP8RL_PYTHON). Output:\n" + output);
  }
  try {
    OracleData data = read_oracle_file(path);
    std::filesystem::remove(path);
    return data;
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
}

}  // namespace

const OracleData& oracle_data() {
  static const OracleData data = load_oracle();  // a throw leaves it unset: the next caller retries
  return data;
}

const char* category_name(uint8_t category) {
  static const char* const names[] = {"edge",         "random_bits", "scaled_normal",     "near_binade",
                                      "near_fp8_tie", "tie_shaped",  "near_bf16_overflow"};
  return category < sizeof names / sizeof names[0] ? names[category] : "unknown";
}

}  // namespace fp8rl::test
