// The MLP's training and inference (see run.h).
#include "mlp.h"

#include "run.h"

namespace mnist {
TrainResult train_mlp(const Args& a) { return train_model<Mlp>(a); }
std::vector<std::vector<float>> predict_mlp(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images) {
  return predict_model<Mlp>(path, images);
}
}  // namespace mnist
