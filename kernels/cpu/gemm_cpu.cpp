#include "gemm_cpu.h"

#include <algorithm>
#include <cstring>

#include "../common/bf16_codec.h"

namespace fp8rl::cpu {
namespace {

constexpr uint32_t kCanonicalNan = 0x7FC00000u;
// A packed W panel of about this many bytes stays in L2 (tuned for L2 >=
// 1 MiB) while row groups of A stream past it and stay in L1. Each panel
// costs one pass over A, so large batches want large panels; small batches,
// whose panel is packed for a few rows only, want it small and close to the core.
constexpr int64_t kPanelBytesLargeBatch = 512 * 1024;
constexpr int64_t kPanelBytesSmallBatch = 128 * 1024;
constexpr int64_t kSmallBatchRows = 64;
constexpr int64_t kMaxPanelRows = 384;
// Rows of A per task: enough tasks to balance threads, few enough that the
// panel packing is amortized.
constexpr int64_t kBlockRows = 128;

struct Blocking {
  int64_t block_rows;  // MB: rows of A (and C) per task
  int64_t panel_rows;  // NB: rows of W (columns of C) per task, a multiple of panel_rows_multiple
  int64_t m_blocks;
  int64_t n_blocks;
};

Blocking choose_blocking(int64_t m, int64_t n, int64_t row_bytes, int64_t multiple) {
  const int64_t panel_bytes = m <= kSmallBatchRows ? kPanelBytesSmallBatch : kPanelBytesLargeBatch;
  int64_t panel_rows = panel_bytes / row_bytes / multiple * multiple;
  panel_rows = std::clamp(panel_rows, multiple, kMaxPanelRows / multiple * multiple);
  const int64_t block_rows = std::min(m, kBlockRows);
  return Blocking{block_rows, panel_rows, ceil_div(m, block_rows), ceil_div(n, panel_rows)};
}

// Packed rows of one operand and, for FP8, their block scales [rows, blocks].
struct PackedRows {
  void* elements;
  float* scales;
};

// Floats of scratch for `rows` packed rows: elements, then scales.
int64_t packed_floats(const GemmKernels& kernels, int64_t rows, int64_t kp, int64_t blocks) {
  return ceil_div(rows * kp * kernels.packed_bytes, int64_t{sizeof(float)}) + rows * blocks;
}

// Null where the call reserved no such scratch (a single row uses no panel).
PackedRows packed_rows_in(float* scratch, const GemmKernels& kernels, int64_t rows, int64_t kp) {
  if (!scratch) return PackedRows{nullptr, nullptr};
  return PackedRows{scratch, scratch + ceil_div(rows * kp * kernels.packed_bytes, int64_t{sizeof(float)})};
}

// Rows [row_begin, row_end) of an operand, packed into `out` (whose row 0 is row_begin).
void pack_rows(const GemmKernels& kernels, const GemmOperand& operand, int64_t k, int64_t kp, int64_t row_begin,
               int64_t row_end, PackedRows out) {
  if (!operand.fp8) return kernels.pack_bf16_rows(operand.bf16, k, row_begin, row_end, out.elements, kp);
  const Fp8Matrix& matrix = *operand.fp8;
  kernels.pack_fp8_rows(matrix, row_begin, row_end, out.elements, kp);
  const int64_t blocks = ceil_div(matrix.cols, kQuantBlock);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t scale_row = matrix.layout == BlockLayout::block_128x128 ? r / kQuantBlock : r;
    std::memcpy(out.scales + (r - row_begin) * blocks, matrix.scales + scale_row * blocks,
                static_cast<size_t>(blocks) * sizeof(float));
  }
}

PackedScales scales_of(const GemmOperand& operand, const float* scales, int64_t blocks, int64_t row) {
  return operand.fp8 ? PackedScales{scales + row * blocks, blocks} : PackedScales{};
}

float canonical(float x) { return x != x ? bits_float(kCanonicalNan) : x; }

void canonicalize_nans(float* c, int64_t rows, int64_t cols, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] = canonical(c[i * ldc + j]);
}

void encode_bf16(const float* block, int64_t rows, int64_t cols, uint16_t* c, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) c[i * ldc + j] = bf16_encode(canonical(block[i * cols + j]));
}

// One thread's scratch for one call.
struct ThreadScratch {
  float* a_rows;   // the thread's own packed A, for single-block batches
  float* panel;    // [NB, kp] packed W rows and their scales
  float* c_block;  // [MB, NB] FP32 results, for BF16 output
  float* lanes;    // multiply_block's accumulator lanes
};

// Everything one gemm_cpu call shares between its threads.
struct GemmCall {
  const GemmKernels& kernels;
  const GemmOperand& a;
  const GemmOperand& w;
  int64_t m, n, k, kp, blocks;
  Blocking blocking;
  const float* shared_a;  // packed A shared by all threads, or null: see gemm_cpu
  void* c;
  DType c_dtype;
};

// One row of A against W rows [n0, n0 + cols), W widened inside the kernel.
void multiply_row(const GemmCall& call, PackedRows a, int64_t n0, int64_t cols, float* c) {
  if (call.w.fp8)
    return call.kernels.multiply_row_fp8(a.elements, PackedScales{a.scales, call.blocks}, *call.w.fp8, n0, n0 + cols,
                                         call.kp, c);
  call.kernels.multiply_row_bf16(a.elements, call.w.bf16, call.k, n0, n0 + cols, call.kp, c);
}

// Task t covers C rows [mb * MB, ...) x columns [nb * NB, ...) with
// nb = t / m_blocks: consecutive tasks share a W panel, so a thread with a
// contiguous run of tasks packs each panel once. A single row of A uses W
// once per element: it skips the panel and widens W in the kernel.
void run_tasks(const GemmCall& call, IndexRange tasks, const ThreadScratch& scratch) {
  if (tasks.begin == tasks.end) return;
  const GemmKernels& kernels = call.kernels;
  const Blocking& b = call.blocking;
  const int64_t padded_panel_rows = ceil_div(b.panel_rows, kernels.panel_rows_multiple) * kernels.panel_rows_multiple;
  float* a_scratch = call.shared_a ? const_cast<float*>(call.shared_a) : scratch.a_rows;
  const PackedRows a_all = packed_rows_in(a_scratch, kernels, call.m, call.kp);
  if (!call.shared_a) pack_rows(kernels, call.a, call.k, call.kp, 0, call.m, a_all);
  const PackedRows panel = packed_rows_in(scratch.panel, kernels, padded_panel_rows, call.kp);
  const size_t row_bytes = static_cast<size_t>(call.kp * kernels.packed_bytes);
  int64_t packed_panel = -1;
  for (int64_t task = tasks.begin; task < tasks.end; ++task) {
    const int64_t nb = task / b.m_blocks, mb = task % b.m_blocks;
    const int64_t n0 = nb * b.panel_rows, cols = std::min(b.panel_rows, call.n - n0);
    const int64_t m0 = mb * b.block_rows, rows = std::min(b.block_rows, call.m - m0);
    const bool single_row = call.m == 1;
    if (!single_row && nb != packed_panel) {
      pack_rows(kernels, call.w, call.k, call.kp, n0, n0 + cols, panel);
      const int64_t padded = ceil_div(cols, kernels.panel_rows_multiple) * kernels.panel_rows_multiple;
      std::memset(static_cast<char*>(panel.elements) + cols * row_bytes, 0, static_cast<size_t>(padded - cols) * row_bytes);
      if (call.w.fp8) std::fill(panel.scales + cols * call.blocks, panel.scales + padded * call.blocks, 0.0f);
      packed_panel = nb;
    }
    const PackedRows a{static_cast<char*>(a_all.elements) + m0 * row_bytes, a_all.scales + m0 * call.blocks};
    const auto multiply = [&](float* c, int64_t ldc) {
      if (single_row) return multiply_row(call, a, n0, cols, c);
      kernels.multiply_block(a.elements, rows, scales_of(call.a, a.scales, call.blocks, 0), panel.elements, cols,
                             scales_of(call.w, panel.scales, call.blocks, 0), call.kp, c, ldc, scratch.lanes);
    };
    if (call.c_dtype == DType::f32) {
      float* c = static_cast<float*>(call.c) + m0 * call.n + n0;
      multiply(c, call.n);
      canonicalize_nans(c, rows, cols, call.n);
    } else {
      multiply(scratch.c_block, cols);
      encode_bf16(scratch.c_block, rows, cols, static_cast<uint16_t*>(call.c) + m0 * call.n + n0, call.n);
    }
  }
}

std::vector<ThreadScratch> reserve_thread_scratch(GemmWorkspace& workspace, const GemmCall& call, int threads) {
  const GemmKernels& kernels = call.kernels;
  const Blocking& blocking = call.blocking;
  const auto size = static_cast<size_t>(threads);
  workspace.a_blocks.resize(size);
  workspace.panels.resize(size);
  workspace.c_blocks.resize(size);
  workspace.lanes.resize(size);
  const int64_t a_floats = call.shared_a ? 0 : packed_floats(kernels, call.m, call.kp, call.blocks);
  const int64_t c_floats = call.c_dtype == DType::bf16 ? blocking.block_rows * blocking.panel_rows : 0;
  const bool panels = call.m > 1;  // see run_tasks
  const int64_t padded_panel_rows =
      ceil_div(blocking.panel_rows, kernels.panel_rows_multiple) * kernels.panel_rows_multiple;
  const int64_t panel_floats = panels ? packed_floats(kernels, padded_panel_rows, call.kp, call.blocks) : 0;
  const int64_t lane_floats =
      panels && call.kp > kGemmDepthChunk ? kernels.lane_scratch_floats(blocking.panel_rows) : 0;
  std::vector<ThreadScratch> scratch;
  for (size_t t = 0; t < size; ++t)
    scratch.push_back(ThreadScratch{workspace.a_blocks[t].reserve(static_cast<size_t>(a_floats)),
                                    workspace.panels[t].reserve(static_cast<size_t>(panel_floats)),
                                    workspace.c_blocks[t].reserve(static_cast<size_t>(c_floats)),
                                    workspace.lanes[t].reserve(static_cast<size_t>(lane_floats))});
  return scratch;
}

}  // namespace

// A is packed once per call. A batch that is a single m-block is small:
// every thread packs all of it into its own scratch (M * K elements, a few
// percent of its work) rather than pay a second wake-up of the pool, which
// would dominate a small GEMM. Larger batches share one copy, packed in a
// first parallel pass.
void gemm_cpu(const GemmKernels& kernels, ThreadPool& pool, GemmWorkspace& workspace, const GemmOperand& a,
              const GemmOperand& w, int64_t m, int64_t n, int64_t k, void* c, DType c_dtype) {
  if (m == 0 || n == 0) return;
  const int64_t kp = ceil_div(k, kGemmGroup) * kGemmGroup;
  const int64_t blocks = a.fp8 ? ceil_div(k, kQuantBlock) : 0;
  const Blocking blocking = choose_blocking(m, n, kp * kernels.packed_bytes, kernels.panel_rows_multiple);

  float* shared_a = nullptr;
  if (blocking.m_blocks > 1) {
    shared_a = workspace.a_rows.reserve(static_cast<size_t>(packed_floats(kernels, m, kp, blocks)));
    const PackedRows packed = packed_rows_in(shared_a, kernels, m, kp);
    const size_t row_bytes = static_cast<size_t>(kp * kernels.packed_bytes);
    pool.parallel_for(m, [&](int64_t begin, int64_t end) {
      pack_rows(kernels, a, k, kp, begin, end,
                PackedRows{static_cast<char*>(packed.elements) + begin * row_bytes, packed.scales + begin * blocks});
    });
  }

  const GemmCall call{kernels, a, w, m, n, k, kp, blocks, blocking, shared_a, c, c_dtype};
  const int threads = pool.size();
  const std::vector<ThreadScratch> scratch = reserve_thread_scratch(workspace, call, threads);
  const int64_t tasks = blocking.m_blocks * blocking.n_blocks;
  pool.run(
      [&](int part) { run_tasks(call, static_partition(tasks, threads, part), scratch[static_cast<size_t>(part)]); });
}

}  // namespace fp8rl::cpu
