#include "fp8_gemm.h"

#include "../backend_checks.h"
#include "lt_scales.h"

namespace fp8rl::cuda {
namespace {

int64_t round_up(int64_t value, int64_t multiple) { return ceil_div(value, multiple) * multiple; }
bool aligned16(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer) % 16 == 0; }

// codes [rows, cols] -> [padded_rows, padded_cols] with zero codes around,
// or the codes themselves when they already fit.
const uint8_t* fit_codes(const uint8_t* codes, int64_t rows, int64_t cols, int64_t padded_rows, int64_t padded_cols,
                         DeviceBuffer& scratch, cudaStream_t stream) {
  if (rows == padded_rows && cols == padded_cols && aligned16(codes)) return codes;
  const auto bytes = static_cast<size_t>(padded_rows * padded_cols);
  auto* staged = static_cast<uint8_t*>(scratch.reserve(bytes));
  check_cuda(cudaMemsetAsync(staged, 0, bytes, stream), "cudaMemsetAsync of padded FP8 codes");
  check_cuda(cudaMemcpy2DAsync(staged, static_cast<size_t>(padded_cols), codes, static_cast<size_t>(cols),
                               static_cast<size_t>(cols), static_cast<size_t>(rows), cudaMemcpyDeviceToDevice, stream),
             "cudaMemcpy2DAsync of padded FP8 codes");
  return staged;
}

const float* fit_scales(const float* scales, const ScaleRepack& repack, DeviceBuffer& scratch, cudaStream_t stream) {
  auto* staged = static_cast<float*>(scratch.reserve(static_cast<size_t>(repack.dst_count) * sizeof(float)));
  repack_scales(scales, repack, staged, stream);
  return staged;
}

}  // namespace

void Fp8Gemm::run(const Fp8Matrix& a, const Fp8Matrix& w, void* c, DType c_dtype, cudaStream_t stream) {
  if (!check_gemm_fp8_args(a, w, c, c_dtype)) return;
  const int64_t m = a.rows, n = w.rows, k = a.cols;
  const int64_t m_pad = round_up(m, 4), n_pad = round_up(n, 8), k_pad = round_up(k, 16);
  const int64_t k_blocks = ceil_div(k, kQuantBlock);  // == ceil_div(k_pad, kQuantBlock)
  const bool w_blocks = w.layout == BlockLayout::block_128x128;

  const std::lock_guard<std::mutex> lock(mutex_);
  LtMatmul mm;
  mm.kind = w_blocks ? LtKind::fp8_w_blocks : LtKind::fp8_w_tiles;
  mm.m = m_pad;
  mm.n = n_pad;
  mm.k = k_pad;
  mm.c_dtype = c_dtype;
  mm.a = fit_codes(a.codes, m, k, m_pad, k_pad, a_codes_, stream);                           // [m_pad, k_pad]
  mm.w = fit_codes(w.codes, n, k, n_pad, k_pad, w_codes_, stream);                           // [n_pad, k_pad]
  mm.a_scales = fit_scales(a.scales, vec128_repack(m, m_pad, k_blocks), a_scales_, stream);  // [L, m_pad]
  mm.w_scales = fit_scales(w.scales,
                           w_blocks ? blk128x128_repack(ceil_div(n, kQuantBlock), k_blocks)  // [N/128, L4]
                                    : vec128_repack(n, n_pad, k_blocks),                     // [L, n_pad]
                           w_scales_, stream);
  const size_t element = dtype_size(c_dtype);
  const bool stage_c = m_pad != m || n_pad != n || !aligned16(c);
  mm.c = stage_c ? c_staging_.reserve(static_cast<size_t>(m_pad * n_pad) * element) : c;  // [m_pad, n_pad]
  lt_.run(mm, stream);
  if (stage_c)
    check_cuda(
        cudaMemcpy2DAsync(c, static_cast<size_t>(n) * element, mm.c, static_cast<size_t>(n_pad) * element,
                          static_cast<size_t>(n) * element, static_cast<size_t>(m), cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpy2DAsync of the GEMM output");
}

}  // namespace fp8rl::cuda
