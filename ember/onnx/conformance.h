// The ONNX backend test format: a folder with model.onnx and test_data_set_*/input_K.pb,
// output_K.pb (serialized TensorProto, SequenceProto or OptionalProto). Runs a folder on
// a device and compares with ONNX's tolerances (rtol 1e-3, atol 1e-7; NaN equals NaN).
//
//   auto r = ember::onnx::run_backend_test("data/node/test_relu", ember::Device::cpu());
//   if (r.status == ember::onnx::TestStatus::Failed) std::cerr << r.message << "\n";
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "ember/onnx/runtime.h"

namespace ember::onnx {

enum class TestStatus { Passed, Failed, Skipped };

struct TestResult {
  std::string name;
  TestStatus status = TestStatus::Failed;
  std::string message;           // why it failed or was skipped
  std::vector<std::string> ops;  // the operators of the model's main graph
};

struct TestOptions {
  double rtol = 1e-3;
  double atol = 1e-7;
  bool optimize = true;      // run the graph passes (passes.h) first
  bool infer_shapes = true;  // ONNX's shape inference at load (ParseOptions::infer_shapes)
};

/// Runs one backend-test folder. A model that uses something unsupported is Skipped with
/// the reasons; a wrong value, shape or type, or an error while running, is Failed.
EMBER_API TestResult run_backend_test(const std::filesystem::path& dir, Device device,
                                      const TestOptions& options = {});

/// A serialized TensorProto, SequenceProto or OptionalProto file (as `info`'s kind says) as
/// a runtime value.
EMBER_API Value load_value(const std::filesystem::path& path, const ValueInfo& info, Device dev);

/// Compares two host tensors; empty when they match, else what differs.
EMBER_API std::string compare(const TensorData& expected, const TensorData& actual,
                              const TestOptions& options = {});

}  // namespace ember::onnx
