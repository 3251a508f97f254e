// Runs a per-block check over every shape x spec x input dtype of the sweep
// (block_reference.h) and reports the first failures. Shared by the scale and
// the element-error tests so both look at exactly the same quantizations.
#pragma once

#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>

#include "numerics/block_reference.h"

namespace fp8rl::test {

// check(matrix, spec, quantized, block) returns "" or a failure description.
using BlockCheck = std::function<std::string(const Matrix&, const QuantSpec&, const Quantized&, const Block&)>;

struct SweepResult {
  long blocks = 0;
  long failures = 0;
};

inline SweepResult sweep_blocks(bool both_saturation_modes, const BlockCheck& check) {
  SweepResult result;
  for (const Shape& shape : sweep_shapes())
    for (DType dtype : {DType::f32, DType::bf16}) {
      const Matrix m = random_matrix(shape.rows, shape.cols, dtype, 1);
      for (const QuantSpec& spec : sweep_specs(both_saturation_modes)) {
        const Quantized q = quantize(m, spec);
        for (const Block& b : ref_blocks(spec.layout, m.rows, m.cols)) {
          result.blocks += 1;
          const std::string failure = check(m, spec, q, b);
          if (failure.empty()) continue;
          if (++result.failures <= 10)
            std::printf("%s, block at (%lld, %lld): %s\n", describe(spec, dtype, m.rows, m.cols).c_str(),
                        static_cast<long long>(b.row0), static_cast<long long>(b.col0), failure.c_str());
        }
      }
    }
  return result;
}

}  // namespace fp8rl::test
