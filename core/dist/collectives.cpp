#include "core/dist/collectives.h"

#include <algorithm>
#include <chrono>
#include <numeric>

#include "core/policy/device_array.h"
#include "kernels/error.h"

namespace fp8rl::dist {
namespace {

using Clock = std::chrono::steady_clock;

int64_t total(const std::vector<int64_t>& counts) { return std::accumulate(counts.begin(), counts.end(), int64_t{0}); }

}  // namespace

Collectives::Collectives(std::shared_ptr<Communicator> communicator, Backend& backend)
    : communicator_(std::move(communicator)), backend_(backend) {
  // A context refuses a communicator that cannot reach its backend's memory
  // (require_reachable), so the pair here always fits.
  require(communicator_ != nullptr, "collectives: no communicator");
}

bool Collectives::staged() const {
  return communicator_->space() == BufferSpace::host && backend_.kind() != BackendKind::cpu;
}

// Runs call(pointer) on host memory holding data's bytes when the transport
// needs host memory and data lives on a device; else on data itself.
template <class Call>
void Collectives::on_backend_memory(void* data, size_t bytes, bool upload_back, Call&& call) {
  const Clock::time_point start = Clock::now();
  if (!staged()) {
    backend_.synchronize();
    call(data);
  } else {
    staging_.resize(bytes);
    backend_.download(staging_.data(), data, bytes);
    call(static_cast<void*>(staging_.data()));
    if (upload_back) backend_.upload(data, staging_.data(), bytes);
  }
  traffic_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

void Collectives::reduce_scatter_sum(float* data, const std::vector<int64_t>& counts) {
  require(static_cast<int>(counts.size()) == size(), "collectives: reduce_scatter needs one count per rank");
  if (!distributed()) return;
  const size_t bytes = static_cast<size_t>(total(counts)) * sizeof(float);
  on_backend_memory(data, bytes, true, [&](void* p) { communicator_->reduce_scatter_sum(p, counts, ElementType::f32); });
  traffic_.bytes_reduced += static_cast<int64_t>(bytes);
}

void Collectives::all_gather(void* data, const std::vector<int64_t>& counts, ElementType type) {
  require(static_cast<int>(counts.size()) == size(), "collectives: all_gather needs one count per rank");
  if (!distributed()) return;
  const size_t bytes = static_cast<size_t>(total(counts)) * element_size(type);
  on_backend_memory(data, bytes, true, [&](void* p) { communicator_->all_gather(p, counts, type); });
  traffic_.bytes_gathered += static_cast<int64_t>(bytes - static_cast<size_t>(counts[static_cast<size_t>(rank())]) *
                                                              element_size(type));
}

void Collectives::broadcast(void* data, int64_t count, ElementType type, int root) {
  if (!distributed()) return;
  const size_t bytes = static_cast<size_t>(count) * element_size(type);
  on_backend_memory(data, bytes, true, [&](void* p) { communicator_->broadcast(p, count, type, root); });
  if (rank() != root) traffic_.bytes_gathered += static_cast<int64_t>(bytes);
}

// An all-gather over host memory, through a device copy for a device transport.
void Collectives::all_gather_host(void* host, const std::vector<int64_t>& counts, ElementType type) {
  if (!distributed()) return;
  const Clock::time_point start = Clock::now();
  if (communicator_->space() == BufferSpace::device) {
    const size_t bytes = static_cast<size_t>(total(counts)) * element_size(type);
    DeviceArray<uint8_t> device(backend_, std::max<size_t>(bytes, 1));
    backend_.upload(device.data(), host, bytes);
    communicator_->all_gather(device.data(), counts, type);
    backend_.download(host, device.data(), bytes);
  } else {
    communicator_->all_gather(host, counts, type);
  }
  traffic_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

void Collectives::broadcast_host(void* host, int64_t count, ElementType type, int root) {
  if (!distributed()) return;
  const Clock::time_point start = Clock::now();
  const size_t bytes = static_cast<size_t>(count) * element_size(type);
  if (communicator_->space() == BufferSpace::device) {
    DeviceArray<uint8_t> device(backend_, std::max<size_t>(bytes, 1));
    backend_.upload(device.data(), host, bytes);
    communicator_->broadcast(device.data(), count, type, root);
    backend_.download(host, device.data(), bytes);
  } else {
    communicator_->broadcast(host, count, type, root);
  }
  traffic_.seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

std::vector<double> Collectives::gather_host(const std::vector<double>& values) {
  std::vector<double> all(values.size() * static_cast<size_t>(size()));
  std::copy(values.begin(), values.end(), all.begin() + static_cast<std::ptrdiff_t>(values.size() * rank()));
  all_gather_host(all.data(), std::vector<int64_t>(static_cast<size_t>(size()), static_cast<int64_t>(values.size())),
                  ElementType::f64);
  return all;
}

std::vector<uint8_t> Collectives::gather_host_bytes(const std::vector<uint8_t>& mine, std::vector<int64_t>* counts_out) {
  const std::vector<double> sizes = gather_host({static_cast<double>(mine.size())});
  std::vector<int64_t> counts(sizes.size());
  std::transform(sizes.begin(), sizes.end(), counts.begin(), [](double s) { return static_cast<int64_t>(s); });
  const std::vector<int64_t> offsets = part_offsets(counts);
  std::vector<uint8_t> all(static_cast<size_t>(offsets.back()));
  std::copy(mine.begin(), mine.end(), all.begin() + offsets[static_cast<size_t>(rank())]);
  all_gather_host(all.data(), counts, ElementType::u8);
  if (counts_out) *counts_out = counts;
  return all;
}

std::vector<double> Collectives::sum(const std::vector<double>& values) {
  const std::vector<double> all = gather_host(values);
  std::vector<double> result(values.size(), 0.0);
  for (size_t r = 0; r < static_cast<size_t>(size()); ++r)
    for (size_t i = 0; i < values.size(); ++i) result[i] += all[r * values.size() + i];
  return result;
}

double Collectives::sum(double value) { return sum(std::vector<double>{value})[0]; }

int64_t Collectives::sum(int64_t value) {
  // Exact while the counts stay below 2^53 (tokens and sequences do).
  return static_cast<int64_t>(sum(static_cast<double>(value)));
}

void Collectives::agree_on_failure(Status status, const std::string& why) {
  if (!distributed()) {
    if (status != Status::ok) fail(status, why);
    return;
  }
  const std::vector<double> statuses = gather_host({static_cast<double>(status)});
  std::vector<int64_t> counts;
  const std::vector<uint8_t> reasons = gather_host_bytes(std::vector<uint8_t>(why.begin(), why.end()), &counts);
  const std::vector<int64_t> offsets = part_offsets(counts);
  for (size_t r = 0; r < statuses.size(); ++r) {
    if (statuses[r] == static_cast<double>(Status::ok)) continue;
    const std::string reason(reasons.begin() + offsets[r], reasons.begin() + offsets[r + 1]);
    fail(static_cast<Status>(static_cast<int32_t>(statuses[r])), "rank " + std::to_string(r) + ": " + reason);
  }
}

double Collectives::min(double value) {
  const std::vector<double> all = gather_host({value});
  return *std::min_element(all.begin(), all.end());
}

double Collectives::max(double value) {
  const std::vector<double> all = gather_host({value});
  return *std::max_element(all.begin(), all.end());
}

}  // namespace fp8rl::dist
