// Command-line flags of the GPU benchmarks: `--name value` pairs, each name known in advance.
//
//   auto f = bench::parse_flags(argc, argv, {"--reps", "--json"}, "usage: tool [--reps N]");
//   int reps = f.count("--reps") ? std::stoi(f["--reps"]) : 30;
#pragma once
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <string>

namespace bench {

// Exits with status 2 and `usage` on an unknown flag or one without a value.
inline std::map<std::string, std::string> parse_flags(int argc, char** argv,
                                                      std::initializer_list<const char*> known,
                                                      const char* usage) {
  std::map<std::string, std::string> f;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool ok = false;
    for (const char* k : known) ok |= a == k;
    if (!ok || i + 1 >= argc) {
      std::fprintf(stderr, "%s\n", usage);
      std::exit(2);
    }
    f[a] = argv[++i];
  }
  return f;
}

}  // namespace bench
