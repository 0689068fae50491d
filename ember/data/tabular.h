// Tabular datasets in the CSV format scikit-learn ships (Debian: python3-sklearn): a first
// line "n_samples,n_features,target names...", an optional line of column names, then one
// row per sample, the features followed by the target.
//
//   auto iris = ember::data::load_sklearn_csv(ember::data::sklearn_data_dir() / "iris.csv");
//   iris.len();               // 150
//   iris.target_names();      // {"setosa", "versicolor", "virginica"}
//   auto s = iris.get(0);     // s.features (4 values), s.target 0, s.label() 0
#pragma once
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

struct TabularItem {
  std::vector<double> features;
  double target = 0;  // a class index for classification, a value for regression
  int64_t label() const { return static_cast<int64_t>(std::llround(target)); }
};

class TabularDataset {
 public:
  using Item = TabularItem;
  TabularDataset(std::vector<TabularItem> items, std::vector<std::string> feature_names,
                 std::vector<std::string> target_names)
      : items_(std::move(items)),
        features_(std::make_shared<const std::vector<std::string>>(std::move(feature_names))),
        targets_(std::make_shared<const std::vector<std::string>>(std::move(target_names))) {}
  TabularItem get(size_t i) const { return items_.get(i); }
  size_t len() const { return items_.len(); }
  /// Column names when the file has them (empty otherwise).
  const std::vector<std::string>& feature_names() const { return *features_; }
  /// Class names; empty for a regression target.
  const std::vector<std::string>& target_names() const { return *targets_; }
  bool is_classification() const { return !targets_->empty(); }
  size_t num_classes() const { return targets_->size(); }
  size_t num_features() const { return len() ? items_.items()[0].features.size() : 0; }

 private:
  InMemoryDataset<TabularItem> items_;
  std::shared_ptr<const std::vector<std::string>> features_, targets_;
};

/// Reads a file in scikit-learn's CSV format (gzip-compressed or not). The header's counts
/// are checked against the rows, and class targets against the class names; mismatches throw
/// ValueError naming the file and line.
EMBER_API TabularDataset load_sklearn_csv(const std::filesystem::path& path);

/// Where Debian's python3-sklearn keeps its CSV datasets (iris.csv, wine_data.csv,
/// breast_cancer.csv, ...): /usr/lib/python3/dist-packages/sklearn/datasets/data, or
/// $EMBER_SKLEARN_DATA_DIR if set.
EMBER_API std::filesystem::path sklearn_data_dir();

}  // namespace ember::data
