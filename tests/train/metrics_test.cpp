// Training metrics against scikit-learn (tests/train/metric_goldens.json, written by
// tools/gen_metric_goldens.py), fed in batches as the Learner feeds them.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/train/metrics.h"
#include "suite.h"

namespace ember::train {
namespace {

using nlohmann::json;

std::vector<MetricInput> batches(const json& c) {
  const auto scores = c.at("scores").get<std::vector<float>>();
  const auto targets = c.at("targets").get<std::vector<int64_t>>();
  const int64_t k = c.at("num_classes"), bs = c.at("batch");
  const bool ml = c.value("multi_label", false);
  const int64_t n = static_cast<int64_t>(scores.size()) / k;
  std::vector<MetricInput> out;
  for (int64_t s = 0; s < n; s += bs) {
    const int64_t b = std::min(bs, n - s);
    MetricInput in;
    in.batch_size = b;
    in.num_classes = k;
    in.multi_label = ml;
    in.scores.assign(scores.begin() + s * k, scores.begin() + (s + b) * k);
    const int64_t tw = ml ? k : 1;
    in.targets.assign(targets.begin() + s * tw, targets.begin() + (s + b) * tw);
    out.push_back(std::move(in));
  }
  return out;
}

double run(Metric& m, const json& c) {
  m.reset();
  for (const auto& b : batches(c)) m.update(b);
  return m.value();
}

TEST(Metrics, MatchScikitLearn) {
  std::ifstream f(ember::test::data_file(EMBER_METRIC_GOLDENS));
  ASSERT_TRUE(f) << ember::test::data_file(EMBER_METRIC_GOLDENS);
  const json file = json::parse(f);
  int checked = 0;
  for (const auto& c : file.at("cases")) {
    SCOPED_TRACE(c.at("name").get<std::string>());
    const bool ml = c.value("multi_label", false);
    // Multi-label scores are logits (threshold 0.5 on the sigmoid).
    std::map<std::string, std::unique_ptr<Metric>> ms;
    ms["precision"] = precision();
    ms["recall"] = recall();
    ms["f1"] = fbeta(1);
    ms["f2"] = fbeta(2);
    ms["precision_micro"] = precision(Averaging::Micro);
    ms["f1_micro"] = fbeta(1, Averaging::Micro);
    if (!ml) {
      ms["accuracy"] = std::make_unique<Accuracy>();
      ms["top2_accuracy"] = std::make_unique<Accuracy>(2);
      ms["auroc"] = std::make_unique<Auroc>();
    }
    for (auto& [key, m] : ms) {
      if (!c.contains(key)) continue;
      EXPECT_NEAR(run(*m, c), c.at(key).get<double>(), 1e-9) << key;
      ++checked;
    }
    if (c.contains("confusion")) {
      ConfusionMatrix cm;
      run(cm, c);
      EXPECT_EQ(cm.counts(), c.at("confusion").get<std::vector<int64_t>>());
      ++checked;
    }
  }
  EXPECT_GE(checked, 33);
}

TEST(Metrics, LossPerplexityAndAccuracyIgnoreIndex) {
  LossMetric loss;
  Perplexity ppl;
  for (auto [l, n] : {std::pair{2.0, 4}, std::pair{1.0, 12}}) {
    MetricInput in;
    in.loss = l;
    in.batch_size = n;
    loss.update(in);
    ppl.update(in);
  }
  EXPECT_DOUBLE_EQ(loss.value(), (2.0 * 4 + 1.0 * 12) / 16);
  EXPECT_DOUBLE_EQ(ppl.value(), std::exp((2.0 * 4 + 1.0 * 12) / 16));
  EXPECT_DOUBLE_EQ(loss.last(), 1.0);

  Accuracy acc(1, /*ignore_index=*/-1);
  acc.update(
      {.batch_size = 3, .scores = {1, 0, 0, 1, 1, 0}, .num_classes = 2, .targets = {0, -1, 1}});
  EXPECT_DOUBLE_EQ(acc.value(), 0.5);  // the ignored item does not count
}

TEST(Metrics, BadInputsAreClearErrors) {
  Accuracy acc;
  EXPECT_THROW(
      acc.update({.batch_size = 2, .scores = {1, 0, 0}, .num_classes = 2, .targets = {0, 1}}),
      ShapeError);
  EXPECT_THROW(acc.update({.batch_size = 1, .scores = {1, 0}, .num_classes = 2, .targets = {2}}),
               IndexError);
}

TEST(Metrics, SystemMetricsReadProc) {
  CpuMemory mem;
  mem.update({});
  EXPECT_GT(mem.value(), 1.0);  // MiB resident: a test process holds more than 1 MiB
  EXPECT_LT(mem.value(), 1 << 20);
}

}  // namespace
}  // namespace ember::train
