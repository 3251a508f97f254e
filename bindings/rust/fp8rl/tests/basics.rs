//! Versions, statuses and errors, contexts and logging, numerics.

mod common;

use std::sync::{Arc, Mutex};

use common::{assert_from_binding, assert_from_library, cpu, expect_error};
use fp8rl::{
    build_features, convert, version, version_string, Backend, BlockLayout, Context, DType, Elements, ElementsMut,
    Error, Fp8Matrix, LogLevel, QuantizeOptions, ScaleFormat, Status, HEADER_VERSION,
};

#[test]
fn the_loaded_library_is_the_header_version() {
    assert_eq!(version(), HEADER_VERSION);
    let (major, minor, patch) = (HEADER_VERSION / 10000, HEADER_VERSION / 100 % 100, HEADER_VERSION % 100);
    assert_eq!(version_string(), format!("{major}.{minor}.{patch}"));
    let features = build_features().unwrap();
    assert_eq!(features.bits() & !7, 0, "only the three documented feature bits");
    assert!(!features.avx512() || features.avx2(), "AVX-512 machines run AVX2 too");
}

#[test]
fn statuses_have_their_c_names_and_errors_display_both() {
    let statuses = [
        (Status::Ok, 0, "FP8RL_OK"),
        (Status::InvalidArgument, 1, "FP8RL_ERROR_INVALID_ARGUMENT"),
        (Status::OutOfMemory, 2, "FP8RL_ERROR_OUT_OF_MEMORY"),
        (Status::BackendUnavailable, 3, "FP8RL_ERROR_BACKEND_UNAVAILABLE"),
        (Status::NonFinite, 4, "FP8RL_ERROR_NON_FINITE"),
        (Status::Io, 5, "FP8RL_ERROR_IO"),
        (Status::CorruptData, 6, "FP8RL_ERROR_CORRUPT_DATA"),
        (Status::VersionMismatch, 7, "FP8RL_ERROR_VERSION_MISMATCH"),
        (Status::Unsupported, 8, "FP8RL_ERROR_UNSUPPORTED"),
        (Status::Cuda, 9, "FP8RL_ERROR_CUDA"),
        (Status::Internal, 10, "FP8RL_ERROR_INTERNAL"),
        (Status::Distributed, 11, "FP8RL_ERROR_DISTRIBUTED"),
    ];
    for (status, raw, name) in statuses {
        assert_eq!(status.as_raw(), raw);
        assert_eq!(Status::from_raw(raw), status);
        assert_eq!(status.name(), name);
    }
    assert_eq!(Status::from_raw(1234), Status::Unknown(1234));
    assert_eq!(Status::Unknown(1234).name(), "FP8RL_STATUS_UNKNOWN");

    let error = Error { status: Status::Io, message: "fp8rl_policy_load: no such folder".into() };
    assert_eq!(error.to_string(), "fp8rl_policy_load: no such folder [FP8RL_ERROR_IO]");
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error); // a std error
    assert!(boxed.to_string().contains("FP8RL_ERROR_IO"));
}

#[test]
fn a_cpu_context_describes_itself() {
    let context = Context::builder().backend(Backend::Cpu).num_threads(1).build().unwrap();
    assert_eq!(context.backend().unwrap(), Backend::Cpu);
    assert_eq!(context.num_threads().unwrap(), 1);
    assert!(context.description().unwrap().contains("CPU"), "{}", context.description().unwrap());
    context.close().unwrap();

    let auto = Context::new(Backend::Auto).unwrap();
    assert_ne!(auto.backend().unwrap(), Backend::Auto);
    assert!(cpu().num_threads().unwrap() >= 1);
}

#[test]
fn bad_context_options_name_the_field() {
    let error = expect_error(Context::builder().num_threads(-1).build(), Status::InvalidArgument, "num_threads");
    assert_from_library(&error, "fp8rl_context_create");
    let error =
        expect_error(Context::builder().backend(Backend::Unknown(7)).build(), Status::InvalidArgument, "backend");
    assert_from_library(&error, "fp8rl_context_create");
    if !build_features().unwrap().cuda() {
        let error = expect_error(Context::new(Backend::Cuda), Status::BackendUnavailable, "CUDA");
        assert_from_library(&error, "fp8rl_context_create");
    }
}

#[test]
fn the_log_callback_receives_messages_at_or_above_its_level() {
    let messages = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&messages);
    let context = Context::builder()
        .backend(Backend::Cpu)
        .log_level(LogLevel::Info)
        .log_callback(move |level, message| sink.lock().unwrap().push((level, message.to_owned())))
        .build()
        .unwrap();
    {
        let messages = messages.lock().unwrap();
        assert!(messages.iter().all(|(level, _)| *level != LogLevel::Debug), "{messages:?}");
        assert_eq!(messages[0].0, LogLevel::Info, "{messages:?}");
        assert!(messages[0].1.contains("context created"), "{:?}", messages[0].1);
    }
    drop(context);
    assert_eq!(Arc::strong_count(&messages), 1, "the context released its closure");

    let quiet = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = Arc::clone(&quiet);
    let context = Context::builder()
        .backend(Backend::Cpu)
        .log_callback(move |_, message| sink.lock().unwrap().push(message.to_owned()))
        .build()
        .unwrap();
    assert!(quiet.lock().unwrap().is_empty(), "info is below the default warning level");
    drop(context);
}

#[test]
fn a_panicking_log_callback_does_not_unwind_into_c() {
    let context = Context::builder()
        .backend(Backend::Cpu)
        .log_level(LogLevel::Debug)
        .log_callback(|_, _| panic!("a careless logger"))
        .build();
    assert!(context.is_ok());
}

#[test]
fn conversion_rounds_and_saturates_like_the_header_says() {
    let mut codes = [0u8; 4];
    convert(Elements::F32(&[1.0, 500.0, -0.5, f32::NAN]), ElementsMut::E4m3(&mut codes), true).unwrap();
    assert_eq!(codes[..3], [0x38, 0x7e, 0xb0]);
    assert_eq!(codes[3] & 0x7f, 0x7f, "NaN stays NaN");
    convert(Elements::F32(&[500.0]), ElementsMut::E4m3(&mut codes[..1]), false).unwrap();
    assert_eq!(codes[0], 0x7f, "without saturation E4M3 overflows to NaN");

    let values = [1.0f32, -2.5, 3.140625, 1e-3];
    let mut bf16 = [0u16; 4];
    let mut back = [0f32; 4];
    convert(Elements::F32(&values), ElementsMut::Bf16(&mut bf16), false).unwrap();
    convert(Elements::Bf16(&bf16), ElementsMut::F32(&mut back), false).unwrap();
    assert_eq!(bf16[0], 0x3f80);
    for (value, back) in values.iter().zip(back) {
        assert!((value - back).abs() <= value.abs() / 256.0, "{value} -> {back}");
    }

    let error = expect_error(
        convert(Elements::F32(&values), ElementsMut::E5m2(&mut [0u8; 3]), true),
        Status::InvalidArgument,
        "src has 4 elements, dst 3",
    );
    assert_from_binding(&error, "convert");
    let error =
        expect_error(convert(Elements::Bf16(&bf16), ElementsMut::E4m3(&mut codes), true), Status::Unsupported, "");
    assert_from_library(&error, "fp8rl_convert");
}

/// A deterministic pseudo-random matrix with values in [-scale, scale).
fn matrix(rows: usize, cols: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..rows * cols)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            ((state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * scale
        })
        .collect()
}

#[test]
fn quantization_round_trips_within_fp8_precision() {
    let context = cpu();
    let (rows, cols) = (130, 200); // partial blocks on both edges
    let input = matrix(rows, cols, 1, 3.0);
    for layout in [BlockLayout::Tile1x128, BlockLayout::Tile1x128Transposed, BlockLayout::Block128x128] {
        for scale_format in [ScaleFormat::Fp32, ScaleFormat::Pow2] {
            let options = QuantizeOptions::new().layout(layout).scale_format(scale_format);
            let quantized = context.quantize(&options, Elements::F32(&input), rows, cols).unwrap();
            let (codes, scales) = options.quantized_sizes(rows, cols).unwrap();
            assert_eq!((quantized.codes.len(), quantized.scales.len()), (codes, scales));
            let expected_scales = match layout {
                BlockLayout::Tile1x128 => rows * cols.div_ceil(128),
                BlockLayout::Tile1x128Transposed => cols * rows.div_ceil(128),
                _ => rows.div_ceil(128) * cols.div_ceil(128),
            };
            assert_eq!(scales, expected_scales, "{layout:?}");
            let output = context.dequantize(&options, &quantized).unwrap();
            // E4M3 keeps 3 mantissa bits: within 2^-4 of each value, plus the
            // subnormal step of the block's scale for the smallest ones.
            let max_scale = quantized.scales.iter().copied().fold(0f32, f32::max);
            for (x, y) in input.iter().zip(&output) {
                assert!((x - y).abs() <= x.abs() / 16.0 + max_scale / 512.0, "{layout:?} {scale_format:?}: {x} -> {y}");
            }
        }
    }
}

#[test]
fn quantization_refuses_what_it_should() {
    let context = cpu();
    let options = QuantizeOptions::new();
    let mut input = matrix(2, 128, 2, 1.0);
    let error = expect_error(
        context.quantize(&options, Elements::F32(&input[..255]), 2, 128),
        Status::InvalidArgument,
        "input has 255 elements, not 2 x 128",
    );
    assert_from_binding(&error, "Context::quantize");
    let (mut codes, mut scales) = (vec![0u8; 255], vec![0f32; 2]);
    let error = context.quantize_into(&options, Elements::F32(&input), 2, 128, &mut codes, &mut scales).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
    assert_from_library(&error, "fp8rl_quantize");

    input[7] = f32::INFINITY;
    let error = expect_error(context.quantize(&options, Elements::F32(&input), 2, 128), Status::NonFinite, "7");
    assert_from_library(&error, "fp8rl_quantize");
    let quantized = context.quantize(&options.clone().allow_non_finite(true), Elements::F32(&input), 2, 128).unwrap();
    assert_eq!(quantized.codes[7] & 0x7f, 0x7e, "+Inf saturates to the overflow code");

    let error = options.quantized_sizes(0, 128).unwrap_err();
    assert_eq!(error.status, Status::InvalidArgument);
    let bad_format = QuantizeOptions::new().format(DType::Bf16);
    assert_eq!(
        context.quantize(&bad_format, Elements::F32(&input), 2, 128).unwrap_err().status,
        Status::InvalidArgument
    );
}

#[test]
fn gemms_agree_with_a_float64_reference() {
    let context = cpu();
    let (m, n, k) = (5, 8, 256);
    let a = matrix(m, k, 3, 1.0);
    let w = matrix(n, k, 4, 0.1);

    // FP8: against the product of the dequantized operands.
    let a_options = QuantizeOptions::new().layout(BlockLayout::Tile1x128);
    let w_options = QuantizeOptions::new().layout(BlockLayout::Block128x128);
    let a8 = context.quantize(&a_options, Elements::F32(&a), m, k).unwrap();
    let w8 = context.quantize(&w_options, Elements::F32(&w), n, k).unwrap();
    let (a_deq, w_deq) = (context.dequantize(&a_options, &a8).unwrap(), context.dequantize(&w_options, &w8).unwrap());
    let mut c = vec![0f32; m * n];
    context.gemm_fp8(&a8.as_matrix(), &w8.as_matrix(), ElementsMut::F32(&mut c)).unwrap();
    assert_close(&c, &reference(&a_deq, &w_deq, m, n, k), 1e-5);

    // The same product into BF16 rounds it.
    let mut c16 = vec![0u16; m * n];
    context.gemm_fp8(&a8.as_matrix(), &w8.as_matrix(), ElementsMut::Bf16(&mut c16)).unwrap();
    let mut c16_f32 = vec![0f32; m * n];
    convert(Elements::Bf16(&c16), ElementsMut::F32(&mut c16_f32), false).unwrap();
    assert_close(&c16_f32, &c, 1.0 / 128.0);

    // BF16: against the product of the rounded operands.
    let (mut a16, mut w16) = (vec![0u16; m * k], vec![0u16; n * k]);
    convert(Elements::F32(&a), ElementsMut::Bf16(&mut a16), false).unwrap();
    convert(Elements::F32(&w), ElementsMut::Bf16(&mut w16), false).unwrap();
    let (mut a_back, mut w_back) = (vec![0f32; m * k], vec![0f32; n * k]);
    convert(Elements::Bf16(&a16), ElementsMut::F32(&mut a_back), false).unwrap();
    convert(Elements::Bf16(&w16), ElementsMut::F32(&mut w_back), false).unwrap();
    context.gemm_bf16(&a16, &w16, m, n, k, ElementsMut::F32(&mut c)).unwrap();
    assert_close(&c, &reference(&a_back, &w_back, m, n, k), 1e-5);

    // Counts that do not match the shapes are the library's to refuse.
    let error = context.gemm_bf16(&a16[1..], &w16, m, n, k, ElementsMut::F32(&mut c)).unwrap_err();
    assert_from_library(&error, "fp8rl_gemm_bf16");
    let short = Fp8Matrix { codes: &a8.codes[1..], ..a8.as_matrix() };
    let error = context.gemm_fp8(&short, &w8.as_matrix(), ElementsMut::F32(&mut c)).unwrap_err();
    assert_from_library(&error, "fp8rl_gemm_fp8");
}

/// C = A * W^T in float64.
fn reference(a: &[f32], w: &[f32], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut c = vec![0f64; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|l| f64::from(a[i * k + l]) * f64::from(w[j * k + l])).sum();
        }
    }
    c
}

#[track_caller]
fn assert_close(got: &[f32], expected: &[impl Copy + Into<f64>], relative: f64) {
    let largest = expected.iter().map(|&e| e.into().abs()).fold(0.0, f64::max);
    for (g, &e) in got.iter().zip(expected) {
        let e: f64 = e.into();
        assert!((f64::from(*g) - e).abs() <= relative * largest, "{g} vs {e}");
    }
}
