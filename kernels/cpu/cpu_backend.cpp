// The CPU backend: the reference implementation of kernels/backend.h.
//
// Thread safety: operations may be called from several threads; the ones
// that use the worker pool and the GEMM scratch take turns on one mutex.
#include "cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "../backend_checks.h"
#include "../moe_checks.h"
#include "../common/reduction_order.h"
#include "../optimizer_checks.h"
#include "../transformer_backward_checks.h"
#include "../transformer_checks.h"
#include "aligned_memory.h"
#include "attention_backward_cpu.h"
#include "attention_cpu.h"
#include "backward_cpu.h"
#include "gemm_cpu.h"
#include "moe_cpu.h"
#include "optimizer_cpu.h"
#include "quantize_cpu.h"
#include "sampling_cpu.h"
#include "thread_pool.h"
#include "transformer_cpu.h"

namespace fp8rl {
namespace {

// Below this many elements of work an elementwise operation runs on the
// calling thread: waking the pool costs more than the loop.
constexpr int64_t kParallelElements = int64_t{1} << 15;

class CpuBackend final : public Backend {
 public:
  CpuBackend(int num_threads, SimdLevel simd)
      : pool_(num_threads),
        kernels_(cpu::gemm_kernels(simd)),
        attention_scratch_(static_cast<size_t>(pool_.size())),
        sampling_scratch_(static_cast<size_t>(pool_.size())),
        attention_backward_scratch_(static_cast<size_t>(pool_.size())) {}

  BackendKind kind() const override { return BackendKind::cpu; }

  std::string description() const override {
    const int threads = pool_.size();
    return std::string("CPU (") + simd_level_name(kernels_.level) + ", " + std::to_string(threads) +
           (threads == 1 ? " thread)" : " threads)");
  }

  void* allocate(size_t bytes) override { return cpu::aligned_allocate(bytes); }
  void deallocate(void* pointer) noexcept override { cpu::aligned_free(pointer); }

  void upload(void* device_dst, const void* host_src, size_t bytes) override {
    copy(device_dst, host_src, bytes, "upload");
  }
  void download(void* host_dst, const void* device_src, size_t bytes) override {
    copy(host_dst, device_src, bytes, "download");
  }
  void synchronize() override {}  // every operation completes before it returns
  void copy_within(void* dst, const void* src, size_t bytes) override { copy(dst, src, bytes, "copy_within"); }
  void zero_fill(void* dst, size_t bytes) override {
    if (bytes == 0) return;
    require(dst != nullptr, "zero_fill: null pointer");
    std::memset(dst, 0, bytes);
  }

  void quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec, uint8_t* codes,
                float* scales) override {
    check_quantize_args(input, input_dtype, rows, cols, spec, codes, scales);
    // Units are independent (one scale each), so where they run never changes a bit.
    const int64_t units = cpu::quantize_work_units(spec.layout, rows);
    const auto quantize_range = [&](int64_t begin, int64_t end) {
      cpu::quantize_units(input, input_dtype, rows, cols, spec, codes, scales, begin, end);
    };
    if (units < 2 || rows * cols < kParallelElements) return quantize_range(0, units);  // e.g. one decode token
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(units, quantize_range);
  }

  void dequantize(const Fp8Matrix& matrix, float* output) override {
    check_dequantize_args(matrix, output);
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(matrix.rows,
                       [&](int64_t begin, int64_t end) { cpu::dequantize_rows(matrix, output, begin, end); });
  }

  void gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) override {
    if (!check_gemm_fp8_args(a, w, c, c_dtype)) return;
    cpu::GemmOperand a_operand, w_operand;
    a_operand.fp8 = &a;
    w_operand.fp8 = &w;
    std::lock_guard<std::mutex> lock(mutex_);
    cpu::gemm_cpu(kernels_, pool_, workspace_, a_operand, w_operand, a.rows, w.rows, a.cols, c, c_dtype);
  }

  void gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                 DType c_dtype) override {
    if (!check_gemm_bf16_args(a, w, m, n, k, c, c_dtype)) return;
    cpu::GemmOperand a_operand, w_operand;
    a_operand.bf16 = a;
    w_operand.bf16 = w;
    std::lock_guard<std::mutex> lock(mutex_);
    cpu::gemm_cpu(kernels_, pool_, workspace_, a_operand, w_operand, m, n, k, c, c_dtype);
  }

  void embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids, int64_t count,
                 float* out) override {
    if (!check_embedding_args(table, vocab, hidden, ids, count, out)) return;
    rows_in_parallel(count, hidden,
                     [&](int64_t begin, int64_t end) { cpu::embedding_rows(table, hidden, ids, out, begin, end); });
  }

  void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) override {
    if (!check_rms_norm_args(x, weight, rows, dim, eps, out)) return;
    rows_in_parallel(rows, dim,
                     [&](int64_t begin, int64_t end) { cpu::rms_norm_rows(x, weight, dim, eps, out, begin, end); });
  }

  void rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim, const float* cos,
            const float* sin, int64_t table_positions) override {
    if (!check_rope_args(x, positions, tokens, heads, head_dim, cos, sin, table_positions)) return;
    rows_in_parallel(tokens, heads * head_dim, [&](int64_t begin, int64_t end) {
      cpu::rope_tokens(x, positions, heads, head_dim, cos, sin, begin, end);
    });
  }

  void swiglu(const float* gate, const float* up, int64_t count, float* out) override {
    if (!check_elementwise_args("swiglu", count, {gate, up, out})) return;
    rows_in_parallel(count, 1, [&](int64_t begin, int64_t end) { cpu::swiglu_span(gate, up, out, begin, end); });
  }

  void add(float* x, const float* y, int64_t count) override {
    if (!check_elementwise_args("add", count, {x, y})) return;
    rows_in_parallel(count, 1, [&](int64_t begin, int64_t end) { cpu::add_span(x, y, begin, end); });
  }

  void add_bias(float* x, const float* bias, int64_t rows, int64_t cols) override {
    if (!check_add_bias_args(x, bias, rows, cols)) return;
    rows_in_parallel(rows, cols, [&](int64_t begin, int64_t end) { cpu::add_bias_rows(x, bias, cols, begin, end); });
  }

  void transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) override {
    if (!check_rows("transpose_to_bf16", rows, "rows", cols, "cols") ||
        !check_elementwise_args("transpose_to_bf16", rows, {x, out}))
      return;
    // Parallel over output rows (input columns): each writes a contiguous run.
    rows_in_parallel(cols, rows, [&](int64_t begin, int64_t end) {
      cpu::transpose_to_bf16_columns(x, rows, cols, out, begin, end);
    });
  }

  void transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) override {
    if (!check_transpose_args(x, rows, cols, element_bytes, out)) return;
    // Parallel over bands of output rows (input columns): each writes its own run.
    rows_in_parallel(cols, rows * element_bytes, [&](int64_t begin, int64_t end) {
      cpu::transpose_columns(x, rows, cols, element_bytes, out, begin, end);
    });
  }

  void to_bf16(const float* x, int64_t count, uint16_t* out) override {
    if (!check_elementwise_args("to_bf16", count, {x, out})) return;
    rows_in_parallel(count, 1, [&](int64_t begin, int64_t end) { cpu::to_bf16_span(x, out, begin, end); });
  }

  void gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) override {
    if (!check_gather_rows_args(x, cols, rows, count, out)) return;
    rows_in_parallel(count, cols,
                     [&](int64_t begin, int64_t end) { cpu::gather_rows_range(x, cols, rows, out, begin, end); });
  }

  void moe_route(const MoeRouteArgs& args) override {
    if (!check_moe_route_args(args)) return;
    rows_in_parallel(args.tokens, args.experts * args.hidden,
                     [&](int64_t begin, int64_t end) { cpu::moe_route_tokens(args, begin, end); });
  }

  void moe_combine(const MoeCombineArgs& args) override {
    if (!check_moe_combine_args(args)) return;
    rows_in_parallel(args.tokens, args.top_k * args.hidden,
                     [&](int64_t begin, int64_t end) { cpu::moe_combine_tokens(args, begin, end); });
  }

  void moe_route_backward(const MoeRouteBackwardArgs& args) override {
    if (!check_moe_route_backward_args(args)) return;
    rows_in_parallel(args.tokens, args.experts * (args.top_k + args.hidden),
                     [&](int64_t begin, int64_t end) { cpu::moe_route_backward_tokens(args, begin, end); });
    rows_in_parallel(args.experts, args.tokens * args.hidden,
                     [&](int64_t begin, int64_t end) { cpu::moe_router_weight_grad_experts(args, begin, end); });
  }

  void moe_combine_backward(const MoeCombineBackwardArgs& args) override {
    if (!check_moe_combine_backward_args(args)) return;
    rows_in_parallel(args.tokens, 2 * args.top_k * args.hidden,
                     [&](int64_t begin, int64_t end) { cpu::moe_combine_backward_tokens(args, begin, end); });
  }

  void kv_store(const KvStoreArgs& args) override {
    if (!check_kv_store_args(args)) return;
    rows_in_parallel(args.tokens, args.kv_dim,
                     [&](int64_t begin, int64_t end) { cpu::kv_store_tokens(args, begin, end); });
  }

  void attention(const AttentionArgs& args) override {
    if (!check_attention_args(args)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    const cpu::AttentionPlan plan = cpu::plan_attention(args, pool_.size());
    pool_.run([&](int part) {
      const cpu::IndexRange range = cpu::static_partition(plan.units, pool_.size(), part);
      if (range.begin < range.end)
        cpu::attention_units(kernels_, args, plan, range.begin, range.end,
                             attention_scratch_[static_cast<size_t>(part)]);
    });
  }

  void sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params, int32_t* tokens,
              float* logprobs) override {
    if (!check_sampling_args("sample", logits, rows, vocab, params, tokens, logprobs)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (rows == 1)  // one sequence: waking the pool would only add its latency
      return cpu::sample_rows(logits, vocab, params, tokens, logprobs, 0, 1, sampling_scratch_[0]);
    pool_.run([&](int part) {
      const cpu::IndexRange range = cpu::static_partition(rows, pool_.size(), part);
      if (range.begin < range.end)
        cpu::sample_rows(logits, vocab, params, tokens, logprobs, range.begin, range.end,
                         sampling_scratch_[static_cast<size_t>(part)]);
    });
  }

  void token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                      const int32_t* targets, float* logprobs) override {
    if (!check_sampling_args("token_logprobs", logits, rows, vocab, params, targets, logprobs)) return;
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.run([&](int part) {
      const cpu::IndexRange range = cpu::static_partition(rows, pool_.size(), part);
      if (range.begin < range.end)
        cpu::token_logprob_rows(logits, vocab, params, targets, logprobs, range.begin, range.end,
                                sampling_scratch_[static_cast<size_t>(part)]);
    });
  }

  void rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows, int64_t dim, float eps,
                         float* dx, float* dweight) override {
    if (!check_rms_norm_backward_args(x, weight, dy, rows, dim, eps, dx, dweight)) return;
    std::vector<float> inv(static_cast<size_t>(rows));
    float* inv_data = inv.data();
    rows_in_parallel(rows, dim,
                     [&](int64_t begin, int64_t end) { cpu::rms_inverse_rows(x, dim, eps, inv_data, begin, end); });
    // dweight before dx, which may overwrite x or dy. Split by column: each
    // column sums its rows in ascending order on one thread.
    rows_in_parallel(dim, rows, [&](int64_t begin, int64_t end) {
      cpu::rms_norm_weight_columns(x, dy, inv_data, rows, dim, dweight, begin, end);
    });
    rows_in_parallel(rows, dim, [&](int64_t begin, int64_t end) {
      cpu::rms_norm_backward_rows(x, weight, dy, inv_data, dim, dx, begin, end);
    });
  }

  void rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                     const float* cos, const float* sin, int64_t table_positions) override {
    if (!check_rope_backward_args(g, positions, tokens, heads, head_dim, cos, sin, table_positions)) return;
    rows_in_parallel(tokens, heads * head_dim, [&](int64_t begin, int64_t end) {
      cpu::rope_backward_tokens(g, positions, heads, head_dim, cos, sin, begin, end);
    });
  }

  void swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count, float* dgate,
                       float* dup) override {
    if (!check_elementwise_args("swiglu_backward", count, {gate, up, dout, dgate, dup})) return;
    rows_in_parallel(count, 1, [&](int64_t begin, int64_t end) {
      cpu::swiglu_backward_span(gate, up, dout, dgate, dup, begin, end);
    });
  }

  void embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab, int64_t hidden,
                          float* dtable) override {
    if (!check_embedding_backward_args(dy, ids, count, vocab, hidden, dtable)) return;
    cpu::check_embedding_ids(ids, count, vocab);
    // Split by column: each element sums its tokens in order on one thread.
    rows_in_parallel(hidden, count, [&](int64_t begin, int64_t end) {
      cpu::embedding_backward_columns(dy, ids, count, hidden, dtable, begin, end);
    });
  }

  void attention_backward(const AttentionBackwardArgs& args) override {
    if (!check_attention_backward_args(args)) return;
    cpu::check_attention_backward_key_ranges(args);  // before anything is accumulated
    std::lock_guard<std::mutex> lock(mutex_);
    const int64_t kv_heads = args.forward.kv_heads;
    pool_.run([&](int part) {
      const cpu::IndexRange range = cpu::static_partition(kv_heads, pool_.size(), part);
      if (range.begin < range.end)
        cpu::attention_backward_kv_heads(args, range.begin, range.end,
                                         attention_backward_scratch_[static_cast<size_t>(part)]);
    });
  }

  void log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                            const int32_t* targets, const float* coef, float* dlogits, float* entropy) override {
    if (!check_log_softmax_backward_args(logits, rows, vocab, params, targets, coef, dlogits, entropy)) return;
    rows_in_parallel(rows, vocab, [&](int64_t begin, int64_t end) {
      cpu::log_softmax_backward_rows(logits, vocab, params, targets, coef, dlogits, entropy, begin, end);
    });
  }

  void adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                    const AdamWScalars& scalars) override {
    if (!check_adamw_update_args(params, grads, exp_avg, exp_avg_sq, count, scalars)) return;
    rows_in_parallel(count, 1, [&](int64_t begin, int64_t end) {
      cpu::adamw_span(params, grads, exp_avg, exp_avg_sq, scalars, begin, end);
    });
  }

  double sum_of_squares(const float* x, int64_t count) override {
    if (!check_sum_of_squares_args(x, count)) return 0.0;
    const int64_t chunks = ceil_div(count, kSquareSumChunk);
    int64_t padded = 1;  // the chunk sums padded with +0 to a power of two, for pairwise_tree
    while (padded < chunks) padded *= 2;
    std::vector<double> partials(static_cast<size_t>(padded), 0.0);
    double* partials_data = partials.data();
    // Each chunk sum is computed whole by one thread, so the split changes no bit.
    rows_in_parallel(chunks, kSquareSumChunk,
                     [&](int64_t begin, int64_t end) { cpu::square_sum_chunks(x, count, partials_data, begin, end); });
    return pairwise_tree(partials_data, padded);
  }

  int64_t first_non_finite(const float* x, int64_t count, float scale) override {
    if (!check_first_non_finite_args(x, count)) return -1;
    if (count < kParallelElements) return cpu::first_non_finite_span(x, scale, 0, count);
    // Each part finds the first in its range; the parts are in index order.
    std::vector<int64_t> found(static_cast<size_t>(pool_.size()), -1);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pool_.run([&](int part) {
        const cpu::IndexRange range = cpu::static_partition(count, pool_.size(), part);
        if (range.begin < range.end)
          found[static_cast<size_t>(part)] = cpu::first_non_finite_span(x, scale, range.begin, range.end);
      });
    }
    for (const int64_t index : found)
      if (index >= 0) return index;
    return -1;
  }

  void row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) override {
    if (!check_row_abs_max_args(x, rows, cols, out)) return;
    rows_in_parallel(rows, cols, [&](int64_t begin, int64_t end) { cpu::row_abs_max_rows(x, cols, out, begin, end); });
  }

 private:
  // fn(begin, end) over [0, rows), on the pool when rows * row_elements is
  // large enough to pay for it, else inline (no lock needed: no shared scratch).
  template <class Fn>
  void rows_in_parallel(int64_t rows, int64_t row_elements, const Fn& fn) {
    if (rows < 2 || rows * row_elements < kParallelElements) return fn(0, rows);
    std::lock_guard<std::mutex> lock(mutex_);
    pool_.parallel_for(rows, fn);
  }

  static void copy(void* dst, const void* src, size_t bytes, const char* what) {
    if (bytes == 0) return;
    require(dst && src, std::string(what) + ": null pointer");
    std::memcpy(dst, src, bytes);
  }

  cpu::ThreadPool pool_;
  const cpu::GemmKernels& kernels_;
  std::mutex mutex_;
  cpu::GemmWorkspace workspace_;
  std::vector<cpu::AttentionScratch> attention_scratch_;        // [pool_.size()], slot p used by part p
  std::vector<cpu::SamplingScratch> sampling_scratch_;          // [pool_.size()]
  std::vector<std::vector<float>> attention_backward_scratch_;  // [pool_.size()]
};

int default_thread_count() {
  const unsigned hardware = std::thread::hardware_concurrency();
  return hardware == 0 ? 1 : static_cast<int>(hardware);
}

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(int num_threads) {
  return make_cpu_backend(num_threads, detect_simd_level());
}

std::unique_ptr<Backend> make_cpu_backend(int num_threads, SimdLevel simd) {
  const SimdLevel supported = detect_simd_level();
  const SimdLevel level = static_cast<uint8_t>(simd) < static_cast<uint8_t>(supported) ? simd : supported;
  return std::make_unique<CpuBackend>(num_threads <= 0 ? default_thread_count() : num_threads, level);
}

}  // namespace fp8rl
