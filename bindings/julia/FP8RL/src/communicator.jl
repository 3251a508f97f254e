# Communicators: the ranks that train one policy together (data parallelism),
# over MPI (libfp8rl_mpi, loaded when first asked for), NCCL, or the host's own
# collectives (host_collectives.jl).

"""
    Communicator

A group of ranks that train one policy together (`fp8rl_communicator`). Pass
it to [`Context`](@ref) as `communicator = ...`: the context's trainers become
data-parallel (each rank trains on its own rollouts, gradients are summed over
the ranks, every rank ends each step with bitwise the same weights, which
[`fingerprint`](@ref) shows). The context keeps its own reference, so the
communicator may be closed once the context exists.

Made by [`mpi_communicator`](@ref) (MPI, from an MPI.jl communicator or a
Fortran handle), [`nccl_communicator`](@ref) (NCCL, GPU memory) or
`Communicator(callbacks; rank, world_size)` (the host's own collectives).
Every rank makes the same training calls in the same order.
"""
mutable struct Communicator <: _Handle
    ptr::Ptr{L.fp8rl_communicator}
    pending::Bool
    function Communicator(ptr::Ptr{L.fp8rl_communicator})
        return finalizer(_finalize, new(ptr, false))
    end
end

Base.unsafe_convert(::Type{Ptr{L.fp8rl_communicator}}, c::Communicator) = _ptr(c)

_raw_destroy(c::Communicator) = L.fp8rl_communicator_destroy(c.ptr)
_parent(::Communicator) = nothing
_kind(::Communicator) = "communicator"

Base.show(io::IO, c::Communicator) =
    print(io, "FP8RL.Communicator(", isopen(c) ? "rank $(rank(c)) of $(world_size(c))" : "closed", ")")

function _rank_and_size(c::Communicator)
    r, n = Ref{Int32}(0), Ref{Int32}(0)
    check(L.fp8rl_communicator_get_rank(c, r, n))
    return Int(r[]), Int(n[])
end

"""
    rank(c::Communicator) -> Int
    rank(ctx::Context) -> Int

This process's rank, in `0:world_size-1` (0 for a context without a communicator).
"""
rank(c::Communicator) = _rank_and_size(c)[1]

"""
    world_size(c::Communicator) -> Int
    world_size(ctx::Context) -> Int

The number of ranks (1 for a context without a communicator).
"""
world_size(c::Communicator) = _rank_and_size(c)[2]

# ---- MPI

const _MPI_LIBRARY_VARIABLE = "FP8RL_MPI_LIBRARY"

"""
    mpi_communicator(comm::MPI.Comm) -> Communicator
    mpi_communicator(fortran_handle::Integer) -> Communicator

A communicator over a duplicate of an MPI communicator the program already
has (`fp8rl_mpi_communicator_create` of the companion library libfp8rl_mpi);
collective over `comm`. Pass an MPI.jl communicator (the method comes with
MPI.jl: `using MPI` loads it) or any communicator's Fortran handle,
`MPI_Comm_c2f(comm)`. The library keeps its own duplicate, so `comm` may be
freed afterwards; close the contexts using it before `MPI.Finalize()`.

libfp8rl_mpi is loaded from the path in `ENV["FP8RL_MPI_LIBRARY"]`, else from
beside libfp8rl, and must be built against the MPI that MPI.jl uses (for the
system's MPI: `MPIPreferences.use_system_binary()`). Without it this throws an
[`FP8RLError`](@ref) with `FP8RL_ERROR_BACKEND_UNAVAILABLE` naming the path.
"""
function mpi_communicator(fortran_handle::Integer)
    create = _mpi_create_function()
    out = Ref{Ptr{L.fp8rl_communicator}}(C_NULL)
    check(ccall(create, L.fp8rl_status, (Int64, Ptr{Ptr{L.fp8rl_communicator}}), Int64(fortran_handle), out))
    return Communicator(out[])
end

function _mpi_library_path()
    path = get(ENV, _MPI_LIBRARY_VARIABLE, "")
    isempty(path) || return path
    return joinpath(dirname(Libdl.dlpath(L._library[])), "libfp8rl_mpi." * Libdl.dlext)
end

# fp8rl_mpi_communicator_create of libfp8rl_mpi, which stays loaded (its code
# runs the communicators it makes). RTLD_GLOBAL: MPI implementations load
# plugins that expect libmpi's symbols to be global.
function _mpi_create_function()
    path = _mpi_library_path()
    unusable(why) = FP8RLError(L.FP8RL_ERROR_BACKEND_UNAVAILABLE,
                               "mpi_communicator: cannot use $path: $why (build fp8rl with MPI, " *
                               "or set $(_MPI_LIBRARY_VARIABLE) to libfp8rl_mpi's path)")
    library = try
        Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL)
    catch err
        throw(unusable(sprint(showerror, err)))
    end
    create = Libdl.dlsym(library, :fp8rl_mpi_communicator_create; throw_error = false)
    create === nothing && throw(unusable("it has no fp8rl_mpi_communicator_create"))
    return create
end

# ---- NCCL

"""
    nccl_unique_id() -> Vector{UInt8}

A new NCCL unique id, 128 bytes (`fp8rl_nccl_unique_id`): make it on one rank
and send it to all (e.g. `MPI.Bcast!(id, 0, comm)`). Throws an
[`FP8RLError`](@ref): `FP8RL_ERROR_UNSUPPORTED` on a build without the CUDA
backend, `FP8RL_ERROR_BACKEND_UNAVAILABLE` without libnccl.so.2.
"""
function nccl_unique_id()
    id = zeros(UInt8, 128)
    check(L.fp8rl_nccl_unique_id(id))
    return id
end

"""
    nccl_communicator(id, rank, world_size, cuda_device; timeout) -> Communicator

An NCCL communicator over GPU memory (`fp8rl_communicator_create_nccl`):
every rank calls it with the same 128-byte `id` from [`nccl_unique_id`], and
it returns when all `world_size` ranks have joined. The context given it must
use `backend = :cuda` on `cuda_device`. A collective that does not complete
within `timeout` seconds (a dead or out-of-order peer) is aborted and throws
`FP8RL_ERROR_DISTRIBUTED`.
"""
function nccl_communicator(id::AbstractVector{UInt8}, rank::Integer, world_size::Integer, cuda_device::Integer;
                           timeout::Real)
    length(id) == 128 || throw(_invalid("nccl_communicator: id has $(length(id)) bytes; expected 128"))
    bytes = Vector{UInt8}(id)
    out = Ref{Ptr{L.fp8rl_communicator}}(C_NULL)
    check(L.fp8rl_communicator_create_nccl(bytes, rank, world_size, cuda_device, timeout, out))
    return Communicator(out[])
end
