# mpi_communicator for MPI.jl's communicators, loaded with MPI.jl (a package
# extension: FP8RL itself does not depend on MPI.jl).
module FP8RLMPIExt

using FP8RL
using MPI

# MPI.jl has no Comm_c2f of its own: its raw API does (an MPI_Comm in, a Cint out).
FP8RL.mpi_communicator(comm::MPI.Comm) = FP8RL.mpi_communicator(MPI.API.MPI_Comm_c2f(comm.val))

end # module FP8RLMPIExt
