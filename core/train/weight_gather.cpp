#include "core/train/weight_gather.h"

#include <algorithm>
#include <string>
#include <vector>

namespace fp8rl::train {
namespace {

std::string name_at(const ArenaLayout& layout, int64_t offset) {
  for (const ArenaTensor& t : layout.tensors)
    if (t.offset == offset) return t.name;
  return "a tensor";
}

// [world + 1]: the rows of `copy` (at arena offset `offset`) before each shard bound.
std::vector<int64_t> rows_at_bounds(const policy::ComputeCopy& copy, int64_t offset, const std::vector<int64_t>& bounds,
                                    const ArenaLayout& layout) {
  const int64_t elements = copy.rows * copy.cols;
  std::vector<int64_t> rows;
  rows.reserve(bounds.size());
  for (const int64_t bound : bounds) {
    const int64_t inside = std::clamp<int64_t>(bound - offset, 0, elements);
    const int64_t row = inside / copy.cols;
    if (inside % copy.cols != 0 || (row % 128 != 0 && row != copy.rows))
      fail(Status::internal, "data parallelism: a shard boundary splits a 128-row band of " + name_at(layout, offset));
    rows.push_back(row);
  }
  return rows;
}

// [world]: bytes of each rank's rows of an array laid out as `bytes_before(row)` says.
template <class BytesBefore>
std::vector<int64_t> part_bytes(const std::vector<int64_t>& rows, BytesBefore bytes_before) {
  std::vector<int64_t> counts;
  for (size_t r = 0; r + 1 < rows.size(); ++r)
    counts.push_back(static_cast<int64_t>(bytes_before(rows[r + 1]) - bytes_before(rows[r])));
  return counts;
}

}  // namespace

void refit_and_gather_copies(policy::CompiledModel& model, const model::ModelParams& params, ParamArena& arena,
                             dist::Collectives& collectives) {
  const std::vector<int64_t> bounds = dist::part_offsets(arena.shard_counts());
  const auto rank = static_cast<size_t>(collectives.rank());
  for (const policy::ComputeCopy& copy : model.copies(params)) {
    const int64_t offset = arena.offset_of(*copy.master);
    const std::vector<int64_t> rows = rows_at_bounds(copy, offset, bounds, arena.layout());
    model.refit_rows(copy, arena.masters() + offset, rows[rank], rows[rank + 1]);
    const std::vector<int64_t> value_bytes =
        part_bytes(rows, [&](int64_t row) { return static_cast<size_t>(row) * copy.value_bytes_per_row(); });
    collectives.all_gather(copy.values, value_bytes, dist::ElementType::u8);
    if (copy.kind != policy::ComputeCopy::Kind::fp8) continue;
    const std::vector<int64_t> scale_bytes =
        part_bytes(rows, [&](int64_t row) { return copy.scale_bytes_before(row); });
    collectives.all_gather(copy.scales, scale_bytes, dist::ElementType::u8);
  }
}

}  // namespace fp8rl::train
