// Test helper: a run folder's metrics.jsonl records without their timings, which is what a
// resumed run's file must equal an uninterrupted run's in.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ember::test {

inline std::vector<std::string> metric_records(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  std::ifstream f(dir / "metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) {
      out.push_back("not JSON: " + line);
      continue;
    }
    j.erase("seconds"), j.erase("data_seconds");
    out.push_back(j.dump());
  }
  return out;
}

}  // namespace ember::test
