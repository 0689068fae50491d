// The onnx suite, ember's side: each real model (tools/onnx_models/make_models.py) run by
// ember's ONNX runtime on the CPU, per batch size, timed as the median of N runs after
// warm-up. scripts/bench.sh onnx runs ONNX Runtime on the same files in the same run.
//
//   onnx_bench --models DIR --names mnist_cnn,detector --batches 1,32 --runs 50 --warmup 5
//
// Inputs are DIR/NAME/bench_bB/input_K.pb. One run is Session::run on inputs already on the
// device plus reading every output back to host memory. Prints one JSON record per line:
// {"name": "NAME/bB", "backend": "cpu", "ember_ms", "min_ms", "runs", "threads"}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ember/core/thread_pool.h"
#include "ember/onnx/model.h"
#include "ember/onnx/runtime.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

int usage() {
  std::cerr << "usage: onnx_bench --models DIR --names A,B --batches 1,32 [--runs N] "
               "[--warmup N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, names, batches = "1";
  int runs = 50, warmup = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--models")
      dir = v;
    else if (k == "--names")
      names = v;
    else if (k == "--batches")
      batches = v;
    else if (k == "--runs")
      runs = std::stoi(v);
    else if (k == "--warmup")
      warmup = std::stoi(v);
    else
      return usage();
  }
  if (dir.empty() || names.empty() || runs < 1 || argc % 2 == 0) return usage();
  try {
    for (const std::string& name : split(names)) {
      onnx::Session session(onnx::load_model(fs::path(dir) / name / "model.onnx"), Device::cpu());
      for (const std::string& b : split(batches)) {
        const fs::path in_dir = fs::path(dir) / name / ("bench_b" + b);
        std::vector<onnx::Value> inputs;
        for (size_t k = 0; k < session.inputs().size(); ++k)
          inputs.push_back(onnx::Value::tensor(
              onnx::load_tensor(in_dir / ("input_" + std::to_string(k) + ".pb")),
              session.device()));
        auto once = [&] {
          for (const onnx::Value& v : session.run(inputs)) (void)v.data();
        };
        for (int i = 0; i < warmup; ++i) once();
        std::vector<double> ms;
        for (int i = 0; i < runs; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          once();
          ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
        std::printf(
            "{\"name\": \"%s/b%s\", \"backend\": \"cpu\", \"ember_ms\": %.6g, \"min_ms\": %.6g, "
            "\"runs\": %d, \"threads\": %d}\n",
            name.c_str(), b.c_str(), median(ms), *std::min_element(ms.begin(), ms.end()), runs,
            num_threads());
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "onnx_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
