// report.html from a known History and confusion matrix: the page is well formed (every
// element closed, in order; attributes quoted; text escaped), each metric's chart plots its
// values in order on one linear scale that its axis labels agree with, and every confusion
// count, class name, metric name and best/last value is there.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/train/checkpoint.h"
#include "ember/train/report.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;

// -- a small tag reader --------------------------------------------------------------------

struct Element {
  std::string name;
  std::map<std::string, std::string> attrs;
  std::string text;  // the text directly inside (not of children)
  std::vector<Element*> children;
  Element* parent = nullptr;
};

/// Parses the page as XML-like markup: fails the test on an element closed out of order or
/// left open, an unquoted attribute, a stray '<' or an '&' that starts no entity.
class Page {
 public:
  explicit Page(const std::string& s) { parse(s); }

  std::vector<Element*> find(const std::string& name, const Element* under = nullptr) const {
    std::vector<Element*> out;
    for (Element* e : all_)
      if (e->name == name && (under == nullptr || inside(e, under))) out.push_back(e);
    return out;
  }
  Element* by_id(const std::string& id) const {
    for (Element* e : all_)
      if (e->attrs.count("id") && e->attrs.at("id") == id) return e;
    return nullptr;
  }
  static bool inside(const Element* e, const Element* under) {
    for (const Element* p = e->parent; p; p = p->parent)
      if (p == under) return true;
    return false;
  }

 private:
  void parse(const std::string& s) {
    nodes_.push_back(std::make_unique<Element>());
    Element* cur = nodes_.back().get();
    size_t i = 0;
    if (s.starts_with("<!DOCTYPE html>")) i = 15;
    while (i < s.size()) {
      if (s[i] != '<') {
        const size_t j = s.find('<', i);
        const std::string text = s.substr(i, j == std::string::npos ? std::string::npos : j - i);
        check_text(text);
        cur->text += text;
        if (j == std::string::npos) break;
        i = j;
        continue;
      }
      const size_t end = s.find('>', i);
      ASSERT_NE(end, std::string::npos) << "unterminated tag at " << i;
      std::string tag = s.substr(i + 1, end - i - 1);
      i = end + 1;
      if (tag.starts_with("/")) {
        const std::string name = tag.substr(1);
        ASSERT_TRUE(cur->parent != nullptr) << "</" << name << "> closes nothing";
        ASSERT_EQ(name, cur->name) << "</" << name << "> closes <" << cur->name << ">";
        cur = cur->parent;
        continue;
      }
      const bool self_closing = tag.ends_with("/");
      if (self_closing) tag.pop_back();
      nodes_.push_back(std::make_unique<Element>());
      Element* e = nodes_.back().get();
      parse_tag(tag, *e);
      e->parent = cur;
      cur->children.push_back(e);
      all_.push_back(e);
      if (!self_closing) cur = e;
    }
    EXPECT_EQ(cur, nodes_.front().get()) << "<" << cur->name << "> is never closed";
  }

  static void check_text(const std::string& t) {
    for (size_t k = t.find('&'); k != std::string::npos; k = t.find('&', k + 1)) {
      const std::string rest = t.substr(k, 6);
      EXPECT_TRUE(rest.starts_with("&amp;") || rest.starts_with("&lt;") ||
                  rest.starts_with("&gt;") || rest.starts_with("&quot;") ||
                  rest.starts_with("&#39;"))
          << "bare & in: " << t;
    }
    EXPECT_EQ(t.find('>'), std::string::npos) << "bare > in: " << t;
  }
  void parse_tag(const std::string& tag, Element& e) {
    size_t i = 0;
    while (i < tag.size() && !std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
    e.name = tag.substr(0, i);
    ASSERT_FALSE(e.name.empty());
    ASSERT_EQ(e.name.find('<'), std::string::npos) << "stray < in a tag: " << tag;
    while (i < tag.size()) {
      while (i < tag.size() && std::isspace(static_cast<unsigned char>(tag[i]))) ++i;
      if (i >= tag.size()) break;
      const size_t eq = tag.find('=', i);
      ASSERT_NE(eq, std::string::npos) << "attribute without value in <" << tag << ">";
      const std::string name = tag.substr(i, eq - i);
      ASSERT_EQ(tag[eq + 1], '"') << "unquoted attribute " << name << " in <" << tag << ">";
      const size_t close = tag.find('"', eq + 2);
      ASSERT_NE(close, std::string::npos);
      const std::string value = tag.substr(eq + 2, close - eq - 2);
      check_text(value);
      EXPECT_FALSE(e.attrs.count(name)) << "attribute " << name << " twice";
      e.attrs[name] = value;
      i = close + 1;
    }
  }

  std::vector<std::unique_ptr<Element>> nodes_;
  std::vector<Element*> all_;
};

double num(const std::string& s) { return std::stod(s); }

std::vector<std::pair<double, double>> points(const std::string& attr) {
  std::vector<std::pair<double, double>> out;
  std::istringstream is(attr);
  std::string p;
  while (is >> p) {
    const auto comma = p.find(',');
    out.emplace_back(num(p.substr(0, comma)), num(p.substr(comma + 1)));
  }
  return out;
}

// -- the known run -------------------------------------------------------------------------

History known_history() {
  History h;
  h.epochs["train"]["loss"] = {1.0, 0.6, 0.4, 0.35, 0.3};
  h.epochs["valid"]["loss"] = {1.1, 0.7, 0.5, 0.55, 0.52};
  h.epochs["train"]["accuracy"] = {0.5, 0.7, 0.8, 0.85, 0.875};
  h.epochs["valid"]["accuracy"] = {0.45, 0.65, 0.75, 0.7, 0.725};
  h.epochs["train"]["lr"] = {0.001, 0.001, 0.0005, 0.0005, 0.00025};
  h.higher_is_better = {{"loss", false}, {"accuracy", true}, {"lr", true}};
  return h;
}

ConfusionCounts known_confusion() {
  return {3, {50, 3, 1, 4, 41, 7, 0, 9, 38}, {"cat", "dog", "bird & <fish>"}};
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("ember_report_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(dir), fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

TEST(Report, WellFormedWithEveryPart) {
  TempDir t;
  const auto h = known_history();
  write_report(t.dir / "report.html", h, known_confusion(), "Blobs <3> & more");
  // Written atomically: the file alone, no temporary left behind.
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(t.dir)) files.push_back(e.path().filename());
  EXPECT_EQ(files, std::vector<fs::path>{"report.html"});
  const std::string html = read_text(t.dir / "report.html");
  ASSERT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(html.ends_with("</html>\n"));
  Page page(html);
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  // Self-contained: nothing fetched, no script.
  EXPECT_TRUE(page.find("script").empty());
  EXPECT_TRUE(page.find("link").empty());
  EXPECT_TRUE(page.find("img").empty());
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  // The title, escaped.
  // <title>: the page's, one per plotted value (tooltips), one per confusion cell.
  EXPECT_EQ(page.find("title").size(), 1u + (10 + 10 + 5) + 9);
  EXPECT_EQ(page.find("h1").at(0)->text, "Blobs &lt;3&gt; &amp; more");
  // One chart per metric, "loss" first, then the confusion heat map.
  const auto svgs = page.find("svg");
  ASSERT_EQ(svgs.size(), 4u);
  const auto figs = page.find("figcaption");
  ASSERT_EQ(figs.size(), 4u);
  EXPECT_TRUE(figs[0]->text.starts_with("loss "));
  EXPECT_TRUE(figs[1]->text.starts_with("accuracy "));
  EXPECT_TRUE(figs[2]->text.starts_with("lr "));
  for (const auto* svg : svgs) EXPECT_EQ(svg->attrs.at("xmlns"), "http://www.w3.org/2000/svg");
}

/// The linear map value -> y a chart uses, from its first series; checks every series of
/// the chart against the History and returns the map's (a, b): y = a + b * value.
std::pair<double, double> check_chart(const Page& page, const History& h,
                                      const std::string& metric) {
  using L = ReportChartLayout;
  const Element* fig = page.by_id("metric-" + metric);
  EXPECT_NE(fig, nullptr) << metric;
  if (!fig) return {0, 0};
  std::optional<std::pair<double, double>> map;
  size_t n_series = 0;
  for (const Element* g : page.find("g", fig)) {
    if (!g->attrs.count("data-split")) continue;
    const std::string split = g->attrs.at("data-split");
    const auto& values = h.epochs.at(split).at(metric);
    ++n_series;
    const auto lines = page.find("polyline", g);
    EXPECT_EQ(lines.size(), 1u) << metric << " " << split;
    if (lines.empty()) continue;
    const auto pts = points(lines[0]->attrs.at("points"));
    EXPECT_EQ(pts.size(), values.size()) << metric << " " << split;
    const auto circles = page.find("circle", g);
    EXPECT_EQ(circles.size(), values.size());
    for (size_t i = 0; i < pts.size() && i < circles.size(); ++i) {
      EXPECT_EQ(num(circles[i]->attrs.at("cx")), pts[i].first);
      EXPECT_EQ(num(circles[i]->attrs.at("cy")), pts[i].second);
    }
    // x: the epochs in order, evenly spaced from the plot's left edge to its right edge.
    const double pw = L::width - L::left - L::right;
    for (size_t i = 0; i < pts.size(); ++i)
      EXPECT_NEAR(pts[i].first, L::left + pw * static_cast<double>(i) / (pts.size() - 1), 0.006)
          << metric << " " << split << " epoch " << i + 1;
    // y: one linear map for the whole chart, larger values higher up, inside the plot.
    if (!map) {  // from the series' smallest and largest values
      const auto lo = std::min_element(values.begin(), values.end()) - values.begin();
      const auto hi = std::max_element(values.begin(), values.end()) - values.begin();
      const double b = (pts[hi].second - pts[lo].second) / (values[hi] - values[lo]);
      map = {pts[lo].second - b * values[lo], b};
      EXPECT_LT(b, 0) << metric;
    }
    for (size_t i = 0; i < pts.size(); ++i) {
      EXPECT_NEAR(pts[i].second, map->first + map->second * values[i], 0.02)
          << metric << " " << split << " epoch " << i + 1;
      EXPECT_GE(pts[i].second, L::top - 1e-9);
      EXPECT_LE(pts[i].second, L::height - L::bottom + 1e-9);
    }
    // The tooltips carry the values.
    for (size_t i = 0; i < circles.size(); ++i) {
      const auto titles = page.find("title", circles[i]);
      EXPECT_EQ(titles.size(), 1u);
      if (titles.empty()) continue;
      EXPECT_NEAR(num(titles[0]->text.substr(titles[0]->text.rfind(": ") + 2)), values[i],
                  1e-5 * std::abs(values[i]));
    }
  }
  size_t expected_series = 0;
  for (const auto& [split, ms] : h.epochs) expected_series += ms.count(metric);
  EXPECT_EQ(n_series, expected_series) << metric;
  // The axis labels sit where the same map puts their values; they span the data.
  std::vector<double> ticks;
  for (const Element* text : page.find("text", fig)) {
    if (text->attrs.count("class") == 0 || text->attrs.at("class") != "ytick") continue;
    const double v = num(text->text), y = num(text->attrs.at("y"));
    EXPECT_NEAR(y, map->first + map->second * v, 0.03) << metric << " tick " << text->text;
    ticks.push_back(v);
  }
  EXPECT_GE(ticks.size(), 3u) << metric;
  // The legend names each split.
  std::string legend;
  for (const Element* g : page.find("g", fig))
    if (g->attrs.count("class") && g->attrs.at("class") == "legend")
      for (const Element* text : page.find("text", g)) legend += text->text + " ";
  for (const auto& [split, ms] : h.epochs)
    if (ms.count(metric)) {
      EXPECT_NE(legend.find(split), std::string::npos) << metric;
    }
  return *map;
}

TEST(Report, ChartsPlotTheSeriesOnTheirScale) {
  const auto h = known_history();
  Page page(report_html(h, known_confusion()));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  for (const std::string m : {"loss", "accuracy", "lr"}) check_chart(page, h, m);
}

TEST(Report, ConfusionCountsAndClassNames) {
  const auto cm = known_confusion();
  Page page(report_html(known_history(), cm));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  const Element* heat = page.find("svg").back();
  std::vector<int64_t> counts;
  std::vector<std::pair<double, double>> at;
  for (const Element* text : page.find("text", heat))
    if (text->attrs.count("class") && text->attrs.at("class") == "count") {
      counts.push_back(std::stoll(text->text));
      at.emplace_back(num(text->attrs.at("x")), num(text->attrs.at("y")));
    }
  EXPECT_EQ(counts, cm.counts);  // row-major: target rows, predicted columns
  // ... laid out as a grid: the same x down a column, the same y along a row.
  ASSERT_EQ(at.size(), 9u);
  for (size_t t = 0; t < 3; ++t)
    for (size_t p = 0; p < 3; ++p) {
      EXPECT_EQ(at[t * 3 + p].first, at[p].first);
      EXPECT_EQ(at[t * 3 + p].second, at[t * 3].second);
      if (p) {
        EXPECT_GT(at[t * 3 + p].first, at[t * 3 + p - 1].first);
      }
      if (t) {
        EXPECT_GT(at[t * 3 + p].second, at[(t - 1) * 3 + p].second);
      }
    }
  // The darkest cells are the largest shares of their rows: 50 of 54 on the diagonal.
  std::vector<std::string> fills;
  for (const Element* rect : page.find("rect", heat)) fills.push_back(rect->attrs.at("fill"));
  ASSERT_EQ(fills.size(), 9u);
  EXPECT_EQ(fills[0], "rgb(26,63,118)");    // 50/54 of the way from white to (8,48,107)
  EXPECT_EQ(fills[6], "rgb(247,251,255)");  // 0: white
  // Class names label the rows and columns, escaped.
  std::vector<std::string> rows, cols;
  for (const Element* text : page.find("text", heat)) {
    const auto& cls = text->attrs.count("class") ? text->attrs.at("class") : "";
    if (cls == "row-label") rows.push_back(text->text);
    if (cls == "col-label") cols.push_back(text->text);
  }
  const std::vector<std::string> names = {"cat", "dog", "bird &amp; &lt;fish&gt;"};
  EXPECT_EQ(rows, names);
  EXPECT_EQ(cols, names);
  // The per-class table: items, predicted, precision, recall.
  std::vector<std::string> cells;
  for (const Element* table : page.find("table"))
    if (table->attrs.at("class") == "classes")
      for (const Element* td : page.find("td", table)) cells.push_back(td->text);
  ASSERT_EQ(cells.size(), 15u);
  EXPECT_EQ(std::vector<std::string>(cells.begin(), cells.begin() + 5),
            (std::vector<std::string>{"cat", "54", "54", "0.925926", "0.925926"}));
  EXPECT_EQ(
      std::vector<std::string>(cells.begin() + 10, cells.end()),
      (std::vector<std::string>{"bird &amp; &lt;fish&gt;", "47", "46", "0.826087", "0.808511"}));
}

TEST(Report, SummaryTableBestAndLast) {
  Page page(report_html(known_history()));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  std::map<std::string, std::vector<std::string>> rows;  // "metric/split" -> cells
  for (const Element* tr : page.find("tr")) {
    const auto tds = page.find("td", tr);
    if (tds.size() != 6) continue;
    std::vector<std::string> cells;
    for (const Element* td : tds) cells.push_back(td->text);
    rows[cells[0] + "/" + cells[1]] = cells;
  }
  ASSERT_EQ(rows.size(), 5u);
  // best (by the metric's direction), its epoch, last, epochs
  EXPECT_EQ(rows["loss/train"],
            (std::vector<std::string>{"loss", "train", "0.3", "5", "0.3", "5"}));
  EXPECT_EQ(rows["loss/valid"],
            (std::vector<std::string>{"loss", "valid", "0.5", "3", "0.52", "5"}));
  EXPECT_EQ(rows["accuracy/valid"],
            (std::vector<std::string>{"accuracy", "valid", "0.75", "3", "0.725", "5"}));
  EXPECT_EQ(rows["lr/train"],
            (std::vector<std::string>{"lr", "train", "0.001", "1", "0.00025", "5"}));
  // No confusion matrix asked for: none drawn.
  EXPECT_EQ(page.find("svg").size(), 3u);
}

TEST(Report, EdgeCases) {
  // One epoch, a gap (NaN), a constant series and no history at all stay well formed.
  History h;
  h.epochs["train"]["loss"] = {0.7};
  h.epochs["valid"]["loss"] = {0.8};
  h.epochs["train"]["auroc"] = {0.5, NAN, 0.7, 0.8};
  h.epochs["train"]["lr"] = {0.01, 0.01, 0.01, 0.01};
  Page page(report_html(h));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  // One epoch: points, no line; the gap splits the line in two (a single point has none).
  const Element* loss = page.by_id("metric-loss");
  ASSERT_NE(loss, nullptr);
  EXPECT_TRUE(page.find("polyline", loss).empty());
  EXPECT_EQ(page.find("circle", loss).size(), 2u);
  const Element* auroc = page.by_id("metric-auroc");
  ASSERT_NE(auroc, nullptr);
  EXPECT_EQ(page.find("polyline", auroc).size(), 1u);  // epochs 3-4; epoch 1 is a point alone
  EXPECT_EQ(page.find("circle", auroc).size(), 3u);
  const Element* lr = page.by_id("metric-lr");
  ASSERT_NE(lr, nullptr);
  const auto pts = points(page.find("polyline", lr).at(0)->attrs.at("points"));
  ASSERT_EQ(pts.size(), 4u);
  for (const auto& p : pts) EXPECT_EQ(p.second, pts[0].second);  // flat, inside the plot
  EXPECT_GT(pts[0].second, ReportChartLayout::top);
  EXPECT_LT(pts[0].second, ReportChartLayout::height - ReportChartLayout::bottom);

  // Before any epoch ended: a page saying so, in a folder made for it.
  TempDir t;
  write_report(t.dir / "new" / "report.html", History{});
  Page empty(read_text(t.dir / "new" / "report.html"));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_TRUE(empty.find("svg").empty());

  EXPECT_THROW(report_html(h, ConfusionCounts{2, {1, 2, 3}, {}}), ValueError);
  EXPECT_THROW(report_html(h, ConfusionCounts{2, {1, 2, 3, 4}, {"a"}}), ValueError);
}

TEST(Report, StatusLineSaysHowTheRunEnded) {
  const auto h = known_history();
  const std::string status = "Aborted at epoch 2 of 3, step 14 <no final model> & more";
  Page page(report_html(h, std::nullopt, "Blobs: aborted at epoch 2 of 3, step 14", status));
  ASSERT_FALSE(testing::Test::HasFatalFailure());
  EXPECT_EQ(page.find("h1").at(0)->text, "Blobs: aborted at epoch 2 of 3, step 14");
  const auto ps = page.find("p");
  const auto it = std::find_if(ps.begin(), ps.end(), [](const Element* e) {
    return e->attrs.count("class") && e->attrs.at("class") == "status";
  });
  ASSERT_NE(it, ps.end());
  EXPECT_EQ((*it)->text, "Aborted at epoch 2 of 3, step 14 &lt;no final model&gt; &amp; more");
  // Without a status, no such line.
  EXPECT_EQ(report_html(h).find("class=\"status\""), std::string::npos);
}

}  // namespace
}  // namespace ember::train
