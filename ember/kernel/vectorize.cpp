// vectorize_memory: consecutive scalar loads (stores) in a straight-line run become one
// vector access where the index is provably a multiple of the width.
#include <map>
#include <numeric>
#include <tuple>

#include "ember/kernel/pass_util.h"
#include "ember/kernel/passes.h"

namespace ember::kernel {

namespace {

struct Access {
  size_t pos;   // instruction index
  int64_t off;  // index = base + off
};

class Vectorizer {
 public:
  explicit Vectorizer(Kernel& k) : k_(k), def_(detail::def_index(k)) {}

  bool run() {
    size_t n = k_.body.size();
    before_.assign(n, {});
    drop_.assign(n, false);
    for (size_t i = 0; i < n; ++i) {
      const Inst& in = k_.body[i];
      Effect e = info(in.op).effect;
      bool is_load = in.op == Op::Load && in.type.width == 1;
      bool is_store = in.op == Op::Store && type_of(in.args[1]).width == 1;
      if (is_load) {
        flush_mem(stores_, in);  // a load ends the run of stores to its memory
        add(loads_, in, i);
      } else if (is_store) {
        flush_mem(loads_, in);
        add(stores_, in, i);
      } else if (e == Effect::Control || (e == Effect::Effect && in.op != Op::VarWrite)) {
        flush_all();
      }
    }
    flush_all();
    if (!changed_) return false;
    std::vector<Inst> body;
    for (size_t i = 0; i < n; ++i) {
      for (Inst& b : before_[i]) body.push_back(std::move(b));
      if (!drop_[i]) body.push_back(std::move(k_.body[i]));
    }
    k_.body = std::move(body);
    return true;
  }

 private:
  using Key = std::tuple<Space, uint32_t, ValueId>;  // memory, base value
  using Runs = std::map<Key, std::vector<Access>>;

  Type type_of(ValueId v) const {
    return v < def_.size() && def_[v] >= 0 ? k_.body[def_[v]].type : Type();
  }
  const Inst* def_of(ValueId v) const {
    return v < def_.size() && def_[v] >= 0 ? &k_.body[def_[v]] : nullptr;
  }
  static bool const_int(const Inst* d, int64_t& v) {
    if (!d || d->op != Op::Const || d->type.width != 1 || !is_int(d->type)) return false;
    v = d->imm;
    return true;
  }
  // A known divisor of the value (1 when nothing is known).
  int64_t multiple(ValueId v, int depth = 0) const {
    const Inst* d = def_of(v);
    int64_t c;
    if (!d || depth > 8) return 1;
    if (const_int(d, c)) return c == 0 ? 1 << 30 : std::abs(c);
    if (d->op == Op::Mul)
      return std::min<int64_t>(multiple(d->args[0], depth + 1) * multiple(d->args[1], depth + 1),
                               1 << 30);
    if (d->op == Op::Shl && const_int(def_of(d->args[1]), c) && c < 30) return int64_t{1} << c;
    if (d->op == Op::Add || d->op == Op::Sub)
      return std::gcd(multiple(d->args[0], depth + 1), multiple(d->args[1], depth + 1));
    return 1;
  }
  // index = base + off with a constant off.
  void split(ValueId idx, ValueId& base, int64_t& off) const {
    const Inst* d = def_of(idx);
    int64_t c;
    base = idx;
    off = 0;
    if (d && d->op == Op::Add && const_int(def_of(d->args[1]), c)) {
      base = d->args[0];
      off = c;
    } else if (d && d->op == Op::Add && const_int(def_of(d->args[0]), c)) {
      base = d->args[1];
      off = c;
    }
  }
  int mem_align(Space s, uint32_t ref, Type elem) const {
    if (s == Space::Shared) return 16 / byte_size(elem);  // renderers align shared arrays to 16
    return k_.params[ref].align;
  }
  Type elem(const Inst& in) const {
    return in.space == Space::Shared ? k_.shared[in.ref].type : k_.params[in.ref].type;
  }

  void add(Runs& runs, const Inst& in, size_t pos) {
    if (elem(in).width != 1) return;
    ValueId base;
    int64_t off;
    split(in.args[0], base, off);
    runs[{in.space, in.ref, base}].push_back({pos, off});
  }
  void flush_mem(Runs& runs, const Inst& in) {
    for (auto it = runs.begin(); it != runs.end();) {
      if (std::get<0>(it->first) == in.space && std::get<1>(it->first) == in.ref) {
        merge(it->first, it->second, &runs == &stores_);
        it = runs.erase(it);
      } else {
        ++it;
      }
    }
  }
  void flush_all() {
    for (auto& [key, acc] : loads_) merge(key, acc, false);
    for (auto& [key, acc] : stores_) merge(key, acc, true);
    loads_.clear();
    stores_.clear();
  }

  ValueId new_value() { return k_.num_values++; }

  void merge(const Key& key, std::vector<Access>& acc, bool store) {
    auto [space, ref, base] = key;
    Type e = space == Space::Shared ? k_.shared[ref].type : k_.params[ref].type;
    int align = mem_align(space, ref, e);
    int64_t base_mult = multiple(base);
    std::map<int64_t, size_t> at;  // offset -> position (first access wins)
    for (const Access& a : acc) at.emplace(a.off, a.pos);
    for (int w : {8, 4, 2}) {
      if (w * byte_size(e) > 16 || align % w || base_mult % w) continue;
      for (auto it = at.begin(); it != at.end();) {
        int64_t o = it->first;
        bool full = o % w == 0;
        for (int j = 0; full && j < w; ++j) full = at.count(o + j) && !drop_[at[o + j]];
        if (!full) {
          ++it;
          continue;
        }
        emit(space, ref, base, o, w, e, at, store);
        for (int j = 0; j < w; ++j) at.erase(o + j);
        it = at.lower_bound(o + w);
      }
    }
  }

  void emit(Space space, uint32_t ref, ValueId base, int64_t o, int w, Type e,
            std::map<int64_t, size_t>& at, bool store) {
    size_t first = SIZE_MAX, last = 0;
    for (int j = 0; j < w; ++j) {
      first = std::min(first, at[o + j]);
      last = std::max(last, at[o + j]);
    }
    size_t where = store ? last : first;
    std::vector<Inst>& pre = before_[where];
    ValueId index = base;
    if (o != 0) {
      Inst c;
      c.op = Op::Const;
      c.type = type_of(base);
      c.imm = o;
      c.result = new_value();
      Inst add;
      add.op = Op::Add;
      add.type = c.type;
      add.args = {base, c.result};
      add.result = new_value();
      index = add.result;
      pre.push_back(c);
      pre.push_back(add);
    }
    Inst v;
    if (store) {
      Inst lanes;
      lanes.op = Op::Vec;
      lanes.type = e.with_width(w);
      lanes.result = new_value();
      for (int j = 0; j < w; ++j) lanes.args.push_back(k_.body[at[o + j]].args[1]);
      v.op = Op::Store;
      v.args = {index, lanes.result};
      pre.push_back(lanes);
      for (int j = 0; j < w; ++j) drop_[at[o + j]] = true;
    } else {
      v.op = Op::Load;
      v.type = e.with_width(w);
      v.result = new_value();
      v.args = {index};
      for (int j = 0; j < w; ++j) {  // each scalar load becomes a lane of the vector
        Inst& l = k_.body[at[o + j]];
        l.op = Op::Extract;
        l.args = {v.result};
        l.ref = static_cast<uint32_t>(j);
        l.space = Space::Global;
      }
    }
    v.space = space;
    v.ref = ref;
    pre.push_back(v);
    changed_ = true;
  }

  Kernel& k_;
  std::vector<int> def_;
  std::vector<std::vector<Inst>> before_;
  std::vector<bool> drop_;
  Runs loads_, stores_;
  bool changed_ = false;
};

}  // namespace

bool vectorize_memory(Kernel& k) { return Vectorizer(k).run(); }

}  // namespace ember::kernel
