// Errors of the freestanding build (ember::micro): no exceptions, so every error goes to one
// handler that the application installs. The message starts with the op and shows the
// sizes, like the host's exceptions: "[linear] input [1, 783] does not end in d_input 784".
//
//   void on_error(const char* message) {
//     printf("error: %s\n", message);
//     longjmp(recover, 1);   // or reset the device; returning makes ember abort()
//   }
//   ember::micro::set_error_handler(on_error);
//
// A handler that returns ends the program through abort(): after an error no result exists.
#pragma once

namespace ember::micro {

using ErrorHandler = void (*)(const char* message);

/// Installs `h` (nullptr: none) and returns the previous handler.
ErrorHandler set_error_handler(ErrorHandler h);

/// Formats the message printf-style into a static buffer, calls the handler, then abort()s.
[[noreturn]] void fail(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace ember::micro
