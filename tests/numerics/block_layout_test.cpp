// Where quantize_units puts codes and scales, and that its work split is free.
//
// Oracles: the layout definitions written out in block_reference.cpp from the
// comment in quant_layout.h; and the library's own 1x128 quantization of the
// explicitly transposed matrix, which the transposed layout must reproduce
// bit for bit (the definition of tile_1x128_transposed).
#include <doctest/doctest.h>

#include <cstring>
#include <initializer_list>
#include <random>

#include "kernels/cpu/quantize_cpu.h"
#include "numerics/block_reference.h"
#include "numerics/fp8_reference.h"

namespace fp8rl::test {
namespace {

const BlockLayout kLayouts[] = {BlockLayout::tile_1x128, BlockLayout::tile_1x128_transposed,
                                BlockLayout::block_128x128};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_CASE("numerics: transposed 1x128 layout == 1x128 quantization of the transposed matrix") {
  for (const Shape& shape : sweep_shapes())
    for (DType dtype : {DType::f32, DType::bf16}) {
      const Matrix m = random_matrix(shape.rows, shape.cols, dtype, 3);
      const Matrix t = transpose(m);
      for (QuantSpec spec : sweep_specs(true)) {
        if (spec.layout != BlockLayout::tile_1x128_transposed) continue;
        INFO(describe(spec, dtype, m.rows, m.cols));
        const Quantized direct = quantize(m, spec);
        spec.layout = BlockLayout::tile_1x128;
        const Quantized via_transpose = quantize(t, spec);
        CHECK(direct.codes == via_transpose.codes);
        CHECK(same_bits(direct.scales, via_transpose.scales));
      }
    }
}

TEST_CASE("numerics: quant_layout: scale_shape, scale_index, code_index match the documented layouts") {
  const Shape shapes[] = {{1, 1}, {3, 130}, {129, 257}, {128, 128}, {256, 1}, {1, 384}};
  for (const Shape& s : shapes)
    for (BlockLayout layout : kLayouts) {
      INFO(std::string(layout_name(layout)), " ", s.rows, "x", s.cols);
      CHECK(scale_shape(layout, s.rows, s.cols).count() == ref_scale_count(layout, s.rows, s.cols));
      long wrong = 0;
      for (const Block& b : ref_blocks(layout, s.rows, s.cols))
        for (int64_t r = b.row0; r < b.row0 + b.nrows; ++r)
          for (int64_t c = b.col0; c < b.col0 + b.ncols; ++c) {
            wrong += scale_index(layout, s.rows, s.cols, r, c) != b.scale_pos;
            wrong += code_index(layout, s.rows, s.cols, r, c) != ref_code_pos(layout, s.rows, s.cols, r, c);
          }
      CHECK(wrong == 0);
    }
}

TEST_CASE("numerics: quantize_work_units: one row per 1x128 unit, one band of 128 rows otherwise") {
  for (int64_t rows : {1, 127, 128, 129, 300}) {
    CHECK(cpu::quantize_work_units(BlockLayout::tile_1x128, rows) == rows);
    CHECK(cpu::quantize_work_units(BlockLayout::tile_1x128_transposed, rows) == (rows + 127) / 128);
    CHECK(cpu::quantize_work_units(BlockLayout::block_128x128, rows) == (rows + 127) / 128);
  }
}

// Random cut points over [0, units), ending at units.
std::vector<int64_t> random_cuts(int64_t units, std::mt19937_64& rng) {
  std::vector<int64_t> cuts;
  std::uniform_int_distribution<int64_t> step(0, 3);
  for (int64_t at = step(rng); at < units; at += step(rng)) cuts.push_back(at);
  cuts.push_back(units);
  return cuts;
}

TEST_CASE("numerics: quantize_units: any split into unit ranges writes every slot, with the same bits") {
  std::mt19937_64 rng(4);
  for (const Shape& shape : sweep_shapes())
    for (QuantSpec spec : sweep_specs(false)) {
      const Matrix m = random_matrix(shape.rows, shape.cols, DType::f32, 5);
      INFO(describe(spec, DType::f32, m.rows, m.cols));
      const Quantized whole = quantize(m, spec, 0x00, -1.0f);
      // Different sentinels: a slot left unwritten by either run shows up as a difference.
      const Quantized split =
          quantize_split(m, spec, random_cuts(cpu::quantize_work_units(spec.layout, m.rows), rng), 0xFF, NAN);
      CHECK(whole.codes == split.codes);
      CHECK(same_bits(whole.scales, split.scales));
    }
}

}  // namespace
}  // namespace fp8rl::test
