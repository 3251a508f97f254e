#include "core/model/fp8_weight.h"

#include <cmath>
#include <cstring>

#include "core/model/fp8_checkpoint.h"
#include "core/model/model_params_detail.h"
#include "kernels/common/bf16_codec.h"
#include "kernels/common/block_scale.h"
#include "kernels/common/quant_layout.h"
#include "kernels/error.h"

namespace fp8rl::model {
namespace {

using detail::shape_string;

[[noreturn]] void corrupt(const StoredTensor& stored, const std::string& problem) {
  fail(Status::corrupt_data, stored.file->path() + ": " + problem);
}

std::string position(int64_t index, int64_t cols) {
  return "element " + std::to_string(index) + " (row " + std::to_string(index / cols) + ", column " +
         std::to_string(index % cols) + ")";
}

std::vector<uint8_t> read_codes(const std::string& name, const std::vector<int64_t>& shape, const StoredTensor& codes) {
  const io::SafetensorsTensor& stored = *codes.tensor;
  if (stored.dtype != io::DType::f8_e4m3) {
    corrupt(codes, "tensor '" + name + "' has dtype " + std::string(io::dtype_name(stored.dtype)) +
                       "; a weight with a weight_scale_inv must be F8_E4M3");
  }
  if (stored.shape != shape) {
    corrupt(codes, "tensor '" + name + "' has shape " + shape_string(stored.shape) + ", but config.json calls for " +
                       shape_string(shape));
  }
  std::vector<uint8_t> values = codes.file->read(stored);
  for (size_t i = 0; i < values.size(); ++i) {
    if (fp8_is_nan(values[i], Fp8Format::e4m3)) {
      fail(Status::non_finite, codes.file->path() + ": tensor '" + name + "' " +
                                   position(static_cast<int64_t>(i), shape[1]) + " is the E4M3 NaN code");
    }
  }
  return values;
}

std::vector<float> read_scales(const std::string& name, const std::vector<int64_t>& shape, const StoredTensor& scales) {
  const io::SafetensorsTensor& stored = *scales.tensor;
  const ScaleShape blocks = scale_shape(BlockLayout::block_128x128, shape[0], shape[1]);
  if (stored.dtype != io::DType::f32 && stored.dtype != io::DType::bf16) {
    corrupt(scales, "tensor '" + stored.name + "' has dtype " + std::string(io::dtype_name(stored.dtype)) +
                        "; block scales must be F32 or BF16");
  }
  if (stored.shape != std::vector<int64_t>{blocks.rows, blocks.cols}) {
    corrupt(scales, "tensor '" + stored.name + "' has shape " + shape_string(stored.shape) +
                        "; the 128x128 blocks of '" + name + "' " + shape_string(shape) + " call for " +
                        shape_string({blocks.rows, blocks.cols}));
  }
  const std::vector<uint8_t> bytes = scales.file->read(stored);
  std::vector<float> values(static_cast<size_t>(blocks.count()));
  for (size_t i = 0; i < values.size(); ++i) {
    if (stored.dtype == io::DType::f32) {
      std::memcpy(&values[i], bytes.data() + 4 * i, 4);  // little-endian file and host
    } else {
      uint16_t code;
      std::memcpy(&code, bytes.data() + 2 * i, 2);
      values[i] = bf16_decode(code);
    }
    const std::string block = "block " + std::to_string(i / blocks.cols) + ", " + std::to_string(i % blocks.cols);
    if (!std::isfinite(values[i])) {
      fail(Status::non_finite, scales.file->path() + ": tensor '" + stored.name + "' scale of " + block + " is " +
                                   (std::isnan(values[i]) ? "NaN" : "infinite"));
    }
    if (!(values[i] > 0.0f)) {
      corrupt(scales, "tensor '" + stored.name + "' scale of " + block + " is " + std::to_string(values[i]) +
                          "; dequantization multipliers must be > 0");
    }
  }
  return values;
}

}  // namespace

Fp8Weight read_fp8_weight(const std::string& name, const std::vector<int64_t>& shape, const StoredTensor& codes,
                          const StoredTensor& scales) {
  require(shape.size() == 2, "read_fp8_weight: '" + name + "' is not a matrix");
  if (scales.file == nullptr) {
    corrupt(codes, "tensor '" + name + "' is F8_E4M3 but the checkpoint has no '" + scale_tensor_name(name) +
                       "' (its block scales)");
  }
  Fp8Weight weight;
  weight.codes = read_codes(name, shape, codes);
  weight.scales = read_scales(name, shape, scales);
  return weight;
}

void dequantize_fp8_weight(const Fp8Weight& weight, const std::vector<int64_t>& shape, HostTensor& out) {
  const int64_t rows = shape[0], cols = shape[1];
  const int64_t block_cols = scale_shape(BlockLayout::block_128x128, rows, cols).cols;
  out.shape = shape;
  out.data.resize(weight.codes.size());
  for (int64_t row = 0; row < rows; ++row) {
    const float* scales = weight.scales.data() + row / kQuantBlock * block_cols;  // this row's blocks
    for (int64_t col = 0; col < cols; ++col) {
      out.data[row * cols + col] =
          dequantize_value(weight.codes[row * cols + col], scales[col / kQuantBlock], Fp8Format::e4m3);
    }
  }
}

}  // namespace fp8rl::model
