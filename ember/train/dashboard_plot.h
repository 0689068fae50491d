// The dashboard's metric plot (internal): one metric's training series (per iteration) and
// validation series (per epoch) scaled onto a braille Canvas, with y-axis labels, the
// iteration axis and a legend. IterSeries, Canvas and braille() are declared in dashboard.h.
#pragma once
#include <cstdint>
#include <string>

#include "ember/train/dashboard_paint.h"
#include "ember/train/dashboard_state.h"

namespace ember::train::dashboard_detail {

/// Draws the plot in rows [top, bottom], columns [0, width): a rule with `title`, then, when
/// `metric` is set and there is room, the chart. `iterations`: the training iterations seen
/// (the x axis spans them). `smoothed`: the training series is a moving average (legend).
void draw_plot(const Painter& p, int top, int bottom, int width, const std::string& title,
               const MetricState* metric, int64_t iterations, bool smoothed);

}  // namespace ember::train::dashboard_detail
