// The dashboard's screen layout (internal): the status line, the progress bar, the metrics
// panel (the plot and the metric list beside it), the log and the quit prompt, drawn from a
// DashboardState.
#pragma once
#include "ember/train/dashboard.h"
#include "ember/train/dashboard_paint.h"
#include "ember/train/dashboard_state.h"

namespace ember::train::dashboard_detail {

/// Erases the screen, draws every panel that fits and refreshes it; counts the frame
/// (frames_drawn()).
void draw_frame(const Painter& pen, const DashboardState& state, const DashboardOptions& opt);

}  // namespace ember::train::dashboard_detail
