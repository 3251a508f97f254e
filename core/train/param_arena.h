// A trainer's parameters in one flat arena of backend memory: four FP32
// buffers of equal layout (master weights, gradients, AdamW's exp_avg and
// exp_avg_sq), each holding every tensor of the model at the same offset, in
// model::for_each_tensor order. One buffer per role makes the optimizer's
// passes (norm, non-finite check, update) and, later, collectives over data
// parallel ranks single calls over contiguous memory.
//
// Offsets: every tensor starts at a multiple of kArenaAlignment elements (512
// bytes), the gaps are zero in every buffer (so they add nothing to a norm
// and AdamW keeps them zero), and shard_points() lists where a shard may
// begin without splitting a 128x128 weight block: tensor starts, and within a
// matrix the starts of its 128-row bands (a row-major [out, in] block lives
// in one band).
//
// While attached to its policy the arena's masters are the policy's master
// weights (policy::DeviceMasters): refit requantizes from them on the device
// and the policy's host copy is downloaded only when read.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/model/model_params.h"
#include "core/policy/device_array.h"
#include "core/policy/device_masters.h"

namespace fp8rl::train {

inline constexpr int64_t kArenaAlignment = 128;  // elements

struct ArenaTensor {
  std::string name;  // Hugging Face name
  std::vector<int64_t> shape;
  int64_t offset = 0;  // elements from the buffer's start
  int64_t size = 0;    // elements
  bool decay = false;  // weight decay applies: matrices (embeddings and head included), not norms or biases
};

// The layout of a model's tensors in an arena.
struct ArenaLayout {
  std::vector<ArenaTensor> tensors;  // for_each_tensor order
  int64_t total = 0;                 // elements of each buffer, gaps included

  // From the tensors' shapes alone: params may hold no values (planning).
  explicit ArenaLayout(model::ModelParams& params);
  // Ascending offsets where a shard may begin (0 first; total not included).
  std::vector<int64_t> shard_points() const;
  // The data-parallel partition: [world_size + 1] ascending offsets from 0 to
  // total; rank r owns [bounds[r], bounds[r + 1]), whose inner bounds are the
  // shard points nearest to r * total / world_size (a shard may be empty when
  // the model has fewer shard points than ranks).
  std::vector<int64_t> shard_bounds(int world_size) const;
};

class ParamArena : public policy::DeviceMasters {
 public:
  // Allocates the buffers, uploads params as the masters and zeroes the
  // rest. Rank `rank` of `world_size` data-parallel ranks holds the moments
  // of its shard only (layout().shard_bounds(world_size)).
  ParamArena(Backend& backend, model::ModelParams& params, int world_size = 1, int rank = 0);

  const ArenaLayout& layout() const { return layout_; }
  float* masters() { return masters_.data(); }  // [total]
  float* grads() { return grads_.data(); }      // [total]
  // The moments of this rank's elements [shard_begin(), shard_end()): [shard_size()].
  float* exp_avg() { return exp_avg_.data(); }
  float* exp_avg_sq() { return exp_avg_sq_.data(); }

  int64_t shard_begin() const { return shard_begin_; }
  int64_t shard_end() const { return shard_end_; }
  int64_t shard_size() const { return shard_end_ - shard_begin_; }
  // [world_size]: the elements each rank owns, for the collectives.
  const std::vector<int64_t>& shard_counts() const { return shard_counts_; }
  // Moments for checkpoints, as [total] host arrays: download_shard fills
  // this rank's elements (zeros elsewhere); upload_shard takes them.
  void download_shard(const float* shard_buffer, std::vector<float>& full) const;
  void upload_shard(float* shard_buffer, const std::vector<float>& full);
  // A [total] array per tensor, and back (the gaps stay zero).
  std::vector<std::vector<float>> split(const std::vector<float>& full) const;
  std::vector<float> join(const std::vector<std::vector<float>>& per_tensor) const;

  // The gradient of `tensor`, a tensor of the params the arena was built or
  // last uploaded from ([tensor size] FP32); null for an empty tensor.
  float* grad(const model::HostTensor& tensor);
  void zero_grads();

  // Per tensor, of a [total] buffer (masters, grads): host[i] = tensor i's values (resized to fit).
  void download(const float* buffer, std::vector<std::vector<float>>& host) const;
  void zero_moments();

  int64_t bytes_per_buffer() const { return layout_.total * static_cast<int64_t>(sizeof(float)); }
  int64_t bytes_per_moment() const { return shard_size() * static_cast<int64_t>(sizeof(float)); }

  // policy::DeviceMasters
  void download(model::ModelParams& params) const override;
  void upload(const model::ModelParams& params) override;
  const float* view(const model::HostTensor& tensor) const override;
  bool complete() const override { return !masters_partial_; }

  // Data parallelism: after an optimizer step only this rank's shard of the
  // masters is current until they are all-gathered (Trainer::gather_masters);
  // until then download() and view() fail with Status::distributed.
  void set_masters_partial(bool partial) { masters_partial_ = partial; }
  // Elements from a buffer's start to `tensor`, a tensor of the bound params.
  int64_t offset_of(const model::HostTensor& tensor) const;

 private:
  void bind(const model::ModelParams& params);
  void require_complete() const;

  Backend& backend_;
  ArenaLayout layout_;
  std::map<const model::HostTensor*, size_t> index_of_;  // the policy's tensors -> layout_.tensors
  int64_t shard_begin_ = 0, shard_end_ = 0;
  std::vector<int64_t> shard_counts_;
  DeviceArray<float> masters_, grads_, exp_avg_, exp_avg_sq_;
  bool masters_partial_ = false;
};

}  // namespace fp8rl::train
