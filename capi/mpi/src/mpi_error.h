// Errors of libfp8rl_mpi: MPI's error codes in words, and the refusal its
// public function reports through libfp8rl's error model.
#pragma once

#include <mpi.h>

#include <stdexcept>
#include <string>

#include "fp8rl/fp8rl.h"

namespace fp8rl::mpi {

// MPI_Error_string's text for an MPI error code, e.g. "MPI_ERR_COMM: invalid communicator".
inline std::string error_text(int code) {
  char text[MPI_MAX_ERROR_STRING + 1] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length)) + " (MPI error " + std::to_string(code) + ")";
}

// Thrown inside the library, reported at the ABI by fp8rl_report_error().
class Refusal : public std::runtime_error {
 public:
  Refusal(fp8rl_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  fp8rl_status status() const { return status_; }

 private:
  fp8rl_status status_;
};

}  // namespace fp8rl::mpi
