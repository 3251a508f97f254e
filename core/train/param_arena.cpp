#include "core/train/param_arena.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "kernels/common/quant_layout.h"

namespace fp8rl::train {
namespace {

int64_t aligned(int64_t offset) { return (offset + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment; }

model::ModelParams& mutable_view(const model::ModelParams& params) {
  return const_cast<model::ModelParams&>(params);  // for_each_tensor only reads here
}

}  // namespace

ArenaLayout::ArenaLayout(model::ModelParams& params) {
  model::for_each_tensor(params,
                         [&](const std::string& name, const std::vector<int64_t>& shape, model::HostTensor&) {
                           ArenaTensor t;
                           t.name = name;
                           t.shape = shape;
                           t.offset = aligned(total);
                           t.size = 1;
                           for (int64_t dim : shape) t.size *= dim;
                           t.decay = shape.size() == 2;
                           total = t.offset + t.size;
                           tensors.push_back(std::move(t));
                         });
  total = aligned(total);
}

std::vector<int64_t> ArenaLayout::shard_points() const {
  std::vector<int64_t> points;
  for (const ArenaTensor& t : tensors) {
    if (t.size == 0) continue;
    const int64_t band = t.shape.size() == 2 ? kQuantBlock * t.shape[1] : t.size;
    for (int64_t start = 0; start < t.size; start += band) points.push_back(t.offset + start);
  }
  if (points.empty() || points.front() != 0) points.insert(points.begin(), 0);
  return points;
}

std::vector<int64_t> ArenaLayout::shard_bounds(int world_size) const {
  require(world_size >= 1, "parameter arena: world size must be >= 1, got " + std::to_string(world_size));
  const std::vector<int64_t> points = shard_points();
  std::vector<int64_t> bounds{0};
  for (int r = 1; r < world_size; ++r) {
    const int64_t target = total * r / world_size;
    // The first point at or after the target, or the one before it when closer.
    auto next = std::lower_bound(points.begin(), points.end(), target);
    int64_t chosen = next == points.end() ? total : *next;
    if (next != points.begin() && target - *std::prev(next) < chosen - target) chosen = *std::prev(next);
    bounds.push_back(std::max(chosen, bounds.back()));
  }
  bounds.push_back(total);
  return bounds;
}

ParamArena::ParamArena(Backend& backend, model::ModelParams& params, int world_size, int rank)
    : backend_(backend), layout_(params) {
  require(rank >= 0 && rank < world_size, "parameter arena: rank " + std::to_string(rank) + " of " +
                                              std::to_string(world_size) + " ranks");
  const std::vector<int64_t> bounds = layout_.shard_bounds(world_size);
  shard_begin_ = bounds[static_cast<size_t>(rank)];
  shard_end_ = bounds[static_cast<size_t>(rank) + 1];
  for (size_t r = 0; r + 1 < bounds.size(); ++r) shard_counts_.push_back(bounds[r + 1] - bounds[r]);
  masters_ = DeviceArray<float>(backend, static_cast<size_t>(layout_.total));
  grads_ = DeviceArray<float>(backend, static_cast<size_t>(layout_.total));
  exp_avg_ = DeviceArray<float>(backend, static_cast<size_t>(shard_size()));
  exp_avg_sq_ = DeviceArray<float>(backend, static_cast<size_t>(shard_size()));
  backend_.zero_fill(masters_.data(), static_cast<size_t>(bytes_per_buffer()));
  zero_grads();
  zero_moments();
  upload(params);
}

void ParamArena::bind(const model::ModelParams& params) {
  index_of_.clear();
  size_t index = 0;
  model::for_each_tensor(mutable_view(params), [&](const std::string& name, const std::vector<int64_t>&,
                                                   model::HostTensor& tensor) {
    require(index < layout_.tensors.size() && layout_.tensors[index].size == static_cast<int64_t>(tensor.data.size()),
            "parameter arena: tensor " + name + " does not match the model the arena was made for");
    index_of_[&tensor] = index++;
  });
  require(index == layout_.tensors.size(), "parameter arena: the model has fewer tensors than the arena");
}

int64_t ParamArena::offset_of(const model::HostTensor& tensor) const {
  const auto it = index_of_.find(&tensor);
  if (it == index_of_.end()) fail(Status::internal, "parameter arena: a tensor outside the bound parameters");
  return layout_.tensors[it->second].offset;
}

float* ParamArena::grad(const model::HostTensor& tensor) {
  return tensor.empty() ? nullptr : grads_.data() + offset_of(tensor);
}

void ParamArena::zero_grads() { backend_.zero_fill(grads_.data(), static_cast<size_t>(bytes_per_buffer())); }

void ParamArena::zero_moments() {
  if (shard_size() == 0) return;
  backend_.zero_fill(exp_avg_.data(), static_cast<size_t>(bytes_per_moment()));
  backend_.zero_fill(exp_avg_sq_.data(), static_cast<size_t>(bytes_per_moment()));
}

void ParamArena::download(const float* buffer, std::vector<std::vector<float>>& host) const {
  host.resize(layout_.tensors.size());
  for (size_t i = 0; i < layout_.tensors.size(); ++i) {
    const ArenaTensor& t = layout_.tensors[i];
    host[i].resize(static_cast<size_t>(t.size));
    backend_.download(host[i].data(), buffer + t.offset, host[i].size() * sizeof(float));
  }
}

void ParamArena::download_shard(const float* shard_buffer, std::vector<float>& full) const {
  full.assign(static_cast<size_t>(layout_.total), 0.0f);
  if (shard_size() > 0)
    backend_.download(full.data() + shard_begin_, shard_buffer, static_cast<size_t>(bytes_per_moment()));
}

void ParamArena::upload_shard(float* shard_buffer, const std::vector<float>& full) {
  require(static_cast<int64_t>(full.size()) == layout_.total,
          "parameter arena: " + std::to_string(full.size()) + " values for an arena of " + std::to_string(layout_.total));
  if (shard_size() > 0)
    backend_.upload(shard_buffer, full.data() + shard_begin_, static_cast<size_t>(bytes_per_moment()));
}

std::vector<std::vector<float>> ParamArena::split(const std::vector<float>& full) const {
  std::vector<std::vector<float>> per_tensor;
  for (const ArenaTensor& t : layout_.tensors)
    per_tensor.emplace_back(full.begin() + t.offset, full.begin() + t.offset + t.size);
  return per_tensor;
}

std::vector<float> ParamArena::join(const std::vector<std::vector<float>>& per_tensor) const {
  require(per_tensor.size() == layout_.tensors.size(), "parameter arena: " + std::to_string(per_tensor.size()) +
                                                           " tensors for an arena of " +
                                                           std::to_string(layout_.tensors.size()));
  std::vector<float> full(static_cast<size_t>(layout_.total), 0.0f);
  for (size_t i = 0; i < per_tensor.size(); ++i) {
    const ArenaTensor& t = layout_.tensors[i];
    require(static_cast<int64_t>(per_tensor[i].size()) == t.size, "parameter arena: " + t.name + " has the wrong size");
    std::copy(per_tensor[i].begin(), per_tensor[i].end(), full.begin() + t.offset);
  }
  return full;
}

void ParamArena::require_complete() const {
  if (masters_partial_)
    fail(Status::distributed,
         "the master weights are current only in this rank's optimizer shard after a data-parallel step: gather "
         "them on every rank first (fp8rl_trainer_gather_weights)");
}

void ParamArena::download(model::ModelParams& params) const {
  require_complete();
  size_t index = 0;
  model::for_each_tensor(params, [&](const std::string&, const std::vector<int64_t>&, model::HostTensor& tensor) {
    const ArenaTensor& t = layout_.tensors[index++];
    backend_.download(tensor.data.data(), masters_.data() + t.offset, tensor.data.size() * sizeof(float));
  });
}

void ParamArena::upload(const model::ModelParams& params) {
  bind(params);
  masters_partial_ = false;
  for (const auto& [tensor, index] : index_of_) {
    const ArenaTensor& t = layout_.tensors[index];
    backend_.upload(masters_.data() + t.offset, tensor->data.data(), tensor->data.size() * sizeof(float));
  }
}

const float* ParamArena::view(const model::HostTensor& tensor) const {
  require_complete();
  return tensor.empty() ? nullptr : masters_.data() + offset_of(tensor);
}

}  // namespace fp8rl::train
