// Block scales produced by quantize_units, all layouts, f32 and bf16 inputs,
// shapes with partial blocks (1x1, 3x130, 129x257, 300x200) and whole ones.
//
// Oracle: each block's amax recomputed in float64 over the block's finite
// elements, with the blocks enumerated independently from the documented
// layout (block_reference.cpp). FP32 scales must equal float(amax / max)
// exactly; power-of-2 scales must be the smallest power of two with
// amax <= max * scale.
#include <doctest/doctest.h>

#include <algorithm>

#include "numerics/block_reference.h"
#include "numerics/block_sweep.h"

namespace fp8rl::test {
namespace {

TEST_CASE("numerics: block quantization: every block's scale follows from its float64 amax") {
  const SweepResult result =
      sweep_blocks(false, [](const Matrix& m, const QuantSpec& spec, const Quantized& q, const Block& b) {
        const float scale = q.scales[static_cast<size_t>(b.scale_pos)];
        return check_scale(ref_block_amax(m, b), scale, spec.format, spec.scale_format);
      });
  CHECK(result.failures == 0);
  CHECK(result.blocks > 10000);  // the sweep really ran
}

TEST_CASE("numerics: block reference: the test's block enumeration covers every scale slot once") {
  // Guards the oracle itself: a wrong enumeration could hide a wrong scale.
  for (const Shape& shape : sweep_shapes())
    for (const QuantSpec& spec : sweep_specs(false)) {
      std::vector<int> hits(static_cast<size_t>(ref_scale_count(spec.layout, shape.rows, shape.cols)), 0);
      long elements = 0;
      for (const Block& b : ref_blocks(spec.layout, shape.rows, shape.cols)) {
        hits[static_cast<size_t>(b.scale_pos)] += 1;
        elements += b.nrows * b.ncols;
      }
      CHECK(elements == shape.rows * shape.cols);
      CHECK(std::count(hits.begin(), hits.end(), 1) == static_cast<long>(hits.size()));
    }
}

}  // namespace
}  // namespace fp8rl::test
