#include "op_profile.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <utility>

#include "bench_support.h"
#include "kernels/common/reduction_order.h"
#include "kernels/cpu/thread_pool.h"

namespace fp8rl::bench {
namespace {

enum class Category {
  gemm,
  attention,
  quantization,
  norm,
  elementwise,
  sampling,
  optimizer,
  memory,
  moe,
  other,
  count
};

const char* category_name(Category category) {
  switch (category) {
    case Category::gemm: return "GEMM";
    case Category::attention: return "attention";        // with the KV-cache writes
    case Category::quantization: return "quantization";  // FP8 codes, BF16 casts, calibration amax
    case Category::norm: return "norms";
    case Category::elementwise: return "elementwise";  // activations, residual adds, rope, embedding
    case Category::sampling: return "sampling/log-softmax";
    case Category::optimizer: return "optimizer";
    case Category::memory: return "memory";  // allocation, transfers, copies, transposes, row gathers
    case Category::moe: return "MoE";
    case Category::other: return "other";
    case Category::count: break;
  }
  return "?";
}

// Every operation of the Backend interface that does work (kind() and
// description() are not counted), with its category. One list, expanded into
// the operation indices and their names, so the two cannot drift apart.
// clang-format off
#define FP8RL_PROFILED_OPS(X) \
  X(allocate, memory) \
  X(deallocate, memory) \
  X(upload, memory) \
  X(download, memory) \
  X(synchronize, other) \
  X(copy_within, memory) \
  X(zero_fill, memory) \
  X(quantize, quantization) \
  X(dequantize, quantization) \
  X(gemm_fp8, gemm) \
  X(gemm_bf16, gemm) \
  X(embedding, elementwise) \
  X(rms_norm, norm) \
  X(rope, elementwise) \
  X(swiglu, elementwise) \
  X(add, elementwise) \
  X(add_bias, elementwise) \
  X(to_bf16, quantization) \
  X(transpose_to_bf16, quantization) \
  X(transpose, memory) \
  X(gather_rows, memory) \
  X(kv_store, attention) \
  X(attention, attention) \
  X(moe_route, moe) \
  X(moe_combine, moe) \
  X(moe_route_backward, moe) \
  X(moe_combine_backward, moe) \
  X(sample, sampling) \
  X(token_logprobs, sampling) \
  X(rms_norm_backward, norm) \
  X(rope_backward, elementwise) \
  X(swiglu_backward, elementwise) \
  X(embedding_backward, elementwise) \
  X(attention_backward, attention) \
  X(log_softmax_backward, sampling) \
  X(adamw_update, optimizer) \
  X(sum_of_squares, optimizer) \
  X(first_non_finite, optimizer) \
  X(row_abs_max, quantization)
// clang-format on

enum Op : size_t {
#define FP8RL_OP_INDEX(name, category) op_##name,
  FP8RL_PROFILED_OPS(FP8RL_OP_INDEX)
#undef FP8RL_OP_INDEX
      op_count
};

struct OpInfo {
  const char* name;
  Category category;
};

constexpr OpInfo kOps[op_count] = {
#define FP8RL_OP_INFO(name, category) {#name, Category::category},
    FP8RL_PROFILED_OPS(FP8RL_OP_INFO)
#undef FP8RL_OP_INFO
};

// The CPU backend keeps no count of its pool's wake-ups, so they are
// estimated from each call's shape by its own rules (kernels/cpu/cpu_backend.cpp,
// gemm_cpu.cpp): a per-row or elementwise operation runs on the pool when it
// has at least 2 rows and 2^15 elements of work, else inline on the caller.
constexpr int64_t kParallelElements = int64_t{1} << 15;

int64_t pooled(int64_t rows, int64_t row_elements) {
  return rows >= 2 && rows * row_elements >= kParallelElements ? 1 : 0;
}

// A GEMM wakes the pool once, and once more first to pack A when A spans
// more than one block of rows (gemm_cpu.cpp's kBlockRows).
constexpr int64_t kGemmBlockRows = 128;

int64_t gemm_dispatches(int64_t m, int64_t n) { return m == 0 || n == 0 ? 0 : m > kGemmBlockRows ? 2 : 1; }

// Median time of one ThreadPool::run of an empty job, over batches of
// back-to-back calls: the workers are still spinning from the previous call,
// as between the consecutive kernels of a layer. (A worker idle for more
// than ~100 us sleeps, and waking it costs a futex call more.)
double measure_dispatch_ns(int threads) {
  cpu::ThreadPool pool(threads);
  const std::function<void(int)> empty = [](int) {};
  constexpr int kBatches = 101, kCallsPerBatch = 200;
  std::vector<double> ns;
  for (int batch = 0; batch < kBatches; ++batch) {
    const Clock::time_point start = Clock::now();
    for (int call = 0; call < kCallsPerBatch; ++call) pool.run(empty);
    ns.push_back(seconds_since(start) * 1e9 / kCallsPerBatch);
  }
  return median(ns);
}

}  // namespace

class ProfilingBackend::Timed {
 public:
  Timed(ProfilingBackend& profiler, Op op, int64_t dispatches = 0)
      : counter_(profiler.counters_[op]), start_(Clock::now()) {
    counter_.dispatches += dispatches;
  }
  ~Timed() {
    counter_.calls += 1;
    counter_.seconds += seconds_since(start_);
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  Counter& counter_;
  Clock::time_point start_;
};

ProfilingBackend::ProfilingBackend(std::unique_ptr<Backend> inner, int threads)
    : inner_(std::move(inner)), threads_(threads), dispatch_ns_(measure_dispatch_ns(threads)), counters_(op_count) {}

void ProfilingBackend::reset() { std::fill(counters_.begin(), counters_.end(), Counter{}); }

void ProfilingBackend::print_table(FILE* out, const char* title, double total_seconds) const {
  std::vector<size_t> ops;
  double backend_seconds = 0;
  int64_t dispatches = 0;
  std::vector<Counter> categories(static_cast<size_t>(Category::count));
  for (size_t op = 0; op < op_count; ++op) {
    const Counter& c = counters_[op];
    if (c.calls == 0) continue;
    ops.push_back(op);
    backend_seconds += c.seconds;
    dispatches += c.dispatches;
    Counter& category = categories[static_cast<size_t>(kOps[op].category)];
    category.calls += c.calls;
    category.seconds += c.seconds;
  }
  std::sort(ops.begin(), ops.end(), [&](size_t a, size_t b) { return counters_[a].seconds > counters_[b].seconds; });
  const auto percent = [&](double seconds) { return 100.0 * seconds / total_seconds; };

  std::fprintf(out, "\n%s: %.3f s wall\n", title, total_seconds);
  std::fprintf(out, "  %-22s %-20s %8s %10s %8s %10s\n", "operation", "category", "calls", "total ms", "% total",
               "us/call");
  for (const size_t op : ops) {
    const Counter& c = counters_[op];
    std::fprintf(out, "  %-22s %-20s %8lld %10.2f %7.1f%% %10.2f\n", kOps[op].name, category_name(kOps[op].category),
                 static_cast<long long>(c.calls), 1e3 * c.seconds, percent(c.seconds),
                 1e6 * c.seconds / static_cast<double>(c.calls));
  }
  std::vector<size_t> order(categories.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return categories[a].seconds > categories[b].seconds; });
  std::fprintf(out, "  by category:\n");
  for (const size_t i : order) {
    const Counter& c = categories[i];
    if (c.calls == 0) continue;
    std::fprintf(out, "  %-43s %8lld %10.2f %7.1f%%\n", category_name(static_cast<Category>(i)),
                 static_cast<long long>(c.calls), 1e3 * c.seconds, percent(c.seconds));
  }
  const double outside = total_seconds - backend_seconds;
  std::fprintf(out, "  %-43s %8s %10.2f %7.1f%%\n", "outside the backend (host code)", "", 1e3 * outside,
               percent(outside));
  const double dispatch_seconds = static_cast<double>(dispatches) * dispatch_ns_ * 1e-9;
  std::fprintf(out,
               "  thread-pool dispatch (estimate, inside the operations above): %lld wake-ups x %.0f ns\n"
               "  (median empty ThreadPool::run, %d threads, back to back) = %.2f ms, %.1f%% of the total\n",
               static_cast<long long>(dispatches), dispatch_ns_, threads_, 1e3 * dispatch_seconds,
               percent(dispatch_seconds));
}

void* ProfilingBackend::allocate(size_t bytes) {
  Timed timed(*this, op_allocate);
  return inner_->allocate(bytes);
}

void ProfilingBackend::deallocate(void* pointer) noexcept {
  Timed timed(*this, op_deallocate);
  inner_->deallocate(pointer);
}

void ProfilingBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  Timed timed(*this, op_upload);
  inner_->upload(device_dst, host_src, bytes);
}

void ProfilingBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  Timed timed(*this, op_download);
  inner_->download(host_dst, device_src, bytes);
}

void ProfilingBackend::synchronize() {
  Timed timed(*this, op_synchronize);
  inner_->synchronize();
}

void ProfilingBackend::copy_within(void* dst, const void* src, size_t bytes) {
  Timed timed(*this, op_copy_within);
  inner_->copy_within(dst, src, bytes);
}

void ProfilingBackend::zero_fill(void* dst, size_t bytes) {
  Timed timed(*this, op_zero_fill);
  inner_->zero_fill(dst, bytes);
}

void ProfilingBackend::quantize(const void* input, DType input_dtype, int64_t rows, int64_t cols, const QuantSpec& spec,
                                uint8_t* codes, float* scales) {
  // Its units are rows (1x128 tiles) or 128-row bands (the other layouts).
  const int64_t units = spec.layout == BlockLayout::tile_1x128 ? rows : ceil_div(rows, kQuantBlock);
  Timed timed(*this, op_quantize, units >= 2 && rows * cols >= kParallelElements ? 1 : 0);
  inner_->quantize(input, input_dtype, rows, cols, spec, codes, scales);
}

void ProfilingBackend::dequantize(const Fp8Matrix& matrix, float* output) {
  Timed timed(*this, op_dequantize, 1);
  inner_->dequantize(matrix, output);
}

void ProfilingBackend::gemm_fp8(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype) {
  Timed timed(*this, op_gemm_fp8, gemm_dispatches(a.rows, w.rows));
  inner_->gemm_fp8(a, w, c, c_dtype);
}

void ProfilingBackend::gemm_bf16(const uint16_t* a, const uint16_t* w, int64_t m, int64_t n, int64_t k, void* c,
                                 DType c_dtype) {
  Timed timed(*this, op_gemm_bf16, gemm_dispatches(m, n));
  inner_->gemm_bf16(a, w, m, n, k, c, c_dtype);
}

void ProfilingBackend::embedding(const uint16_t* table, int64_t vocab, int64_t hidden, const int32_t* ids,
                                 int64_t count, float* out) {
  Timed timed(*this, op_embedding, pooled(count, hidden));
  inner_->embedding(table, vocab, hidden, ids, count, out);
}

void ProfilingBackend::rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* out) {
  Timed timed(*this, op_rms_norm, pooled(rows, dim));
  inner_->rms_norm(x, weight, rows, dim, eps, out);
}

void ProfilingBackend::rope(float* x, const int32_t* positions, int64_t tokens, int64_t heads, int64_t head_dim,
                            const float* cos, const float* sin, int64_t table_positions) {
  Timed timed(*this, op_rope, pooled(tokens, heads * head_dim));
  inner_->rope(x, positions, tokens, heads, head_dim, cos, sin, table_positions);
}

void ProfilingBackend::swiglu(const float* gate, const float* up, int64_t count, float* out) {
  Timed timed(*this, op_swiglu, pooled(count, 1));
  inner_->swiglu(gate, up, count, out);
}

void ProfilingBackend::add(float* x, const float* y, int64_t count) {
  Timed timed(*this, op_add, pooled(count, 1));
  inner_->add(x, y, count);
}

void ProfilingBackend::add_bias(float* x, const float* bias, int64_t rows, int64_t cols) {
  Timed timed(*this, op_add_bias, pooled(rows, cols));
  inner_->add_bias(x, bias, rows, cols);
}

void ProfilingBackend::to_bf16(const float* x, int64_t count, uint16_t* out) {
  Timed timed(*this, op_to_bf16, pooled(count, 1));
  inner_->to_bf16(x, count, out);
}

void ProfilingBackend::transpose_to_bf16(const float* x, int64_t rows, int64_t cols, uint16_t* out) {
  Timed timed(*this, op_transpose_to_bf16, pooled(cols, rows));
  inner_->transpose_to_bf16(x, rows, cols, out);
}

void ProfilingBackend::transpose(const void* x, int64_t rows, int64_t cols, int64_t element_bytes, void* out) {
  Timed timed(*this, op_transpose, pooled(cols, rows * element_bytes));
  inner_->transpose(x, rows, cols, element_bytes, out);
}

void ProfilingBackend::gather_rows(const float* x, int64_t cols, const int64_t* rows, int64_t count, float* out) {
  Timed timed(*this, op_gather_rows, pooled(count, cols));
  inner_->gather_rows(x, cols, rows, count, out);
}

void ProfilingBackend::kv_store(const KvStoreArgs& args) {
  Timed timed(*this, op_kv_store, pooled(args.tokens, args.kv_dim));
  inner_->kv_store(args);
}

void ProfilingBackend::attention(const AttentionArgs& args) {
  Timed timed(*this, op_attention, 1);
  inner_->attention(args);
}

void ProfilingBackend::moe_route(const MoeRouteArgs& args) {
  Timed timed(*this, op_moe_route, pooled(args.tokens, args.experts * args.hidden));
  inner_->moe_route(args);
}

void ProfilingBackend::moe_combine(const MoeCombineArgs& args) {
  Timed timed(*this, op_moe_combine, pooled(args.tokens, args.top_k * args.hidden));
  inner_->moe_combine(args);
}

void ProfilingBackend::moe_route_backward(const MoeRouteBackwardArgs& args) {
  Timed timed(
      *this, op_moe_route_backward,
      pooled(args.tokens, args.experts * (args.top_k + args.hidden)) + pooled(args.experts, args.tokens * args.hidden));
  inner_->moe_route_backward(args);
}

void ProfilingBackend::moe_combine_backward(const MoeCombineBackwardArgs& args) {
  Timed timed(*this, op_moe_combine_backward, pooled(args.tokens, 2 * args.top_k * args.hidden));
  inner_->moe_combine_backward(args);
}

void ProfilingBackend::sample(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                              int32_t* tokens, float* logprobs) {
  Timed timed(*this, op_sample, rows > 1 ? 1 : 0);
  inner_->sample(logits, rows, vocab, params, tokens, logprobs);
}

void ProfilingBackend::token_logprobs(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                      const int32_t* targets, float* logprobs) {
  Timed timed(*this, op_token_logprobs, 1);
  inner_->token_logprobs(logits, rows, vocab, params, targets, logprobs);
}

void ProfilingBackend::rms_norm_backward(const float* x, const float* weight, const float* dy, int64_t rows,
                                         int64_t dim, float eps, float* dx, float* dweight) {
  Timed timed(*this, op_rms_norm_backward, 2 * pooled(rows, dim) + pooled(dim, rows));
  inner_->rms_norm_backward(x, weight, dy, rows, dim, eps, dx, dweight);
}

void ProfilingBackend::rope_backward(float* g, const int32_t* positions, int64_t tokens, int64_t heads,
                                     int64_t head_dim, const float* cos, const float* sin, int64_t table_positions) {
  Timed timed(*this, op_rope_backward, pooled(tokens, heads * head_dim));
  inner_->rope_backward(g, positions, tokens, heads, head_dim, cos, sin, table_positions);
}

void ProfilingBackend::swiglu_backward(const float* gate, const float* up, const float* dout, int64_t count,
                                       float* dgate, float* dup) {
  Timed timed(*this, op_swiglu_backward, pooled(count, 1));
  inner_->swiglu_backward(gate, up, dout, count, dgate, dup);
}

void ProfilingBackend::embedding_backward(const float* dy, const int32_t* ids, int64_t count, int64_t vocab,
                                          int64_t hidden, float* dtable) {
  Timed timed(*this, op_embedding_backward, pooled(hidden, count));
  inner_->embedding_backward(dy, ids, count, vocab, hidden, dtable);
}

void ProfilingBackend::attention_backward(const AttentionBackwardArgs& args) {
  Timed timed(*this, op_attention_backward, 1);
  inner_->attention_backward(args);
}

void ProfilingBackend::log_softmax_backward(const float* logits, int64_t rows, int64_t vocab, const SamplingRow* params,
                                            const int32_t* targets, const float* coef, float* dlogits, float* entropy) {
  Timed timed(*this, op_log_softmax_backward, pooled(rows, vocab));
  inner_->log_softmax_backward(logits, rows, vocab, params, targets, coef, dlogits, entropy);
}

void ProfilingBackend::adamw_update(float* params, const float* grads, float* exp_avg, float* exp_avg_sq, int64_t count,
                                    const AdamWScalars& scalars) {
  Timed timed(*this, op_adamw_update, pooled(count, 1));
  inner_->adamw_update(params, grads, exp_avg, exp_avg_sq, count, scalars);
}

double ProfilingBackend::sum_of_squares(const float* x, int64_t count) {
  Timed timed(*this, op_sum_of_squares, pooled(ceil_div(count, kSquareSumChunk), kSquareSumChunk));
  return inner_->sum_of_squares(x, count);
}

int64_t ProfilingBackend::first_non_finite(const float* x, int64_t count, float scale) {
  Timed timed(*this, op_first_non_finite, count >= kParallelElements ? 1 : 0);
  return inner_->first_non_finite(x, count, scale);
}

void ProfilingBackend::row_abs_max(const float* x, int64_t rows, int64_t cols, float* out) {
  Timed timed(*this, op_row_abs_max, pooled(rows, cols));
  inner_->row_abs_max(x, rows, cols, out);
}

}  // namespace fp8rl::bench
