#include "gemm_cpu.h"

#include <algorithm>

#include "../common/bf16_codec.h"

namespace fp8rl::cpu {
namespace {

constexpr uint32_t kCanonicalNan = 0x7FC00000u;
// A W panel of about this many bytes stays in L2 (tuned for L2 >= 1 MiB)
// while row groups of A stream past it and stay in L1. Each panel costs one
// pass over A, so large batches want large panels; small batches, whose
// panel is decoded for a few rows only, want it small and close to the core.
constexpr int64_t kPanelBytesLargeBatch = 512 * 1024;
constexpr int64_t kPanelBytesSmallBatch = 128 * 1024;
constexpr int64_t kSmallBatchRows = 64;
constexpr int64_t kMaxPanelRows = 256;
// Rows of A per task: enough tasks to balance threads, few enough that the
// panel decode is amortized.
constexpr int64_t kBlockRows = 128;

struct Blocking {
  int64_t block_rows;  // MB: rows of A (and C) per task
  int64_t panel_rows;  // NB: rows of W (columns of C) per task, a multiple of panel_rows_multiple
  int64_t m_blocks;
  int64_t n_blocks;
};

Blocking choose_blocking(int64_t m, int64_t n, int64_t kp, int64_t multiple) {
  const int64_t panel_bytes = m <= kSmallBatchRows ? kPanelBytesSmallBatch : kPanelBytesLargeBatch;
  int64_t panel_rows = panel_bytes / (kp * static_cast<int64_t>(sizeof(float))) / multiple * multiple;
  panel_rows = std::clamp(panel_rows, multiple, kMaxPanelRows / multiple * multiple);
  const int64_t block_rows = std::min(m, kBlockRows);
  return Blocking{block_rows, panel_rows, ceil_div(m, block_rows), ceil_div(n, panel_rows)};
}

void decode_rows(const GemmKernels& kernels, const GemmOperand& operand, int64_t k, int64_t row_begin, int64_t row_end,
                 float* out, int64_t ld) {
  if (operand.fp8) return kernels.decode_fp8_rows(*operand.fp8, row_begin, row_end, out, ld);
  kernels.decode_bf16_rows(operand.bf16, k, row_begin, row_end, out, ld);
}

// One row of A against W rows [n0, n0 + cols), W decoded inside the kernel.
void multiply_row(const GemmKernels& kernels, const GemmOperand& w, int64_t k, const float* a, int64_t n0, int64_t cols,
                  int64_t kp, float* c) {
  if (w.fp8) return kernels.multiply_row_fp8(a, *w.fp8, n0, n0 + cols, kp, c);
  kernels.multiply_row_bf16(a, w.bf16, k, n0, n0 + cols, kp, c);
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
  float* a_rows;   // [M, kp] the thread's own dequantized A, for single-block batches
  float* panel;    // [NB, kp] dequantized W rows
  float* c_block;  // [MB, NB] FP32 results, for BF16 output
  float* lanes;    // multiply_block's accumulator lanes
};

// Everything one gemm_cpu call shares between its threads.
struct GemmCall {
  const GemmKernels& kernels;
  const GemmOperand& a;
  const GemmOperand& w;
  int64_t m, n, k, kp;
  Blocking blocking;
  const float* a_rows;  // [m, kp] dequantized A shared by all threads, or null: see gemm_cpu
  void* c;
  DType c_dtype;
};

// Task t covers C rows [mb * MB, ...) x columns [nb * NB, ...) with
// nb = t / m_blocks: consecutive tasks share a W panel, so a thread with a
// contiguous run of tasks decodes each panel once. A single row of A uses W
// once per element: it skips the panel and decodes W in the kernel.
void run_tasks(const GemmCall& call, IndexRange tasks, const ThreadScratch& scratch) {
  if (tasks.begin == tasks.end) return;
  float* panel = scratch.panel;
  const Blocking& b = call.blocking;
  const float* a_rows = call.a_rows;
  if (!a_rows) {
    decode_rows(call.kernels, call.a, call.k, 0, call.m, scratch.a_rows, call.kp);
    a_rows = scratch.a_rows;
  }
  int64_t decoded_panel = -1;
  for (int64_t task = tasks.begin; task < tasks.end; ++task) {
    const int64_t nb = task / b.m_blocks, mb = task % b.m_blocks;
    const int64_t n0 = nb * b.panel_rows, cols = std::min(b.panel_rows, call.n - n0);
    const int64_t m0 = mb * b.block_rows, rows = std::min(b.block_rows, call.m - m0);
    const bool single_row = call.m == 1;
    if (!single_row && nb != decoded_panel) {
      decode_rows(call.kernels, call.w, call.k, n0, n0 + cols, panel, call.kp);
      const int64_t padded = ceil_div(cols, call.kernels.panel_rows_multiple) * call.kernels.panel_rows_multiple;
      std::fill(panel + cols * call.kp, panel + padded * call.kp, 0.0f);
      decoded_panel = nb;
    }
    const float* a = a_rows + m0 * call.kp;
    const auto multiply = [&](float* c, int64_t ldc) {
      if (single_row) return multiply_row(call.kernels, call.w, call.k, a, n0, cols, call.kp, c);
      call.kernels.multiply_block(a, rows, panel, cols, call.kp, c, ldc, scratch.lanes);
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

std::vector<ThreadScratch> reserve_thread_scratch(GemmWorkspace& workspace, const GemmKernels& kernels,
                                                  const Blocking& blocking, int64_t m, int64_t kp, DType c_dtype,
                                                  int threads) {
  const auto size = static_cast<size_t>(threads);
  workspace.a_blocks.resize(size);
  workspace.panels.resize(size);
  workspace.c_blocks.resize(size);
  workspace.lanes.resize(size);
  const int64_t a_floats = blocking.m_blocks == 1 ? m * kp : 0;
  const int64_t c_floats = c_dtype == DType::bf16 ? blocking.block_rows * blocking.panel_rows : 0;
  const bool panels = m > 1;  // see run_tasks
  const int64_t panel_floats = panels ? blocking.panel_rows * kp : 0;
  const int64_t lane_floats = panels && kp > kGemmDepthChunk ? kernels.lane_scratch_floats(blocking.panel_rows) : 0;
  std::vector<ThreadScratch> scratch;
  for (size_t t = 0; t < size; ++t)
    scratch.push_back(ThreadScratch{workspace.a_blocks[t].reserve(static_cast<size_t>(a_floats)),
                                    workspace.panels[t].reserve(static_cast<size_t>(panel_floats)),
                                    workspace.c_blocks[t].reserve(static_cast<size_t>(c_floats)),
                                    workspace.lanes[t].reserve(static_cast<size_t>(lane_floats))});
  return scratch;
}

}  // namespace

// A is dequantized once per call. A batch that is a single m-block is small:
// every thread dequantizes all of it into its own scratch (M * K decodes,
// a few percent of its FMAs) rather than pay a second wake-up of the pool,
// which would dominate a small GEMM. Larger batches share one copy, decoded
// in a first parallel pass.
void gemm_cpu(const GemmKernels& kernels, ThreadPool& pool, GemmWorkspace& workspace, const GemmOperand& a,
              const GemmOperand& w, int64_t m, int64_t n, int64_t k, void* c, DType c_dtype) {
  if (m == 0 || n == 0) return;
  const int64_t kp = ceil_div(k, kGemmLanes) * kGemmLanes;
  const Blocking blocking = choose_blocking(m, n, kp, kernels.panel_rows_multiple);
  const int threads = pool.size();
  const std::vector<ThreadScratch> scratch =
      reserve_thread_scratch(workspace, kernels, blocking, m, kp, c_dtype, threads);

  float* shared_a = nullptr;  // [m, kp]
  if (blocking.m_blocks > 1) {
    shared_a = workspace.a_rows.reserve(static_cast<size_t>(m * kp));
    pool.parallel_for(
        m, [&](int64_t begin, int64_t end) { decode_rows(kernels, a, k, begin, end, shared_a + begin * kp, kp); });
  }

  const GemmCall call{kernels, a, w, m, n, k, kp, blocking, shared_a, c, c_dtype};
  const int64_t tasks = blocking.m_blocks * blocking.n_blocks;
  pool.run(
      [&](int part) { run_tasks(call, static_partition(tasks, threads, part), scratch[static_cast<size_t>(part)]); });
}

}  // namespace fp8rl::cpu
