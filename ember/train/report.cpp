#include "ember/train/report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <sstream>

#include "ember/core/error.h"
#include "ember/train/checkpoint.h"

namespace ember::train {

ConfusionCounts ConfusionCounts::from(const ConfusionMatrix& m, std::vector<std::string> names) {
  return {m.num_classes(), m.counts(), std::move(names)};
}

namespace {

using L = ReportChartLayout;

std::string esc(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

/// A value in text: six significant digits.
std::string val(double v) {
  if (std::isnan(v)) return "n/a";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

/// A coordinate: two decimals.
std::string co(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

/// Round tick values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi].
struct Ticks {
  double lo = 0, hi = 1, step = 1;
  std::vector<double> values;
  int decimals = 0;
};

Ticks nice_ticks(double mn, double mx) {
  if (!(mn <= mx)) mn = 0, mx = 1;
  if (mx - mn <= 1e-12 * std::max(1.0, std::abs(mx))) {
    const double pad = mn == 0 ? 1 : std::abs(mn) * 0.1;
    mn -= pad, mx += pad;
  }
  const double rough = (mx - mn) / 4;
  const double mag = std::pow(10.0, std::floor(std::log10(rough)));
  const double f = rough / mag;
  const double nf = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
  Ticks t;
  t.step = nf * mag;
  const double i0 = std::floor(mn / t.step + 1e-9), i1 = std::ceil(mx / t.step - 1e-9);
  t.lo = i0 * t.step;
  t.hi = i1 * t.step;
  for (double i = i0; i <= i1 + 0.5; ++i) t.values.push_back(i * t.step);
  t.decimals =
      std::max(0, -static_cast<int>(std::floor(std::log10(t.step) + 1e-9))) + (nf == 2.5 ? 1 : 0);
  return t;
}

std::string tick_label(double v, int decimals) {
  char buf[40];
  // A tick a rounding error away from zero is zero (no "-0.00").
  std::snprintf(buf, sizeof buf, "%.*f", decimals,
                std::abs(v) < 0.5 * std::pow(10.0, -decimals) ? 0.0 : v);
  return buf;
}

const char* split_color(const std::string& split, size_t i) {
  if (split == "train") return "#1f77b4";
  if (split == "valid") return "#ff7f0e";
  if (split == "test") return "#2ca02c";
  static const char* kOthers[] = {"#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  return kOthers[i % 5];
}

bool higher_better(const History& h, const std::string& metric) {
  auto it = h.higher_is_better.find(metric);
  return it == h.higher_is_better.end() || it->second;
}

/// Metric names over all splits: "loss" first, then by name.
std::vector<std::string> metric_names(const History& h) {
  std::set<std::string> names;
  for (const auto& [split, ms] : h.epochs)
    for (const auto& [name, values] : ms) names.insert(name);
  std::vector<std::string> out;
  if (names.count("loss")) out.push_back("loss");
  for (const auto& n : names)
    if (n != "loss") out.push_back(n);
  return out;
}

std::string anchor(const std::string& metric) {
  std::string id = "metric-";
  for (char c : metric)
    id += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ? c : '_';
  return id;
}

void chart(std::ostream& os, const History& h, const std::string& metric) {
  // The series of this metric, per split.
  std::vector<std::pair<std::string, const std::vector<double>*>> series;
  size_t n = 0;
  double mn = INFINITY, mx = -INFINITY;
  for (const auto& [split, ms] : h.epochs) {
    auto it = ms.find(metric);
    if (it == ms.end()) continue;
    series.emplace_back(split, &it->second);
    n = std::max(n, it->second.size());
    for (double v : it->second)
      if (std::isfinite(v)) mn = std::min(mn, v), mx = std::max(mx, v);
  }
  const Ticks yt = nice_ticks(mn, mx);
  const double pw = L::width - L::left - L::right, ph = L::height - L::top - L::bottom;
  const double x0 = L::left, y0 = L::top, x1 = x0 + pw, y1 = y0 + ph;
  auto px = [&](size_t epoch) {  // epoch from 1
    return n <= 1 ? x0 + pw / 2 : x0 + static_cast<double>(epoch - 1) / (n - 1) * pw;
  };
  auto py = [&](double v) { return y0 + (yt.hi - v) / (yt.hi - yt.lo) * ph; };

  const bool higher = higher_better(h, metric);
  os << "<figure class=\"chart\" id=\"" << esc(anchor(metric)) << "\">\n"
     << "<figcaption>" << esc(metric) << " <span class=\"dir\">(" << (higher ? "higher" : "lower")
     << " is better)</span></figcaption>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" viewBox=\"0 0 " << co(L::width)
     << " " << co(L::height) << "\" width=\"" << L::width << "\" height=\"" << L::height
     << "\" role=\"img\" aria-label=\"" << esc(metric) << " per epoch\">\n";
  os << "<rect class=\"area\" x=\"" << co(x0) << "\" y=\"" << co(y0) << "\" width=\"" << co(pw)
     << "\" height=\"" << co(ph) << "\" fill=\"#ffffff\" stroke=\"#999999\"/>\n";

  // The y axis: grid lines and labels at the ticks.
  os << "<g class=\"y-axis\" font-size=\"11\" fill=\"#333333\">\n";
  for (double v : yt.values) {
    const double y = py(v);
    os << "<line x1=\"" << co(x0) << "\" y1=\"" << co(y) << "\" x2=\"" << co(x1) << "\" y2=\""
       << co(y) << "\" stroke=\"#e5e5e5\"/>"
       << "<line x1=\"" << co(x0 - 4) << "\" y1=\"" << co(y) << "\" x2=\"" << co(x0) << "\" y2=\""
       << co(y) << "\" stroke=\"#999999\"/>"
       << "<text class=\"ytick\" x=\"" << co(x0 - 7) << "\" y=\"" << co(y)
       << "\" text-anchor=\"end\" dominant-baseline=\"middle\">" << tick_label(v, yt.decimals)
       << "</text>\n";
  }
  os << "</g>\n";

  // The x axis: one tick per epoch, or round steps when there are many.
  size_t xstep = 1;
  while (n / xstep > 12) xstep = xstep == 1 ? 2 : xstep == 2 ? 5 : xstep * 2;
  os << "<g class=\"x-axis\" font-size=\"11\" fill=\"#333333\">\n";
  for (size_t e = 1; e <= std::max<size_t>(n, 1); ++e) {
    if (e != 1 && e % xstep != 0) continue;
    const double x = px(e);
    os << "<line x1=\"" << co(x) << "\" y1=\"" << co(y1) << "\" x2=\"" << co(x) << "\" y2=\""
       << co(y1 + 4) << "\" stroke=\"#999999\"/>"
       << "<text class=\"xtick\" x=\"" << co(x) << "\" y=\"" << co(y1 + 16)
       << "\" text-anchor=\"middle\">" << e << "</text>\n";
  }
  os << "<text class=\"axis-title\" x=\"" << co(x0 + pw / 2) << "\" y=\"" << co(L::height - 6)
     << "\" text-anchor=\"middle\">epoch</text>\n</g>\n";

  // The series: a line through the finite values (broken at the others) and a point with
  // its value as a tooltip at each.
  for (size_t si = 0; si < series.size(); ++si) {
    const auto& [split, values] = series[si];
    const char* color = split_color(split, si);
    os << "<g class=\"series\" data-split=\"" << esc(split) << "\">\n";
    std::vector<std::string> segment;
    auto flush = [&] {
      if (segment.size() >= 2) {
        os << "<polyline class=\"line\" fill=\"none\" stroke=\"" << color
           << "\" stroke-width=\"2\" points=\"";
        for (size_t i = 0; i < segment.size(); ++i) os << (i ? " " : "") << segment[i];
        os << "\"/>\n";
      }
      segment.clear();
    };
    for (size_t i = 0; i < values->size(); ++i) {
      const double v = (*values)[i];
      if (!std::isfinite(v)) {
        flush();
        continue;
      }
      segment.push_back(co(px(i + 1)) + "," + co(py(v)));
    }
    flush();
    for (size_t i = 0; i < values->size(); ++i) {
      const double v = (*values)[i];
      if (!std::isfinite(v)) continue;
      os << "<circle class=\"point\" cx=\"" << co(px(i + 1)) << "\" cy=\"" << co(py(v))
         << "\" r=\"3\" fill=\"" << color << "\"><title>" << esc(split) << ", epoch " << i + 1
         << ": " << val(v) << "</title></circle>\n";
    }
    os << "</g>\n";
  }

  // The legend, below the plot on the left (the axis title is centred).
  os << "<g class=\"legend\" font-size=\"12\">\n";
  for (size_t si = 0; si < series.size(); ++si) {
    const double x = x0 + 80.0 * static_cast<double>(si), y = L::height - 10;
    os << "<line x1=\"" << co(x) << "\" y1=\"" << co(y) << "\" x2=\"" << co(x + 20) << "\" y2=\""
       << co(y) << "\" stroke=\"" << split_color(series[si].first, si)
       << "\" stroke-width=\"2\"/><text x=\"" << co(x + 26) << "\" y=\"" << co(y)
       << "\" dominant-baseline=\"middle\">" << esc(series[si].first) << "</text>\n";
  }
  os << "</g>\n</svg>\n</figure>\n";
}

void summary_table(std::ostream& os, const History& h, const std::vector<std::string>& names) {
  os << "<table class=\"summary\">\n<thead><tr><th>metric</th><th>split</th><th>best</th>"
        "<th>best epoch</th><th>last</th><th>epochs</th></tr></thead>\n<tbody>\n";
  for (const auto& name : names) {
    const bool higher = higher_better(h, name);
    for (const auto& [split, ms] : h.epochs) {
      auto it = ms.find(name);
      if (it == ms.end() || it->second.empty()) continue;
      const auto& v = it->second;
      std::optional<size_t> best;
      for (size_t i = 0; i < v.size(); ++i)
        if (std::isfinite(v[i]) && (!best || (higher ? v[i] > v[*best] : v[i] < v[*best])))
          best = i;
      os << "<tr><td>" << esc(name) << "</td><td>" << esc(split) << "</td><td>"
         << (best ? val(v[*best]) : "n/a") << "</td><td>"
         << (best ? std::to_string(*best + 1) : "n/a") << "</td><td>" << val(v.back())
         << "</td><td>" << v.size() << "</td></tr>\n";
    }
  }
  os << "</tbody>\n</table>\n";
}

void confusion_section(std::ostream& os, const ConfusionCounts& cm) {
  const auto c = static_cast<size_t>(cm.num_classes);
  std::vector<std::string> names = cm.class_names;
  if (names.empty())
    for (size_t i = 0; i < c; ++i) names.push_back(std::to_string(i));
  std::vector<int64_t> row(c, 0), col(c, 0);
  int64_t total = 0, hits = 0;
  for (size_t t = 0; t < c; ++t)
    for (size_t p = 0; p < c; ++p) {
      const int64_t k = cm.counts[t * c + p];
      row[t] += k, col[p] += k, total += k;
      if (t == p) hits += k;
    }
  size_t longest = 1;
  for (const auto& nm : names) longest = std::max(longest, nm.size());
  const double cell = std::clamp(360.0 / static_cast<double>(std::max<size_t>(c, 1)), 14.0, 56.0);
  const double label = std::clamp(7.0 * static_cast<double>(longest) + 10, 24.0, 160.0);
  const double gx = label + 28, gy = 10, side = cell * static_cast<double>(c);
  const double w = gx + side + 16, hgt = gy + side + label * 0.75 + 34;
  const double font = std::min(12.0, cell * 0.42);

  os << "<figure class=\"confusion\">\n<figcaption>rows: target class; columns: predicted "
        "class; shade: share of the row</figcaption>\n"
     << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"heatmap\" viewBox=\"0 0 " << co(w) << " "
     << co(hgt) << "\" width=\"" << co(w) << "\" height=\"" << co(hgt)
     << "\" role=\"img\" aria-label=\"confusion matrix\" font-size=\"11\">\n";
  for (size_t t = 0; t < c; ++t) {
    for (size_t p = 0; p < c; ++p) {
      const int64_t k = cm.counts[t * c + p];
      const double share = row[t] > 0 ? static_cast<double>(k) / static_cast<double>(row[t]) : 0;
      // White to dark blue.
      const int r = static_cast<int>(std::lround(247 + (8 - 247) * share));
      const int g = static_cast<int>(std::lround(251 + (48 - 251) * share));
      const int b = static_cast<int>(std::lround(255 + (107 - 255) * share));
      const double x = gx + cell * static_cast<double>(p), y = gy + cell * static_cast<double>(t);
      char pct[32];
      std::snprintf(pct, sizeof pct, "%.1f%%", share * 100);
      os << "<g class=\"cell\"><rect x=\"" << co(x) << "\" y=\"" << co(y) << "\" width=\""
         << co(cell) << "\" height=\"" << co(cell) << "\" fill=\"rgb(" << r << "," << g << "," << b
         << ")\" stroke=\"#ffffff\"><title>target " << esc(names[t]) << ", predicted "
         << esc(names[p]) << ": " << k << " (" << pct << " of the row)</title></rect>"
         << "<text class=\"count\" x=\"" << co(x + cell / 2) << "\" y=\"" << co(y + cell / 2)
         << "\" text-anchor=\"middle\" dominant-baseline=\"middle\" font-size=\"" << co(font)
         << "\" fill=\"" << (share > 0.5 ? "#ffffff" : "#222222") << "\">" << k << "</text></g>\n";
    }
  }
  // Class names: rows on the left, columns below (slanted), and the axis titles.
  for (size_t t = 0; t < c; ++t)
    os << "<text class=\"row-label\" x=\"" << co(gx - 6) << "\" y=\""
       << co(gy + cell * (static_cast<double>(t) + 0.5))
       << "\" text-anchor=\"end\" dominant-baseline=\"middle\">" << esc(names[t]) << "</text>\n";
  for (size_t p = 0; p < c; ++p) {
    const double x = gx + cell * (static_cast<double>(p) + 0.5), y = gy + side + 8;
    os << "<text class=\"col-label\" x=\"" << co(x) << "\" y=\"" << co(y)
       << "\" text-anchor=\"end\" dominant-baseline=\"middle\" transform=\"rotate(-45 " << co(x)
       << " " << co(y) << ")\">" << esc(names[p]) << "</text>\n";
  }
  os << "<text class=\"axis-title\" x=\"" << co(gx + side / 2) << "\" y=\"" << co(hgt - 8)
     << "\" text-anchor=\"middle\">predicted</text>\n"
     << "<text class=\"axis-title\" x=\"12\" y=\"" << co(gy + side / 2)
     << "\" text-anchor=\"middle\" transform=\"rotate(-90 12 " << co(gy + side / 2)
     << ")\">target</text>\n</svg>\n</figure>\n";

  // Per class: support, precision, recall.
  os << "<p>accuracy "
     << (total ? val(static_cast<double>(hits) / static_cast<double>(total)) : "n/a") << " over "
     << total << " items</p>\n"
     << "<table class=\"classes\">\n<thead><tr><th>class</th><th>items</th><th>predicted</th>"
        "<th>precision</th><th>recall</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < c; ++i) {
    const int64_t tp = cm.counts[i * c + i];
    os << "<tr><td>" << esc(names[i]) << "</td><td>" << row[i] << "</td><td>" << col[i]
       << "</td><td>"
       << (col[i] ? val(static_cast<double>(tp) / static_cast<double>(col[i])) : "n/a")
       << "</td><td>"
       << (row[i] ? val(static_cast<double>(tp) / static_cast<double>(row[i])) : "n/a")
       << "</td></tr>\n";
  }
  os << "</tbody>\n</table>\n";
}

constexpr const char* kStyle =
    R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}
h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.2em}
.meta{color:#666;margin-top:0}
.status{background:#fff4e0;border-left:4px solid #e08a00;padding:.5em .8em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:.25em .8em;border-bottom:1px solid #eee;text-align:right}
th:first-child,td:first-child,th:nth-child(2),td:nth-child(2){text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0}
figcaption{font-weight:600;margin:.3em 0}
.dir{font-weight:400;color:#666}
svg text{font-family:inherit}
)";

}  // namespace

std::string report_html(const History& h, const std::optional<ConfusionCounts>& confusion,
                        const std::string& title, const std::string& status) {
  if (confusion) {
    const auto& cm = *confusion;
    if (cm.num_classes < 0 ||
        cm.counts.size() != static_cast<size_t>(cm.num_classes * cm.num_classes))
      throw ValueError("[report] confusion counts: " + std::to_string(cm.counts.size()) +
                       " values for " + std::to_string(cm.num_classes) + " classes");
    if (!cm.class_names.empty() && cm.class_names.size() != static_cast<size_t>(cm.num_classes))
      throw ValueError("[report] " + std::to_string(cm.class_names.size()) + " class names for " +
                       std::to_string(cm.num_classes) + " classes");
  }
  const auto names = metric_names(h);
  size_t epochs = 0;
  for (const auto& [split, ms] : h.epochs)
    for (const auto& [name, v] : ms) epochs = std::max(epochs, v.size());

  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
     << "<title>" << esc(title) << "</title>\n<style>\n"
     << kStyle << "</style>\n</head>\n<body>\n"
     << "<h1>" << esc(title) << "</h1>\n"
     << "<p class=\"meta\">" << epochs << (epochs == 1 ? " epoch" : " epochs") << ", "
     << names.size() << (names.size() == 1 ? " metric" : " metrics") << "</p>\n";
  if (!status.empty()) os << "<p class=\"status\">" << esc(status) << "</p>\n";
  os << "<h2>Best and last values</h2>\n";
  if (names.empty())
    os << "<p>No epoch has ended yet.</p>\n";
  else
    summary_table(os, h, names);
  if (!names.empty()) {
    os << "<h2>Metrics per epoch</h2>\n<div class=\"charts\">\n";
    for (const auto& name : names) chart(os, h, name);
    os << "</div>\n";
  }
  if (confusion && confusion->num_classes > 0) {
    os << "<h2>Confusion matrix</h2>\n";
    confusion_section(os, *confusion);
  }
  os << "</body>\n</html>\n";
  return os.str();
}

void write_report(const std::filesystem::path& path, const History& h,
                  const std::optional<ConfusionCounts>& confusion, const std::string& title,
                  const std::string& status) {
  const std::string html = report_html(h, confusion, title, status);
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  write_text_atomic(path, html);
}

}  // namespace ember::train
