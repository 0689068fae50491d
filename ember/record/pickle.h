// A safe reader for the subset of Python's pickle format that PyTorch's torch.save writes
// (protocols 2 to 5). It never executes anything: it builds a tree of plain values, and a
// call the pickle asks for (REDUCE, NEWOBJ) becomes a Call node for the caller to interpret.
// A global outside the allow-list is refused where it appears, naming it.
//
//   record::Pickle p = record::parse_pickle(bytes, "model.pt");
//   const record::PickleValue& root = p.root();
//   if (root.kind == record::PickleValue::Kind::Dict)
//     for (size_t i = 0; i + 1 < root.items.size(); i += 2)
//       std::cout << root.items[i]->str << "\n";         // the keys (strings here)
//
// Memory is bounded by the input: every count in the file is checked against the bytes left
// before anything is allocated, and the stack, marks and memo have fixed limits. Nodes may be
// shared (the memo), and a hostile pickle can make a container contain itself, so code that
// walks the tree must bound its depth (pytorch.cpp does). Malformed input, an unknown opcode
// or a refused global raises ValueError naming the input, the byte offset and the problem.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "ember/core/export.h"

namespace ember::record {

/// One value of an unpickled tree.
struct PickleValue {
  enum class Kind : uint8_t {
    None,
    Bool,
    Int,         // fits int64: `i`
    BigInt,      // a longer LONG1: `str` holds its little-endian two's complement bytes
    Float,       // `f`
    String,      // unicode (UTF-8) or a protocol-2 byte string: `str`
    Bytes,       // `str`
    Tuple,       // `items`
    List,        // `items` (also sets and frozensets)
    Dict,        // `items` as key, value, key, value, ... in insertion order
    Global,      // an allow-listed global: `str` is "module.name"
    Call,        // REDUCE / NEWOBJ: items[0] the callable, items[1] the argument tuple; a BUILD
                 // state, if any, is items[2]
    Persistent,  // BINPERSID: items[0] is the persistent id
  };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string str;
  std::vector<const PickleValue*> items;

  bool is(Kind k) const { return kind == k; }
  /// The value of a Dict entry whose key is the string `key`, or nullptr.
  EMBER_API const PickleValue* get(const std::string& key) const;
};

/// What parse_pickle accepts beyond plain values.
struct PickleOptions {
  /// Globals ("module.name") that may appear; any other is refused. The default is what
  /// torch.save writes for tensors and state dicts (pytorch_globals()).
  std::vector<std::string> allowed_globals;
  size_t max_stack = size_t{1} << 20;  // stack entries
  size_t max_marks = 4096;             // nested MARKs
  size_t max_memo = size_t{1} << 22;   // memo entries
  size_t max_nodes = size_t{1} << 23;  // values (about 100 bytes each)
};

/// The globals torch.save writes: collections.OrderedDict, the tensor and parameter rebuild
/// functions, the typed storage classes and torch's tensor types.
EMBER_API const std::vector<std::string>& pytorch_globals();

/// An unpickled tree; owns its nodes.
class EMBER_API Pickle {
 public:
  const PickleValue& root() const { return *root_; }
  /// Bytes the pickle took, up to and including its STOP (pickles can follow each other).
  size_t consumed() const { return consumed_; }
  size_t node_count() const { return nodes_.size(); }

 private:
  friend class Unpickler;
  std::deque<PickleValue> nodes_;
  const PickleValue* root_ = nullptr;
  size_t consumed_ = 0;
};

/// Unpickles the pickle at the start of `bytes`; `what` names the input in errors. Without
/// options, the PyTorch allow-list applies.
EMBER_API Pickle parse_pickle(std::span<const std::byte> bytes, const std::string& what);
EMBER_API Pickle parse_pickle(std::span<const std::byte> bytes, const std::string& what,
                              const PickleOptions& options);

}  // namespace ember::record
