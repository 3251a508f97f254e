# Errors: every failure, the library's or the binding's, is an FP8RLError.

"""
    FP8RLError <: Exception

A failed fp8rl call, or a bad argument the binding caught before calling C.

Fields:
- `status::Int32`: the `fp8rl_status` code (`FP8RL.LibFP8RL.FP8RL_ERROR_*`);
- `status_name::String`: its name, e.g. `"FP8RL_ERROR_INVALID_ARGUMENT"`;
- `message::String`: what went wrong. The library's messages start with the C
  function's name (`"fp8rl_policy_generate: ..."`); the binding's start with
  the Julia function's (`"generate: prompts[2][3]: ..."`, 1-based positions) and
  carry `FP8RL_ERROR_INVALID_ARGUMENT`, or `FP8RL_ERROR_NON_FINITE` for NaN/Inf.
"""
struct FP8RLError <: Exception
    status::Int32
    status_name::String
    message::String
end

FP8RLError(status::Integer, message::AbstractString) =
    FP8RLError(Int32(status), _status_name(status), String(message))

Base.showerror(io::IO, e::FP8RLError) = print(io, "FP8RLError: ", e.message, " [", e.status_name, "]")

_status_name(status::Integer) = unsafe_string(L.fp8rl_status_name(Cint(status)))

# The binding's own errors, raised before anything reaches C.
_invalid(message::AbstractString) = FP8RLError(L.FP8RL_ERROR_INVALID_ARGUMENT, message)
_non_finite(message::AbstractString) = FP8RLError(L.FP8RL_ERROR_NON_FINITE, message)

"""
    FP8RL.check(status)

Returns `nothing` for `FP8RL_OK`; otherwise throws an [`FP8RLError`](@ref) with
`status` and this thread's last error message. Call it on the status of a raw
`LibFP8RL` call, directly: the message is per thread and the next fp8rl call
on the thread may replace it.
"""
function check(status::Integer)
    status == L.FP8RL_OK || _throw_library_error(status)
    _flush_log()
    return nothing
end

@noinline function _throw_library_error(status::Integer)
    # A finalizer may run at any allocation and call fp8rl_*_destroy on this
    # thread, which would replace the message under us: none runs while it is read.
    GC.enable_finalizers(false)
    text = try
        unsafe_string(L.fp8rl_last_error_message())
    finally
        GC.enable_finalizers(true)
    end
    err = FP8RLError(status, isempty(text) ? "($(_status_name(status)) without a message)" : text)
    _flush_log()
    throw(err)
end
