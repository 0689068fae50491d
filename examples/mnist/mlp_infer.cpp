// The MLP's inference (see infer.h and mlp.cpp).
#include "mlp.h"

#include "app.h"
#include "infer.h"

namespace mnist {
std::vector<std::vector<float>> predict_mlp(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images) {
  return predict_model<Mlp>(path, images);
}
}  // namespace mnist
