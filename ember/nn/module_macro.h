// EMBER_MODULE(Name, fields...): the one line that names a module's fields (see module.h).
// Its own header, free of the library's other headers, so that the freestanding build
// (ember/micro) declares modules with the very same macro.
#pragma once
#include <string_view>

#include "ember/nn/for_each.h"

#define EMBER_DETAIL_MODULE_FIELD(f) fn(#f, f);
#define EMBER_DETAIL_MODULE_FIELD_WITH(f) fn(#f, f, other.f);

/// Declares a module's fields (parameters, buffers, submodules, constants) once.
#define EMBER_MODULE(Name, ...)                                     \
  static constexpr std::string_view module_name() { return #Name; } \
  template <class Fn>                                               \
  void for_each_field(Fn&& fn) {                                    \
    EMBER_FOR_EACH(EMBER_DETAIL_MODULE_FIELD, __VA_ARGS__)          \
  }                                                                 \
  template <class Fn>                                               \
  void for_each_field(Fn&& fn) const {                              \
    EMBER_FOR_EACH(EMBER_DETAIL_MODULE_FIELD, __VA_ARGS__)          \
  }                                                                 \
  template <class Other, class Fn>                                  \
  void for_each_field_with(Other& other, Fn&& fn) const {           \
    EMBER_FOR_EACH(EMBER_DETAIL_MODULE_FIELD_WITH, __VA_ARGS__)     \
  }
