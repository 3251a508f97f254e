// safetensors reader and writer against an independent oracle
// (tests/io/make_safetensors.py: numpy + struct + json): files the oracle
// builds read back exactly here, and a file written here passes the oracle's
// own checks.
#include "core/io/safetensors.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kernels/error.h"
#include "tests/io/io_test_support.h"

#ifndef FP8RL_IO_ORACLE_SCRIPT
#error "FP8RL_IO_ORACLE_SCRIPT must name tests/io/make_safetensors.py"
#endif

namespace {

using namespace fp8rl::io;
using fp8rl::test::TempDir;

// Runs the oracle script with $FP8RL_PYTHON (python3 when unset).
int run_oracle(const std::string& mode, const std::string& argument) {
  const char* python = std::getenv("FP8RL_PYTHON");
  const std::string command = std::string(python && *python ? python : "python3") + " '" + FP8RL_IO_ORACLE_SCRIPT +
                              "' " + mode + " '" + argument + "'";
  return std::system(command.c_str());
}

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> shape;
  std::stringstream in(text);
  for (std::string dim; std::getline(in, dim, ',');) shape.push_back(std::stoll(dim));
  return shape;
}

template <typename T>
T element(const SafetensorsReader& reader, const SafetensorsTensor& tensor, size_t index) {
  T value;
  reader.read(tensor, index * sizeof(T), &value, sizeof(T));
  return value;
}

}  // namespace

TEST_CASE("safetensors: oracle-built file reads back exactly") {
  TempDir dir;
  REQUIRE(run_oracle("make", dir.path().string()) == 0);
  const SafetensorsReader reader(dir.file("oracle.safetensors"));

  std::ifstream manifest(dir.file("manifest.txt"));
  size_t count = 0;
  for (std::string line; std::getline(manifest, line); ++count) {
    std::stringstream fields(line);
    std::string name, dtype, shape, bin;
    std::getline(fields, name, '\t');
    std::getline(fields, dtype, '\t');
    std::getline(fields, shape, '\t');
    std::getline(fields, bin, '\t');
    CAPTURE(name);
    const SafetensorsTensor& tensor = reader.tensor(name);
    CHECK(dtype_name(tensor.dtype) == dtype);
    CHECK(tensor.shape == parse_shape(shape));
    const std::vector<uint8_t> expected = fp8rl::test::read_bytes(dir.file(bin));
    REQUIRE(tensor.size_bytes == expected.size());
    CHECK(reader.read(tensor) == expected);
  }
  CHECK(count == 17);
  CHECK(reader.tensors().size() == count);
  CHECK(reader.metadata().at("format") == "pt");
  CHECK(reader.metadata().at("source") == "oracle");

  // Hand-checked values: the manifest comes from the same script.
  const SafetensorsTensor& embed = reader.tensor("model.embed.weight");  // [4, 3] = i * 0.5 - 1
  CHECK(element<float>(reader, embed, 1 * 3 + 2) == 1.5f);
  CHECK(element<double>(reader, reader.tensor("f64.scalar"), 0) == 3.25);
  CHECK(reader.tensor("f64.scalar").shape.empty());
  CHECK(element<int64_t>(reader, reader.tensor("i64.extremes"), 0) == INT64_MIN);
  CHECK(reader.tensor("empty.rows").size_bytes == 0);
  CHECK(reader.tensor("fp8.e4m3").dtype == DType::f8_e4m3);
  CHECK(reader.find("unicode.\xC3\xA9\xF0\x9F\x98\x80") != nullptr);
}

TEST_CASE("safetensors: C++-written file passes the oracle and reads back") {
  TempDir dir;
  const std::string path = dir.file("cpp.safetensors");
  const float weight[6] = {-0.5f, -0.25f, 0.0f, 0.25f, 0.5f, 0.75f};  // [2, 3]
  const int64_t bias[3] = {INT64_MIN, 0, INT64_MAX};                  // [3]
  const uint8_t codes[4] = {0x00, 0x7E, 0x80, 0xFF};                  // [4] e4m3 codes
  const uint16_t half[2] = {0x3F80, 0xC000};                          // [2] bf16: 1.0, -2.0
  const double scalar = 1.5;                                          // []
  // Given out of order: the writer sorts by name.
  write_safetensors(path,
                    {
                        {"f.scalar", DType::f64, {}, &scalar, 8},
                        {"b.weight", DType::f32, {2, 3}, weight, sizeof weight},
                        {"e.empty", DType::f16, {0}, nullptr, 0},
                        {"a.bias", DType::i64, {3}, bias, sizeof bias},
                        {"d.half", DType::bf16, {2}, half, sizeof half},
                        {"c.codes", DType::f8_e4m3, {4}, codes, sizeof codes},
                    },
                    {{"format", "pt"}, {"note", "\xC3\xA9"}});
  CHECK(run_oracle("check", path) == 0);

  const SafetensorsReader reader(path);
  REQUIRE(reader.tensors().size() == 6);
  CHECK(reader.tensors()[0].name == "a.bias");                            // data order = name order
  CHECK(reader.tensors()[0].file_offset % 8 == 0);  // padded header
  const SafetensorsTensor& w = reader.tensor("b.weight");
  CHECK(w.shape == std::vector<int64_t>{2, 3});
  CHECK(std::memcmp(reader.read(w).data(), weight, sizeof weight) == 0);
  CHECK(std::memcmp(reader.read(reader.tensor("a.bias")).data(), bias, sizeof bias) == 0);
  CHECK(reader.metadata().at("note") == "\xC3\xA9");
  // No temporary file is left behind.
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("safetensors: writer rejects bad tensors and reports OS errors") {
  TempDir dir;
  const float value = 1.0f;
  const auto status_of = [&](const std::string& path, std::vector<SafetensorsTensorData> tensors) {
    try {
      write_safetensors(path, std::move(tensors));
    } catch (const fp8rl::Error& error) {
      return error.status();
    }
    return fp8rl::Status::ok;
  };
  const std::string path = dir.file("x.safetensors");
  CHECK(status_of(path, {{"w", DType::f32, {2}, &value, 4}}) == fp8rl::Status::invalid_argument);
  CHECK(status_of(path, {{"w", DType::f32, {-1}, &value, 4}}) == fp8rl::Status::invalid_argument);
  CHECK(status_of(path, {{"w", DType::f32, {}, &value, 4}, {"w", DType::f32, {}, &value, 4}}) ==
        fp8rl::Status::invalid_argument);
  CHECK(status_of(path, {{"__metadata__", DType::f32, {}, &value, 4}}) == fp8rl::Status::invalid_argument);
  CHECK(status_of(dir.file("missing/x.safetensors"), {{"w", DType::f32, {}, &value, 4}}) == fp8rl::Status::io_error);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("safetensors: dtype table") {
  CHECK(dtype_from_name("BF16") == DType::bf16);
  CHECK(dtype_size(DType::bf16) == 2);
  CHECK(dtype_size(DType::f8_e5m2) == 1);
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(dtype_name(DType::boolean) == "BOOL");
  try {
    dtype_from_name("F8_E8M0");
    FAIL("accepted");
  } catch (const fp8rl::Error& error) {
    CHECK(error.status() == fp8rl::Status::unsupported);
  }
}
