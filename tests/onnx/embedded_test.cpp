// A model imported at build time by ember_import_onnx with its weights compiled in: no file
// is read at run time, and its outputs are ONNX Runtime's (the stored reference).
#include <gtest/gtest.h>

#include "ember/onnx/conformance.h"
#include "mnist_embedded.h"

using namespace ember;

TEST(OnnxEmbedded, RunsWithoutFilesAndMatchesOnnxRuntime) {
  const std::string dir = EMBER_ONNX_MODEL_DIR;
  auto model = onnx::load_model(dir + "/model.onnx");
  auto x =
      onnx::load_value(dir + "/test_data_set_0/input_0.pb", model.graph.inputs[0], Device::cpu());
  auto want =
      onnx::load_value(dir + "/test_data_set_0/output_0.pb", model.graph.outputs[0], Device::cpu())
          .data();
  auto m = mnist_embedded::Model<Dispatch>::load(Device::cpu());
  auto y = m.forward(Tensor<Dispatch, 4>(x.handle));
  EXPECT_EQ(onnx::compare(want, y.to_data(), {1e-5, 1e-6}), "");
  // The embedded weights are the file's: a parameter checked against its initializer.
  for (const auto& [name, data] : model.graph.initializers) {
    if (name != "fc.bias") continue;
    EXPECT_EQ(m.fc_bias.val().to_vec<float>(),
              std::vector<float>(data.as<float>().begin(), data.as<float>().end()));
  }
}
