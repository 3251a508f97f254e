# Communicators over the host's own collectives (`fp8rl_collective_callbacks`):
# Julia functions behind @cfunction trampolines.
#
# The callbacks' user_data is a _HostCollectives, rooted in _ROOTED from
# creation until the library's destroy callback (the last reference to the
# communicator gone: its handle and every context using it), so the garbage
# collector never frees what C may still call. The collectives run inside a
# library call: like the log callback they count in _IN_CALLBACK (finalizers
# then wait), and nothing unwinds into C: an exception becomes a non-zero
# return and the message error_message hands back.

mutable struct _HostCollectives
    const callbacks::Any     # the object whose functions the trampolines call
    const world_size::Int
    last_error::String       # why the last collective failed
end

const _ROOTED = IdDict{_HostCollectives,Nothing}()
# Guards _ROOTED; taken with finalizers disabled, since destroy may run in one.
const _ROOTED_LOCK = Threads.SpinLock()

function _rooted!(f, state::_HostCollectives)
    GC.enable_finalizers(false)
    lock(_ROOTED_LOCK)
    try
        f(_ROOTED, state)
    finally
        unlock(_ROOTED_LOCK)
        GC.enable_finalizers(true)
    end
    return nothing
end

_root!(state) = _rooted!((rooted, s) -> (rooted[s] = nothing), state)
_unroot!(state) = _rooted!((rooted, s) -> delete!(rooted, s), state)

"""
    Communicator(callbacks; rank, world_size, name = nothing)

A communicator over the host's own collectives
(`fp8rl_communicator_create_from_callbacks`): this process is rank `rank` of
`world_size`. `callbacks` is any object with these properties (a NamedTuple
of functions, or a struct), each called with arrays that view the library's
buffers during the call, in place:

- `all_reduce_sum!(data)`: `data` (`Vector{Float32}`, `Float64` or `Int64`) =
  its element-wise sum over the ranks;
- `all_gather!(data, counts)`: every rank receives every rank's part of
  `data`; rank r's part is the `counts[r + 1]` elements after those of ranks
  `0:r-1` (any element type, `UInt8` included);
- `broadcast!(data, root)`: `data` = rank `root`'s;
- optional `reduce_scatter_sum!(data, counts)`: rank r's part = that part's
  sum over the ranks (without it the library sums the whole buffer with
  `all_reduce_sum!`);
- optional `barrier()`: returns when every rank has called it (without it,
  a one-value `all_reduce_sum!`).

Sum in the same order on every rank: the library relies on every rank
computing bitwise the same sums. A function that throws fails the training
call with `FP8RL_ERROR_DISTRIBUTED`, naming the collective, the rank and the
exception. The functions run inside a library call: they must not yield to
other tasks (blocking MPI calls are fine; `wait`, `sleep`, `@sync` and
channels are not). `name` appears in messages and the context's description.
The callbacks stay alive while the communicator or any context using it does.
"""
function Communicator(callbacks; rank::Integer, world_size::Integer, name::Union{Nothing,AbstractString} = nothing)
    for required in (:all_reduce_sum!, :all_gather!, :broadcast!)
        hasproperty(callbacks, required) ||
            throw(_invalid("Communicator: the callbacks have no `$required`; they need all_reduce_sum!, " *
                           "all_gather! and broadcast!"))
    end
    given(key) = hasproperty(callbacks, key) && getproperty(callbacks, key) !== nothing
    trampolines = _COLLECTIVE_TRAMPOLINES[]
    state = _HostCollectives(callbacks, world_size, "")
    c_name = name === nothing ? nothing : String(name)
    out = Ref{Ptr{L.fp8rl_communicator}}(C_NULL)
    _root!(state)
    created = false
    try
        GC.@preserve c_name begin
            raw = L.fp8rl_collective_callbacks(
                sizeof(L.fp8rl_collective_callbacks), rank, world_size,
                trampolines.all_reduce_sum, given(:reduce_scatter_sum!) ? trampolines.reduce_scatter_sum : C_NULL,
                trampolines.all_gather, trampolines.broadcast, given(:barrier) ? trampolines.barrier : C_NULL,
                trampolines.error_message, trampolines.destroy,
                c_name === nothing ? C_NULL : Base.unsafe_convert(Cstring, c_name),
                pointer_from_objref(state))
            check(L.fp8rl_communicator_create_from_callbacks(Ref(raw), out))
        end
        created = true
    finally
        created || _unroot!(state)  # no communicator took it, so destroy will never come
    end
    return Communicator(out[])
end

# The element type of an fp8rl_element_type.
function _element_type(element_type::Cint)
    element_type == L.FP8RL_ELEMENT_F32 && return Float32
    element_type == L.FP8RL_ELEMENT_F64 && return Float64
    element_type == L.FP8RL_ELEMENT_I64 && return Int64
    element_type == L.FP8RL_ELEMENT_U8 && return UInt8
    throw(ArgumentError("unknown element type $element_type"))
end

# `count` elements of the library's buffer as a Vector, valid during the call only.
function _view(data::Ptr{Cvoid}, count::Integer, element_type::Cint)
    T = _element_type(element_type)
    return count == 0 ? T[] : unsafe_wrap(Array, Ptr{T}(data), Int(count))
end

_counts(counts::Ptr{Int64}, world_size::Int) = [Int(unsafe_load(counts, i)) for i in 1:world_size]

# Runs f(callbacks, world_size) for the state behind user_data: 0, or 1 with the message kept.
function _run_collective(f, user_data::Ptr{Cvoid})::Cint
    Threads.atomic_add!(_IN_CALLBACK, 1)
    state = unsafe_pointer_to_objref(user_data)::_HostCollectives
    try
        f(state.callbacks, state.world_size)
        return 0
    catch err
        state.last_error = try
            sprint(showerror, err)
        catch
            "an exception that cannot be shown"
        end
        return 1
    finally
        Threads.atomic_sub!(_IN_CALLBACK, 1)
    end
end

function _all_reduce_sum_trampoline(data::Ptr{Cvoid}, count::Int64, element_type::Cint,
                                    user_data::Ptr{Cvoid})::Cint
    return _run_collective(user_data) do callbacks, _
        callbacks.all_reduce_sum!(_view(data, count, element_type))
    end
end

function _reduce_scatter_sum_trampoline(data::Ptr{Cvoid}, counts::Ptr{Int64}, element_type::Cint,
                                        user_data::Ptr{Cvoid})::Cint
    return _run_collective(user_data) do callbacks, world_size
        parts = _counts(counts, world_size)
        callbacks.reduce_scatter_sum!(_view(data, sum(parts), element_type), parts)
    end
end

function _all_gather_trampoline(data::Ptr{Cvoid}, counts::Ptr{Int64}, element_type::Cint,
                                user_data::Ptr{Cvoid})::Cint
    return _run_collective(user_data) do callbacks, world_size
        parts = _counts(counts, world_size)
        callbacks.all_gather!(_view(data, sum(parts), element_type), parts)
    end
end

function _broadcast_trampoline(data::Ptr{Cvoid}, count::Int64, element_type::Cint, root::Int32,
                               user_data::Ptr{Cvoid})::Cint
    return _run_collective(user_data) do callbacks, _
        callbacks.broadcast!(_view(data, count, element_type), Int(root))
    end
end

function _barrier_trampoline(user_data::Ptr{Cvoid})::Cint
    return _run_collective((callbacks, _) -> callbacks.barrier(), user_data)
end

# The last failure's message; the String stays referenced by the rooted state
# until the next failure, and the library copies it at once.
function _error_message_trampoline(user_data::Ptr{Cvoid})::Ptr{UInt8}
    state = unsafe_pointer_to_objref(user_data)::_HostCollectives
    return pointer(state.last_error)
end

function _destroy_trampoline(user_data::Ptr{Cvoid})::Cvoid
    _unroot!(unsafe_pointer_to_objref(user_data)::_HostCollectives)
    return nothing
end

# The C function pointers of the trampolines, made in __init__ (one made
# during precompilation would be stale).
const _COLLECTIVE_TRAMPOLINES = Ref{NamedTuple}()

function _init_collective_trampolines()
    _COLLECTIVE_TRAMPOLINES[] = (
        all_reduce_sum = @cfunction(_all_reduce_sum_trampoline, Cint, (Ptr{Cvoid}, Int64, Cint, Ptr{Cvoid})),
        reduce_scatter_sum = @cfunction(_reduce_scatter_sum_trampoline, Cint,
                                        (Ptr{Cvoid}, Ptr{Int64}, Cint, Ptr{Cvoid})),
        all_gather = @cfunction(_all_gather_trampoline, Cint, (Ptr{Cvoid}, Ptr{Int64}, Cint, Ptr{Cvoid})),
        broadcast = @cfunction(_broadcast_trampoline, Cint, (Ptr{Cvoid}, Int64, Cint, Int32, Ptr{Cvoid})),
        barrier = @cfunction(_barrier_trampoline, Cint, (Ptr{Cvoid},)),
        error_message = @cfunction(_error_message_trampoline, Ptr{UInt8}, (Ptr{Cvoid},)),
        destroy = @cfunction(_destroy_trampoline, Cvoid, (Ptr{Cvoid},)),
    )
    return nothing
end
