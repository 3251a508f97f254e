// transpose and transpose_to_bf16 against a naive loop, over shapes that
// exercise the row bands, power-of-two strides and the thread split.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/common/bf16_codec.h"
#include "ops/ops_test_support.h"

namespace fp8rl::test {
namespace {

template <class Element>
void check_transpose(Backend& backend, int64_t rows, int64_t cols) {
  std::vector<Element> x(static_cast<size_t>(rows * cols)), out(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<Element>(i * 2654435761u);
  backend.transpose(x.data(), rows, cols, sizeof(Element), out.data());
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      wrong += out[static_cast<size_t>(c * rows + r)] != x[static_cast<size_t>(r * cols + c)];
  CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("transpose moves 1, 2 and 4 byte elements bit for bit") {
  const auto backend = make_cpu_backend(2);
  for (auto [rows, cols] :
       {std::pair<int64_t, int64_t>{1, 1}, {3, 700}, {700, 3}, {513, 257}, {4096, 64}, {300, 1024}}) {
    CAPTURE(rows);
    CAPTURE(cols);
    check_transpose<uint8_t>(*backend, rows, cols);
    check_transpose<uint16_t>(*backend, rows, cols);
    check_transpose<uint32_t>(*backend, rows, cols);
  }
  std::vector<uint8_t> x(4), out(4);
  CHECK_THROWS_AS(backend->transpose(x.data(), 2, 2, 3, out.data()), Error);
  CHECK_THROWS_AS(backend->transpose(nullptr, 2, 2, 1, out.data()), Error);
}

TEST_CASE("transpose_to_bf16 rounds each value once, into the transposed place") {
  const auto backend = make_cpu_backend(2);
  const int64_t rows = 777, cols = 130;
  std::vector<float> x(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 1000.0f;
  std::vector<uint16_t> out(x.size());
  backend->transpose_to_bf16(x.data(), rows, cols, out.data());
  int64_t wrong = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      wrong += out[static_cast<size_t>(c * rows + r)] != bf16_encode(x[static_cast<size_t>(r * cols + c)]);
  CHECK(wrong == 0);
}

}  // namespace fp8rl::test
