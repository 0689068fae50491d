// Errors. Every failure of a user-facing call is an `ember::Error` (or a subclass) whose
// message starts with the op in brackets and shows the shapes involved:
//
//   [matmul] inner dims differ: lhs [2, 3], rhs [4, 5]
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "ember/core/export.h"

namespace ember {

class EMBER_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Shapes that do not fit the op (broadcast, inner dims, ranks).
class EMBER_API ShapeError : public Error {
 public:
  using Error::Error;
};
/// An element type the op does not accept, or mismatched element types.
class EMBER_API DTypeError : public Error {
 public:
  using Error::Error;
};
/// A dim or an index out of range.
class EMBER_API IndexError : public Error {
 public:
  using Error::Error;
};
/// A bad value (negative size, empty where non-empty is needed, malformed file or message).
class EMBER_API ValueError : public Error {
 public:
  using Error::Error;
};
/// Tensors on different devices, or a device that is not available.
class EMBER_API DeviceError : public Error {
 public:
  using Error::Error;
};

/// Memory could not be allocated; `bytes()` is the size asked for (-1 when unknown). An
/// allocator's error does not know the op (`names_site()` false): `apply` adds it, once.
class EMBER_API MemoryError : public Error {
 public:
  MemoryError(const std::string& what, int64_t bytes, bool names_site = true)
      : Error(what), bytes_(bytes), names_site_(names_site) {}
  int64_t bytes() const { return bytes_; }
  bool names_site() const { return names_site_; }

 private:
  int64_t bytes_;
  bool names_site_;
};

}  // namespace ember
