// Code generation: an ONNX model as a C++ ember module, generic over the backend.
//
//   auto model = ember::onnx::load_model("mnist.onnx");
//   ember::onnx::CodegenOptions o;
//   o.name = "mnist";                                   // namespace and file names
//   ember::onnx::write_module(model, "out/", o);  // mnist.h, .cpp and .safetensors
//
// The module is a normal ember module (EMBER_MODULE): its float initializers are parameters
// (trainable, saved and loaded as records under their ONNX names made identifiers), its
// forward takes and returns Tensor<B, D, K> with the ranks and kinds of the graph's inputs
// and outputs, and each ONNX node is one call of the operator ember's runtime runs for it
// (ember/onnx/generated.h), so generated and runtime paths compute the same thing. The
// source instantiates it for Dispatch and Autodiff<Dispatch>: it runs on any device, and
// trains further. With `embed_weights` the weights are compiled into the source and
// `load_weights` needs no file.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/onnx/model.h"

namespace ember::onnx {

struct CodegenOptions {
  std::string name = "model";  // C++ namespace and file stem
  bool embed_weights = false;
  bool optimize = true;  // run the graph passes (passes.h) first
};

struct GeneratedFiles {
  std::filesystem::path header, source, weights;  // weights is empty when embedded
  std::vector<std::string> params;                // the module's parameter paths
};

/// What code generation cannot handle in this model (empty: it can): subgraph operators
/// (If, Loop, Scan, SequenceMap run on the runtime path), sequence values, inputs or outputs
/// of unknown rank, operators the runtime lacks.
EMBER_API std::vector<std::string> codegen_problems(const Model& model);

/// Writes NAME.h, NAME.cpp and (unless embedded) NAME.safetensors into `dir`; throws
/// UnsupportedError listing codegen_problems() when there are any.
EMBER_API GeneratedFiles write_module(Model model, const std::filesystem::path& dir,
                                      const CodegenOptions& options = {});

/// Code for many ONNX backend-test folders at once (the generated-code conformance pass):
/// each model as in write_module (named after its folder, weights in files) and
/// suite_K.cpp files of at most `per_file` models each, which instantiate them for Dispatch
/// and register them with gen::register_model. Returns "name: why" for each folder whose
/// model cannot be generated (those are left out).
EMBER_API std::vector<std::string> write_suite(const std::vector<std::filesystem::path>& tests,
                                               const std::filesystem::path& dir,
                                               size_t per_file = 100);

}  // namespace ember::onnx
