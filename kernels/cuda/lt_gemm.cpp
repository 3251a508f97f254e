#include "lt_gemm.h"

#include <initializer_list>

namespace fp8rl::cuda {
namespace {

cudaDataType_t operand_type(LtKind kind) { return kind == LtKind::bf16 ? CUDA_R_16BF : CUDA_R_8F_E4M3; }
cudaDataType_t output_type(DType dtype) { return dtype == DType::bf16 ? CUDA_R_16BF : CUDA_R_32F; }

const char* kind_name(LtKind kind) {
  switch (kind) {
    case LtKind::bf16: return "BF16 x BF16";
    case LtKind::fp8_w_blocks: return "E4M3 x E4M3 (A VEC128_32F, W BLK128x128_32F)";
    case LtKind::fp8_w_tiles: return "E4M3 x E4M3 (A VEC128_32F, W VEC128_32F)";
  }
  return "?";
}

std::string describe(const LtMatmul& mm, int64_t m) {
  return std::string(kind_name(mm.kind)) + " -> " + (mm.c_dtype == DType::bf16 ? "BF16" : "FP32") +
         " matmul, M=" + std::to_string(m) + " N=" + std::to_string(mm.n) + " K=" + std::to_string(mm.k);
}

LtLayout make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
  cublasLtMatrixLayout_t layout = nullptr;
  check_cublas(cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
               "cublasLtMatrixLayoutCreate");
  return LtLayout(layout);
}

// The row-major operands seen column-major (see lt_gemm.h).
LtLayouts make_layouts(const LtMatmul& mm, int64_t m) {
  return LtLayouts{make_layout(operand_type(mm.kind), mm.k, mm.n, mm.k),  // W [n, k] = K x N, used transposed
                   make_layout(operand_type(mm.kind), mm.k, m, mm.k),     // A [m, k] = K x M
                   make_layout(output_type(mm.c_dtype), mm.n, m, mm.n)};  // C [m, n] = N x M
}

// Largest power of two, at most 16, dividing every pointer: the heuristic
// must only offer kernels that accept this alignment. Capped at 16, the
// alignment cuBLASLt's FP8 kernels need, so that an operand's incidental
// 256-byte alignment (a fresh cudaMalloc) against 16 (a row inside a larger
// buffer) never selects a different algorithm for the same (N, K).
uint32_t pointer_alignment(std::initializer_list<const void*> pointers) {
  uintptr_t bits = 16;
  for (const void* p : pointers) bits |= reinterpret_cast<uintptr_t>(p);
  return static_cast<uint32_t>(bits & (~bits + 1));
}

template <typename T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  size_t written = 0;
  check_cublas(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value, &written),
               "reading an algorithm's configuration");
  return value;
}

// Split-K sums parts of K in parallel and combines them afterwards: an
// extra rounding step whose shape we would rather not depend on.
bool splits_k(const cublasLtMatmulAlgo_t& algo) {
  return algo_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM) > 1 ||
         algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) != CUBLASLT_REDUCTION_SCHEME_NONE;
}

}  // namespace

LtGemm::LtGemm() {
  cublasLtHandle_t handle = nullptr;
  check_cublas(cublasLtCreate(&handle), "cublasLtCreate");
  handle_.reset(handle);
  workspace_data_ = workspace_.reserve(kWorkspaceBytes);
}

LtMatmulDesc LtGemm::make_desc(LtKind kind) const {
  cublasLtMatmulDesc_t raw = nullptr;
  check_cublas(cublasLtMatmulDescCreate(&raw, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate");
  LtMatmulDesc desc(raw);
  set_desc(raw, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "TRANSA");
  set_desc(raw, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB");
  if (kind == LtKind::bf16) return desc;
  const int32_t w_mode = kind == LtKind::fp8_w_blocks ? CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F
                                                      : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  const int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
  set_desc(raw, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, w_mode, "A_SCALE_MODE");  // cuBLASLt's A is our W
  set_desc(raw, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, a_mode, "B_SCALE_MODE");
  // Fast accumulation skips the periodic promotion of the tensor cores'
  // partial sums to FP32; it is off by default, and must stay off.
  const int8_t fast_accumulation = 0;
  set_desc(raw, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accumulation, "FAST_ACCUM");
  // Placeholders until run() sets the real scales: the heuristic may read
  // pointer attributes for their alignment, and the workspace is 256-byte aligned.
  const void* placeholder = workspace_data_;
  set_desc(raw, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, placeholder, "A_SCALE_POINTER");
  set_desc(raw, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, placeholder, "B_SCALE_POINTER");
  return desc;
}

// The heuristic's best algorithm without split-K; when every candidate
// splits K, its best one, which is still one fixed choice per (N, K).
cublasLtMatmulAlgo_t LtGemm::heuristic(cublasLtMatmulDesc_t desc, const LtLayouts& layouts, uint32_t alignment,
                                       const std::string& what) const {
  cublasLtMatmulPreference_t raw = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&raw), "cublasLtMatmulPreferenceCreate");
  const LtPreference preference(raw);
  set_preference(raw, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64_t{kWorkspaceBytes}, "MAX_WORKSPACE_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment, "MIN_ALIGNMENT_A_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment, "MIN_ALIGNMENT_B_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment, "MIN_ALIGNMENT_C_BYTES");
  set_preference(raw, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment, "MIN_ALIGNMENT_D_BYTES");
  constexpr int kCandidates = 16;
  cublasLtMatmulHeuristicResult_t results[kCandidates] = {};
  int count = 0;
  check_cublas(cublasLtMatmulAlgoGetHeuristic(handle_.get(), desc, layouts.a.get(), layouts.b.get(), layouts.d.get(),
                                              layouts.d.get(), raw, kCandidates, results, &count),
               "algorithm heuristic for " + what);
  for (int i = 0; i < count; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS && !splits_k(results[i].algo)) return results[i].algo;
  if (count == 0 || results[0].state != CUBLAS_STATUS_SUCCESS)
    fail(Status::unsupported,
         "cuBLASLt offers no algorithm for " + what + " on this GPU (block-scaled FP8 needs compute capability 9.0)");
  return results[0].algo;
}

const cublasLtMatmulAlgo_t& LtGemm::reference_algo(const LtMatmul& mm, const AlgoKey& key) {
  const auto found = reference_algos_.find(key);
  if (found != reference_algos_.end()) return found->second;
  const LtMatmulDesc desc = make_desc(mm.kind);
  const LtLayouts layouts = make_layouts(mm, kReferenceRows);
  const cublasLtMatmulAlgo_t algo = heuristic(desc.get(), layouts, std::get<4>(key), describe(mm, kReferenceRows));
  return reference_algos_.emplace(key, algo).first->second;
}

LtGemm::Plan& LtGemm::plan_for(const LtMatmul& mm, uint32_t alignment) {
  const AlgoKey algo_key{static_cast<int>(mm.kind), mm.n, mm.k, static_cast<int>(mm.c_dtype), alignment};
  const PlanKey plan_key{mm.m, algo_key};
  const auto found = plans_.find(plan_key);
  if (found != plans_.end()) return found->second;
  Plan plan{make_desc(mm.kind), make_layouts(mm, mm.m), reference_algo(mm, algo_key), false};
  cublasLtMatmulHeuristicResult_t check{};
  const cublasStatus_t status =
      cublasLtMatmulAlgoCheck(handle_.get(), plan.desc.get(), plan.layouts.a.get(), plan.layouts.b.get(),
                              plan.layouts.d.get(), plan.layouts.d.get(), &plan.algo, &check);
  if (status != CUBLAS_STATUS_SUCCESS || check.workspaceSize > kWorkspaceBytes) use_own_heuristic(plan, mm, alignment);
  return plans_.emplace(plan_key, std::move(plan)).first->second;
}

void LtGemm::use_own_heuristic(Plan& plan, const LtMatmul& mm, uint32_t alignment) {
  plan.algo = heuristic(plan.desc.get(), plan.layouts, alignment, describe(mm, mm.m));
  plan.own_heuristic = true;
  ++fallback_plans_;
}

cublasStatus_t LtGemm::enqueue(const Plan& plan, const LtMatmul& mm, cudaStream_t stream) const {
  const float alpha = 1.0f, beta = 0.0f;
  return cublasLtMatmul(handle_.get(), plan.desc.get(), &alpha, mm.w, plan.layouts.a.get(), mm.a, plan.layouts.b.get(),
                        &beta, mm.c, plan.layouts.d.get(), mm.c, plan.layouts.d.get(), &plan.algo, workspace_data_,
                        kWorkspaceBytes, stream);
}

void LtGemm::run(const LtMatmul& mm, cudaStream_t stream) {
  require(mm.m >= 0 && mm.n >= 0 && mm.k > 0,
          "matmul: bad shape M=" + std::to_string(mm.m) + " N=" + std::to_string(mm.n) + " K=" + std::to_string(mm.k));
  if (mm.m == 0 || mm.n == 0) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const uint32_t alignment = pointer_alignment({mm.a, mm.w, mm.c});
  Plan& plan = plan_for(mm, alignment);
  if (mm.kind != LtKind::bf16) {
    set_desc(plan.desc.get(), CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, static_cast<const void*>(mm.w_scales),
             "A_SCALE_POINTER");
    set_desc(plan.desc.get(), CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, static_cast<const void*>(mm.a_scales),
             "B_SCALE_POINTER");
  }
  cublasStatus_t status = enqueue(plan, mm, stream);
  // AlgoCheck does not promise that the reference algorithm runs for this M.
  // These two refusals come from argument checks, before anything is
  // enqueued, so retrying with this M's own choice runs the matmul once.
  const bool refused = status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_INVALID_VALUE;
  if (refused && !plan.own_heuristic) {
    use_own_heuristic(plan, mm, alignment);
    status = enqueue(plan, mm, stream);
  }
  check_cublas(status, "cublasLtMatmul for " + describe(mm, mm.m));
  last_plan_ = &plan;
}

int64_t LtGemm::fallback_plan_count() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return fallback_plans_;
}

std::string LtGemm::last_algorithm() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (last_plan_ == nullptr) return "none";
  const cublasLtMatmulAlgo_t& algo = last_plan_->algo;
  return "id=" + std::to_string(algo_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID)) +
         " tile=" + std::to_string(algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID)) +
         " stages=" + std::to_string(algo_config<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID)) +
         " splitk=" + std::to_string(algo_config<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)) +
         " cluster=" + std::to_string(algo_config<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID));
}

}  // namespace fp8rl::cuda
