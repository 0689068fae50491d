// The data and training components link from the installed package: a CSV parsed by
// ember::data and a metric of ember::train.
#include <iostream>

#include "ember/data/csv.h"
#include "ember/train/metrics.h"

using namespace ember;

int main() try {
  int failures = 0;
  auto table = data::parse_csv("name,weight\nrex,31.5\ntom,4\n");
  if (table.header.size() != 2 || table.rows.size() != 2 || table.rows[1][0] != "tom") {
    std::cerr << "parse_csv: unexpected table\n";
    ++failures;
  }
  train::Accuracy acc;
  acc.update({.batch_size = 2, .scores = {0.1f, 0.9f, 0.8f, 0.2f}, .num_classes = 2,
              .targets = {1, 1}});
  if (acc.value() != 0.5) {
    std::cerr << "accuracy: got " << acc.value() << ", want 0.5\n";
    ++failures;
  }
  std::cout << (failures ? "FAILED" : "ok") << ": data and train from an installed ember\n";
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "components_app: " << e.what() << "\n";
  return 1;
}
