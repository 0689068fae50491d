// The pass manager, dead-code elimination and deduplication.
#include "ember/kernel/passes.h"

#include <map>
#include <tuple>

#include "ember/core/error.h"
#include "ember/kernel/pass_util.h"

namespace ember::kernel {

bool eliminate_dead_code(Kernel& k) {
  bool changed_any = false;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<int> uses(k.num_values, 0);
    std::vector<bool> var_read(k.vars.size(), false);
    for (const Inst& i : k.body) {
      for (ValueId a : i.args)
        if (a < k.num_values) ++uses[a];
      if (i.op == Op::VarRead && i.ref < var_read.size()) var_read[i.ref] = true;
    }
    std::vector<bool> drop(k.body.size(), false);
    std::vector<int> partner = detail::block_partner(k);
    for (size_t n = 0; n < k.body.size(); ++n) {
      const Inst& i = k.body[n];
      Effect e = info(i.op).effect;
      bool dead = false;
      if ((e == Effect::Pure || e == Effect::Read) && i.result != kNoValue)
        dead = uses[i.result] == 0;
      if (i.op == Op::VarWrite) dead = i.ref < var_read.size() && !var_read[i.ref];
      // Empty blocks: if/end_if, if/else/end_if, for/end_for with nothing inside.
      if ((i.op == Op::If || i.op == Op::For) && partner[n] == static_cast<int>(n) + 1) {
        const Inst& end = k.body[n + 1];
        if (end.op == Op::Else) {
          int e2 = partner[n + 1];
          if (e2 == static_cast<int>(n) + 2) drop[n] = drop[n + 1] = drop[n + 2] = changed = true;
        } else if (i.op == Op::If || uses[i.result] == 0) {
          drop[n] = drop[n + 1] = changed = true;
        }
        continue;
      }
      if (dead && !drop[n]) drop[n] = changed = true;
    }
    if (changed) {
      detail::compact(k, drop);
      changed_any = true;
    }
  }
  return changed_any;
}

bool deduplicate(Kernel& k) {
  using Key = std::tuple<Op, uint8_t, uint8_t, std::vector<ValueId>, uint32_t, int64_t, double>;
  std::vector<std::map<Key, ValueId>> scopes(1);
  std::vector<ValueId> repl = detail::identity_map(k);
  std::vector<bool> drop(k.body.size(), false);
  bool changed = false;
  for (size_t n = 0; n < k.body.size(); ++n) {
    Inst& i = k.body[n];
    for (ValueId& a : i.args)
      if (a < repl.size()) a = repl[a];
    if (i.op == Op::EndIf || i.op == Op::EndFor || i.op == Op::Else) scopes.pop_back();
    if (i.op == Op::If || i.op == Op::For || i.op == Op::Else) scopes.emplace_back();
    if (info(i.op).effect != Effect::Pure || i.result == kNoValue) continue;
    Key key{i.op, static_cast<uint8_t>(i.type.scalar), i.type.width, i.args, i.ref, i.imm, i.fimm};
    ValueId found = kNoValue;
    for (auto s = scopes.rbegin(); s != scopes.rend() && found == kNoValue; ++s) {
      auto it = s->find(key);
      if (it != s->end()) found = it->second;
    }
    if (found != kNoValue) {
      repl[i.result] = found;
      drop[n] = changed = true;
    } else {
      scopes.back().emplace(std::move(key), i.result);
    }
  }
  if (changed) detail::compact(k, drop);
  return changed;
}

const std::vector<Pass>& builtin_passes() {
  static const std::vector<Pass> passes = {
      {"fold_constants", fold_constants},
      {"deduplicate", deduplicate},
      {"vectorize_memory", vectorize_memory},
      {"eliminate_dead_code", eliminate_dead_code},
  };
  return passes;
}

PassManager& PassManager::add(std::string_view name) {
  for (const Pass& p : builtin_passes())
    if (p.name == name) {
      passes_.push_back(p);
      return *this;
    }
  std::string known;
  for (const Pass& p : builtin_passes()) known += (known.empty() ? "" : ", ") + p.name;
  throw ValueError("[kernel passes] no pass named '" + std::string(name) + "' (known: " + known +
                   ")");
}

PassManager& PassManager::add(std::string name, PassFn fn) {
  passes_.push_back({std::move(name), std::move(fn)});
  return *this;
}

std::vector<std::string> PassManager::run(Kernel& k) const {
  std::vector<std::string> changed;
  for (const Pass& p : passes_) {
    if (p.run(k)) changed.push_back(p.name);
    try {
      validate(k, validate_options);
    } catch (const ValueError& e) {
      std::string msg = e.what(), prefix = "[kernel " + k.name + "] ";
      if (msg.rfind(prefix, 0) == 0) msg = msg.substr(prefix.size());
      throw ValueError(prefix + "after pass '" + p.name + "': " + msg);
    }
    if (trace) trace(p.name, k);
  }
  return changed;
}

std::vector<std::string> PassManager::names() const {
  std::vector<std::string> n;
  for (const Pass& p : passes_) n.push_back(p.name);
  return n;
}

PassManager default_pipeline() {
  PassManager pm;
  pm.add("fold_constants").add("deduplicate").add("vectorize_memory").add("fold_constants");
  pm.add("eliminate_dead_code");
  return pm;
}

}  // namespace ember::kernel
