// The compute copies of a policy's weights on its backend, derived from the
// FP32 master weights for one recipe: linear layers and the output head as
// BF16 or as E4M3 codes with 128x128 block scales, embeddings as BF16, norms
// and biases as FP32. Built once per recipe; refit() requantizes it in place
// after the master weights change (no allocation then), never per call.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/model/layer_parts.h"
#include "core/model/model_params.h"
#include "core/policy/device_array.h"
#include "core/policy/device_masters.h"
#include "core/policy/linear_sizes.h"
#include "core/policy/recipe.h"
#include "kernels/backend.h"

namespace fp8rl::policy {

// Empty (no arrays, 0 x 0) for a part that the layer does not have.
struct LinearWeights {
  int64_t out_features = 0;
  int64_t in_features = 0;
  bool fp8 = false;
  DeviceArray<uint16_t> bf16;  // [out, in] when BF16
  DeviceArray<float> f32;      // [out, in] when FP32 (the router)
  DeviceArray<uint8_t> codes;  // [out, in] E4M3 when fp8
  DeviceArray<float> scales;   // [ceil(out / 128), ceil(in / 128)] when fp8
  DeviceArray<float> bias;     // [out], empty when the layer has none

  Fp8Matrix fp8_matrix() const;
  LinearMath math() const { return fp8 ? LinearMath::fp8 : f32.empty() ? LinearMath::bf16 : LinearMath::f32; }
};

// A linear layer's compute copy from its FP32 master weight [out, in] and
// bias [out] (empty: none): BF16, E4M3 in 128x128 blocks with scale_format,
// or FP32.
LinearWeights compile_linear(Backend& backend, const model::HostTensor& weight, const model::HostTensor& bias,
                             LinearMath math, ScaleFormat scale_format);

// One expert of a sparse layer, by model::ExpertLinear.
struct CompiledExpert {
  std::array<LinearWeights, model::kExpertLinearCount> linears;
  const LinearWeights& linear(model::ExpertLinear role) const { return linears[model::index(role)]; }
};

// One layer's compute copies, one per part of the layer table
// (core/model/layer_parts.h), with that part's shape.
struct CompiledLayer {
  LayerPrecision precision;
  std::array<LinearWeights, model::kLinearCount> linears;   // by model::Linear: [out, in] as the table says
  std::array<DeviceArray<float>, model::kNormCount> norms;  // by model::Norm; empty when the config has none
  std::vector<CompiledExpert> experts;                      // [num_experts] in a sparse layer, else empty

  const LinearWeights& linear(model::Linear role) const { return linears[model::index(role)]; }
  const DeviceArray<float>& norm(model::Norm role) const { return norms[model::index(role)]; }
};

// One compute copy as refit writes it: the master tensor it derives from and
// its arrays, viewed as rows of the master's row-major [rows, cols] (a vector
// is [size, 1]). Rows are refitted in 128-row bands (an FP8 copy's block
// rows), so that a band range can be requantized on its own.
struct ComputeCopy {
  enum class Kind : uint8_t { bf16, fp8, f32 };
  const model::HostTensor* master = nullptr;
  Kind kind = Kind::f32;
  void* values = nullptr;   // [rows, cols]: BF16, E4M3 codes or FP32
  float* scales = nullptr;  // fp8 only: [ceil(rows / 128), ceil(cols / 128)]
  int64_t rows = 0, cols = 0;

  size_t value_bytes_per_row() const;
  // Bytes of scales for rows [0, row) (row a multiple of 128, or rows).
  size_t scale_bytes_before(int64_t row) const;
};

// What a CompiledModel of `config` under `recipe` holds, in bytes, from the
// shapes alone (memory planning); equals its bytes().
int64_t compute_weight_bytes(const model::ModelConfig& config, const Recipe& recipe);

class CompiledModel {
 public:
  CompiledModel(Backend& backend, const model::ModelParams& params, const Recipe& recipe);
  // Requantizes (and rounds) every compute copy from params, which must have
  // the config the model was built for, or, given device masters, from
  // theirs (params then only names the tensors).
  void refit(const model::ModelParams& params, const DeviceMasters* device = nullptr);
  // Requantizes rows [row_begin, row_end) of one copy from its master tensor
  // in backend memory, masters [rows, cols] FP32 (row_begin a multiple of
  // 128; row_end too, or the copy's rows).
  void refit_rows(const ComputeCopy& copy, const float* masters, int64_t row_begin, int64_t row_end);
  // Every compute copy, in model::for_each_tensor order of their masters
  // (a tied head has none of its own; empty tensors have none).
  std::vector<ComputeCopy> copies(const model::ModelParams& params);

  const uint16_t* embedding() const { return embed_.data(); }  // [vocab, hidden] BF16
  // The output head [vocab, hidden] in the recipe's head precision; a tied
  // BF16 head is the embeddings (head_weights() is then empty).
  bool head_fp8() const { return head_.fp8; }
  const LinearWeights& head_weights() const { return head_; }
  const uint16_t* lm_head_bf16() const { return head_.bf16.empty() ? embed_.data() : head_.bf16.data(); }
  const std::vector<CompiledLayer>& layers() const { return layers_; }
  const float* final_norm() const { return final_norm_.data(); }  // [hidden]
  int64_t vocab_size() const { return vocab_size_; }
  int64_t hidden_size() const { return hidden_size_; }
  // Of weight blocks and activation tiles alike.
  ScaleFormat scale_format() const { return scale_format_; }
  // Bytes of weights one decode step reads (linear layers, head, norms;
  // every expert of a sparse layer, the most a batch can touch).
  int64_t weight_bytes_per_token() const { return weight_bytes_per_token_; }
  // Bytes of all compute copies (the embeddings too when the head has its own).
  int64_t bytes() const {
    return weight_bytes_per_token_ + static_cast<int64_t>(head_.out_features == 0 ? 0 : embed_.size() * 2);
  }

 private:
  Backend& backend_;
  DeviceArray<float> staging_;  // FP32 master weights on their way to the backend
  DeviceArray<uint16_t> embed_;
  LinearWeights head_;  // [vocab, hidden]; empty (0 x 0) when a BF16 head is tied to the embeddings
  std::vector<CompiledLayer> layers_;
  DeviceArray<float> final_norm_;
  int64_t weight_bytes_per_token_ = 0;
  int64_t vocab_size_ = 0, hidden_size_ = 0;
  ScaleFormat scale_format_ = ScaleFormat::fp32;
};

}  // namespace fp8rl::policy
