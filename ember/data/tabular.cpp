#include "ember/data/tabular.h"

#include <cstdlib>

#include "ember/data/csv.h"

namespace ember::data {

TabularDataset load_sklearn_csv(const std::filesystem::path& path) {
  CsvOptions opt;
  opt.header = false;
  opt.allow_ragged = true;
  CsvTable t = read_csv(path, opt);
  auto fail = [&](size_t line, const std::string& why) {
    return ValueError("[sklearn_csv] " + path.string() + " line " + std::to_string(line) + ": " +
                      why);
  };
  if (t.rows.empty()) throw ValueError("[sklearn_csv] " + path.string() + ": empty file");
  const auto& head = t.rows[0];
  if (head.size() < 2)
    throw fail(t.lines[0], "the first line must be 'n_samples,n_features[,target names]'");
  std::string ctx = "sklearn_csv " + path.string() + " line " + std::to_string(t.lines[0]);
  int64_t n_samples = parse_int(head[0], ctx), n_features = parse_int(head[1], ctx);
  if (n_samples < 0 || n_features < 1)
    throw fail(t.lines[0], "bad counts " + head[0] + ", " + head[1]);
  std::vector<std::string> targets(head.begin() + 2, head.end());
  while (!targets.empty() && targets.back().empty()) targets.pop_back();  // "506,13,,,"

  size_t first = 1;
  std::vector<std::string> features;
  // An optional row of column names: its first field is not a number.
  if (t.rows.size() > 1 && !t.rows[1].empty()) {
    bool numeric = true;
    try {
      parse_double(t.rows[1][0]);
    } catch (const ValueError&) {
      numeric = false;
    }
    if (!numeric) {
      features.assign(t.rows[1].begin(), t.rows[1].end());
      if (features.size() == static_cast<size_t>(n_features) + 1) features.pop_back();
      first = 2;
    }
  }

  size_t width = static_cast<size_t>(n_features) + 1;
  std::vector<TabularItem> items;
  items.reserve(static_cast<size_t>(n_samples));
  for (size_t r = first; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    if (row.size() != width)
      throw fail(t.lines[r], "has " + std::to_string(row.size()) + " fields, expected " +
                                 std::to_string(width) + " (" + std::to_string(n_features) +
                                 " features and the target)");
    std::string c = "sklearn_csv " + path.string() + " line " + std::to_string(t.lines[r]);
    TabularItem it;
    it.features.reserve(static_cast<size_t>(n_features));
    for (size_t k = 0; k + 1 < width; ++k) it.features.push_back(parse_double(row[k], c));
    if (!targets.empty()) {
      int64_t label = parse_int(row.back(), c);
      if (label < 0 || label >= static_cast<int64_t>(targets.size()))
        throw fail(t.lines[r], "class " + std::to_string(label) + " is not in 0.." +
                                   std::to_string(targets.size() - 1));
      it.target = static_cast<double>(label);
    } else {
      it.target = parse_double(row.back(), c);
    }
    items.push_back(std::move(it));
  }
  if (items.size() != static_cast<size_t>(n_samples))
    throw ValueError("[sklearn_csv] " + path.string() + ": the header says " +
                     std::to_string(n_samples) + " samples, the file has " +
                     std::to_string(items.size()));
  return TabularDataset(std::move(items), std::move(features), std::move(targets));
}

std::filesystem::path sklearn_data_dir() {
  if (const char* e = std::getenv("EMBER_SKLEARN_DATA_DIR"); e && *e) return e;
  return "/usr/lib/python3/dist-packages/sklearn/datasets/data";
}

}  // namespace ember::data
