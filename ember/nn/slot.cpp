#include "ember/nn/slot.h"

namespace ember::nn {

void Slot::set_data(const TensorData& d) const {
  check_writable();
  const DType want = dtype();
  ops_->from_data(const_cast<void*>(obj_), d.dtype() == want ? d : d.convert(want), device());
}

void Slot::check_backend(bool ok) const {
  if (!ok) throw ValueError("[slot] '" + path_ + "' is a tensor of another backend");
}

void Slot::check_writable() const {
  if (!writable_) throw ValueError("[slot] '" + path_ + "' belongs to a const module");
}

}  // namespace ember::nn
