# Ownership of the C handles: each Julia handle destroys its C object exactly
# once, by `close` or by its finalizer, never while a child still needs it.
#
# The C API's rules (fp8rl.h): a context outlives its policies and a policy
# its trainers (their destroy functions refuse otherwise); rollouts are copies
# that depend on nothing. Each child keeps a reference to its parent, so a
# parent is never garbage before its children; but when both become garbage
# together, Julia runs their finalizers in no particular order. So a finalizer
# whose destroy the library refuses marks its handle `pending`, and the last
# child to be destroyed destroys its pending parent.
#
# Every concrete handle has the fields `ptr` (C_NULL once destroyed) and
# `pending`, and methods of _raw_destroy, _parent and _kind.

abstract type _Handle end

"""
    isopen(handle) -> Bool

Whether a [`Context`](@ref), [`Policy`](@ref), [`Rollout`](@ref) or
[`Trainer`](@ref) is still usable (not yet closed or finalized).
"""
Base.isopen(h::_Handle) = h.ptr != C_NULL

# The C pointer of an open handle; a closed one throws instead of letting C see a dangling pointer.
function _ptr(h::_Handle)
    h.ptr == C_NULL && throw(_invalid("this $(_kind(h)) is closed"))
    return h.ptr
end

"""
    close(handle)

Destroys the C object of a [`Context`](@ref), [`Policy`](@ref),
[`Rollout`](@ref) or [`Trainer`](@ref) now rather than at garbage collection.
Idempotent. The library refuses, and `close` throws an [`FP8RLError`](@ref)
(`FP8RL_ERROR_INVALID_ARGUMENT`) leaving the handle open, for a context whose
policies are open or a policy whose trainers are: close those first. Closing
a policy also closes the context it made for itself (when none was passed).
Not thread-safe with other calls on the same handle.
"""
function Base.close(h::_Handle)
    h.ptr == C_NULL && return nothing
    check(_raw_destroy(h))
    h.ptr = C_NULL
    _closed(h)
    return nothing
end

# What else closing a handle closes (a policy's own context, a rollout's copies).
_closed(::_Handle) = nothing

# Finalizers share this lock; one that cannot take it (another finalizer of
# this thread holds it) tries again at a later collection.
const _FINALIZER_LOCK = Threads.SpinLock()

function _finalize(h::_Handle)
    # Inside a log callback a library call is in progress: destroying now would
    # re-enter the library. Then, and while the lock is taken, try again later
    # (finalizers cannot wait: re-registering is the documented way to defer).
    if _IN_CALLBACK[] > 0 || !trylock(_FINALIZER_LOCK)
        finalizer(_finalize, h)
        return nothing
    end
    try
        h.pending = true
        _destroy_pending!(h)
    finally
        unlock(_FINALIZER_LOCK)
    end
    return nothing
end

# Destroys a pending handle unless the library refuses (children still alive:
# the last of them comes back here), then releases its parent if that is pending.
function _destroy_pending!(h::_Handle)
    h.ptr == C_NULL && return nothing
    _raw_destroy(h) == L.FP8RL_OK || return nothing
    h.ptr = C_NULL
    h.pending = false
    parent = _parent(h)
    if parent !== nothing && parent.pending
        _destroy_pending!(parent)
    end
    return nothing
end

# Closes a handle on an error path, where the error being thrown matters more
# than a refusal (the finalizer then destroys it).
function _close_quietly(h::_Handle)
    try
        close(h)
    catch
    end
    return nothing
end

# `f(handle)`, then close the handle even if f throws: the body of the do-block forms.
function _closing(f, h::_Handle)
    result = try
        f(h)
    catch
        _close_quietly(h)
        rethrow()
    end
    close(h)
    return result
end
