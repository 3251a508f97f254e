//! FP8 and BF16 conversion and block quantization.

use std::ffi::c_void;

use fp8rl_sys as sys;

use crate::args::{to_i64, to_usize};
use crate::context::Context;
use crate::enums::{BlockLayout, DType, ScaleFormat};
use crate::error::{check, Error, Result};

/// Elements of one type, read by a call: the slice type follows the dtype
/// (BF16 as `u16` bits, FP8 as `u8` codes), so the two cannot disagree.
#[derive(Debug, Clone, Copy)]
pub enum Elements<'a> {
    /// IEEE binary32.
    F32(&'a [f32]),
    /// bfloat16 bits.
    Bf16(&'a [u16]),
    /// OCP E4M3 codes.
    E4m3(&'a [u8]),
    /// OCP E5M2 codes.
    E5m2(&'a [u8]),
}

/// Elements of one type, written by a call (see [`Elements`]).
#[derive(Debug)]
pub enum ElementsMut<'a> {
    /// IEEE binary32.
    F32(&'a mut [f32]),
    /// bfloat16 bits.
    Bf16(&'a mut [u16]),
    /// OCP E4M3 codes.
    E4m3(&'a mut [u8]),
    /// OCP E5M2 codes.
    E5m2(&'a mut [u8]),
}

impl Elements<'_> {
    /// The element type.
    pub fn dtype(&self) -> DType {
        match self {
            Self::F32(_) => DType::F32,
            Self::Bf16(_) => DType::Bf16,
            Self::E4m3(_) => DType::E4m3,
            Self::E5m2(_) => DType::E5m2,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(s) => s.len(),
            Self::Bf16(s) => s.len(),
            Self::E4m3(s) | Self::E5m2(s) => s.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn as_ptr(&self) -> *const c_void {
        match self {
            Self::F32(s) => s.as_ptr().cast(),
            Self::Bf16(s) => s.as_ptr().cast(),
            Self::E4m3(s) | Self::E5m2(s) => s.as_ptr().cast(),
        }
    }
}

impl ElementsMut<'_> {
    /// The same elements, read-only.
    pub fn as_elements(&self) -> Elements<'_> {
        match self {
            Self::F32(s) => Elements::F32(s),
            Self::Bf16(s) => Elements::Bf16(s),
            Self::E4m3(s) => Elements::E4m3(s),
            Self::E5m2(s) => Elements::E5m2(s),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.as_elements().dtype()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.as_elements().len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn as_mut_ptr(&mut self) -> *mut c_void {
        match self {
            Self::F32(s) => s.as_mut_ptr().cast(),
            Self::Bf16(s) => s.as_mut_ptr().cast(),
            Self::E4m3(s) | Self::E5m2(s) => s.as_mut_ptr().cast(),
        }
    }
}

/// Converts elements between types, rounding to nearest even; no scaling.
///
/// Supported: F32 to and from BF16, E4M3 and E5M2 (other pairs fail with
/// [`Status::Unsupported`](crate::Status::Unsupported)). NaN stays NaN. On
/// overflow into FP8, `saturate` clamps to the largest finite value; without
/// it E4M3 gets NaN and E5M2 Inf. F32 to BF16 overflows to Inf.
/// `src` and `dst` must have the same length.
///
/// ```
/// use fp8rl::{convert, Elements, ElementsMut};
/// let mut codes = [0u8; 3];
/// convert(Elements::F32(&[1.0, 500.0, -0.5]), ElementsMut::E4m3(&mut codes), true)?;
/// assert_eq!(codes, [0x38, 0x7e, 0xb0]); // 1, 448 (saturated), -0.5
/// # Ok::<(), fp8rl::Error>(())
/// ```
pub fn convert(src: Elements<'_>, mut dst: ElementsMut<'_>, saturate: bool) -> Result<()> {
    if src.len() != dst.len() {
        return Err(Error::invalid_argument(format!("convert: src has {} elements, dst {}", src.len(), dst.len())));
    }
    // SAFETY: both slices hold src.len() elements of their dtype, and a shared
    // and an exclusive borrow cannot overlap.
    check(unsafe {
        sys::fp8rl_convert(
            src.as_ptr(),
            src.dtype().as_raw(),
            dst.as_mut_ptr(),
            dst.dtype().as_raw(),
            src.len(),
            i32::from(saturate),
        )
    })
}

c_options! {
    /// Options of block quantization (`fp8rl_quantize_options`).
    ///
    /// Scales are dequantization multipliers: value ~= decode(code) * scale,
    /// where scale comes from the amax of the block's finite values. A block
    /// whose amax is 0 gets scale 1. Scales are floored at 2^-126.
    pub struct QuantizeOptions: sys::fp8rl_quantize_options = sys::fp8rl_quantize_options_init {
        /// [`DType::E4m3`] (default) or [`DType::E5m2`].
        format: DType,
        /// Default [`BlockLayout::Tile1x128`].
        layout: BlockLayout,
        /// Default [`ScaleFormat::Fp32`].
        scale_format: ScaleFormat,
        /// Out-of-range values clamp to the FP8 max (default true).
        saturate: bool,
        /// False (default): NaN/Inf input fails with
        /// [`Status::NonFinite`](crate::Status::NonFinite). True: NaN encodes as NaN,
        /// +-Inf as the overflow code, and neither affects its block's scale.
        allow_non_finite: bool,
    }
}

impl QuantizeOptions {
    /// How many codes and scales a quantized `[rows, cols]` matrix takes.
    pub fn quantized_sizes(&self, rows: usize, cols: usize) -> Result<(usize, usize)> {
        let c = self.c_fields();
        let (mut codes, mut scales) = (0i64, 0i64);
        // SAFETY: valid options and out-pointers.
        check(unsafe {
            sys::fp8rl_quantized_sizes(&c, to_i64("rows", rows)?, to_i64("cols", cols)?, &mut codes, &mut scales)
        })?;
        Ok((to_usize(codes), to_usize(scales)))
    }
}

/// A block-quantized matrix that owns its codes and scales, from [`Context::quantize`].
#[derive(Debug, Clone, PartialEq)]
pub struct Quantized {
    /// The codes, laid out per `layout`.
    pub codes: Vec<u8>,
    /// The block scales (dequantization multipliers).
    pub scales: Vec<f32>,
    /// Rows of the original matrix.
    pub rows: usize,
    /// Columns of the original matrix.
    pub cols: usize,
    /// The layout it was quantized with.
    pub layout: BlockLayout,
}

impl Context {
    /// Block-quantizes a row-major `[rows, cols]` matrix of F32 or BF16
    /// elements into caller-owned codes and scales, whose lengths must be
    /// what [`QuantizeOptions::quantized_sizes`] gives.
    ///
    /// Fails with [`Status::NonFinite`](crate::Status::NonFinite) for NaN/Inf
    /// input unless `allow_non_finite` (the message gives the first bad index).
    pub fn quantize_into(
        &self,
        options: &QuantizeOptions,
        input: Elements<'_>, // [rows, cols]
        rows: usize,
        cols: usize,
        codes: &mut [u8],   // per options.layout
        scales: &mut [f32], // per options.layout
    ) -> Result<()> {
        check_matrix("Context::quantize", "input", input.len(), rows, cols)?;
        let c = options.c_fields();
        // SAFETY: input holds rows * cols elements of its dtype (checked);
        // codes and scales are passed with their lengths, which C checks.
        check(unsafe {
            sys::fp8rl_quantize(
                self.as_ptr(),
                &c,
                input.as_ptr(),
                input.dtype().as_raw(),
                to_i64("rows", rows)?,
                to_i64("cols", cols)?,
                codes.as_mut_ptr(),
                to_i64("codes", codes.len())?,
                scales.as_mut_ptr(),
                to_i64("scales", scales.len())?,
            )
        })
    }

    /// Block-quantizes a row-major `[rows, cols]` matrix into a new [`Quantized`].
    ///
    /// ```no_run
    /// use fp8rl::{Backend, BlockLayout, Context, Elements, QuantizeOptions};
    /// let context = Context::new(Backend::Cpu)?;
    /// let weights = vec![0.25f32; 256 * 128]; // [256, 128]
    /// let options = QuantizeOptions::new().layout(BlockLayout::Block128x128);
    /// let quantized = context.quantize(&options, Elements::F32(&weights), 256, 128)?;
    /// assert_eq!(quantized.scales.len(), 2);
    /// # Ok::<(), fp8rl::Error>(())
    /// ```
    pub fn quantize(
        &self,
        options: &QuantizeOptions,
        input: Elements<'_>,
        rows: usize,
        cols: usize,
    ) -> Result<Quantized> {
        let (code_count, scale_count) = options.quantized_sizes(rows, cols)?;
        let (mut codes, mut scales) = (vec![0u8; code_count], vec![0f32; scale_count]);
        self.quantize_into(options, input, rows, cols, &mut codes, &mut scales)?;
        Ok(Quantized { codes, scales, rows, cols, layout: options.layout })
    }

    /// Reconstructs the row-major F32 matrix `[rows, cols]` from codes and
    /// scales quantized with `options`, into `output` (rows * cols long).
    pub fn dequantize_into(
        &self,
        options: &QuantizeOptions,
        codes: &[u8],
        scales: &[f32],
        rows: usize,
        cols: usize,
        output: &mut [f32], // [rows, cols]
    ) -> Result<()> {
        let c = options.c_fields();
        // SAFETY: every array is passed with its length, which C checks.
        check(unsafe {
            sys::fp8rl_dequantize(
                self.as_ptr(),
                &c,
                codes.as_ptr(),
                to_i64("codes", codes.len())?,
                scales.as_ptr(),
                to_i64("scales", scales.len())?,
                to_i64("rows", rows)?,
                to_i64("cols", cols)?,
                output.as_mut_ptr(),
                to_i64("output", output.len())?,
            )
        })
    }

    /// Reconstructs the row-major F32 matrix of `quantized` (quantized with `options`).
    pub fn dequantize(&self, options: &QuantizeOptions, quantized: &Quantized) -> Result<Vec<f32>> {
        let count = quantized.rows.checked_mul(quantized.cols).ok_or_else(|| {
            Error::invalid_argument(format!("Context::dequantize: {} x {} overflows", quantized.rows, quantized.cols))
        })?;
        let mut output = vec![0f32; count];
        self.dequantize_into(
            options,
            &quantized.codes,
            &quantized.scales,
            quantized.rows,
            quantized.cols,
            &mut output,
        )?;
        Ok(output)
    }
}

/// Checks that a matrix slice C reads without a count holds rows * cols elements.
pub(crate) fn check_matrix(function: &str, name: &str, len: usize, rows: usize, cols: usize) -> Result<()> {
    if rows.checked_mul(cols) == Some(len) {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{function}: {name} has {len} elements, not {rows} x {cols}")))
    }
}
