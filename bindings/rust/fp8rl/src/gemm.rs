//! Matrix products: block-scaled FP8 and BF16, both batch-invariant.

use fp8rl_sys as sys;

use crate::args::to_i64;
use crate::context::Context;
use crate::enums::BlockLayout;
use crate::error::{check, Result};
use crate::numerics::{ElementsMut, Quantized};

/// A block-quantized E4M3 matrix of logical shape `[rows, cols]`, borrowed
/// (`fp8rl_fp8_matrix`), e.g. from [`Quantized::as_matrix`].
#[derive(Debug, Clone, Copy)]
pub struct Fp8Matrix<'a> {
    /// Codes laid out per `layout`.
    pub codes: &'a [u8],
    /// Scales laid out per `layout`.
    pub scales: &'a [f32],
    /// Logical rows.
    pub rows: usize,
    /// Logical columns (the reduction dimension K of a GEMM operand).
    pub cols: usize,
    /// Block layout of codes and scales.
    pub layout: BlockLayout,
}

impl Fp8Matrix<'_> {
    fn to_c(self) -> Result<sys::fp8rl_fp8_matrix> {
        Ok(sys::fp8rl_fp8_matrix {
            codes: self.codes.as_ptr(),
            code_count: to_i64("codes", self.codes.len())?,
            scales: self.scales.as_ptr(),
            scale_count: to_i64("scales", self.scales.len())?,
            rows: to_i64("rows", self.rows)?,
            cols: to_i64("cols", self.cols)?,
            layout: self.layout.as_raw(),
        })
    }
}

impl Quantized {
    /// A view of the matrix for [`Context::gemm_fp8`].
    pub fn as_matrix(&self) -> Fp8Matrix<'_> {
        Fp8Matrix { codes: &self.codes, scales: &self.scales, rows: self.rows, cols: self.cols, layout: self.layout }
    }
}

impl Context {
    /// Block-scaled FP8 GEMM: `c[M, N] = a[M, K] * w[N, K]^T` with FP32
    /// accumulation, into F32 or BF16 `c` (M * N elements).
    ///
    /// `a` is in [`BlockLayout::Tile1x128`], `w` in [`BlockLayout::Block128x128`]
    /// (or `Tile1x128`). Batch-invariant and deterministic: each element of c
    /// is bitwise the same whatever M, the other rows, or the thread count.
    pub fn gemm_fp8(&self, a: &Fp8Matrix<'_>, w: &Fp8Matrix<'_>, mut c: ElementsMut<'_>) -> Result<()> {
        let (a, w) = (a.to_c()?, w.to_c()?);
        let c_count = to_i64("c", c.len())?;
        // SAFETY: the matrices carry their slices' lengths and c its own; C checks them.
        check(unsafe { sys::fp8rl_gemm_fp8(self.as_ptr(), &a, &w, c.as_mut_ptr(), c.dtype().as_raw(), c_count) })
    }

    /// BF16 GEMM: `c[M, N] = a[M, K] * w[N, K]^T` with FP32 accumulation,
    /// batch-invariant like [`Context::gemm_fp8`]. `a` and `w` are row-major
    /// BF16 bits; `c` is F32 or BF16 with M * N elements.
    pub fn gemm_bf16(
        &self,
        a: &[u16], // [m, k]
        w: &[u16], // [n, k]
        m: usize,
        n: usize,
        k: usize,
        mut c: ElementsMut<'_>, // [m, n]
    ) -> Result<()> {
        let c_count = to_i64("c", c.len())?;
        // SAFETY: every array is passed with its length, which C checks against m, n, k.
        check(unsafe {
            sys::fp8rl_gemm_bf16(
                self.as_ptr(),
                a.as_ptr(),
                to_i64("a", a.len())?,
                w.as_ptr(),
                to_i64("w", w.len())?,
                to_i64("m", m)?,
                to_i64("n", n)?,
                to_i64("k", k)?,
                c.as_mut_ptr(),
                c.dtype().as_raw(),
                c_count,
            )
        })
    }
}
