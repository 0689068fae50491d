#include "ember/optim/lr_scheduler.h"

#include "ember/core/parse.h"

namespace ember::optim {

SchedulerRecord LrScheduler::to_record() const {
  return {{"scheduler", signature()}, {"step", std::to_string(step_)}};
}

void LrScheduler::load_record(const SchedulerRecord& r) {
  auto kind = r.find("scheduler");
  auto pos = r.find("step");
  if (kind == r.end() || kind->second != signature())
    throw ValueError("[lr_scheduler] the record is of scheduler '" +
                     (kind == r.end() ? std::string("?") : kind->second) + "', not '" +
                     signature() + "'");
  std::optional<int64_t> n;
  if (pos != r.end()) n = to_int(pos->second);
  if (!n || *n < 0)
    throw ValueError("[lr_scheduler] the record has no valid 'step' for '" + signature() + "'");
  step_ = *n;
}

}  // namespace ember::optim
