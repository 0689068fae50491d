// Named passes over the kernel IR. A pass rewrites a kernel in place and says whether it
// changed anything; the PassManager runs a list of them and validates after each, so a
// faulty rewrite is caught at the pass that made it ("[kernel k] after pass 'vectorize': ...").
//
//   kernel::KernelBuilder kb("k");
//   kernel::Kernel k = kb.finish();
//   kernel::PassManager pm = kernel::default_pipeline();   // fold, dedupe, vectorize, dce
//   pm.run(k);
//   kernel::PassManager mine;
//   mine.add("fold_constants").add("eliminate_dead_code");
//   mine.add("my_pass", [](kernel::Kernel&) { return false; });
//   mine.run(k);
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/kernel/validate.h"

namespace ember::kernel {

/// Evaluates exact operations (arithmetic, comparisons, casts, select, min/max, rounding,
/// sqrt) on constants, applies identities (x * 1, integer x + 0), and keeps the one branch of
/// an if on a constant. Transcendental functions are left to the target.
EMBER_API bool fold_constants(Kernel& k);
/// Removes pure instructions and loads whose value is unused, writes to variables never read,
/// and empty blocks.
EMBER_API bool eliminate_dead_code(Kernel& k);
/// Merges identical pure instructions where the first is visible from the second.
EMBER_API bool deduplicate(Kernel& k);
/// Merges loads (and stores) of consecutive elements base + o, ..., base + o + w - 1 in one
/// straight-line run into one vector access of width w (2, 4 or 8; at most 16 bytes), where
/// base + o is provably a multiple of w and the buffer's `align` allows it.
EMBER_API bool vectorize_memory(Kernel& k);

using PassFn = std::function<bool(Kernel&)>;
struct Pass {
  std::string name;
  PassFn run;
};
/// The passes above by name: fold_constants, deduplicate, vectorize_memory,
/// eliminate_dead_code.
EMBER_API const std::vector<Pass>& builtin_passes();

class EMBER_API PassManager {
 public:
  /// A built-in pass by name (ValueError when there is none).
  PassManager& add(std::string_view name);
  PassManager& add(std::string name, PassFn fn);
  /// Runs the passes in order, validating after each. Returns the names of those that changed
  /// the kernel. `trace`, when set, sees the kernel after every pass.
  std::vector<std::string> run(Kernel& k) const;
  std::vector<std::string> names() const;
  ValidateOptions validate_options;
  std::function<void(std::string_view pass, const Kernel&)> trace;

 private:
  std::vector<Pass> passes_;
};

/// fold_constants, deduplicate, vectorize_memory, fold_constants, eliminate_dead_code.
EMBER_API PassManager default_pipeline();

}  // namespace ember::kernel
