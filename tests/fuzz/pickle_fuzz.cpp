// libFuzzer target for the pickle reader: any byte string must either unpickle into a tree
// whose every value can be visited, or raise an ember::Error. A crash, a sanitizer report,
// another exception type, a hang or a huge allocation is a bug. The allow-list is PyTorch's.
//
//   scripts/fuzz.sh pickle 300
#include <cstdlib>
#include <span>
#include <unordered_set>

#include "ember/core/error.h"
#include "ember/record/pickle.h"
#include "fuzz_target.h"

namespace {
// Visits every node once (the tree may share nodes or contain cycles), reading its fields.
size_t visit(const ember::record::PickleValue& root) {
  std::unordered_set<const ember::record::PickleValue*> seen;
  std::vector<const ember::record::PickleValue*> todo = {&root};
  size_t bytes = 0;
  while (!todo.empty()) {
    const auto* v = todo.back();
    todo.pop_back();
    if (!v || !seen.insert(v).second) continue;
    bytes += v->str.size() + (v->b ? 1 : 0) + static_cast<size_t>(v->i & 1);
    if (v->kind == ember::record::PickleValue::Kind::Dict && v->items.size() % 2) std::abort();
    for (const auto* c : v->items) todo.push_back(c);
  }
  return bytes + seen.size();
}
}  // namespace

EMBER_FUZZ_TARGET(pickle) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    ember::record::Pickle p = ember::record::parse_pickle(bytes, "fuzz");
    if (p.consumed() == 0 || p.consumed() > size || p.node_count() > size) std::abort();
    if (visit(p.root()) > 2 * size + p.node_count() * 3) std::abort();  // strings fit the input
  } catch (const ember::Error&) {
    return 0;
  }
  return 0;
}
