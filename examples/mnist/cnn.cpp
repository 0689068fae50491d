// The CNN's training and inference (see run.h).
#include "cnn.h"

#include "run.h"

namespace mnist {
TrainResult train_cnn(const Args& a) { return train_model<Cnn>(a); }
std::vector<std::vector<float>> predict_cnn(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images) {
  return predict_model<Cnn>(path, images);
}
}  // namespace mnist
