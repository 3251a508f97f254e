/**
 * @file fp8rl.h
 * @brief The fp8rl C API: FP8 end-to-end reinforcement learning for LLM policies.
 *
 * This umbrella header is the only header users include. Conventions:
 *  - Every function that can fail returns an ::fp8rl_status (0 = ::FP8RL_OK);
 *    results come back through out-parameters, and on failure
 *    fp8rl_last_error_message() describes what went wrong on this thread.
 *  - Out-parameters are written only on success.
 *  - Options structs start with a `struct_size` field and are filled with
 *    defaults by their `_init` function; fields are only ever appended.
 *  - Arrays cross the ABI as pointer + element count; the caller owns them.
 *  - Handles are opaque, created by `_create` and released by `_destroy`.
 *  - No function aborts, exits, or writes to stdout; diagnostics go to the
 *    context's log callback.
 *
 * A minimal session that quantizes a weight matrix to FP8:
 * @code
 * fp8rl_context_options options;
 * fp8rl_context_options_init(&options);
 * options.backend = FP8RL_BACKEND_CPU;
 * fp8rl_context* context = NULL;
 * if (fp8rl_context_create(&options, &context) != FP8RL_OK) {
 *   fprintf(stderr, "fp8rl: %s\n", fp8rl_last_error_message());
 *   return 1;
 * }
 * fp8rl_quantize_options quantize;
 * fp8rl_quantize_options_init(&quantize);
 * quantize.layout = FP8RL_LAYOUT_BLOCK_128X128;
 * int64_t code_count = 0, scale_count = 0;
 * fp8rl_quantized_sizes(&quantize, rows, cols, &code_count, &scale_count);
 * // ... allocate codes[code_count] and scales[scale_count], then:
 * fp8rl_quantize(context, &quantize, weights, FP8RL_DTYPE_F32, rows, cols,
 *                codes, code_count, scales, scale_count);
 * fp8rl_context_destroy(context);
 * @endcode
 */
#ifndef FP8RL_FP8RL_H
#define FP8RL_FP8RL_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define FP8RL_API __declspec(dllexport)
#else
/** Marks a function exported from libfp8rl (everything else is hidden). */
#define FP8RL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup version Versions
 *  Compile-time and run-time versions, so a binding can check what it loaded.
 *  @{ */

/** Major version: changes break the ABI; it is the SONAME's number. */
#define FP8RL_VERSION_MAJOR 0
/** Minor version: additions that keep the ABI. */
#define FP8RL_VERSION_MINOR 1
/** Patch version: fixes only. */
#define FP8RL_VERSION_PATCH 0
/** The version as one number: major * 10000 + minor * 100 + patch. */
#define FP8RL_VERSION (FP8RL_VERSION_MAJOR * 10000 + FP8RL_VERSION_MINOR * 100 + FP8RL_VERSION_PATCH)

/**
 * @brief The version of the loaded library, encoded like ::FP8RL_VERSION.
 *
 * Compare with ::FP8RL_VERSION to detect a header/library mismatch.
 * Thread-safe; never fails.
 * @return The encoded version.
 */
FP8RL_API uint32_t fp8rl_version(void);

/**
 * @brief The version of the loaded library as "major.minor.patch".
 * @return A static string; never NULL. Thread-safe.
 */
FP8RL_API const char* fp8rl_version_string(void);

/** @} */

/** @defgroup errors Status codes and errors
 *  @{ */

/** Result of every fallible function. Values are stable; new codes are only appended. */
typedef enum fp8rl_status {
  FP8RL_OK = 0,                         /**< Success. */
  FP8RL_ERROR_INVALID_ARGUMENT = 1,     /**< NULL pointer, bad size, out-of-range value. */
  FP8RL_ERROR_OUT_OF_MEMORY = 2,        /**< Host or device allocation failed. */
  FP8RL_ERROR_BACKEND_UNAVAILABLE = 3,  /**< The requested backend is not built or has no device. */
  FP8RL_ERROR_NON_FINITE = 4,           /**< NaN or Inf where finite values are required. */
  FP8RL_ERROR_IO = 5,                   /**< A file could not be read or written. */
  FP8RL_ERROR_CORRUPT_DATA = 6,         /**< A file or buffer is malformed. */
  FP8RL_ERROR_VERSION_MISMATCH = 7,     /**< An options struct is from an incompatible header. */
  FP8RL_ERROR_UNSUPPORTED = 8,          /**< Valid request this build or backend does not support. */
  FP8RL_ERROR_CUDA = 9,                 /**< A CUDA or cuBLASLt call failed. */
  FP8RL_ERROR_INTERNAL = 10,            /**< A bug in fp8rl: please report it. */
  FP8RL_STATUS_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_status;

/**
 * @brief A short constant name for a status, e.g. "FP8RL_ERROR_INVALID_ARGUMENT".
 * @param status Any value; unknown values give "FP8RL_STATUS_UNKNOWN".
 * @return A static string; never NULL. Thread-safe.
 */
FP8RL_API const char* fp8rl_status_name(fp8rl_status status);

/**
 * @brief The message of the last failed call on the calling thread.
 *
 * Each thread has its own message, so concurrent callers do not see each
 * other's errors. A successful call does not clear it.
 * @return A string owned by the library, valid until the next fp8rl call on
 *         this thread; "" if no call has failed on this thread. Never NULL.
 */
FP8RL_API const char* fp8rl_last_error_message(void);

/** @} */

/** @defgroup context Contexts, backends and logging
 *  @{ */

/** Where computations run. */
typedef enum fp8rl_backend {
  FP8RL_BACKEND_AUTO = 0,                /**< CUDA if built and a device is present, else CPU. */
  FP8RL_BACKEND_CPU = 1,                 /**< Multi-threaded SIMD CPU backend (always available). */
  FP8RL_BACKEND_CUDA = 2,                /**< NVIDIA GPU backend (sm_90). */
  FP8RL_BACKEND_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_backend;

/** Severity of a log message. */
typedef enum fp8rl_log_level {
  FP8RL_LOG_DEBUG = 0,               /**< Detail for developers. */
  FP8RL_LOG_INFO = 1,                /**< Normal progress. */
  FP8RL_LOG_WARNING = 2,             /**< Something unexpected that was handled. */
  FP8RL_LOG_ERROR = 3,               /**< A failure, also reported through a status. */
  FP8RL_LOG_OFF = 4,                 /**< As a threshold: log nothing. */
  FP8RL_LOG_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_log_level;

/**
 * @brief Receives the library's log messages.
 * @param level Severity of the message.
 * @param message NUL-terminated text, valid only during the call.
 * @param user_data The pointer given in ::fp8rl_context_options.
 *
 * Called on the thread that made the fp8rl call; it must not call back into
 * the same context.
 */
typedef void (*fp8rl_log_callback)(fp8rl_log_level level, const char* message, void* user_data);

/** Opaque handle: a backend (device, threads, memory) plus logging. */
typedef struct fp8rl_context fp8rl_context;

/** Options for fp8rl_context_create(). Fill with fp8rl_context_options_init(). */
typedef struct fp8rl_context_options {
  uint32_t struct_size;            /**< sizeof(fp8rl_context_options), set by the init function. */
  fp8rl_backend backend;           /**< Default ::FP8RL_BACKEND_AUTO. */
  int32_t num_threads;             /**< CPU worker threads; 0 (default) = all hardware threads. */
  int32_t cuda_device;             /**< CUDA device ordinal; default 0. */
  fp8rl_log_level log_level;       /**< Messages below this level are dropped; default ::FP8RL_LOG_WARNING. */
  fp8rl_log_callback log_callback; /**< NULL (default) discards all messages. */
  void* log_user_data;             /**< Passed to log_callback unchanged. */
} fp8rl_context_options;

/**
 * @brief Fills @p options with defaults.
 * @param options Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p options is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_options_init(fp8rl_context_options* options);

/**
 * @brief Creates a context on the backend the options ask for.
 * @param options Filled by fp8rl_context_options_init(), then adjusted; read only during the call.
 * @param[out] out_context Receives the new context; the caller owns it and
 *             releases it with fp8rl_context_destroy().
 * @retval FP8RL_ERROR_BACKEND_UNAVAILABLE if CUDA was asked for and is not built or has no device.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if options->struct_size is not one this library knows.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or out-of-range fields.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_create(const fp8rl_context_options* options, fp8rl_context** out_context);

/**
 * @brief Destroys a context and frees everything it owns.
 * @param context The context, or NULL (then nothing happens).
 * Not thread-safe with other calls on the same context.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_destroy(fp8rl_context* context);

/**
 * @brief The backend a context actually runs on (never ::FP8RL_BACKEND_AUTO).
 * @param context A valid context.
 * @param[out] out_backend Receives the backend.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_get_backend(const fp8rl_context* context, fp8rl_backend* out_backend);

/**
 * @brief The number of CPU worker threads of a context.
 * @param context A valid context.
 * @param[out] out_num_threads Receives the thread count (>= 1).
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_get_num_threads(const fp8rl_context* context, int32_t* out_num_threads);

/**
 * @brief A human-readable description of the context's device, e.g. "CPU (AVX-512, 2 threads)".
 * @param context A valid context.
 * @param[out] out_description Receives a string owned by the context, valid until it is destroyed.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_get_description(const fp8rl_context* context, const char** out_description);

/** Build features reported by fp8rl_build_features(). */
typedef enum fp8rl_feature {
  FP8RL_FEATURE_CUDA = 1,                /**< The CUDA backend is compiled in. */
  FP8RL_FEATURE_AVX2 = 2,                /**< This CPU runs the AVX2 kernels. */
  FP8RL_FEATURE_AVX512 = 4,              /**< This CPU runs the AVX-512 kernels. */
  FP8RL_FEATURE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_feature;

/**
 * @brief Which optional features this build and this machine offer.
 * @param[out] out_features Receives a bitwise OR of ::fp8rl_feature values.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_build_features(uint32_t* out_features);

/** @} */

/** @defgroup numerics FP8 and BF16 conversion and block quantization
 *  @{ */

/** Element types. */
typedef enum fp8rl_dtype {
  FP8RL_DTYPE_F32 = 0,                 /**< IEEE binary32. */
  FP8RL_DTYPE_BF16 = 1,                /**< bfloat16, stored as uint16_t bits. */
  FP8RL_DTYPE_E4M3 = 2,                /**< OCP FP8 E4M3 (e4m3fn: max 448, no Inf), stored as uint8_t. */
  FP8RL_DTYPE_E5M2 = 3,                /**< OCP FP8 E5M2 (max 57344, with Inf), stored as uint8_t. */
  FP8RL_DTYPE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_dtype;

/**
 * @brief Converts @p count elements between element types, rounding to nearest even.
 *
 * Supported: F32 to and from BF16, E4M3 and E5M2. No scaling is applied.
 * NaN stays NaN. On overflow into FP8, @p saturate != 0 clamps to the largest
 * finite value (Inf included, like CUDA's satfinite); @p saturate == 0 gives
 * NaN for E4M3 and Inf for E5M2 (what ml_dtypes does). F32 to BF16 overflows to Inf.
 * @param src Caller-owned input of @p count elements of @p src_dtype.
 * @param src_dtype Input element type.
 * @param dst Caller-owned output of @p count elements of @p dst_dtype; may not overlap @p src.
 * @param dst_dtype Output element type.
 * @param count Number of elements.
 * @param saturate Overflow behaviour for FP8 outputs (ignored otherwise).
 * @retval FP8RL_ERROR_UNSUPPORTED for pairs other than F32 <-> {BF16, E4M3, E5M2}.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_convert(const void* src, fp8rl_dtype src_dtype, void* dst, fp8rl_dtype dst_dtype,
                                     size_t count, int32_t saturate);

/** How a matrix [rows, cols] is cut into blocks that share one scale. */
typedef enum fp8rl_block_layout {
  /** 1x128 tiles along each row. Codes [rows, cols], scales [rows, ceil(cols/128)]. Activations, gradients. */
  FP8RL_LAYOUT_TILE_1X128 = 0,
  /** 1x128 tiles along each column, stored transposed. Codes [cols, rows], scales [cols, ceil(rows/128)]. For wgrad. */
  FP8RL_LAYOUT_TILE_1X128_TRANSPOSED = 1,
  /** 128x128 blocks. Codes [rows, cols], scales [ceil(rows/128), ceil(cols/128)]. Weights. */
  FP8RL_LAYOUT_BLOCK_128X128 = 2,
  FP8RL_LAYOUT_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_block_layout;

/** How block scales are represented. */
typedef enum fp8rl_scale_format {
  FP8RL_SCALE_FP32 = 0,                /**< scale = amax / fp8_max in FP32. */
  FP8RL_SCALE_POW2 = 1,                /**< The smallest power of two with amax <= fp8_max * scale. */
  FP8RL_SCALE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_scale_format;

/**
 * Options for fp8rl_quantize() and fp8rl_dequantize(). Fill with fp8rl_quantize_options_init().
 *
 * Scales are dequantization multipliers: value ~= decode(code) * scale, where
 * scale comes from the amax of the block's finite values. A block whose amax
 * is 0 gets scale 1. Scales are floored at 2^-126.
 */
typedef struct fp8rl_quantize_options {
  uint32_t struct_size;            /**< sizeof(fp8rl_quantize_options), set by the init function. */
  fp8rl_dtype format;              /**< ::FP8RL_DTYPE_E4M3 (default) or ::FP8RL_DTYPE_E5M2. */
  fp8rl_block_layout layout;       /**< Default ::FP8RL_LAYOUT_TILE_1X128. */
  fp8rl_scale_format scale_format; /**< Default ::FP8RL_SCALE_FP32. */
  int32_t saturate;                /**< Non-zero (default): out-of-range values clamp to the FP8 max. */
  int32_t allow_non_finite;        /**< 0 (default): NaN/Inf input fails with ::FP8RL_ERROR_NON_FINITE.
                                        Non-zero: NaN encodes as NaN, +-Inf as the overflow code, and
                                        neither affects its block's scale. */
} fp8rl_quantize_options;

/**
 * @brief Fills @p options with defaults (E4M3, 1x128 tiles, FP32 scales, saturating).
 * @param options Caller-owned struct to fill.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_quantize_options_init(fp8rl_quantize_options* options);

/**
 * @brief How many codes and scales a quantized [rows, cols] matrix takes.
 * @param options Quantization options (layout is what matters).
 * @param rows Rows of the unquantized matrix (> 0).
 * @param cols Columns of the unquantized matrix (> 0).
 * @param[out] out_code_count Receives the number of uint8_t codes (rows * cols).
 * @param[out] out_scale_count Receives the number of float scales.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_quantized_sizes(const fp8rl_quantize_options* options, int64_t rows, int64_t cols,
                                             int64_t* out_code_count, int64_t* out_scale_count);

/**
 * @brief Block-quantizes a row-major matrix [rows, cols] to FP8 codes and FP32 scales.
 * @param context A valid context; the work runs on its backend.
 * @param options Format, layout, scale format, overflow and non-finite policy.
 * @param input Caller-owned row-major [rows, cols] of @p input_dtype (F32 or BF16).
 * @param input_dtype ::FP8RL_DTYPE_F32 or ::FP8RL_DTYPE_BF16.
 * @param rows Rows (> 0).
 * @param cols Columns (> 0).
 * @param[out] codes Caller-owned, @p code_count uint8_t, laid out per options->layout.
 * @param code_count Capacity of @p codes; must equal what fp8rl_quantized_sizes() gives.
 * @param[out] scales Caller-owned, @p scale_count floats.
 * @param scale_count Capacity of @p scales; must equal what fp8rl_quantized_sizes() gives.
 * @retval FP8RL_ERROR_NON_FINITE if the input holds NaN/Inf and options->allow_non_finite is 0
 *         (the message gives the first bad index); nothing is written then.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_quantize(fp8rl_context* context, const fp8rl_quantize_options* options, const void* input,
                                      fp8rl_dtype input_dtype, int64_t rows, int64_t cols, uint8_t* codes,
                                      int64_t code_count, float* scales, int64_t scale_count);

/**
 * @brief Reconstructs the row-major F32 matrix [rows, cols] from codes and scales.
 * @param context A valid context.
 * @param options The options the data was quantized with (format and layout matter).
 * @param codes Caller-owned codes, @p code_count of them.
 * @param code_count Number of codes; must match fp8rl_quantized_sizes().
 * @param scales Caller-owned scales, @p scale_count of them.
 * @param scale_count Number of scales; must match fp8rl_quantized_sizes().
 * @param rows Rows of the original matrix.
 * @param cols Columns of the original matrix.
 * @param[out] output Caller-owned row-major [rows, cols] floats.
 * @param output_count Capacity of @p output; must equal rows * cols.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_dequantize(fp8rl_context* context, const fp8rl_quantize_options* options,
                                        const uint8_t* codes, int64_t code_count, const float* scales,
                                        int64_t scale_count, int64_t rows, int64_t cols, float* output,
                                        int64_t output_count);

/** @} */

/** @defgroup gemm Matrix products
 *  @{ */

/**
 * A block-quantized E4M3 matrix of logical shape [rows, cols] (a view: the
 * caller owns the arrays), as fp8rl_quantize() produces it.
 */
typedef struct fp8rl_fp8_matrix {
  const uint8_t* codes;      /**< Codes laid out per @c layout. */
  int64_t code_count;        /**< Number of codes (rows * cols). */
  const float* scales;       /**< Scales laid out per @c layout. */
  int64_t scale_count;       /**< Number of scales. */
  int64_t rows;              /**< Logical rows. */
  int64_t cols;              /**< Logical columns (the reduction dimension K for a GEMM operand). */
  fp8rl_block_layout layout; /**< Block layout of codes and scales. */
} fp8rl_fp8_matrix;

/**
 * @brief Block-scaled FP8 GEMM: C[M,N] = A[M,K] * W[N,K]^T with FP32 accumulation.
 *
 * Batch-invariant and deterministic: each element of C is bitwise the same
 * whatever M, whatever rows it is batched with, and whatever the thread count.
 * @param context A valid context.
 * @param a E4M3 activations [M, K] in ::FP8RL_LAYOUT_TILE_1X128.
 * @param w E4M3 weights [N, K] in ::FP8RL_LAYOUT_BLOCK_128X128 (or ::FP8RL_LAYOUT_TILE_1X128).
 * @param[out] c Caller-owned row-major [M, N] of @p c_dtype.
 * @param c_dtype ::FP8RL_DTYPE_F32 or ::FP8RL_DTYPE_BF16.
 * @param c_count Capacity of @p c in elements; must equal M * N.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_gemm_fp8(fp8rl_context* context, const fp8rl_fp8_matrix* a, const fp8rl_fp8_matrix* w,
                                      void* c, fp8rl_dtype c_dtype, int64_t c_count);

/**
 * @brief BF16 GEMM: C[M,N] = A[M,K] * W[N,K]^T with FP32 accumulation; batch-invariant like fp8rl_gemm_fp8().
 * @param context A valid context.
 * @param a Caller-owned row-major [M, K] BF16 bits.
 * @param a_count Elements in @p a; must equal M * K.
 * @param w Caller-owned row-major [N, K] BF16 bits.
 * @param w_count Elements in @p w; must equal N * K.
 * @param m Rows of A and C (> 0).
 * @param n Rows of W, columns of C (> 0).
 * @param k The reduction dimension (> 0).
 * @param[out] c Caller-owned row-major [M, N] of @p c_dtype.
 * @param c_dtype ::FP8RL_DTYPE_F32 or ::FP8RL_DTYPE_BF16.
 * @param c_count Capacity of @p c in elements; must equal M * N.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_gemm_bf16(fp8rl_context* context, const uint16_t* a, int64_t a_count, const uint16_t* w,
                                       int64_t w_count, int64_t m, int64_t n, int64_t k, void* c, fp8rl_dtype c_dtype,
                                       int64_t c_count);

/** @} */

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // FP8RL_FP8RL_H
