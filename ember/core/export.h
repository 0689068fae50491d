// EMBER_API marks what ember's libraries export: the non-template classes and functions that
// are defined in a .cpp file and used from headers or by users. The libraries are built with
// hidden symbols (-fvisibility=hidden -fvisibility-inlines-hidden), so in a shared build
// (EMBER_SHARED=ON) everything unmarked stays internal to its library; in a static build the
// mark changes nothing. Templates instantiated in the library for Dispatch carry it on their
// explicit instantiations (ember/backend/extern.h).
//
//   class EMBER_API Counter {      // a class with members defined in a .cpp file
//    public:
//     int next();
//   };
//   EMBER_API int count_items();    // a function defined in a .cpp file
#pragma once

#if defined(_WIN32)
// Windows DLLs would need dllexport/dllimport per library; ember builds static there.
#define EMBER_API
#else
#define EMBER_API __attribute__((visibility("default")))
#endif

/// The visibility of an explicit instantiation in the instantiation macros
/// (`EMBER_DETAIL_*_INSTANCES(ext, B)`, with ext `extern` in headers and empty in the library):
/// EMBER_API on the extern declarations only; the definitions take it from them.
#define EMBER_INSTANCE_API(ext) EMBER_DETAIL_API_##ext
#define EMBER_DETAIL_API_extern EMBER_API
#define EMBER_DETAIL_API_
