#include "ember/micro/error.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ember::micro {
namespace {
ErrorHandler g_handler = nullptr;
char g_message[160];
}  // namespace

ErrorHandler set_error_handler(ErrorHandler h) {
  ErrorHandler old = g_handler;
  g_handler = h;
  return old;
}

void fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_message, sizeof g_message, format, args);
  va_end(args);
  if (g_handler) g_handler(g_message);
  std::abort();
}

}  // namespace ember::micro
