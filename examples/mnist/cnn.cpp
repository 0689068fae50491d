// The CNN's training (see run.h). Its inference is in cnn_infer.cpp: two translation units, so
// that a rebuild after editing the model compiles them side by side.
#include "cnn.h"

#include "run.h"

namespace mnist {
TrainResult train_cnn(const Args& a) { return train_model<Cnn>(a); }
}  // namespace mnist
