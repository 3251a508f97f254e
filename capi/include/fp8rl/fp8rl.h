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
 *    Options of one concept that another reuses are embedded by value
 *    (fp8rl_trainer_options::importance): the embedded struct keeps its own
 *    `struct_size`, which the outer `_init` sets, and is read by the same
 *    rules. Its size is part of the outer struct's layout, so an embedded
 *    struct gains fields only in a release that may change layouts (a new
 *    major version, or a 0.x minor one).
 *  - Structs the library fills (metrics, reports) start with `struct_size`
 *    too: their `_init` function sets it and zeroes the rest, and the library
 *    writes only the fields that size covers.
 *  - Arrays cross the ABI as pointer + element count; the caller owns them.
 *  - Handles are opaque, created by `_create` and released by `_destroy`.
 *  - No function aborts, exits, or writes to stdout; diagnostics go to the
 *    context's log callback. Bad input (NULL, an empty path, a size out of
 *    range, an enum value outside its list, NaN) is
 *    ::FP8RL_ERROR_INVALID_ARGUMENT with a message that names the argument or
 *    field, and changes nothing (tests/capi/bad_input_table_test.cpp calls
 *    every function so).
 *  - Files are untrusted input. Loads read only regular files (symlinks to
 *    them are followed): a named pipe, device or folder in place of a file is
 *    ::FP8RL_ERROR_IO, refused before it is opened, so it never blocks. Files
 *    are read with pread, never memory-mapped: one rewritten or truncated
 *    during a load gives ::FP8RL_ERROR_IO or ::FP8RL_ERROR_CORRUPT_DATA, not
 *    a crash. A file's claims are checked against its size before anything
 *    is allocated for them (a config calling for more tensors or bytes than
 *    the files hold is ::FP8RL_ERROR_CORRUPT_DATA).
 *  - Limits: a model config has at most 1024 layers, a vocabulary of 2^24,
 *    hidden_size 2^16, intermediate_size 2^20, 1024 query and 1024 key/value
 *    heads, head_dim 1024 (even), 2^24 positions; config.json and the shard
 *    index at most 1 MiB and 64 MiB, a safetensors header at most 100 MiB.
 *    Beyond them: ::FP8RL_ERROR_INVALID_ARGUMENT for a config built in code,
 *    ::FP8RL_ERROR_CORRUPT_DATA for one read from a file.
 *  - Saves are atomic per file (a temporary, unique per call, renamed into
 *    place), never replace what is not a regular file (a device, a named pipe
 *    or a folder at the target path is ::FP8RL_ERROR_IO), and a model folder is locked (flock) exclusively while it is
 *    saved and shared while it is loaded, so concurrent saves into one
 *    folder leave one whole model and a load never mixes two saves. The
 *    temporaries a killed save leaves are removed by the next save there.
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

/**
 * @def FP8RL_API
 * Marks a function of the public API. Building libfp8rl, whose CMake target
 * defines FP8RL_BUILDING_LIBRARY, it exports the function from the DLL on
 * Windows; for users there it imports it. Elsewhere it gives the function
 * default visibility: the library is built with hidden visibility, so only
 * these functions leave it. libfp8rl is built as a shared library only, so
 * there is no static-library variant of the macro.
 */
#if defined(_WIN32) || defined(__CYGWIN__)
#if defined(FP8RL_BUILDING_LIBRARY)
#define FP8RL_API __declspec(dllexport)
#else
#define FP8RL_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) || defined(__clang__)
#define FP8RL_API __attribute__((visibility("default")))
#else
#define FP8RL_API
#endif

/**
 * @def FP8RL_ENUM_INT32
 * Gives every public enum the fixed underlying type int32_t where the language
 * can say so (C++11 and C23). Every enum is 32 bits wide in any case (its
 * FORCE_32BIT member), so C before C23 sees the same layout. It matters in
 * C++: an enum without a fixed type may not hold a value outside its
 * enumerators' range, so reading the -1 a C caller passes would be undefined
 * behaviour before the library could refuse it. With int32_t, every value a C
 * caller can pass is one the enum holds, and the library range-checks it.
 */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 202311L)
#define FP8RL_ENUM_INT32 : int32_t
#else
#define FP8RL_ENUM_INT32
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
#define FP8RL_VERSION_MINOR 2
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
typedef enum fp8rl_status FP8RL_ENUM_INT32 {
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
  FP8RL_ERROR_DISTRIBUTED = 11,         /**< A collective failed: a peer died, timed out or called out of order. */
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

/* The element types and scale formats belong to the numerics section (@ref numerics); they are
 * declared here, before the sections that use them (fp8rl_recipe::scale_format, fp8rl_policy_save()). */

/** Element types. @ingroup numerics */
typedef enum fp8rl_dtype FP8RL_ENUM_INT32 {
  FP8RL_DTYPE_F32 = 0,                 /**< IEEE binary32. */
  FP8RL_DTYPE_BF16 = 1,                /**< bfloat16, stored as uint16_t bits. */
  FP8RL_DTYPE_E4M3 = 2,                /**< OCP FP8 E4M3 (e4m3fn: max 448, no Inf), stored as uint8_t. */
  FP8RL_DTYPE_E5M2 = 3,                /**< OCP FP8 E5M2 (max 57344, with Inf), stored as uint8_t. */
  FP8RL_DTYPE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_dtype;

/** How block scales are represented. @ingroup numerics */
typedef enum fp8rl_scale_format FP8RL_ENUM_INT32 {
  FP8RL_SCALE_FP32 = 0,                /**< scale = amax / fp8_max in FP32. */
  FP8RL_SCALE_POW2 = 1,                /**< The smallest power of two with amax <= fp8_max * scale. */
  FP8RL_SCALE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_scale_format;

/** @defgroup context Contexts, backends and logging
 *  @{ */

/** Where computations run. */
typedef enum fp8rl_backend FP8RL_ENUM_INT32 {
  FP8RL_BACKEND_AUTO = 0,                /**< CUDA if built and a device is present, else CPU. */
  FP8RL_BACKEND_CPU = 1,                 /**< Multi-threaded SIMD CPU backend (always available). */
  FP8RL_BACKEND_CUDA = 2,                /**< NVIDIA GPU backend (sm_90). */
  FP8RL_BACKEND_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_backend;

/** Severity of a log message. */
typedef enum fp8rl_log_level FP8RL_ENUM_INT32 {
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

/** Opaque handle: a group of processes (ranks) that train one policy together; see @ref distributed. */
typedef struct fp8rl_communicator fp8rl_communicator;

/** Options for fp8rl_context_create(). Fill with fp8rl_context_options_init(). */
typedef struct fp8rl_context_options {
  uint32_t struct_size;            /**< sizeof(fp8rl_context_options), set by the init function. */
  fp8rl_backend backend;           /**< Default ::FP8RL_BACKEND_AUTO. */
  int32_t num_threads;             /**< CPU worker threads; 0 (default) = all hardware threads. */
  int32_t cuda_device;             /**< CUDA device ordinal; default 0. */
  fp8rl_log_level log_level;       /**< Messages below this level are dropped; default ::FP8RL_LOG_WARNING. */
  fp8rl_log_callback log_callback; /**< NULL (default) discards all messages. */
  void* log_user_data;             /**< Passed to log_callback unchanged. */
  /** The ranks this process trains with (data parallelism); NULL (default): a
   *  single process. The context keeps its own reference: the caller may
   *  destroy its handle once the context is created. */
  fp8rl_communicator* communicator;
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
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or out-of-range fields, or an
 *         NCCL communicator of another CUDA device than the context's.
 * @retval FP8RL_ERROR_UNSUPPORTED for a communicator over GPU memory (NCCL) on the CPU backend.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_create(const fp8rl_context_options* options, fp8rl_context** out_context);

/**
 * @brief Destroys a context and frees everything it owns.
 *
 * A context must outlive its policies: while any policy created on it is
 * alive, this fails and the context stays valid (destroy the policies first).
 * Rollouts do not depend on the context.
 * @param context The context, or NULL (then nothing happens).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if policies created on the context are
 *         still alive ("N policies still alive"); nothing is freed then.
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

/**
 * @brief This process's rank in the context's communicator (0 without one).
 * @param context A valid context.
 * @param[out] out_rank Receives the rank, in [0, world size).
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_get_rank(const fp8rl_context* context, int32_t* out_rank);

/**
 * @brief The number of ranks in the context's communicator (1 without one).
 * @param context A valid context.
 * @param[out] out_world_size Receives the world size (>= 1).
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_context_get_world_size(const fp8rl_context* context, int32_t* out_world_size);

/** @} */

/** @defgroup distributed Communicators for data parallelism
 *
 * N processes (ranks) train one policy together: each generates and trains
 * on its own rollouts, gradients are summed over the ranks, each rank updates
 * its own slice of the optimizer state, and the updated weights are gathered
 * so that every rank holds bitwise the same compute weights and scales. A
 * communicator carries the collectives over a transport the host chose (MPI,
 * NCCL, or its own); the library has no transport of its own. Three kinds:
 *  - MPI over host memory, from a communicator the host already has:
 *    fp8rl_mpi_communicator_create() in the companion library libfp8rl_mpi
 *    (header fp8rl/fp8rl_mpi.h), so that libfp8rl itself loads without MPI;
 *  - NCCL over GPU memory: fp8rl_nccl_unique_id() on one rank, the 128 bytes
 *    sent to the others by the host's own means, then
 *    fp8rl_communicator_create_nccl() on every rank;
 *  - the host's own collectives (torch.distributed, Ray, a simulator's
 *    transport): fp8rl_communicator_create_from_callbacks().
 * A communicator is given to fp8rl_context_create() through
 * ::fp8rl_context_options::communicator. Every rank must make the same
 * training calls in the same order (the collectives inside them must match).
 *  @{ */

/** Element types of the buffers handed to ::fp8rl_collective_callbacks. */
typedef enum fp8rl_element_type FP8RL_ENUM_INT32 {
  FP8RL_ELEMENT_F32 = 0,                      /**< float */
  FP8RL_ELEMENT_F64 = 1,                      /**< double */
  FP8RL_ELEMENT_I64 = 2,                      /**< int64_t */
  FP8RL_ELEMENT_U8 = 3,                       /**< bytes (gathers and broadcasts only, never summed) */
  FP8RL_ELEMENT_TYPE_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_element_type;

/** @brief ::fp8rl_collective_callbacks::all_reduce_sum: data[count] = its element-wise sum over the ranks. */
typedef int (*fp8rl_all_reduce_sum_callback)(void* data, int64_t count, fp8rl_element_type element_type, void* user_data);
/** @brief ::fp8rl_collective_callbacks::reduce_scatter_sum and ::fp8rl_collective_callbacks::all_gather:
 *  data holds counts[world_size] elements, rank r's part after those of ranks 0..r-1. */
typedef int (*fp8rl_parts_callback)(void* data, const int64_t* counts, fp8rl_element_type element_type, void* user_data);
/** @brief ::fp8rl_collective_callbacks::broadcast: data[count] = root's. */
typedef int (*fp8rl_broadcast_callback)(void* data, int64_t count, fp8rl_element_type element_type, int32_t root,
                                        void* user_data);
/** @brief ::fp8rl_collective_callbacks::barrier: returns when every rank has called it. */
typedef int (*fp8rl_barrier_callback)(void* user_data);
/** @brief ::fp8rl_collective_callbacks::error_message: why the last failing call failed. */
typedef const char* (*fp8rl_error_message_callback)(void* user_data);
/** @brief ::fp8rl_collective_callbacks::destroy: frees user_data. */
typedef void (*fp8rl_destroy_callback)(void* user_data);

/**
 * @brief Collectives the host implements over host memory (all in place).
 *
 * Each function returns 0 on success and any other value on failure (the
 * training call then fails with ::FP8RL_ERROR_DISTRIBUTED, naming the
 * collective, the rank and error_message() when given). The varying-count
 * collectives take counts[world_size] in elements; rank r's part of data
 * starts at element counts[0] + ... + counts[r-1]. Called on the thread that
 * makes the training call; user_data is passed back unchanged.
 */
typedef struct fp8rl_collective_callbacks {
  uint32_t struct_size; /**< sizeof(fp8rl_collective_callbacks). */
  int32_t rank;         /**< This process's rank, in [0, world_size). */
  int32_t world_size;   /**< Number of ranks, >= 1. */
  /** Required: data[count] = its element-wise sum over the ranks (type F32, F64 or I64). */
  fp8rl_all_reduce_sum_callback all_reduce_sum;
  /** Optional: rank r's part of data = that part's sum over the ranks; the
   *  rest is then unspecified. NULL: the library uses all_reduce_sum. */
  fp8rl_parts_callback reduce_scatter_sum;
  /** Required: every rank receives every rank's part of data. */
  fp8rl_parts_callback all_gather;
  /** Required: data[count] = root's. */
  fp8rl_broadcast_callback broadcast;
  /** Optional: returns when every rank has called it. NULL: a one-value all_reduce_sum. */
  fp8rl_barrier_callback barrier;
  /** Optional: why the last failing call failed; the text is copied at once. */
  fp8rl_error_message_callback error_message;
  /** Optional: called once when the last reference to the communicator goes
   *  (the handle and every context using it destroyed), to free user_data. */
  fp8rl_destroy_callback destroy;
  /** Optional: a short name for messages and descriptions, e.g. "torch.distributed"; copied. */
  const char* name;
  void* user_data; /**< Passed to every callback. */
} fp8rl_collective_callbacks;

/**
 * @brief Creates a communicator over the host's own collectives.
 * @param callbacks Read during the call (the pointers and user_data are kept).
 *        On failure nothing is kept and destroy() is not called: user_data stays the caller's.
 * @param[out] out_communicator Receives the new communicator; the caller
 *             releases it with fp8rl_communicator_destroy().
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL required callback, a rank
 *         outside [0, world_size) or world_size < 1.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for an unknown struct_size.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_communicator_create_from_callbacks(const fp8rl_collective_callbacks* callbacks,
                                                                fp8rl_communicator** out_communicator);

/**
 * @brief Writes a new NCCL unique id: call it on one rank and hand the bytes to all.
 * @param[out] out_id 128 caller-owned bytes.
 * @retval FP8RL_ERROR_UNSUPPORTED if this build has no CUDA backend.
 * @retval FP8RL_ERROR_BACKEND_UNAVAILABLE if the NCCL library (libnccl.so.2) cannot be loaded.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_nccl_unique_id(uint8_t* out_id);

/**
 * @brief Creates an NCCL communicator over GPU memory; every rank calls it with the same id.
 *
 * Blocks until all world_size ranks have joined. The context given this
 * communicator must run on the CUDA backend on the same device. A
 * collective that does not complete within timeout_seconds (a dead or
 * out-of-order peer) is aborted and fails with ::FP8RL_ERROR_DISTRIBUTED.
 * @param id The 128 bytes fp8rl_nccl_unique_id() wrote on one rank.
 * @param rank This process's rank, in [0, world_size).
 * @param world_size Number of ranks, >= 1.
 * @param cuda_device The CUDA device ordinal this rank uses.
 * @param timeout_seconds > 0: how long a collective may wait for its peers.
 * @param[out] out_communicator Receives the new communicator; release it with fp8rl_communicator_destroy().
 * @retval FP8RL_ERROR_UNSUPPORTED if this build has no CUDA backend.
 * @retval FP8RL_ERROR_BACKEND_UNAVAILABLE if NCCL cannot be loaded or the device does not exist.
 * @retval FP8RL_ERROR_DISTRIBUTED if NCCL fails to set up the group.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_communicator_create_nccl(const uint8_t* id, int32_t rank, int32_t world_size,
                                                      int32_t cuda_device, double timeout_seconds,
                                                      fp8rl_communicator** out_communicator);

/**
 * @brief Releases the caller's reference; contexts created with the communicator keep theirs.
 * @param communicator The communicator, or NULL (then nothing happens).
 * Not thread-safe with other calls on the same communicator.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_communicator_destroy(fp8rl_communicator* communicator);

/**
 * @brief A communicator's rank and world size.
 * @param communicator A valid communicator.
 * @param[out] out_rank Receives the rank (may be NULL).
 * @param[out] out_world_size Receives the world size (may be NULL).
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_communicator_get_rank(const fp8rl_communicator* communicator, int32_t* out_rank,
                                                   int32_t* out_world_size);

/**
 * @brief Sets this thread's last error and returns @p status: for companion
 *        libraries (libfp8rl_mpi) and bindings that report through fp8rl's error model.
 * @param status The status to report; ::FP8RL_OK clears nothing and returns OK.
 * @param message NUL-terminated text, copied; NULL reads as an empty message.
 * Thread-safe.
 * @return @p status.
 */
FP8RL_API fp8rl_status fp8rl_report_error(fp8rl_status status, const char* message);

/** @} */

/** @addtogroup context
 *  @{ */

/** Build features reported by fp8rl_build_features(). */
typedef enum fp8rl_feature FP8RL_ENUM_INT32 {
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

/** @defgroup models Model configurations
 *  The architecture of a policy, as a Hugging Face `config.json` describes it.
 *  @{ */

/** The supported decoder-only transformer families. */
typedef enum fp8rl_model_family FP8RL_ENUM_INT32 {
  FP8RL_MODEL_FAMILY_LLAMA = 0,               /**< Llama 2/3.x, SmolLM2 ("llama"). */
  FP8RL_MODEL_FAMILY_QWEN2 = 1,               /**< Qwen2/2.5: bias on the q/k/v projections. */
  FP8RL_MODEL_FAMILY_QWEN3 = 2,               /**< Qwen3: RMSNorm over each head of q and k (qk_norm). */
  FP8RL_MODEL_FAMILY_QWEN3_MOE = 3,           /**< Qwen3-MoE ("qwen3_moe"): Qwen3 attention, sparse layers
                                                   with a router and experts (the num_experts fields). */
  FP8RL_MODEL_FAMILY_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_model_family;

/** RoPE frequency scaling. */
typedef enum fp8rl_rope_scaling FP8RL_ENUM_INT32 {
  FP8RL_ROPE_SCALING_NONE = 0,                /**< Plain RoPE. */
  FP8RL_ROPE_SCALING_LLAMA3 = 1,              /**< Llama 3.1/3.2 frequency-dependent interpolation. */
  FP8RL_ROPE_SCALING_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_rope_scaling;

/** Capacity of fp8rl_model_config::eos_token_ids. */
#define FP8RL_MAX_EOS_TOKEN_IDS 8

/** Capacity of fp8rl_model_config::mlp_only_layers. */
#define FP8RL_MAX_MLP_ONLY_LAYERS 64

/**
 * The architecture of a model. Fill with fp8rl_model_config_init(), then set
 * the sizes. The fields mirror the keys of a Hugging Face `config.json`.
 */
typedef struct fp8rl_model_config {
  uint32_t struct_size;            /**< sizeof(fp8rl_model_config), set by the init function. */
  fp8rl_model_family family;       /**< Default ::FP8RL_MODEL_FAMILY_LLAMA. */
  int64_t vocab_size;              /**< Vocabulary size (> 0). */
  int64_t hidden_size;             /**< Model width (> 0). */
  int64_t num_layers;              /**< Transformer blocks ("num_hidden_layers", > 0). */
  int64_t num_attention_heads;     /**< Query heads (> 0). */
  int64_t num_key_value_heads;     /**< Key/value heads (> 0, divides num_attention_heads). */
  int64_t head_dim;                /**< Per-head width; 0 (default) = hidden_size / num_attention_heads,
                                        which must then divide exactly. */
  int64_t intermediate_size;       /**< SwiGLU width (> 0). */
  int64_t max_position_embeddings; /**< Positions the model supports (> 0); bounds prompt lengths. */
  double rms_norm_eps;             /**< RMSNorm epsilon; default 1e-5. */
  double rope_theta;               /**< RoPE base; default 10000. */
  fp8rl_rope_scaling rope_scaling; /**< Default ::FP8RL_ROPE_SCALING_NONE. */
  double rope_factor;              /**< Llama-3 scaling: the factor long wavelengths are divided by (default 1). */
  double rope_low_freq_factor;     /**< Llama-3 scaling: low_freq_factor (default 1). */
  double rope_high_freq_factor;    /**< Llama-3 scaling: high_freq_factor (default 4; must exceed the low one). */
  /** Llama-3 scaling: the context length of pre-training (default 0). */
  int64_t rope_original_max_position_embeddings;
  int32_t tie_word_embeddings; /**< Non-zero: the LM head shares the embedding matrix. */
  int32_t attention_bias;      /**< Non-zero: bias on q/k/v (and o, except for Qwen2); Qwen2 requires it. */
  int32_t qk_norm;             /**< Non-zero: q/k head RMSNorm; required by Qwen3, refused by the others. */
  int64_t bos_token_id;        /**< Beginning-of-sequence token, or -1 (default) for none. */
  /** End-of-sequence tokens; the first num_eos_token_ids of them count. */
  int64_t eos_token_ids[FP8RL_MAX_EOS_TOKEN_IDS];
  int32_t num_eos_token_ids; /**< 0 (default) to ::FP8RL_MAX_EOS_TOKEN_IDS. */
  /** Mixture-of-Experts (::FP8RL_MODEL_FAMILY_QWEN3_MOE only; 0 for the other families): the
      experts of a sparse layer, each a SwiGLU MLP of width moe_intermediate_size (default 0). */
  int64_t num_experts;
  int64_t num_experts_per_tok;   /**< Experts each token goes to, in [1, num_experts] (default 0). */
  int64_t moe_intermediate_size; /**< Width of each expert (default 0). */
  int32_t norm_topk_prob;        /**< Non-zero: the chosen experts' weights are renormalized to sum 1. */
  /** Layer i is sparse when it is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
      (default 1); other layers have the dense MLP of intermediate_size. */
  int64_t decoder_sparse_step;
  int32_t mlp_only_layers[FP8RL_MAX_MLP_ONLY_LAYERS]; /**< Dense layers; the first num_mlp_only_layers count. */
  int32_t num_mlp_only_layers;                        /**< 0 (default) to ::FP8RL_MAX_MLP_ONLY_LAYERS. */
  double router_aux_loss_coef; /**< The file's load-balancing coefficient, kept with the model (default 0.001). */
} fp8rl_model_config;

/**
 * @brief Fills @p config with defaults: Llama family, all sizes 0 (to be set),
 *        head_dim 0 (implied), rms_norm_eps 1e-5, rope_theta 10000, no RoPE
 *        scaling, no tied embeddings, bias or qk_norm, bos_token_id -1, no EOS tokens.
 * @param config Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p config is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_model_config_init(fp8rl_model_config* config);

/**
 * @brief Validates a configuration and counts its weights.
 *
 * The count includes embeddings, every layer's projections, biases and norms
 * (a sparse layer's router and all of its experts), the final norm and
 * (unless tied) the LM head.
 * @param config The configuration; read only during the call.
 * @param[out] out_count Receives the number of weights.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or a configuration that
 *         cannot describe a model (the message names the field): non-positive
 *         sizes, heads not a multiple of kv heads, an inexact implied head_dim,
 *         enum values out of range, a family's required extras missing, sizes
 *         whose count overflows int64, token ids outside the vocabulary.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if config->struct_size is not one this library knows.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_model_config_parameter_count(const fp8rl_model_config* config, int64_t* out_count);

/**
 * @brief Validates a configuration and counts the weights one token computes
 *        with: fp8rl_model_config_parameter_count() with only
 *        num_experts_per_tok experts in each sparse layer (the same count for
 *        a dense model). Qwen3-30B-A3B: 30,532,122,624 weights, 3,353,032,704 active.
 * @param config The configuration; read only during the call.
 * @param[out] out_count Receives the number of active weights.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT as fp8rl_model_config_parameter_count().
 * @retval FP8RL_ERROR_VERSION_MISMATCH if config->struct_size is not one this library knows.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_model_config_active_parameter_count(const fp8rl_model_config* config,
                                                                 int64_t* out_count);

/** @} */

/** @defgroup policies Policies and precision recipes
 *  A policy holds the FP32 master weights of one model, the precision recipe
 *  that fixes its numerics, and the compute copies of the weights that recipe
 *  implies. It belongs to the context it was created on: calls on a policy
 *  are serialized by that context (so one context with its policies may be
 *  shared by threads), and the context must outlive its policies.
 *
 * Generating with FP8 linear layers and scoring the completions:
 * @code
 * fp8rl_policy* policy = NULL;
 * fp8rl_policy_load(context, "SmolLM2-135M", &policy);
 * fp8rl_recipe recipe;
 * fp8rl_recipe_init(&recipe);
 * recipe.linear = FP8RL_PRECISION_FP8;
 * fp8rl_policy_set_recipe(policy, &recipe);
 * fp8rl_sampling_options sampling;
 * fp8rl_sampling_options_init(&sampling);
 * sampling.max_new_tokens = 32;
 * const int32_t prompts[] = {1, 2, 3, 4, 5};   // two prompts: {1, 2, 3} and {4, 5}
 * const int64_t offsets[] = {0, 3, 5};
 * const uint64_t seeds[] = {11, 12};
 * fp8rl_rollout* rollout = NULL;
 * fp8rl_policy_generate(policy, prompts, offsets, 2, seeds, &sampling, &rollout);
 * const int32_t* tokens; const float* logprobs; int64_t length; fp8rl_finish_reason finish;
 * fp8rl_rollout_get(rollout, 0, &tokens, &logprobs, &length, &finish);
 * fp8rl_rollout_destroy(rollout);
 * fp8rl_policy_destroy(policy);
 * @endcode
 *  @{ */

/** Opaque handle: a model's weights, its precision recipe and compute copies. */
typedef struct fp8rl_policy fp8rl_policy;

/** Arithmetic precision of a part of the model. */
typedef enum fp8rl_precision FP8RL_ENUM_INT32 {
  FP8RL_PRECISION_BF16 = 0,                /**< BF16 operands, FP32 accumulation. */
  FP8RL_PRECISION_FP8 = 1,                 /**< E4M3 operands with block scales, FP32 accumulation. */
  FP8RL_PRECISION_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_precision;

/**
 * The precision recipe of a policy, for generation and training alike.
 * Embedding lookups, norms, softmax and RoPE always run in BF16/FP32.
 * Fill with fp8rl_recipe_init().
 */
typedef struct fp8rl_recipe {
  uint32_t struct_size;            /**< sizeof(fp8rl_recipe), set by the init function. */
  fp8rl_precision linear;          /**< q/k/v/o and gate/up/down projections; FP8 uses 128x128 weight
                                        blocks and 1x128 activation tiles. Default BF16. */
  fp8rl_scale_format scale_format; /**< Block scales of the FP8 linear layers; default ::FP8RL_SCALE_FP32. */
  fp8rl_precision kv_cache;        /**< FP8: keys and values stored as E4M3 with a per-layer scale. Default BF16. */
  fp8rl_precision attention;       /**< FP8: Q.K^T and P.V on E4M3 inputs; requires the FP8 KV cache. Default BF16. */
  int32_t bf16_first_layers;       /**< Leading transformer layers kept entirely in BF16 (>= 0; default 0). */
  int32_t bf16_last_layers;        /**< Trailing transformer layers kept entirely in BF16 (>= 0; default 0). */
  fp8rl_precision head;            /**< The LM head's GEMMs (logits; dgrad and wgrad in training). FP8: its weight
                                        (a tied model's shared matrix, for the head only: lookups stay BF16) in
                                        128x128 blocks with @ref scale_format. Default BF16, as the published
                                        recipe keeps it; FP8 halves the largest weight of a small model's decode. */
} fp8rl_recipe;

/**
 * @brief Fills @p recipe with defaults: everything BF16, FP32 scales, no BF16-only layers.
 * @param recipe Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p recipe is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_recipe_init(fp8rl_recipe* recipe);

/**
 * @brief Creates a policy with random weights (deterministic for config and seed).
 *
 * Linear layers and embeddings are drawn from N(0, 0.02^2), norms are 1 and
 * biases 0, from a counter-based generator: the same on every platform. The
 * recipe is the default of fp8rl_recipe_init().
 * @param context The context the policy lives on; it must outlive the policy.
 * @param config The architecture; read only during the call.
 * @param seed Seed of the weights.
 * @param[out] out_policy Receives the new policy, owned by the caller, who
 *             releases it with fp8rl_policy_destroy(); left unchanged on failure.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or an invalid
 *         configuration (as fp8rl_model_config_parameter_count() checks).
 * @retval FP8RL_ERROR_VERSION_MISMATCH if config->struct_size is not one this library knows.
 * @retval FP8RL_ERROR_OUT_OF_MEMORY if the weights do not fit.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_create_random(fp8rl_context* context, const fp8rl_model_config* config,
                                                  uint64_t seed, fp8rl_policy** out_policy);

/**
 * @brief Loads a policy from a Hugging Face model folder.
 *
 * The folder holds `config.json` and either `model.safetensors` or
 * `model.safetensors.index.json` with its shards; tensors may be BF16, F16 or
 * F32. The recipe is the default of fp8rl_recipe_init().
 *
 * An FP8 block-quantized checkpoint (a `quantization_config` with
 * `"quant_method": "fp8"` and `"weight_block_size": [128, 128]`, as
 * Qwen3-*-FP8, DeepSeek-V3 and fp8rl_policy_export_fp8() write) loads too:
 * each quantized linear layer is an `F8_E4M3` `weight` [out, in] with a
 * `weight_scale_inv` (`F32` or `BF16`, [ceil(out/128), ceil(in/128)]) of
 * dequantization multipliers. The master weights are code * scale in FP32,
 * and the recipe is the default with FP8 linear layers: their compute copies
 * are the stored codes and scales, bit for bit, until the recipe is changed
 * or the weights are trained; see @ref fp8_checkpoints.
 * @param context The context the policy lives on; it must outlive the policy.
 * @param folder NUL-terminated path of the folder; read only during the call.
 * @param[out] out_policy Receives the new policy, owned by the caller, who
 *             releases it with fp8rl_policy_destroy(); left unchanged on failure.
 * @retval FP8RL_ERROR_IO if the folder or a file cannot be read.
 * @retval FP8RL_ERROR_CORRUPT_DATA for a malformed config or weights file, or a
 *         missing, mis-shaped or mistyped tensor (the message names the file and tensor);
 *         for an FP8 checkpoint also a missing or mis-shaped `weight_scale_inv`, a zero or
 *         negative scale, or a quantized tensor where the library or `modules_to_not_convert`
 *         keeps the weight unquantized.
 * @retval FP8RL_ERROR_NON_FINITE for NaN or infinite weights (E4M3 NaN codes and
 *         NaN or infinite scales included).
 * @retval FP8RL_ERROR_UNSUPPORTED for an architecture this library does not implement,
 *         or a `quantization_config` other than block-wise FP8 with 128x128 blocks.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe; calls on one context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_load(fp8rl_context* context, const char* folder, fp8rl_policy** out_policy);

/**
 * @brief Writes the policy's master weights as a Hugging Face model folder.
 *
 * Writes `config.json` and `model.safetensors` (shards and an index above
 * 5 GiB), each atomically; creates the folder if needed. BF16 rounds to
 * nearest even. fp8rl_policy_load() reads the folder back.
 * @param policy A valid policy.
 * @param folder NUL-terminated path of the folder; read only during the call.
 * @param dtype Element type of the stored weights: ::FP8RL_DTYPE_F32 (exact) or ::FP8RL_DTYPE_BF16.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or another dtype.
 * @retval FP8RL_ERROR_IO if a file cannot be written.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_save(fp8rl_policy* policy, const char* folder, fp8rl_dtype dtype);

/**
 * @brief Writes the policy as an FP8 block-quantized Hugging Face checkpoint.
 *
 * Every linear projection is stored as an `F8_E4M3` `weight` plus an `F32`
 * `weight_scale_inv` of shape [ceil(out/128), ceil(in/128)] holding the
 * dequantization multipliers of its 128x128 blocks (weight ~= code * scale):
 * the policy's FP8 compute copy, bit for bit, where that copy holds the FP32
 * master weights exactly (dequantizes to them, as after loading an FP8
 * checkpoint), else quantized from the master weights with the recipe's
 * scale format, exactly as an FP8 compute copy would be. Embeddings, norms,
 * biases and the head are stored as BF16. `config.json` gains
 * `"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
 * "activation_scheme": "dynamic", "weight_block_size": [128, 128]}`, the
 * layout vLLM, SGLang and transformers load. Files are written as by
 * fp8rl_policy_save(). fp8rl_policy_load() reads the folder back, and
 * exporting the loaded policy writes the same bytes.
 * @param policy A valid policy.
 * @param folder NUL-terminated path of the folder; read only during the call.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_IO if a file cannot be written.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_export_fp8(fp8rl_policy* policy, const char* folder);

/**
 * @brief Destroys a policy and frees its weights.
 *
 * Rollouts made by the policy stay valid.
 * @param policy The policy, or NULL (then nothing happens).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if a trainer still uses the policy
 *         (fp8rl_trainer_create()); nothing is destroyed then.
 * Not thread-safe with other calls on the same policy; serialized with calls on its context.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_destroy(fp8rl_policy* policy);

/**
 * @brief The policy's architecture.
 *
 * Honours out_config->struct_size, which the caller sets (fp8rl_model_config_init()
 * does): a struct from an older header receives only the fields it has.
 * head_dim is written as 0 when the configuration implies it
 * (hidden_size / num_attention_heads), so the struct creates an equal policy.
 * @param policy A valid policy.
 * @param[in,out] out_config Caller-owned; struct_size is read, the fields are written.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if out_config->struct_size is not one this library knows.
 * @retval FP8RL_ERROR_UNSUPPORTED if the model has more than ::FP8RL_MAX_EOS_TOKEN_IDS EOS tokens.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_get_config(const fp8rl_policy* policy, fp8rl_model_config* out_config);

/**
 * @brief The number of weights of the policy's model (see fp8rl_model_config_parameter_count()).
 * @param policy A valid policy.
 * @param[out] out_count Receives the count.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_parameter_count(const fp8rl_policy* policy, int64_t* out_count);

/** Bytes a policy (and its trainer) hold, by component. */
typedef struct fp8rl_memory_report {
  uint32_t struct_size;     /**< sizeof(fp8rl_memory_report), set by the init function. */
  int64_t master_weights;   /**< FP32 master weights: the host copy, and for a trainer also its arena on the
                                 backend (the copy training updates). */
  int64_t compute_weights;  /**< The recipe's compute copies on the backend (BF16 / E4M3 codes and scales). */
  int64_t gradients;        /**< Trainer: FP32 gradients on the backend (0 for a policy). */
  int64_t optimizer_state;  /**< Trainer: AdamW's two FP32 moments on the backend (0 for a policy). */
  int64_t backward_weights; /**< Trainer: the transposed compute copies its backward pass reads (0 for a policy). */
  int64_t kv_cache;         /**< Plan only (fp8rl_memory_plan()): the KV cache for the planned tokens; 0 in the
                                 reports of a policy or trainer (a cache lives only during a generate call). */
} fp8rl_memory_report;

/**
 * @brief Prepares @p report for fp8rl_policy_memory() or fp8rl_trainer_memory():
 *        sets struct_size and zeroes the other fields.
 * @param[out] report Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p report is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_memory_report_init(fp8rl_memory_report* report);

/**
 * @brief The memory a policy holds, by component (the trainer-only fields are 0).
 * @param policy A valid policy.
 * @param[out] out_report Receives the report; out_report->struct_size must be set
 *             (fp8rl_memory_report_init() sets it).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * Thread-safe; serialized with calls on the policy's context.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_memory(const fp8rl_policy* policy, fp8rl_memory_report* out_report);

/**
 * @brief Plans the memory one rank of a training run holds, from a model config alone (nothing is allocated).
 *
 * The same arithmetic as the allocations: at world_size 1 the trainer-related
 * fields equal fp8rl_trainer_memory() of a trainer of that config and
 * recipe, and at N ranks rank @p rank's report.
 * @param config The model (validated as fp8rl_policy_create_random() does; any size within the limits).
 * @param recipe The precision recipe; NULL: the default (BF16).
 * @param world_size Ranks training together, in [1, 2^20].
 * @param rank The rank planned for, in [0, world_size) (optimizer shards differ by a few blocks).
 * @param kv_cache_tokens Tokens (sequences x positions) the KV cache is planned for, >= 0.
 * @param[out] out_report Receives the plan; out_report->struct_size must be set (fp8rl_memory_report_init()).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or out-of-range values, naming the argument.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_memory_plan(const fp8rl_model_config* config, const fp8rl_recipe* recipe,
                                         int32_t world_size, int32_t rank, int64_t kv_cache_tokens,
                                         fp8rl_memory_report* out_report);

/**
 * @brief A 64-bit fingerprint of what a policy computes with: every compute
 *        copy of its weights (BF16 values, E4M3 codes and block scales), its
 *        attention scales and its recipe.
 *
 * Equal fingerprints on all ranks after a step say the ranks generate alike
 * (data parallelism keeps them bitwise equal). Reads the compute copies back
 * from the backend: as slow as copying the weights.
 * @param policy A valid policy.
 * @param[out] out_fingerprint Receives the fingerprint (FNV-1a over the bytes in a fixed order).
 * Thread-safe; serialized with calls on the policy's context.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_fingerprint(const fp8rl_policy* policy, uint64_t* out_fingerprint);

/**
 * @brief Copies the master weights and attention scales of @p source into
 *        @p destination and requantizes its compute copies in its own recipe.
 *
 * For a generator that runs another recipe than the trainer (e.g. FP8
 * generation, BF16 training): after each training step, copy the trained
 * policy into the generator.
 * @param destination A valid policy with the same model config; keeps its recipe.
 * @param source A valid policy; not modified.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, the same policy twice,
 *         or policies of different model configs; nothing changes then.
 * Thread-safe; serialized with calls on the policies' contexts (which may differ).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_copy_weights(fp8rl_policy* destination, const fp8rl_policy* source);

/**
 * @brief Sets the precision recipe and requantizes the compute weights.
 * @param policy A valid policy.
 * @param recipe The recipe; read only during the call.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, enum values out of
 *         range, negative layer counts, or FP8 attention over a BF16 KV cache.
 *         On any error the policy keeps its previous recipe and weights.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if recipe->struct_size is not one this library knows.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_set_recipe(fp8rl_policy* policy, const fp8rl_recipe* recipe);

/**
 * @brief The policy's current recipe.
 *
 * Honours out_recipe->struct_size like fp8rl_policy_get_config().
 * @param policy A valid policy.
 * @param[in,out] out_recipe Caller-owned; struct_size is read, the fields are written.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if out_recipe->struct_size is not one this library knows.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_get_recipe(const fp8rl_policy* policy, fp8rl_recipe* out_recipe);

/**
 * @brief Sets the per-layer scales of the FP8 KV cache and FP8 attention.
 *
 * Keys and values are stored as E4M3 codes of value / scale, and queries are
 * quantized with the q scale before Q.K^T. They are 1 until set (or recalibrated).
 * @param policy A valid policy.
 * @param q Caller-owned query scales, @p num_layers of them.
 * @param k Caller-owned key scales, @p num_layers of them.
 * @param v Caller-owned value scales, @p num_layers of them.
 * @param num_layers Must equal the model's num_layers.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, a wrong @p num_layers,
 *         or a scale that is not finite and > 0 (the message names the layer);
 *         the scales are then unchanged.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_set_attention_scales(fp8rl_policy* policy, const float* q, const float* k,
                                                         const float* v, int64_t num_layers);

/**
 * @brief Reads the per-layer attention scales (see fp8rl_policy_set_attention_scales()).
 * @param policy A valid policy.
 * @param[out] q Caller-owned, receives @p num_layers query scales.
 * @param[out] k Caller-owned, receives @p num_layers key scales.
 * @param[out] v Caller-owned, receives @p num_layers value scales.
 * @param num_layers Must equal the model's num_layers.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or a wrong @p num_layers.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_get_attention_scales(const fp8rl_policy* policy, float* q, float* k, float* v,
                                                         int64_t num_layers);

/**
 * Options of the attention-scale calibration: of
 * fp8rl_policy_recalibrate_attention_scales() and of a trainer's
 * recalibration (fp8rl_trainer_options::calibration). Fill with
 * fp8rl_calibration_options_init().
 */
typedef struct fp8rl_calibration_options {
  uint32_t struct_size; /**< sizeof(fp8rl_calibration_options), set by the init function. */
  double percentile;    /**< Of the per-token maxima, in (0, 100]; default 99.9 (outliers above it saturate). */
  double margin;        /**< Headroom factor >= 1 on that percentile; default 1.05. */
  double max_value;     /**< The FP8 magnitude it maps to; default 448 (the E4M3 maximum). */
} fp8rl_calibration_options;

/**
 * @brief Fills @p options with defaults: percentile 99.9, margin 1.05, max value 448.
 * @param[out] options The struct to fill; struct_size is set.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_calibration_options_init(fp8rl_calibration_options* options);

/**
 * @brief Sets the per-layer Q, K and V scales from a full-sequence pass over the given sequences.
 *
 * Runs the policy over the sequences as training does (with its current
 * recipe and scales) and, for each layer and each of Q, K (both after RoPE)
 * and V, takes every token's largest magnitude, the options' percentile of
 * those over all tokens, and sets scale = percentile * margin / max_value
 * (1 where the magnitude is 0). The FP8 KV cache stores value / scale, so the
 * percentile lands at max_value / margin. Generation and scoring use the new
 * scales from the next call on.
 * @param policy A valid policy.
 * @param tokens Caller-owned token ids, offsets[num_sequences] of them, each in [0, vocab_size).
 * @param offsets Caller-owned, num_sequences + 1 offsets: 0 first, increasing.
 * @param num_sequences Number of sequences (> 0).
 * @param options Calibration options; read only during the call.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, malformed sequences or bad options;
 *         the scales are unchanged then.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if options->struct_size is not one this library knows.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_recalibrate_attention_scales(fp8rl_policy* policy, const int32_t* tokens,
                                                                 const int64_t* offsets, int64_t num_sequences,
                                                                 const fp8rl_calibration_options* options);

/** @} */

/** @defgroup rollouts Rollouts: generation and scoring
 *  Batched generation with continuous batching, and the scoring of given
 *  completions that training uses. Both run the same arithmetic row by row, so
 *  the log-prob fp8rl_policy_score() gives a completion token equals, bit for
 *  bit, the one fp8rl_policy_generate() recorded with the same sampling options.
 *  @{ */

/** Opaque handle: the completions of one fp8rl_policy_generate() call. */
typedef struct fp8rl_rollout fp8rl_rollout;

/** Why a completion ended. */
typedef enum fp8rl_finish_reason FP8RL_ENUM_INT32 {
  FP8RL_FINISH_STOP = 0,                /**< Emitted a stop or EOS token; it is the last token. */
  FP8RL_FINISH_LENGTH = 1,              /**< Reached max_new_tokens. */
  FP8RL_FINISH_CONTEXT_FULL = 2,        /**< Reached the model's max_position_embeddings. */
  FP8RL_FINISH_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_finish_reason;

/**
 * How completions are drawn and when they end. Fill with fp8rl_sampling_options_init().
 *
 * The sampling distribution is softmax(logits / temperature), restricted to
 * the top_k most likely tokens and then to the smallest set whose probability
 * reaches top_p, renormalized; log-probs are taken under it.
 */
typedef struct fp8rl_sampling_options {
  uint32_t struct_size;          /**< sizeof(fp8rl_sampling_options), set by the init function. */
  float temperature;             /**< Default 1; 0 = greedy (the log-prob of the chosen token is then 0). */
  int32_t top_k;                 /**< Keep the k most likely tokens; 0 (default) = all. */
  float top_p;                   /**< Nucleus mass in (0, 1]; default 1. */
  int32_t max_new_tokens;        /**< Completion length limit (> 0); default 64. */
  const int32_t* stop_token_ids; /**< Caller-owned tokens that end a completion (after being emitted); default NULL. */
  int64_t num_stop_token_ids;    /**< Number of stop tokens (>= 0); default 0. */
  int32_t stop_at_eos;           /**< Non-zero (default): the model's EOS tokens also end a completion. */
  int32_t batch_slots;           /**< Sequences in flight at once; 0 (default) = all prompts. Finished
                                      sequences hand their slot to waiting prompts. Results do not depend on it. */
  int32_t max_tokens_per_step;   /**< Bound on the tokens of one forward pass (prefill is chunked); default 2048. */
  /** Non-zero: fp8rl_policy_generate() keeps the experts each token was routed to (Mixture-of-Experts
      policies; fp8rl_rollout_get_experts()). Default 0. Scoring ignores it. */
  int32_t record_experts;
} fp8rl_sampling_options;

/**
 * @brief Fills @p options with defaults: temperature 1, top_k 0, top_p 1,
 *        64 new tokens, no stop tokens, stop at EOS, all prompts at once,
 *        2048 tokens per step.
 * @param options Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p options is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_sampling_options_init(fp8rl_sampling_options* options);

/**
 * @brief Generates one completion per prompt.
 *
 * Prompt i is prompt_tokens[prompt_offsets[i] .. prompt_offsets[i + 1]).
 * seeds[i] alone decides the random draws of prompt i, so a prompt with the
 * same seed gets the same completion (tokens and log-probs, bitwise) whatever
 * else is in the batch and whatever options->batch_slots is.
 * @param policy A valid policy.
 * @param prompt_tokens Caller-owned token ids, prompt_offsets[num_prompts] of them, each in [0, vocab_size).
 * @param prompt_offsets Caller-owned, num_prompts + 1 offsets: 0 first, increasing (no empty prompt).
 * @param num_prompts Number of prompts (> 0).
 * @param seeds Caller-owned, one seed per prompt.
 * @param options Sampling options; read only during the call.
 * @param[out] out_rollout Receives the completions, owned by the caller, who
 *             releases them with fp8rl_rollout_destroy(). They are copies:
 *             valid after the policy and its context are destroyed.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, num_prompts < 1,
 *         malformed offsets, token ids outside the vocabulary, a prompt longer
 *         than max_position_embeddings, or bad options (the message names the
 *         prompt and position, or the field).
 * @retval FP8RL_ERROR_VERSION_MISMATCH if options->struct_size is not one this library knows.
 * Thread-safe; calls on the policy's context are serialized (for the whole generation).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_generate(fp8rl_policy* policy, const int32_t* prompt_tokens,
                                             const int64_t* prompt_offsets, int64_t num_prompts, const uint64_t* seeds,
                                             const fp8rl_sampling_options* options, fp8rl_rollout** out_rollout);

/**
 * @brief Log-probs of given completions under the policy, as generation records them.
 *
 * Sequence i is tokens[offsets[i] .. offsets[i + 1]); its first
 * prompt_lengths[i] tokens are the prompt, the rest the completion. For every
 * completion token, in sequence order, writes its log-prob under the
 * distribution options->temperature, top_k and top_p define (the other
 * options are ignored).
 * @param policy A valid policy.
 * @param tokens Caller-owned token ids, offsets[num_sequences] of them.
 * @param offsets Caller-owned, num_sequences + 1 offsets: 0 first, increasing.
 * @param num_sequences Number of sequences (> 0).
 * @param prompt_lengths Caller-owned, one per sequence, in [1, sequence length].
 * @param options Sampling options; read only during the call.
 * @param[out] logprobs Caller-owned; receives sum(length_i - prompt_lengths[i]) values
 *             (may be NULL when @p capacity is 0).
 * @param capacity Capacity of @p logprobs; at least that sum.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, malformed sequences or
 *         prompt lengths, bad options, or a too small @p capacity; nothing is written then.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if options->struct_size is not one this library knows.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_score(fp8rl_policy* policy, const int32_t* tokens, const int64_t* offsets,
                                          int64_t num_sequences, const int64_t* prompt_lengths,
                                          const fp8rl_sampling_options* options, float* logprobs, int64_t capacity);

/**
 * @brief The number of completions (the number of prompts generated from).
 * @param rollout A valid rollout.
 * @param[out] out_count Receives the count.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_count(const fp8rl_rollout* rollout, int64_t* out_count);

/**
 * @brief The total number of completion tokens over all completions.
 * @param rollout A valid rollout.
 * @param[out] out_total Receives the total.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_total_tokens(const fp8rl_rollout* rollout, int64_t* out_total);

/**
 * @brief One completion, by reference.
 * @param rollout A valid rollout.
 * @param index The completion, in prompt order: [0, count).
 * @param[out] out_tokens NULL, or receives its tokens (length of them), owned by
 *             the rollout and valid until it is destroyed.
 * @param[out] out_logprobs NULL, or receives the log-prob of each token under the
 *             sampling distribution (<= 0), owned by the rollout, valid until it is destroyed.
 * @param[out] out_length NULL, or receives the number of tokens.
 * @param[out] out_finish NULL, or receives why the completion ended.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL rollout or an index out of range.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_get(const fp8rl_rollout* rollout, int64_t index, const int32_t** out_tokens,
                                         const float** out_logprobs, int64_t* out_length,
                                         fp8rl_finish_reason* out_finish);

/**
 * @brief Copies all completions into caller-owned flat arrays.
 *
 * Completion i occupies [offsets[i], offsets[i + 1]) of @p tokens and @p logprobs.
 * Any of the four arrays may be NULL to skip it.
 * @param rollout A valid rollout.
 * @param[out] tokens NULL, or receives the tokens of all completions (capacity of them at most).
 * @param[out] logprobs NULL, or receives their log-probs (capacity of them at most).
 * @param capacity Capacity of @p tokens and @p logprobs; at least the total tokens
 *        (fp8rl_rollout_total_tokens()) when either is given.
 * @param[out] offsets NULL, or receives count + 1 offsets.
 * @param[out] finish_reasons NULL, or receives count finish reasons.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL rollout or a too small @p capacity;
 *         nothing is written then.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_copy(const fp8rl_rollout* rollout, int32_t* tokens, float* logprobs,
                                          int64_t capacity, int64_t* offsets, fp8rl_finish_reason* finish_reasons);

/**
 * @brief The experts one completion's tokens were routed to, by reference.
 *
 * Recorded when the sampling options had record_experts set and the policy
 * has sparse (Mixture-of-Experts) layers; otherwise @p out_positions is 0.
 * The array is [positions, sparse layers, k] of expert indices, best first:
 * position p is the p-th token of prompt + completion as the model was fed
 * it, for p in [0, prompt length + completion length - 1) (the last sampled
 * token is never fed); the sparse layers in layer order.
 * @param rollout A valid rollout.
 * @param index The completion, in prompt order: [0, count).
 * @param[out] out_experts NULL, or receives the array, owned by the rollout and valid until it is destroyed.
 * @param[out] out_positions NULL, or receives the number of positions.
 * @param[out] out_sparse_layers NULL, or receives the number of sparse layers.
 * @param[out] out_top_k NULL, or receives k (num_experts_per_tok).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL rollout or an index out of range.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_get_experts(const fp8rl_rollout* rollout, int64_t index,
                                                 const int32_t** out_experts, int64_t* out_positions,
                                                 int64_t* out_sparse_layers, int64_t* out_top_k);

/**
 * @brief Destroys a rollout; pointers fp8rl_rollout_get() gave become invalid.
 * @param rollout The rollout, or NULL (then nothing happens).
 * Not thread-safe with other calls on the same rollout.
 * @return ::FP8RL_OK (it cannot fail).
 */
FP8RL_API fp8rl_status fp8rl_rollout_destroy(fp8rl_rollout* rollout);

/** @} */

/** @defgroup text Text: Hugging Face tokenizers
 *  A model folder's tokenizer.json (with tokenizer_config.json and
 *  generation_config.json for the special ids), encoding and decoding
 *  exactly as Hugging Face `tokenizers` does for byte-level BPE (Llama 3,
 *  Qwen2/2.5/3, SmolLM2, GPT-2); docs/tokenizer.md lists what is supported
 *  and what is refused. Text is UTF-8 with an explicit byte count; text that
 *  is not valid UTF-8 is repaired first (each ill-formed sequence becomes
 *  U+FFFD, as Python's bytes.decode("utf-8", "replace") does).
 *
 *  Usage:
 *  @code
 *    fp8rl_tokenizer* tok = NULL;
 *    fp8rl_tokenizer_load("models/Qwen2.5-0.5B", &tok);
 *    int64_t count = 0;
 *    fp8rl_tokenizer_encode(tok, "Hello", 5, 1, NULL, 0, &count);   // size query
 *    int32_t* ids = malloc(count * sizeof(int32_t));
 *    fp8rl_tokenizer_encode(tok, "Hello", 5, 1, ids, count, &count);
 *    fp8rl_tokenizer_destroy(tok);
 *  @endcode
 *  @{ */

/** Opaque handle: a loaded tokenizer. Immutable once loaded. */
typedef struct fp8rl_tokenizer fp8rl_tokenizer;

/** Opaque handle: the ids of several texts, owned by the library. */
typedef struct fp8rl_encoding fp8rl_encoding;

/** Capacity of fp8rl_special_token_ids::eos. */
#define FP8RL_MAX_EOS_IDS 8

/** The special ids of a model folder; -1 where the folder names none. */
typedef struct fp8rl_special_token_ids {
  uint32_t struct_size;  /**< sizeof(fp8rl_special_token_ids); set by the caller (or fp8rl_special_token_ids_init()). */
  int32_t bos;           /**< Beginning of sequence. */
  int32_t pad;           /**< Padding. */
  int32_t add_bos_token; /**< tokenizer_config.json's add_bos_token: 0 or 1; -1 when not stated. */
  int32_t num_eos;       /**< Entries of eos (at most FP8RL_MAX_EOS_IDS; the first ones when more). */
  int32_t eos[FP8RL_MAX_EOS_IDS]; /**< End-of-sequence ids: tokenizer_config.json's, then generation_config.json's
                                       (without repeats); -1 past num_eos. */
} fp8rl_special_token_ids;

/**
 * @brief Fills @p ids with -1 ids, no EOS and struct_size.
 * @param[out] ids The struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_special_token_ids_init(fp8rl_special_token_ids* ids);

/**
 * @brief Loads the tokenizer of a Hugging Face model folder.
 * @param folder The folder holding tokenizer.json (and, where present,
 *        tokenizer_config.json and generation_config.json).
 * @param[out] out_tokenizer Receives the tokenizer, released with
 *             fp8rl_tokenizer_destroy(); unchanged on failure.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_IO when tokenizer.json cannot be read.
 * @retval FP8RL_ERROR_CORRUPT_DATA for malformed files (the message names the file and field).
 * @retval FP8RL_ERROR_UNSUPPORTED for a tokenizer type or option not implemented (named),
 *         or a library built without PCRE2.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_load(const char* folder, fp8rl_tokenizer** out_tokenizer);

/**
 * @brief Loads the tokenizer of the folder @p policy was loaded from (fp8rl_policy_load()).
 * The folder is the one fp8rl_policy_load() was given, made absolute then (a later
 * change of the working directory does not matter); its files are read now.
 * @param policy A valid policy.
 * @param[out] out_tokenizer As for fp8rl_tokenizer_load().
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, or a policy not loaded from a folder
 *         (created at random or from a config).
 * Other errors as fp8rl_tokenizer_load(). Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_policy_load_tokenizer(const fp8rl_policy* policy, fp8rl_tokenizer** out_tokenizer);

/**
 * @brief Destroys a tokenizer.
 * @param tokenizer The tokenizer, or NULL (then nothing happens).
 * Not thread-safe with other calls on the same tokenizer.
 * @return ::FP8RL_OK (it cannot fail).
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_destroy(fp8rl_tokenizer* tokenizer);

/**
 * @brief The ids of one text, into a caller-owned array.
 * @param tokenizer A valid tokenizer.
 * @param text UTF-8 bytes (may be NULL when @p text_bytes is 0); need not be NUL-terminated.
 * @param text_bytes Bytes of @p text (>= 0).
 * @param add_special_tokens Non-zero: the post-processor's tokens too (e.g. Llama 3's BOS).
 * @param[out] ids NULL (then @p capacity must be 0), or receives the ids; untouched on failure.
 * @param capacity Entries of @p ids (>= 0).
 * @param[out] out_count Receives the number of ids, also when @p capacity is too small.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, a negative size, or a @p capacity
 *         below the count (then *@p out_count is still set). NULL @p ids with capacity 0 is a
 *         size query: ::FP8RL_OK with the count; non-NULL @p ids with capacity 0 is not.
 * Thread-safe: any number of calls may run on one tokenizer at once.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_encode(const fp8rl_tokenizer* tokenizer, const char* text, int64_t text_bytes,
                                              int32_t add_special_tokens, int32_t* ids, int64_t capacity,
                                              int64_t* out_count);

/**
 * @brief The ids of several texts, into a result object.
 * @param tokenizer A valid tokenizer.
 * @param texts @p count pointers to UTF-8 texts.
 * @param text_bytes @p count byte counts.
 * @param count Texts (>= 0).
 * @param add_special_tokens As for fp8rl_tokenizer_encode().
 * @param[out] out_encoding Receives the result, released with fp8rl_encoding_destroy();
 *             unchanged on failure.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or negative sizes (naming the index,
 *         as in "texts[3] is NULL"); @p texts and @p text_bytes may be NULL when @p count is 0.
 * Thread-safe. The texts are encoded one after the other on the calling thread.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_encode_batch(const fp8rl_tokenizer* tokenizer, const char* const* texts,
                                                    const int64_t* text_bytes, int64_t count,
                                                    int32_t add_special_tokens, fp8rl_encoding** out_encoding);

/**
 * @brief The number of texts of an encoding.
 * @param encoding A valid encoding.
 * @param[out] out_count Receives the number of texts.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_encoding_count(const fp8rl_encoding* encoding, int64_t* out_count);

/**
 * @brief The ids of text @p index of an encoding.
 * @param encoding A valid encoding.
 * @param index 0 to count - 1.
 * @param[out] out_ids Receives a pointer owned by the encoding, valid until it is destroyed
 *             (not NULL, also for a text without ids).
 * @param[out] out_count Receives the number of ids.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or an index out of range.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_encoding_get(const fp8rl_encoding* encoding, int64_t index, const int32_t** out_ids,
                                          int64_t* out_count);

/**
 * @brief Destroys an encoding.
 * @param encoding The encoding, or NULL.
 * @return ::FP8RL_OK (it cannot fail).
 */
FP8RL_API fp8rl_status fp8rl_encoding_destroy(fp8rl_encoding* encoding);

/**
 * @brief The text of ids, into a caller-owned buffer (UTF-8, not NUL-terminated).
 * @param tokenizer A valid tokenizer.
 * @param ids @p count ids (may be NULL when @p count is 0); ids naming no token are skipped,
 *        as `tokenizers` skips them.
 * @param count Ids (>= 0).
 * @param skip_special_tokens Non-zero: special tokens are left out.
 * @param[out] text NULL (then @p capacity must be 0), or receives the bytes; untouched on failure.
 * @param capacity Bytes of @p text (>= 0).
 * @param[out] out_bytes Receives the number of bytes, also when @p capacity is too small.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, negative sizes or ids (naming the
 *         index), or a too small @p capacity (then *@p out_bytes is still set). A size query
 *         with NULL @p text and capacity 0 returns ::FP8RL_OK.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_decode(const fp8rl_tokenizer* tokenizer, const int32_t* ids, int64_t count,
                                              int32_t skip_special_tokens, char* text, int64_t capacity,
                                              int64_t* out_bytes);

/**
 * @brief The id of a token (its byte-level spelling, or an added token's content).
 * @param tokenizer A valid tokenizer.
 * @param piece @p piece_bytes bytes (may be NULL when @p piece_bytes is 0), as fp8rl_tokenizer_id_to_piece()
 *        gives them: a space is "Ġ" (U+0120) in a byte-level vocabulary.
 * @param piece_bytes Bytes of @p piece (>= 0).
 * @param[out] out_id Receives the id, or -1 when no token is spelled so.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or a negative size.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_token_to_id(const fp8rl_tokenizer* tokenizer, const char* piece,
                                                   int64_t piece_bytes, int32_t* out_id);

/**
 * @brief The spelling of a token (byte-level, as in tokenizer.json), into a caller-owned buffer.
 * @param tokenizer A valid tokenizer.
 * An added token's content wins over a model token of the same id, as in tokenizers.
 * @param id The token's id.
 * @param[out] piece NULL (then @p capacity must be 0), or receives the bytes (not NUL-terminated).
 * @param capacity Bytes of @p piece (>= 0).
 * @param[out] out_bytes Receives the number of bytes, also when @p capacity is too small.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, an id naming no token (negative, at or
 *         above the vocabulary size, or a gap in the ids), or a too small capacity (then
 *         *@p out_bytes is still set).
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_id_to_piece(const fp8rl_tokenizer* tokenizer, int32_t id, char* piece,
                                                   int64_t capacity, int64_t* out_bytes);

/**
 * @brief One past the largest id of the tokenizer (added tokens included), which may exceed the
 * number of tokens where the ids have gaps; compare with the model's vocab_size.
 * @param tokenizer A valid tokenizer.
 * @param[out] out_size Receives the size.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_vocab_size(const fp8rl_tokenizer* tokenizer, int64_t* out_size);

/**
 * @brief The folder's special ids.
 * @param tokenizer A valid tokenizer.
 * @param[out] out_ids Receives them; out_ids->struct_size must be set.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_tokenizer_special_ids(const fp8rl_tokenizer* tokenizer, fp8rl_special_token_ids* out_ids);

/** @} */

/** @defgroup mismatch Generation-vs-training mismatch
 *  How far the generator's log-probs (logp_gen) are from the training
 *  policy's recomputation of the same tokens (logp_old, as a training
 *  iteration fixes it: fp8rl_trainer_recompute_logprobs(), or
 *  fp8rl_policy_score() with the training recipe), and the token-level
 *  importance-sampling weights w = exp(logp_old - logp_gen) that correct for it.
 *  @{ */

/** How importance weights are formed from w = exp(logp_old - logp_gen). */
typedef enum fp8rl_importance_mode FP8RL_ENUM_INT32 {
  FP8RL_IMPORTANCE_OFF = 0,             /**< w = 1. */
  FP8RL_IMPORTANCE_PLAIN = 1,           /**< w as it is. */
  FP8RL_IMPORTANCE_TRUNCATED = 2,       /**< w clamped to [low, high]. */
  FP8RL_IMPORTANCE_TOKEN_MASKED = 3,    /**< w where low <= w <= high, else 0. */
  FP8RL_IMPORTANCE_SEQUENCE_MASKED = 4, /**< A whole sequence gets 0 when the geometric mean of its w is outside
                                             [low, high]; otherwise plain w. */
  FP8RL_IMPORTANCE_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_importance_mode;

/**
 * Importance-weight options, of fp8rl_mismatch_metrics_compute() and of a
 * trainer (fp8rl_trainer_options::importance). Fill with fp8rl_importance_options_init().
 *
 * The default mode is ::FP8RL_IMPORTANCE_OFF. Generation and training run on
 * one engine that computes every row on its own, so a policy that generates
 * and trains in one recipe (sampling at the training temperature, without
 * top-k or top-p) has logp_old equal to logp_gen bit for bit: every weight is
 * exactly 1 and a correction changes nothing. A truncated default would
 * still make every policy-gradient trainer require logp_gen in each batch,
 * refusing batches that bring only rewards or advantages. Turn a mode on when
 * the generator differs from the trainer (another recipe, e.g. FP8 generation
 * and BF16 training with fp8rl_policy_copy_weights(), or another engine):
 * ::FP8RL_IMPORTANCE_TRUNCATED with high = 2 (truncated importance sampling)
 * is the usual choice. The trainer reports the mismatch whenever a batch
 * brings logp_gen, whatever the mode.
 */
typedef struct fp8rl_importance_options {
  uint32_t struct_size;       /**< sizeof(fp8rl_importance_options), set by the init function. */
  fp8rl_importance_mode mode; /**< Default ::FP8RL_IMPORTANCE_OFF (see above). */
  double low;                 /**< Lower bound, >= 0; default 0. */
  double high;                /**< Upper bound (the truncation cap), > 0 and >= low; default 2. */
} fp8rl_importance_options;

/** Mismatch metrics over a batch of completion tokens. */
typedef struct fp8rl_mismatch_metrics {
  uint32_t struct_size;         /**< sizeof(fp8rl_mismatch_metrics), set by the init function. */
  int64_t tokens;               /**< Tokens measured. */
  int64_t non_finite_tokens;    /**< Tokens with a non-finite logp_gen, left out of the means below. */
  double token_mult_prob_error; /**< Mean exp(|logp_old - logp_gen|); 1 when identical. */
  double gen_kl_error;          /**< Mean k3 estimate of KL(gen || train): exp(x) - x - 1, x = logp_old - logp_gen. */
  double gen_kl_k1;             /**< Mean logp_gen - logp_old (the k1 estimate of the same KL). */
  double policy_kl_error;       /**< Mean k3 estimate of KL(train || gen). */
  double is_weight_mean;        /**< Mean importance weight under the options. */
  double is_truncated_fraction; /**< Fraction of tokens whose weight was truncated. */
  double is_masked_fraction;    /**< Fraction of tokens whose weight was masked to 0. */
  int64_t is_masked_sequences;  /**< Sequences masked as a whole. */
} fp8rl_mismatch_metrics;

/**
 * @brief Fills @p options with defaults: importance weighting off, bounds [0, 2].
 * @param[out] options The struct to fill; struct_size is set.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_importance_options_init(fp8rl_importance_options* options);

/**
 * @brief Prepares @p metrics for fp8rl_mismatch_metrics_compute(): sets
 *        struct_size and zeroes the other fields.
 * @param[out] metrics Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p metrics is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_mismatch_metrics_init(fp8rl_mismatch_metrics* metrics);

/**
 * @brief Computes the mismatch metrics of a batch of completions.
 *
 * Sequence i's tokens are [offsets[i], offsets[i + 1]) of both arrays, as
 * fp8rl_rollout_copy() and fp8rl_policy_score() lay them out.
 * @param logp_old Caller-owned log-probs recomputed by the training policy; must be finite.
 * @param logp_gen Caller-owned log-probs the generator recorded.
 * @param offsets Caller-owned, num_sequences + 1 offsets: 0 first, non-decreasing.
 * @param num_sequences Number of sequences (> 0).
 * @param options Importance-weight options; read only during the call.
 * @param[out] out_metrics Receives the metrics; out_metrics->struct_size must be set
 *             (fp8rl_mismatch_metrics_init() sets it).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, malformed offsets or bad options.
 * @retval FP8RL_ERROR_NON_FINITE for a NaN or infinite logp_old (the message names the token).
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * Thread-safe (no state).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_mismatch_metrics_compute(const float* logp_old, const float* logp_gen,
                                                      const int64_t* offsets, int64_t num_sequences,
                                                      const fp8rl_importance_options* options,
                                                      fp8rl_mismatch_metrics* out_metrics);

/** @} */

/** @defgroup training Training iterations
 *  RL (or SFT) training on a policy, in the policy's own recipe. One
 *  iteration (fp8rl_trainer_iterate()) takes one rollout batch: it fixes
 *  logp_old, the advantages and the importance weights once, then takes
 *  options.minibatches optimizer steps on consecutive mini-batches of it
 *  (PPO's mini-batches): each runs the loss's forward and backward over
 *  micro-batches (FP8 fprop, dgrad and wgrad under an FP8 recipe), clips the
 *  global gradient norm, takes an AdamW step on the FP32 master weights and
 *  recalibrates: every compute copy of the weights is requantized with fresh
 *  block scales and (unless options.freeze_attention_scales) the attention
 *  (Q/K/V) scales are replaced by those measured in the step's training
 *  forward pass. fp8rl_trainer_step() is the
 *  one-mini-batch iteration. The policy then generates with the new weights.
 *
 *  Data parallelism: a context created with a communicator (@ref
 *  distributed) makes its trainers data-parallel. Each rank trains on its
 *  own batch (whole advantage groups: a group never spans ranks); the loss is
 *  normalized by the token and sequence counts of all ranks' mini-batches;
 *  gradients are reduce-scattered; each rank keeps the AdamW moments of its
 *  own slice of the parameters (a 128x128-block-aligned shard, so the
 *  optimizer state per rank shrinks as 1/N) and updates the master weights
 *  of that slice; recalibration then requantizes the compute copies of the
 *  rows of that slice and the ranks all-gather them (E4M3 codes and block
 *  scales for FP8 layers, about a quarter of the bytes of FP32 masters; BF16
 *  and FP32 for the rest), so every rank holds bitwise the same compute
 *  weights. A rank's FP32 master weights outside its slice are then stale:
 *  reading them (saving or exporting the policy, fp8rl_policy_set_recipe(),
 *  copies) fails with ::FP8RL_ERROR_DISTRIBUTED until
 *  fp8rl_trainer_gather_weights() has run on every rank. The gradient norm, the Q/K/V
 *  calibration percentile and every metric are taken over all ranks (the
 *  metrics are the same on every rank). fp8rl_trainer_create() starts every
 *  rank from rank 0's weights and attention scales (the recipes must agree).
 *  These calls are collective, made by every rank in the same order:
 *  fp8rl_trainer_create(), fp8rl_trainer_step(), fp8rl_trainer_iterate(),
 *  fp8rl_trainer_recalibrate(), fp8rl_trainer_gather_weights(),
 *  fp8rl_trainer_next_seeds() (one seed stream
 *  over all ranks: rank r gets the seeds after those of ranks 0..r-1) and
 *  fp8rl_trainer_save_state() (each rank writes its optimizer shard). A batch refused on
 *  one rank is refused on all, naming that rank.
 *
 *  @code
 *  fp8rl_trainer_options options;
 *  fp8rl_trainer_options_init(&options);
 *  fp8rl_trainer* trainer;
 *  fp8rl_trainer_create(policy, &options, &trainer);
 *  for (int step = 0; step < steps; ++step) {
 *    fp8rl_trainer_next_seeds(trainer, num_prompts, seeds);
 *    fp8rl_policy_generate(policy, prompts, prompt_offsets, num_prompts, seeds, &sampling, &rollout);
 *    // ... lay prompts + completions out in a batch, score them: rewards ...
 *    fp8rl_train_batch batch;
 *    fp8rl_train_batch_init(&batch);
 *    // batch.tokens, offsets, num_sequences, prompt_lengths, logp_gen, rewards ...
 *    fp8rl_train_metrics metrics;
 *    fp8rl_train_metrics_init(&metrics);
 *    fp8rl_trainer_iterate(trainer, &batch, &metrics, NULL, 0);  // options.minibatches steps
 *    fp8rl_rollout_destroy(rollout);
 *  }
 *  fp8rl_trainer_save_state(trainer, "run/state.safetensors");
 *  fp8rl_trainer_destroy(trainer);
 *  @endcode
 *  @{ */

/** Opaque handle: a trainer bound to one policy. */
typedef struct fp8rl_trainer fp8rl_trainer;

/** The per-token loss. */
typedef enum fp8rl_loss_kind FP8RL_ENUM_INT32 {
  FP8RL_LOSS_CLIPPED_POLICY_GRADIENT = 0, /**< GRPO/PPO: -w min(r A, clip(r, 1 - clip_low, 1 + clip_high) A)
                                               + w beta KL, r = exp(logp - logp_old). */
  FP8RL_LOSS_CROSS_ENTROPY = 1,           /**< SFT: -logp of every completion token. */
  FP8RL_LOSS_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_loss_kind;

/** Estimator of KL(policy || reference) per token, x = logp_ref - logp. */
typedef enum fp8rl_kl_estimator FP8RL_ENUM_INT32 {
  FP8RL_KL_K1 = 1, /**< -x. */
  FP8RL_KL_K3 = 3, /**< exp(x) - x - 1 (never negative). */
  FP8RL_KL_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_kl_estimator;

/** How token losses become the batch loss. */
typedef enum fp8rl_aggregation FP8RL_ENUM_INT32 {
  FP8RL_AGGREGATION_TOKEN_MEAN = 0,    /**< Mean over all completion tokens of the batch. */
  FP8RL_AGGREGATION_SEQUENCE_MEAN = 1, /**< Mean over sequences of their token means. */
  FP8RL_AGGREGATION_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_aggregation;

/** The baseline advantages are measured from, within a group of completions of one prompt. */
typedef enum fp8rl_advantage_baseline FP8RL_ENUM_INT32 {
  FP8RL_BASELINE_GROUP_MEAN = 0,    /**< A = r - mean of the group. */
  FP8RL_BASELINE_LEAVE_ONE_OUT = 1, /**< A = r - mean of the others (RLOO; group size >= 2). */
  FP8RL_BASELINE_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_advantage_baseline;

/** Learning-rate schedule over optimizer steps. */
typedef enum fp8rl_lr_schedule FP8RL_ENUM_INT32 {
  FP8RL_LR_CONSTANT = 0,        /**< learning_rate throughout. */
  FP8RL_LR_WARMUP_CONSTANT = 1, /**< Linear warmup over warmup_steps, then constant. */
  FP8RL_LR_WARMUP_COSINE = 2,   /**< Linear warmup, then cosine decay to min_lr_ratio * learning_rate at total_steps. */
  FP8RL_LR_FORCE_32BIT = 0x7FFFFFFF
} fp8rl_lr_schedule;

/** Trainer options. Fill with fp8rl_trainer_options_init(). */
typedef struct fp8rl_trainer_options {
  uint32_t struct_size;                /**< sizeof(fp8rl_trainer_options), set by the init function. */
  fp8rl_loss_kind loss;                /**< Default ::FP8RL_LOSS_CLIPPED_POLICY_GRADIENT. */
  double clip_low;                     /**< epsilon_low in [0, 1]; default 0.2. */
  double clip_high;                    /**< epsilon_high >= 0; default 0.2 (DAPO's clip-higher: 0.28). */
  fp8rl_importance_options importance; /**< Token-level IS correction w = exp(logp_old - logp_gen), with the
                                            defaults of fp8rl_importance_options_init() (off). Any other mode
                                            makes a policy-gradient loss need logp_gen in the batch. */
  double kl_coefficient;           /**< beta >= 0 of the KL penalty to the reference; > 0 needs logp_ref. Default 0. */
  fp8rl_kl_estimator kl_estimator; /**< Default ::FP8RL_KL_K3. */
  fp8rl_aggregation aggregation;   /**< Default ::FP8RL_AGGREGATION_TOKEN_MEAN. */
  int32_t group_size;              /**< Completions per prompt, consecutive in the batch (>= 1; default 1):
                                        the groups of reward normalization. */
  fp8rl_advantage_baseline baseline;     /**< Default ::FP8RL_BASELINE_GROUP_MEAN. */
  int32_t normalize_by_std;              /**< Non-zero: divide advantages by the group's std + epsilon. Default 0. */
  int32_t sample_std;                    /**< Non-zero (default): sample std (n - 1); 0: population std. */
  double advantage_epsilon;              /**< >= 0; default 1e-6. */
  double learning_rate;                  /**< Peak learning rate >= 0; default 1e-6. */
  fp8rl_lr_schedule schedule;            /**< Default ::FP8RL_LR_CONSTANT. */
  int64_t warmup_steps;                  /**< >= 0; default 0. */
  int64_t total_steps;                   /**< Cosine schedule: warmup + decay steps; default 0. */
  double min_lr_ratio;                   /**< Cosine schedule: final / peak rate in [0, 1]; default 0. */
  double beta1;                          /**< AdamW beta1 in [0, 1); default 0.9. */
  double beta2;                          /**< AdamW beta2 in [0, 1); default 0.999. */
  double adam_epsilon;                   /**< AdamW epsilon > 0; default 1e-8. */
  double weight_decay;                   /**< >= 0, on matrices only (not norms, biases); default 0.01. */
  double max_grad_norm;                  /**< Global L2 clipping; 0 turns it off. Default 1. */
  float temperature;                     /**< Training log-probs are log softmax(logits / temperature) over the
                                              whole vocabulary (> 0; default 1): use the sampling temperature with
                                              top_k 0 and top_p 1 for log-probs equal to the generator's. */
  int64_t micro_batch_tokens;            /**< Tokens per micro-batch (>= 1; default 2048): activations of one
                                              micro-batch are kept for its backward pass. */
  int32_t recalibrate_after_step;        /**< Non-zero (default): fp8rl_trainer_recalibrate() after every step. */
  fp8rl_calibration_options calibration; /**< How recalibration sets the Q/K/V scales from the training forward
                                              pass, with the defaults of fp8rl_calibration_options_init(). */
  uint64_t seed;                         /**< Seed of fp8rl_trainer_next_seeds(); default 0. */
  int64_t minibatches;                   /**< Optimizer steps per fp8rl_trainer_iterate() (>= 1; default 1): the
                                              batch's sequences in this many consecutive mini-batches of near-equal
                                              count (mini-batch k starts at sequence k * num_sequences / minibatches). */
  double router_aux_loss_coef;           /**< Mixture-of-Experts policies: the weight (finite, >= 0) of the
                                              load-balancing loss of Hugging Face's Qwen3-MoE in the loss, per
                                              micro-batch over its fed tokens and sparse layers. Default 0 (as NeMo RL
                                              and slime train RL: it perturbs the log-probs); the model config's
                                              router_aux_loss_coef is not used. */
  int32_t routing_replay;                /**< Mixture-of-Experts policies, non-zero: the training forward uses the
                                              batch's recorded experts (fp8rl_train_batch::experts, then required)
                                              instead of its router's choice, with gate weights from its own router
                                              (routing replay, for generation and training in different recipes).
                                              Default 0. */
  int32_t freeze_attention_scales;       /**< Non-zero: recalibration keeps the policy's Q/K/V scales (as set when
                                              training begins, or by fp8rl_policy_set_attention_scales()) and only
                                              requantizes the weights: FP8 KV-cache scales calibrated once. Default
                                              0: replaced after every optimizer step. */
} fp8rl_trainer_options;

/**
 * @brief Fills @p options with the defaults each field documents; the embedded
 *        importance and calibration options as their own _init functions fill
 *        them, struct_size included.
 * @param[out] options The struct to fill; struct_size is set.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_options_init(fp8rl_trainer_options* options);

/**
 * @brief Creates a trainer that trains @p policy in place.
 * @param policy A valid policy; it must outlive the trainer (fp8rl_policy_destroy()
 *        refuses while a trainer uses it).
 * @param options Read only during the call.
 * @param[out] out_trainer Receives the trainer, released with fp8rl_trainer_destroy();
 *             unchanged on failure.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or bad options (the message names the field): enum
 *         values out of range, and any value outside the range its field documents (e.g. a negative or
 *         non-finite advantage_epsilon), all refused here rather than at the first step.
 * @retval FP8RL_ERROR_VERSION_MISMATCH if options->struct_size is not one this library knows.
 * @retval FP8RL_ERROR_OUT_OF_MEMORY if the optimizer state or gradients do not fit.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_create(fp8rl_policy* policy, const fp8rl_trainer_options* options,
                                            fp8rl_trainer** out_trainer);

/**
 * @brief Destroys a trainer (the policy keeps its trained weights).
 * @param trainer The trainer, or NULL (then nothing happens).
 * Not thread-safe with other calls on the same trainer.
 * @return ::FP8RL_OK (it cannot fail).
 */
FP8RL_API fp8rl_status fp8rl_trainer_destroy(fp8rl_trainer* trainer);

/**
 * @brief The memory the trainer and its policy hold, by component.
 * @param trainer A valid trainer.
 * @param[out] out_report Receives the report; out_report->struct_size must be set
 *             (fp8rl_memory_report_init() sets it).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * Thread-safe; serialized with calls on the policy's context.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_memory(const fp8rl_trainer* trainer, fp8rl_memory_report* out_report);

/**
 * One batch of sequences for a training step: sequence i is
 * tokens[offsets[i] .. offsets[i + 1]), its first prompt_lengths[i] tokens
 * the prompt and the rest the completion. Per-token arrays cover the
 * completion tokens only, sequence after sequence (as fp8rl_rollout_copy()
 * lays completions out): num_completion_tokens = sum(length_i - prompt_lengths[i]).
 * All arrays are caller-owned and read only during the call. Fill with fp8rl_train_batch_init().
 */
typedef struct fp8rl_train_batch {
  uint32_t struct_size;          /**< sizeof(fp8rl_train_batch), set by the init function. */
  const int32_t* tokens;         /**< offsets[num_sequences] token ids in [0, vocab_size). */
  const int64_t* offsets;        /**< num_sequences + 1 offsets: 0 first, increasing. */
  int64_t num_sequences;         /**< > 0; a multiple of the group size when rewards are given. */
  const int64_t* prompt_lengths; /**< One per sequence, in [1, length]. */
  int64_t num_completion_tokens; /**< The length of the per-token arrays below (checked). */
  const float* logp_gen;         /**< Per completion token: the generator's log-probs. Needed for importance
                                      weighting; when given, the metrics include the mismatch. May be NULL. */
  const float* logp_ref;         /**< Per completion token: a reference policy's log-probs (e.g. from
                                      fp8rl_policy_score()). Needed when kl_coefficient > 0. May be NULL. */
  const float* rewards;          /**< Per sequence; advantages are then normalized within groups. */
  const float* advantages;       /**< Per sequence, given by the host. A policy-gradient loss takes exactly
                                      one of rewards and advantages; cross-entropy takes neither. */
  double generation_seconds;     /**< The host's generation time, reported in the time breakdown; default 0. */
  const float* logp_old;         /**< Per completion token: the policy before the iteration, used as given (must
                                      be finite). NULL (default): the trainer computes it with the weights before
                                      the first update. */
  const int32_t* experts;        /**< Mixture-of-Experts policies: the generator's expert choices, the
                                      fp8rl_rollout_get_experts() arrays of the sequences laid end to end
                                      ([length - 1 positions, sparse layers, k] per sequence). Needed for
                                      routing_replay; otherwise optional, and when given the metrics report
                                      routing_agreement. Ignored for dense policies. May be NULL. */
  int64_t num_expert_choices;    /**< The length of experts (checked): sum(length_i - 1) * sparse layers * k. */
} fp8rl_train_batch;

/**
 * @brief Fills @p batch with NULL arrays, zero counts and struct_size.
 * @param[out] batch The struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_train_batch_init(fp8rl_train_batch* batch);

/**
 * What one optimizer step did, or a whole iteration (fp8rl_trainer_iterate()'s
 * out_iteration, fp8rl_trainer_step()): then skipped and clipped count the
 * steps, loss and grad_norm are means over the steps, the token statistics
 * means over the whole batch, ratio_min/ratio_max extremes, the seconds sums,
 * and the mismatch and reward fields are set (they are the batch's, so a
 * single mini-batch's metrics leave them 0).
 */
typedef struct fp8rl_train_metrics {
  uint32_t struct_size;          /**< sizeof(fp8rl_train_metrics), set by the init function. */
  int64_t step;                  /**< Steps taken, this one (or the iteration's last) included. */
  int32_t skipped;               /**< Non-zero: the gradient was not finite; weights, optimizer state and
                                      scales are unchanged (the message is logged at warning level). */
  int32_t clipped;               /**< Non-zero: the gradient norm exceeded max_grad_norm. */
  double loss;                   /**< The mini-batch loss (token mean over its tokens, or as aggregated). */
  double grad_norm;              /**< Global L2 norm before clipping. */
  double learning_rate;          /**< The rate of this (the last) step. */
  double clip_fraction;          /**< Fraction of tokens whose clipped branch was active. */
  double ratio_mean;             /**< Mean r = exp(logp - logp_old) (1 on-policy). */
  double entropy;                /**< Mean entropy of the training distribution over completion tokens. */
  double kl_k1;                  /**< Mean k1 KL to the reference (0 without logp_ref). */
  double kl_k3;                  /**< Mean k3 KL to the reference (0 without logp_ref). */
  double reward_mean;            /**< Mean reward (0 when advantages were given). */
  int32_t has_mismatch;          /**< Non-zero when logp_gen was given and the fields below are set. */
  double token_mult_prob_error;  /**< Mean exp(|logp_old - logp_gen|); 1 when identical. */
  double gen_kl_error;           /**< Mean k3 of KL(gen || train). */
  double is_weight_mean;         /**< Mean importance weight (1 when off). */
  double is_truncated_fraction;  /**< Fraction of tokens whose weight was truncated. */
  double is_masked_fraction;     /**< Fraction of tokens whose weight was masked to 0. */
  int64_t sequences;             /**< Sequences in the batch. */
  int64_t completion_tokens;     /**< Completion tokens in the batch. */
  int64_t trained_tokens;        /**< Tokens through the training forward and backward passes. */
  double tokens_per_second;      /**< trained_tokens / train_seconds. */
  double generation_seconds;     /**< As the batch reported it. */
  double recompute_seconds;      /**< Computing logp_old for mini-batches after the first (0 with one). */
  double train_seconds;          /**< Forward, backward and optimizer. */
  double recalibration_seconds;  /**< Requantizing the weights and replacing the attention scales. */
  double recalibration_fraction; /**< recalibration / (generation + recompute + train + recalibration). */
  double ratio_min;              /**< Smallest r = exp(logp - logp_old) over the tokens. */
  double ratio_max;              /**< Largest r. */
  double old_policy_kl;          /**< Mean k3 estimate of KL(old || current), exp(x) - x - 1 with
                                      x = logp - logp_old: how far the policy taking the step has moved from the
                                      one before the iteration (0 on the first mini-batch). */
  int64_t minibatches;           /**< Optimizer steps these metrics cover (1 for one step). */
  /* Data parallelism (all 0 with one rank). With a communicator every other
     field is global: counts and means over all ranks' sequences and tokens. */
  int64_t bytes_reduced;         /**< Bytes this rank sent into gradient reductions. */
  int64_t bytes_gathered;        /**< Bytes this rank received in weight gathers (FP8 codes and block scales
                                      for FP8 linear layers, FP32 for the rest). */
  double communication_seconds;  /**< Time in collectives (included in train_seconds). */
  /* Mixture-of-Experts policies (all 0 for dense ones). */
  int64_t routing_choices;       /**< (fed token, sparse layer, slot) choices compared with the batch's experts
                                      (0 when the batch brought none). */
  double routing_agreement;      /**< Share of the training router's choices the generator also made for that
                                      token and layer: exactly 1 when both ran one recipe. Measured on the
                                      router's own choice, also under routing_replay (then on the hidden
                                      states the replayed experts of earlier layers computed). */
  double router_aux_loss;        /**< The load-balancing loss (without its coefficient), a fed-token mean. */
} fp8rl_train_metrics;

/**
 * @brief Prepares @p metrics for fp8rl_trainer_step() or fp8rl_trainer_iterate():
 *        sets struct_size and zeroes the other fields.
 * @param[out] metrics Caller-owned struct to fill.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT if @p metrics is NULL.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_train_metrics_init(fp8rl_train_metrics* metrics);

/**
 * @brief One training step on a batch: the one-mini-batch iteration
 *        (fp8rl_trainer_iterate() with minibatches = 1, whatever the options say).
 * @param trainer A valid trainer.
 * @param batch The batch; read only during the call.
 * @param[out] out_metrics Receives the metrics; out_metrics->struct_size must be set
 *             (fp8rl_train_metrics_init() sets it).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, malformed sequences, prompt lengths or
 *         counts, a missing or extra array for the loss (the message names it: e.g. rewards or advantages
 *         given to the cross-entropy loss); nothing changes then.
 * @retval FP8RL_ERROR_NON_FINITE for NaN/Inf rewards, advantages, or log-probs where the loss reads them.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * A step whose gradient is not finite is not an error: it returns ::FP8RL_OK with skipped set.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_step(fp8rl_trainer* trainer, const fp8rl_train_batch* batch,
                                          fp8rl_train_metrics* out_metrics);

/**
 * @brief One training iteration: options.minibatches optimizer steps on one
 *        rollout batch, as PPO takes them.
 *
 * Once, before any update: logp_old (batch->logp_old, or the policy's own
 * log-probs before the iteration: the first mini-batch's training forward
 * gives its part, one scoring pass the rest), the advantages, the
 * importance weights w = exp(logp_old - logp_gen) and the mismatch metrics.
 * Then for each mini-batch in order: forward and backward over micro-batches,
 * clipping, an AdamW step and (recalibrate_after_step) recalibration. From
 * the second mini-batch on the ratio r = exp(logp - logp_old) departs from 1
 * and the clip acts. A step whose gradient is not finite is skipped (as in
 * fp8rl_trainer_step()) and the iteration goes on.
 * @param trainer A valid trainer.
 * @param batch The batch, with at least options.minibatches sequences; read only during the call.
 * @param[out] out_iteration Receives the whole iteration's metrics (see ::fp8rl_train_metrics);
 *             out_iteration->struct_size must be set (fp8rl_train_metrics_init() sets it).
 * @param[out] out_minibatches NULL, or caller-owned metrics of each step in order, each with
 *             struct_size set (fp8rl_train_metrics_init() on each); @p capacity must then be at
 *             least options.minibatches.
 * @param capacity Entries of @p out_minibatches (0 when NULL).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT as fp8rl_trainer_step(), and for fewer sequences than
 *         minibatches or a too small capacity; nothing changes then.
 * @retval FP8RL_ERROR_NON_FINITE as fp8rl_trainer_step(), and for a NaN/Inf logp_old; every array is
 *         checked before the first update.
 * @retval FP8RL_ERROR_VERSION_MISMATCH for a struct_size this library does not know.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_iterate(fp8rl_trainer* trainer, const fp8rl_train_batch* batch,
                                             fp8rl_train_metrics* out_iteration, fp8rl_train_metrics* out_minibatches,
                                             int64_t capacity);

/**
 * @brief The completion tokens' log-probs under the training distribution (log
 *        softmax(logits / temperature)), as a step recomputes logp_old.
 * @param trainer A valid trainer.
 * @param tokens Caller-owned token ids, offsets[num_sequences] of them.
 * @param offsets Caller-owned, num_sequences + 1 offsets: 0 first, increasing.
 * @param num_sequences Number of sequences (> 0).
 * @param prompt_lengths Caller-owned, one per sequence, in [1, length].
 * @param[out] logprobs Caller-owned; receives sum(length_i - prompt_lengths[i]) values.
 * @param capacity Capacity of @p logprobs; at least that sum.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, malformed sequences or a too small capacity.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_recompute_logprobs(fp8rl_trainer* trainer, const int32_t* tokens,
                                                        const int64_t* offsets, int64_t num_sequences,
                                                        const int64_t* prompt_lengths, float* logprobs,
                                                        int64_t capacity);

/**
 * @brief Requantizes every compute copy of the policy's weights from its FP32
 *        master weights (fresh block scales) and applies the attention scales
 *        measured in the last step's training forward pass, if any (none
 *        under fp8rl_trainer_options::freeze_attention_scales).
 *
 * Steps call it themselves unless recalibrate_after_step is 0.
 * @param trainer A valid trainer.
 * @param[out] out_seconds NULL, or receives the time it took.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL trainer.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_recalibrate(fp8rl_trainer* trainer, double* out_seconds);

/**
 * @brief Data parallelism: all-gathers the FP32 master weights, so that every
 *        rank's policy holds all of them again (each rank updates only its
 *        optimizer slice's).
 *
 * Collective: every rank calls it. Call it before reading a policy's master
 * weights after a data-parallel step: saving or exporting it, changing its
 * recipe, copying its weights, or destroying the trainer when the policy is
 * used afterwards. fp8rl_trainer_save_state() gathers them itself. Returns at
 * once with one rank or when the masters are whole.
 * @param trainer A valid trainer.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL trainer.
 * @retval FP8RL_ERROR_DISTRIBUTED when the collective fails (a peer gone).
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_gather_weights(fp8rl_trainer* trainer);

/**
 * @brief Seeds for the next @p count rollouts, from the trainer's seed stream
 *        (part of the saved state, so a resumed run draws the same seeds).
 * @param trainer A valid trainer.
 * @param count Number of seeds, in [0, 2^31 - 1] (INT32_MAX: more than any run draws at once).
 * @param[out] seeds Caller-owned, count entries (may be NULL when @p count is 0); left unchanged on failure.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for a NULL pointer, or a count outside [0, INT32_MAX] (the message
 *         names count); the seed stream does not move then.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_next_seeds(fp8rl_trainer* trainer, int64_t count, uint64_t* seeds);

/**
 * @brief Saves the whole training state (master weights, optimizer moments,
 *        step counters, seed stream, recipe, attention scales).
 *
 * With one rank: one file at @p path. With N ranks (collective: every rank
 * calls it with the same path, in a folder all ranks reach): a checkpoint
 * set, where each rank writes its optimizer shard to
 * "<path>.<set>.rank<r>.safetensors", rank 0 the weights to
 * "<path>.<set>.weights.safetensors" and then, once every rank's files are
 * complete, the manifest at @p path; the files of older sets are then
 * removed. Every write is atomic and the manifest comes last: a crash
 * mid-save leaves the previous checkpoint whole and loadable.
 * @param trainer A valid trainer.
 * @param path The file (or manifest) to write (a .safetensors file; its folder must exist).
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * @retval FP8RL_ERROR_IO if a file cannot be written (with N ranks: on every
 *         rank, the message naming the rank that failed).
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_save_state(fp8rl_trainer* trainer, const char* path);

/**
 * @brief Restores a state fp8rl_trainer_save_state() wrote; later steps
 *        continue bit for bit as the saved run did (given the same options
 *        and world size).
 *
 * Reads a single file or a checkpoint set, whatever world size wrote it:
 * each rank reads the weights and the shard files that overlap its own
 * optimizer shard, so a set re-shards onto another number of ranks. The
 * files are read and validated in full before anything changes.
 * @param trainer A valid trainer whose policy has the saved model's config.
 * @param path The file to read.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers or a state of another model.
 * @retval FP8RL_ERROR_IO if the file cannot be read.
 * @retval FP8RL_ERROR_CORRUPT_DATA for a damaged or incomplete file (the message names the item).
 * @retval FP8RL_ERROR_NON_FINITE for NaN/Inf weights, moments or scales.
 * Thread-safe; calls on the policy's context are serialized.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_trainer_load_state(fp8rl_trainer* trainer, const char* path);

/**
 * @brief The wall-clock seconds fp8rl_policy_generate() took to produce @p rollout
 *        (for fp8rl_train_batch::generation_seconds).
 * @param rollout A valid rollout.
 * @param[out] out_seconds Receives the time.
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers.
 * Thread-safe (a rollout is read-only).
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_rollout_seconds(const fp8rl_rollout* rollout, double* out_seconds);

/** @} */

/** @defgroup numerics FP8 and BF16 conversion and block quantization
 *  @{ */

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
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, an unknown dtype, or a count whose
 *         F32 bytes overflow size_t.
 * @retval FP8RL_ERROR_UNSUPPORTED for pairs other than F32 <-> {BF16, E4M3, E5M2}.
 * Thread-safe.
 * @return ::FP8RL_OK, or an error status; fp8rl_last_error_message() then says why.
 */
FP8RL_API fp8rl_status fp8rl_convert(const void* src, fp8rl_dtype src_dtype, void* dst, fp8rl_dtype dst_dtype,
                                     size_t count, int32_t saturate);

/** How a matrix [rows, cols] is cut into blocks that share one scale. */
typedef enum fp8rl_block_layout FP8RL_ENUM_INT32 {
  /** 1x128 tiles along each row. Codes [rows, cols], scales [rows, ceil(cols/128)]. Activations, gradients. */
  FP8RL_LAYOUT_TILE_1X128 = 0,
  /** 1x128 tiles along each column, stored transposed. Codes [cols, rows], scales [cols, ceil(rows/128)]. For wgrad. */
  FP8RL_LAYOUT_TILE_1X128_TRANSPOSED = 1,
  /** 128x128 blocks. Codes [rows, cols], scales [ceil(rows/128), ceil(cols/128)]. Weights. */
  FP8RL_LAYOUT_BLOCK_128X128 = 2,
  FP8RL_LAYOUT_FORCE_32BIT = 0x7FFFFFFF /**< Keeps the enum 32 bits wide. */
} fp8rl_block_layout;

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
 * @retval FP8RL_ERROR_INVALID_ARGUMENT for NULL pointers, a bad shape, counts that do not match.
 * @retval FP8RL_ERROR_NON_FINITE for a scale that is not a finite positive number.
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
