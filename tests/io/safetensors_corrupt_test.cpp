// Every malformed safetensors file is rejected in the reader's constructor
// with the right status and a message naming the file and the problem. The
// files are built byte by byte here, independent of the writer.
#include <doctest/doctest.h>

#include <string>

#include "core/io/safetensors.h"
#include "kernels/error.h"
#include "tests/io/io_test_support.h"

namespace {

using fp8rl::Error;
using fp8rl::Status;
using namespace fp8rl::io;

std::string le64(uint64_t value) {
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return bytes;
}

// Header length prefix + header + data, with the true header length.
std::string file_bytes(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\x5A');
}

// Writes bytes to a scratch file and expects the reader to fail with status
// and a message containing both the path and `problem`.
void expect_rejected(const std::string& bytes, Status status, const std::string& problem) {
  fp8rl::test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  fp8rl::test::write_bytes(path, bytes);
  try {
    SafetensorsReader reader(path);
    FAIL("accepted a bad file; expected: " << problem);
  } catch (const Error& error) {
    const std::string message = error.what();
    CAPTURE(message);
    CHECK(error.status() == status);
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find(problem) != std::string::npos);
  }
}

void expect_corrupt(const std::string& header, size_t data_bytes, const std::string& problem) {
  expect_rejected(file_bytes(header, data_bytes), Status::corrupt_data, problem);
}

// One F32 tensor "w" with the given shape and offsets JSON.
std::string f32_header(const std::string& shape, const std::string& offsets) {
  return R"({"w": {"dtype": "F32", "shape": )" + shape + R"(, "data_offsets": )" + offsets + "}}";
}

}  // namespace

TEST_CASE("safetensors corrupt: length prefix") {
  expect_rejected("", Status::corrupt_data, "file is 0 bytes, shorter than the 8-byte header length");
  expect_rejected(std::string("\x02\0\0\0\0", 5), Status::corrupt_data,
                  "file is 5 bytes, shorter than the 8-byte header length");
  // 2^40: must fail on the limit, long before anything that size is touched.
  expect_rejected(le64(uint64_t{1} << 40) + "{}", Status::corrupt_data,
                  "header length 1099511627776 exceeds the limit of 104857600 bytes");
  expect_rejected(le64(100) + std::string(20, ' '), Status::corrupt_data,
                  "header length 100 runs beyond the end of the file (28 bytes)");
}

TEST_CASE("safetensors corrupt: header JSON") {
  expect_corrupt("{not json}", 0, "header: expected a string key at byte 1");
  expect_corrupt("", 0, "header: unexpected end of input");
  expect_corrupt("[]", 0, "header is not a JSON object");
  expect_corrupt(R"({"__metadata__": {"k": 1}})", 0, "\"__metadata__\" value of \"k\" is not a string");
  expect_corrupt(R"({"__metadata__": []})", 0, "\"__metadata__\" is not an object");
  expect_corrupt(R"({"w": 5})", 0, "tensor \"w\": entry is not an object");
}

TEST_CASE("safetensors corrupt: dtype and shape") {
  expect_corrupt(R"({"w": {"dtype": "F9", "shape": [1], "data_offsets": [0, 4]}})", 4,
                 "tensor \"w\": unknown dtype \"F9\"");
  expect_rejected(file_bytes(R"({"w": {"dtype": "F8_E8M0", "shape": [1], "data_offsets": [0, 1]}})", 1),
                  Status::unsupported, "unsupported dtype \"F8_E8M0\"");
  expect_corrupt(R"({"w": {"dtype": 3, "shape": [1], "data_offsets": [0, 4]}})", 4, "dtype is not a string");
  expect_corrupt(f32_header("[-1]", "[0, 4]"), 4, "shape entry must be a non-negative integer, got -1");
  expect_corrupt(f32_header("[1.5]", "[0, 4]"), 4, "shape entry must be a non-negative integer, got 1.5");
  expect_corrupt(f32_header("[\"2\"]", "[0, 4]"), 4, "shape entry must be a non-negative integer");
  expect_corrupt(f32_header("{}", "[0, 4]"), 4, "shape is not an array");
  expect_corrupt(f32_header("[4294967296, 4294967296]", "[0, 4]"), 4, "tensor \"w\": element count overflows");
  expect_corrupt(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4, "tensor \"w\": missing \"shape\"");
  expect_corrupt(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 1}})", 4,
                 "tensor \"w\": unknown field \"x\"");
}

TEST_CASE("safetensors corrupt: data offsets") {
  expect_corrupt(f32_header("[1]", "[0]"), 4, "data_offsets is not [begin, end]");
  expect_corrupt(f32_header("[1]", "[0, 4, 8]"), 4, "data_offsets is not [begin, end]");
  expect_corrupt(f32_header("[1]", "[-4, 0]"), 4, "data_offsets begin must be a non-negative integer");
  expect_corrupt(f32_header("[0]", "[8, 4]"), 8, "data_offsets begin 8 > end 4");
  expect_corrupt(f32_header("[4]", "[0, 16]"), 8, "data_offsets end 16 is beyond the data area of 8 bytes");
  expect_corrupt(f32_header("[3]", "[0, 8]"), 8, "data_offsets span 8 bytes but dtype and shape need 12");
}

TEST_CASE("safetensors corrupt: tensors must tile the data area") {
  const std::string two = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                          R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})";
  expect_corrupt(two, 12, "tensor \"b\" overlaps tensor \"a\"");
  const std::string gap = R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                          R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})";
  expect_corrupt(gap, 12, "gap of 4 bytes before tensor \"b\"");
  expect_corrupt(f32_header("[1]", "[0, 4]"), 6, "2 unused bytes at the end of the data area");
  // Empty tensors occupy no bytes, so several may share an offset.
  fp8rl::test::TempDir dir;
  const std::string path = dir.file("empty.safetensors");
  fp8rl::test::write_bytes(path, file_bytes(R"({"a": {"dtype": "F32", "shape": [0], "data_offsets": [4, 4]},)"
                                            R"( "b": {"dtype": "I8", "shape": [4], "data_offsets": [0, 4]},)"
                                            R"( "c": {"dtype": "F64", "shape": [2, 0], "data_offsets": [4, 4]}})",
                                            4));
  CHECK(SafetensorsReader(path).tensors().size() == 3);
}

TEST_CASE("safetensors: missing tensor and missing file") {
  fp8rl::test::TempDir dir;
  const std::string path = dir.file("one.safetensors");
  fp8rl::test::write_bytes(path, file_bytes(f32_header("[1]", "[0, 4]"), 4));
  const SafetensorsReader reader(path);
  CHECK(reader.find("v") == nullptr);
  try {
    reader.tensor("model.layers.0.weight");
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.status() == Status::invalid_argument);
    CHECK(std::string(error.what()) == path + ": no tensor named \"model.layers.0.weight\"");
  }
  try {
    SafetensorsReader missing(dir.file("absent.safetensors"));
    FAIL("no error");
  } catch (const Error& error) {
    CHECK(error.status() == Status::io_error);
    CHECK(std::string(error.what()).find("No such file or directory") != std::string::npos);
  }
}
