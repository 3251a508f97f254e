// cuBLASLt matmuls in our row-major convention, C[M,N] = A[M,K] . W[N,K]^T,
// with one fixed algorithm per (N, K) so that a row's result does not depend
// on how many rows are in the batch.
//
// cuBLASLt is column-major: a row-major [R, C] matrix is a column-major
// [C, R] one. So C[M,N] row-major is computed as the column-major
// D[N,M] = op(W) . A with W as cuBLASLt's A (K x N, transposed: "T") and
// our A as cuBLASLt's B (K x M, not transposed: "N"). That is the "TN" form,
// the only one FP8 accepts on sm_90.
//
// Algorithm choice (batch invariance). For every (operand kind, N, K,
// output type, pointer alignment up to 16 bytes) we ask the heuristic once,
// at a reference M of kReferenceRows, for algorithms without split-K
// (SPLITK_NUM 1, reduction scheme NONE) and keep its best one. Every M then
// runs that same algorithm when cublasLtMatmulAlgoCheck accepts it, so the
// kernel, its tile shape and the order in which it accumulates along K are
// the same for M = 1 and M = 4096. Only when the check rejects it (not
// expected) does that M get its own heuristic choice; fallback_plan_count()
// counts those. The price: small M runs a kernel tuned for large M.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "../backend.h"
#include "device_buffer.h"
#include "lt_handles.h"

namespace fp8rl::cuda {

// Operand data types and cuBLASLt scale modes.
enum class LtKind : uint8_t {
  bf16 = 0,          // BF16 A and W, no scales
  fp8_w_blocks = 1,  // E4M3; A VEC128_32F, W BLK128x128_32F
  fp8_w_tiles = 2,   // E4M3; A and W VEC128_32F (wgrad)
};

// One matmul whose shapes, pointers and scale layouts already meet
// cuBLASLt's requirements for its kind (see fp8_gemm.h for FP8).
struct LtMatmul {
  LtKind kind = LtKind::bf16;
  int64_t m = 0, n = 0, k = 0;
  const void* a = nullptr;          // [m, k] row-major
  const void* w = nullptr;          // [n, k] row-major
  const float* a_scales = nullptr;  // FP8 only, VEC128 layout [ceil(k/128), m]
  const float* w_scales = nullptr;  // FP8 only, BLK128x128 [ceil(n/128), L4] or VEC128 [ceil(k/128), n]
  void* c = nullptr;                // [m, n] row-major of c_dtype
  DType c_dtype = DType::f32;
};

// Column-major views of the operands: cuBLASLt's A (our W), B (our A) and
// C = D (our C).
struct LtLayouts {
  LtLayout a, b, d;
};

class LtGemm {
 public:
  // M used to choose each (N, K)'s algorithm: a typical training/prefill token count.
  static constexpr int64_t kReferenceRows = 4096;
  // NVIDIA recommends 32 MiB of workspace on Hopper.
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  LtGemm();

  // Enqueues the matmul on `stream`. Thread-safe.
  void run(const LtMatmul& mm, cudaStream_t stream);

  // Plans whose M could not reuse its (N, K) reference algorithm.
  int64_t fallback_plan_count() const;
  // "id=.. tile=.. stages=.. splitk=.. cluster=.." of the algorithm the last run used.
  std::string last_algorithm() const;

 private:
  // (kind, n, k, c_dtype, alignment) and the same with m in front.
  using AlgoKey = std::tuple<int, int64_t, int64_t, int, uint32_t>;
  using PlanKey = std::tuple<int64_t, AlgoKey>;
  struct Plan {
    LtMatmulDesc desc;
    LtLayouts layouts;
    cublasLtMatmulAlgo_t algo;
    bool own_heuristic;  // algo chosen for this M, not the (N, K) reference
  };

  LtMatmulDesc make_desc(LtKind kind) const;
  const cublasLtMatmulAlgo_t& reference_algo(const LtMatmul& mm, const AlgoKey& key);
  Plan& plan_for(const LtMatmul& mm, uint32_t alignment);
  void use_own_heuristic(Plan& plan, const LtMatmul& mm, uint32_t alignment);
  cublasStatus_t enqueue(const Plan& plan, const LtMatmul& mm, cudaStream_t stream) const;
  cublasLtMatmulAlgo_t heuristic(cublasLtMatmulDesc_t desc, const LtLayouts& layouts, uint32_t alignment,
                                 const std::string& what) const;

  // Member order is destruction order in reverse: descriptors go before the
  // workspace, the workspace before the handle.
  LtHandle handle_;
  DeviceBuffer workspace_;
  void* workspace_data_ = nullptr;
  mutable std::mutex mutex_;
  std::map<AlgoKey, cublasLtMatmulAlgo_t> reference_algos_;
  std::map<PlanKey, Plan> plans_;
  int64_t fallback_plans_ = 0;
  const Plan* last_plan_ = nullptr;
};

}  // namespace fp8rl::cuda
