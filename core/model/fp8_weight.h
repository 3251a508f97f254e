// One FP8 block-quantized weight of a checkpoint (core/model/fp8_checkpoint.h):
// read from its two tensors, checked, and dequantized into FP32 masters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/io/safetensors.h"
#include "core/model/model_params.h"

namespace fp8rl::model {

// A quantized weight as stored, which an FP8 compute copy with FP32 block
// scales takes over bit for bit.
struct Fp8Weight {
  std::vector<uint8_t> codes;  // [out, in] E4M3
  std::vector<float> scales;   // [ceil(out / 128), ceil(in / 128)] dequantization multipliers
};

// A tensor in one of a checkpoint's files.
struct StoredTensor {
  const io::SafetensorsReader* file = nullptr;
  const io::SafetensorsTensor* tensor = nullptr;
};

// Reads the weight `name` of `shape` [out, in] from `codes` and its scales
// from `scales` (null file when the checkpoint has none). Nothing is
// allocated before the stored shapes match `shape` (which the config, already
// checked against the file sizes, bounds). Errors, naming the file and the
// tensor: corrupt_data for a missing weight_scale_inv, codes that are not
// F8_E4M3, scales that are not F32 or BF16, a shape other than `shape` or
// [ceil(out / 128), ceil(in / 128)], a scale <= 0 (zero included: no
// quantizer writes one, and it would erase its block); non_finite for an E4M3
// NaN code (0x7F, 0xFF) or a NaN or infinite scale, as for any NaN weight.
Fp8Weight read_fp8_weight(const std::string& name, const std::vector<int64_t>& shape, const StoredTensor& codes,
                          const StoredTensor& scales);

// The FP32 masters of a weight: decode(code) * scale per block, one FP32
// rounding (the dequantization every FP8 path of the library uses).
void dequantize_fp8_weight(const Fp8Weight& weight, const std::vector<int64_t>& shape, HostTensor& out);

}  // namespace fp8rl::model
