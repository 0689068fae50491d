// The MLP's training (see run.h). Its inference is in mlp_infer.cpp: two translation units, so
// that a rebuild after editing the model compiles them side by side.
#include "mlp.h"

#include "run.h"

namespace mnist {
TrainResult train_mlp(const Args& a) { return train_model<Mlp>(a); }
}  // namespace mnist
