#include "mpi_collectives.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mpi_error.h"

namespace fp8rl::mpi {
namespace {

// user_data of the callbacks.
struct Group {
  MPI_Comm comm = MPI_COMM_NULL;  // the library's duplicate
  int rank = 0;
  int size = 1;
  int64_t max_piece = max_mpi_count;
  std::string last_error;  // why the last failing callback failed, for error_message
};

struct Element {
  MPI_Datatype type;
  size_t bytes;
};

// One callback invocation: records why it fails, naming the collective.
class Call {
 public:
  Call(void* user_data, const char* collective) : group(*static_cast<Group*>(user_data)), collective_(collective) {}

  int refuse(int code, const std::string& why) {
    group.last_error = std::string(collective_) + ": " + why;
    return code;
  }
  int check(const char* function, int code) {
    return code == MPI_SUCCESS ? MPI_SUCCESS : refuse(code, std::string(function) + " failed: " + error_text(code));
  }

  // The MPI type of an element type; bytes are gathered and broadcast, never summed.
  int element(fp8rl_element_type type, bool summed, Element* out) {
    switch (type) {
      case FP8RL_ELEMENT_F32: *out = {MPI_FLOAT, sizeof(float)}; return MPI_SUCCESS;
      case FP8RL_ELEMENT_F64: *out = {MPI_DOUBLE, sizeof(double)}; return MPI_SUCCESS;
      case FP8RL_ELEMENT_I64: *out = {MPI_INT64_T, sizeof(int64_t)}; return MPI_SUCCESS;
      case FP8RL_ELEMENT_U8:
        if (summed) return refuse(MPI_ERR_OP, "element type U8 (bytes) is never summed");
        *out = {MPI_UINT8_T, 1};
        return MPI_SUCCESS;
      default: break;
    }
    return refuse(MPI_ERR_TYPE, "element type " + std::to_string(static_cast<int64_t>(type)) +
                                    " is none of F32, F64, I64, U8");
  }

  // offsets [size + 1] of the consecutive parts of counts[size].
  int parts(const int64_t* counts, std::vector<int64_t>* offsets) {
    if (counts == nullptr) return refuse(MPI_ERR_COUNT, "counts is NULL");
    offsets->assign(1, 0);
    for (int r = 0; r < group.size; ++r) {
      if (counts[r] < 0)
        return refuse(MPI_ERR_COUNT, "counts[" + std::to_string(r) + "] is " + std::to_string(counts[r]));
      offsets->push_back(offsets->back() + counts[r]);
    }
    return MPI_SUCCESS;
  }

  // Calls piece(first, n) over consecutive pieces [first, first + n) of [0, count),
  // each at most max_piece long, until one fails.
  template <class Piece>
  int for_each_piece(int64_t count, Piece&& piece) {
    for (int64_t first = 0; first < count; first += group.max_piece)
      if (const int code = piece(first, static_cast<int>(std::min(group.max_piece, count - first)))) return code;
    return MPI_SUCCESS;
  }

  // Runs a callback's body: an exception (bad_alloc from a message or a count
  // array, the only kind the bodies throw) must not cross the C callback.
  template <class Body>
  int run(Body&& body) noexcept {
    try {
      return body();
    } catch (...) {
      try {
        return refuse(MPI_ERR_NO_MEM, "out of host memory");
      } catch (...) {
        return MPI_ERR_NO_MEM;
      }
    }
  }

  Group& group;

 private:
  const char* collective_;
};

// The element `index` elements into data.
void* at(void* data, int64_t index, const Element& element) {
  return static_cast<uint8_t*>(data) + static_cast<size_t>(index) * element.bytes;
}

// values[0, n) as MPI's int counts (the caller checked that they fit).
std::vector<int> as_int(const int64_t* values, size_t n) {
  std::vector<int> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<int>(values[i]);
  return out;
}

int all_reduce_sum(void* data, int64_t count, fp8rl_element_type type, void* user_data) {
  Call call(user_data, "all_reduce_sum");
  return call.run([&] {
    Element element{};
    if (const int code = call.element(type, true, &element)) return code;
    if (count < 0) return call.refuse(MPI_ERR_COUNT, "count is " + std::to_string(count));
    return call.for_each_piece(count, [&](int64_t first, int n) {
      return call.check("MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, at(data, first, element), n, element.type,
                                                       MPI_SUM, call.group.comm));
    });
  });
}

int reduce_scatter_sum(void* data, const int64_t* counts, fp8rl_element_type type, void* user_data) {
  Call call(user_data, "reduce_scatter_sum");
  return call.run([&] {
    Element element{};
    std::vector<int64_t> offsets;
    if (const int code = call.element(type, true, &element)) return code;
    if (const int code = call.parts(counts, &offsets)) return code;
    const Group& g = call.group;
    if (offsets.back() <= g.max_piece) {
      const std::vector<int> part_counts = as_int(counts, static_cast<size_t>(g.size));
      if (const int code = call.check("MPI_Reduce_scatter", MPI_Reduce_scatter(MPI_IN_PLACE, data, part_counts.data(),
                                                                                element.type, MPI_SUM, g.comm)))
        return code;
      // In place, MPI leaves this rank's sums at the start of data: move them into its part
      // (none to move, and data may be NULL, when the part is empty).
      if (counts[g.rank] > 0)
        std::memmove(at(data, offsets[static_cast<size_t>(g.rank)], element), data,
                     static_cast<size_t>(counts[g.rank]) * element.bytes);
      return MPI_SUCCESS;
    }
    // Beyond int displacements: a rooted reduce per part (and piece), into the owner's part in place.
    for (int r = 0; r < g.size; ++r) {
      const int code = call.for_each_piece(counts[r], [&](int64_t first, int n) {
        void* piece = at(data, offsets[static_cast<size_t>(r)] + first, element);
        const bool root = g.rank == r;
        return call.check("MPI_Reduce", MPI_Reduce(root ? MPI_IN_PLACE : piece, root ? piece : nullptr, n,
                                                   element.type, MPI_SUM, r, g.comm));
      });
      if (code != MPI_SUCCESS) return code;
    }
    return MPI_SUCCESS;
  });
}

int all_gather(void* data, const int64_t* counts, fp8rl_element_type type, void* user_data) {
  Call call(user_data, "all_gather");
  return call.run([&] {
    Element element{};
    std::vector<int64_t> offsets;
    if (const int code = call.element(type, false, &element)) return code;
    if (const int code = call.parts(counts, &offsets)) return code;
    const Group& g = call.group;
    if (offsets.back() <= g.max_piece) {
      const std::vector<int> part_counts = as_int(counts, static_cast<size_t>(g.size));
      const std::vector<int> displacements = as_int(offsets.data(), static_cast<size_t>(g.size));
      return call.check("MPI_Allgatherv", MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, part_counts.data(),
                                                         displacements.data(), element.type, g.comm));
    }
    // Beyond int displacements: each part (and piece) broadcast from its owner.
    for (int r = 0; r < g.size; ++r) {
      const int code = call.for_each_piece(counts[r], [&](int64_t first, int n) {
        return call.check("MPI_Bcast", MPI_Bcast(at(data, offsets[static_cast<size_t>(r)] + first, element), n,
                                                 element.type, r, g.comm));
      });
      if (code != MPI_SUCCESS) return code;
    }
    return MPI_SUCCESS;
  });
}

int broadcast(void* data, int64_t count, fp8rl_element_type type, int32_t root, void* user_data) {
  Call call(user_data, "broadcast");
  return call.run([&] {
    Element element{};
    if (const int code = call.element(type, false, &element)) return code;
    if (count < 0) return call.refuse(MPI_ERR_COUNT, "count is " + std::to_string(count));
    if (root < 0 || root >= call.group.size)
      return call.refuse(MPI_ERR_ROOT, "root is " + std::to_string(root) + "; expected 0 to " +
                                           std::to_string(call.group.size - 1));
    return call.for_each_piece(count, [&](int64_t first, int n) {
      return call.check("MPI_Bcast", MPI_Bcast(at(data, first, element), n, element.type, root, call.group.comm));
    });
  });
}

int barrier(void* user_data) {
  Call call(user_data, "barrier");
  return call.run([&] { return call.check("MPI_Barrier", MPI_Barrier(call.group.comm)); });
}

const char* error_message(void* user_data) { return static_cast<Group*>(user_data)->last_error.c_str(); }

void destroy(void* user_data) {
  std::unique_ptr<Group> group(static_cast<Group*>(user_data));
  // After MPI_Finalize no MPI call is allowed; finalization has freed the duplicate.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized == 0) MPI_Comm_free(&group->comm);
}

}  // namespace

fp8rl_collective_callbacks make_mpi_callbacks(MPI_Comm comm, int64_t max_piece) {
  auto group = std::make_unique<Group>();
  group->max_piece = max_piece;
  int code = MPI_Comm_dup(comm, &group->comm);
  if (code != MPI_SUCCESS) throw Refusal(FP8RL_ERROR_DISTRIBUTED, "MPI_Comm_dup failed: " + error_text(code));
  code = MPI_Comm_set_errhandler(group->comm, MPI_ERRORS_RETURN);
  if (code == MPI_SUCCESS) code = MPI_Comm_rank(group->comm, &group->rank);
  if (code == MPI_SUCCESS) code = MPI_Comm_size(group->comm, &group->size);
  if (code != MPI_SUCCESS) {
    MPI_Comm_free(&group->comm);
    throw Refusal(FP8RL_ERROR_DISTRIBUTED, "setting up the duplicate communicator failed: " + error_text(code));
  }

  fp8rl_collective_callbacks callbacks{};
  callbacks.struct_size = sizeof(callbacks);
  callbacks.rank = group->rank;
  callbacks.world_size = group->size;
  callbacks.all_reduce_sum = all_reduce_sum;
  callbacks.reduce_scatter_sum = reduce_scatter_sum;
  callbacks.all_gather = all_gather;
  callbacks.broadcast = broadcast;
  callbacks.barrier = barrier;
  callbacks.error_message = error_message;
  callbacks.destroy = destroy;
  callbacks.name = "MPI";
  callbacks.user_data = group.release();
  return callbacks;
}

}  // namespace fp8rl::mpi
