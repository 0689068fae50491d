// The CNN's inference (see infer.h and cnn.cpp).
#include "cnn.h"

#include "app.h"
#include "infer.h"

namespace mnist {
std::vector<std::vector<float>> predict_cnn(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images) {
  return predict_model<Cnn>(path, images);
}
}  // namespace mnist
