# Contexts: a backend (device, CPU threads, memory) plus logging.

"""
    Context(; backend = :cpu, num_threads = 0, cuda_device = 0, log_level = :warning, communicator = nothing)
    Context(f; options...)

A backend plus logging (`fp8rl_context`): where computations run. `backend` is
`:cpu`, `:cuda` or `:auto` (CUDA if built and a device is present); the
binding defaults to `:cpu`, as the Python one does, where the C default is
`:auto`. `num_threads` 0 uses every hardware thread. Library messages at or
above `log_level` (`:debug`, `:info`, `:warning`, `:error`, `:off`) go to
Julia's logging, from module `FP8RL`, when the call that logged returns.
With a [`Communicator`](@ref) the context's trainers are data-parallel over
its ranks ([`rank`](@ref), [`world_size`](@ref)); the context keeps its own
reference to it. The other defaults are `fp8rl_context_options_init`'s.

Calls on one context and its policies are serialized by the library, so a
context may be shared by tasks and threads; policies on different contexts
run in parallel. A context must outlive its policies: `close` refuses while
any is open. The do-block form closes the context when `f` returns.
"""
mutable struct Context <: _Handle
    ptr::Ptr{L.fp8rl_context}
    pending::Bool
    function Context(ptr::Ptr{L.fp8rl_context})
        return finalizer(_finalize, new(ptr, false))
    end
end

function Context(; backend = :cpu, num_threads = nothing, cuda_device = nothing, log_level = nothing,
                 communicator::Union{Nothing,Communicator} = nothing)
    defaults = _c_defaults(L.fp8rl_context_options)
    options = _with(defaults;
                    backend = _c(_BACKEND, backend, "Context: backend"),
                    num_threads = something(num_threads, defaults.num_threads),
                    cuda_device = something(cuda_device, defaults.cuda_device),
                    log_level = _c(_LOG_LEVEL, something(log_level, defaults.log_level), "Context: log_level"),
                    log_callback = _LOG_CALLBACK[], log_user_data = C_NULL,
                    communicator = communicator === nothing ? C_NULL : _ptr(communicator))
    out = Ref{Ptr{L.fp8rl_context}}(C_NULL)
    GC.@preserve communicator check(L.fp8rl_context_create(Ref(options), out))
    return Context(out[])
end

Context(f::Function; options...) = _closing(f, Context(; options...))

# Passing a Context where the raw layer wants its pointer: ccall keeps the
# Context (and so the C object) alive for the duration of the call.
Base.unsafe_convert(::Type{Ptr{L.fp8rl_context}}, ctx::Context) = _ptr(ctx)

_raw_destroy(ctx::Context) = L.fp8rl_context_destroy(ctx.ptr)
_parent(::Context) = nothing
_kind(::Context) = "context"

Base.show(io::IO, ctx::Context) = print(io, "FP8RL.Context(", isopen(ctx) ? "open" : "closed", ")")

"""
    backend(ctx::Context) -> Symbol

The backend the context runs on: `:cpu` or `:cuda` (never `:auto`).
"""
function backend(ctx::Context)
    value = Ref{Cint}(0)
    check(L.fp8rl_context_get_backend(ctx, value))
    return _from_c(_BACKEND, value[])
end

"""
    num_threads(ctx::Context) -> Int

The number of CPU worker threads of the context (>= 1).
"""
function num_threads(ctx::Context)
    value = Ref{Int32}(0)
    check(L.fp8rl_context_get_num_threads(ctx, value))
    return Int(value[])
end

"""
    description(ctx::Context) -> String

The context's device in words, e.g. `"CPU (AVX-512, 2 threads)"`.
"""
function description(ctx::Context)
    value = Ref{Cstring}()
    # The string belongs to the context: copy it while the context is surely alive.
    return GC.@preserve ctx begin
        check(L.fp8rl_context_get_description(ctx, value))
        unsafe_string(value[])
    end
end

rank(ctx::Context) = _context_int(L.fp8rl_context_get_rank, ctx)
world_size(ctx::Context) = _context_int(L.fp8rl_context_get_world_size, ctx)

function _context_int(get, ctx::Context)
    value = Ref{Int32}(0)
    check(get(ctx, value))
    return Int(value[])
end
