#!/usr/bin/env python3
"""Loads libfp8rl with ctypes, binds it with fp8rl._raw.bind() and calls a few functions.

Usage: check_load.py LIBFP8RL PYTHON_PACKAGE_DIR
Wrong argtypes/restype show up here as wrong values or crashes.
"""
import ctypes
import sys


def main(library, package_dir):
    sys.path.insert(0, package_dir)
    from fp8rl import _raw as r

    lib = r.bind(ctypes.CDLL(library))

    def ok(status):
        assert status == r.FP8RL_OK, (r.ENUMS["fp8rl_status"], status, lib.fp8rl_last_error_message())

    # Versions: restype c_uint32 and c_char_p.
    assert lib.fp8rl_version() == r.FP8RL_VERSION, lib.fp8rl_version()
    major, minor, patch = (int(x) for x in lib.fp8rl_version_string().decode().split("."))
    assert (major, minor, patch) == (r.FP8RL_VERSION_MAJOR, r.FP8RL_VERSION_MINOR, r.FP8RL_VERSION_PATCH)
    for name, value in r.ENUMS["fp8rl_status"].items():
        expected = name if not name.endswith("FORCE_32BIT") else None
        if expected:
            assert lib.fp8rl_status_name(value).decode() == expected, name
    assert lib.fp8rl_status_name(12345) == b"FP8RL_STATUS_UNKNOWN"

    # Error path: NULL options, then the per-thread message.
    assert lib.fp8rl_context_options_init(None) == r.FP8RL_ERROR_INVALID_ARGUMENT
    assert lib.fp8rl_last_error_message(), "expected an error message"

    # A CPU context with a Python log callback (kept alive in `callback`).
    messages = []
    callback = r.fp8rl_log_callback(lambda level, text, user: messages.append((level, text)))
    options = r.fp8rl_context_options()
    ok(lib.fp8rl_context_options_init(ctypes.byref(options)))
    assert options.struct_size == ctypes.sizeof(r.fp8rl_context_options)
    options.backend = r.FP8RL_BACKEND_CPU
    options.num_threads = 1
    options.log_level = r.FP8RL_LOG_DEBUG
    options.log_callback = callback
    context = ctypes.c_void_p()
    ok(lib.fp8rl_context_create(ctypes.byref(options), ctypes.byref(context)))
    assert context.value
    backend = r.fp8rl_backend()
    ok(lib.fp8rl_context_get_backend(context, ctypes.byref(backend)))
    assert backend.value == r.FP8RL_BACKEND_CPU
    threads = ctypes.c_int32()
    ok(lib.fp8rl_context_get_num_threads(context, ctypes.byref(threads)))
    assert threads.value == 1
    description = ctypes.c_char_p()
    ok(lib.fp8rl_context_get_description(context, ctypes.byref(description)))
    assert description.value.startswith(b"CPU"), description.value

    # Pointer arguments: F32 -> E4M3 -> F32 round trip of exactly representable values.
    values = (ctypes.c_float * 4)(1.0, -2.0, 0.5, 448.0)
    codes = (ctypes.c_uint8 * 4)()
    back = (ctypes.c_float * 4)()
    ok(lib.fp8rl_convert(values, r.FP8RL_DTYPE_F32, codes, r.FP8RL_DTYPE_E4M3, 4, 1))
    ok(lib.fp8rl_convert(codes, r.FP8RL_DTYPE_E4M3, back, r.FP8RL_DTYPE_F32, 4, 1))
    assert list(back) == list(values), list(back)
    ok(lib.fp8rl_context_destroy(context))

    # Model config: int64 fields, an int64 array field, an int64 out-parameter.
    config = r.fp8rl_model_config()
    ok(lib.fp8rl_model_config_init(ctypes.byref(config)))
    assert config.bos_token_id == -1 and config.rope_theta == 10000.0
    config.vocab_size, config.hidden_size, config.num_layers = 256, 64, 2
    config.num_attention_heads, config.num_key_value_heads = 4, 2
    config.intermediate_size, config.max_position_embeddings = 128, 512
    config.eos_token_ids[0], config.num_eos_token_ids = 255, 1
    count = ctypes.c_int64()
    ok(lib.fp8rl_model_config_parameter_count(ctypes.byref(config), ctypes.byref(count)))
    head_dim, kv_dim = 64 // 4, 2 * (64 // 4)
    per_layer = 64 * 64 + 2 * 64 * kv_dim + 64 * 64 + 3 * 64 * 128 + 2 * 64  # q, k+v, o, SwiGLU, 2 norms
    expected = 2 * 256 * 64 + 2 * per_layer + 64  # embeddings + LM head, layers, final norm
    assert count.value == expected, (count.value, expected, head_dim)

    # A bad config fails and names a field.
    config.vocab_size = 0
    assert lib.fp8rl_model_config_parameter_count(ctypes.byref(config), ctypes.byref(count)) == \
        r.FP8RL_ERROR_INVALID_ARGUMENT
    assert b"vocab_size" in lib.fp8rl_last_error_message(), lib.fp8rl_last_error_message()

    print(f"OK: {len(r._FUNCTIONS)} functions bound; {len(messages)} log messages received")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
