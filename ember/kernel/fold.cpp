// Constant folding: exact operations on constants, identities, branches on constants.
#include <cmath>
#include <optional>

#include "ember/core/half.h"
#include "ember/kernel/pass_util.h"
#include "ember/kernel/passes.h"

namespace ember::kernel {

namespace {

struct C {
  int64_t i = 0;
  double f = 0;
};

// An integer wrapped to the type's width (two's complement), bool to 0/1.
int64_t wrap(int64_t v, ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
      return v != 0;
    case ScalarType::I8:
      return static_cast<int8_t>(v);
    case ScalarType::U8:
      return static_cast<uint8_t>(v);
    case ScalarType::I16:
      return static_cast<int16_t>(v);
    case ScalarType::I32:
      return static_cast<int32_t>(v);
    case ScalarType::U32:
      return static_cast<uint32_t>(v);
    default:
      return v;
  }
}

// A double rounded to the float type (f64 unchanged).
double round_to(double v, ScalarType s) {
  switch (s) {
    case ScalarType::F32:
      return static_cast<float>(v);
    case ScalarType::F16:
      return static_cast<float>(f16(static_cast<float>(v)));
    case ScalarType::BF16:
      return static_cast<float>(bf16(static_cast<float>(v)));
    default:
      return v;
  }
}

double as_double(const C& c, ScalarType s) { return is_float(s) ? c.f : static_cast<double>(c.i); }

std::optional<C> cast(const C& c, ScalarType from, ScalarType to) {
  C r;
  if (is_float(to)) {
    r.f = round_to(is_float(from)
                       ? c.f
                       : (from == ScalarType::U32 ? static_cast<double>(static_cast<uint32_t>(c.i))
                                                  : static_cast<double>(c.i)),
                   to);
  } else if (to == ScalarType::Bool) {
    r.i = is_float(from) ? c.f != 0 : c.i != 0;
  } else if (is_float(from)) {
    double t = std::trunc(c.f);
    if (!(std::fabs(t) < 9.2e18)) return std::nullopt;  // out of range: target-defined
    r.i = wrap(static_cast<int64_t>(t), to);
  } else {
    r.i = wrap(c.i, to);
  }
  return r;
}

std::optional<C> eval(Op op, Type t, const C* a, ScalarType arg_scalar) {
  ScalarType s = arg_scalar;
  C r;
  if (is_float(s)) {
    double x = a[0].f, y = a[1].f;
    switch (op) {
      case Op::Neg:
        r.f = -x;
        break;
      case Op::Abs:
        r.f = std::fabs(x);
        break;
      case Op::Sqrt:
        r.f = std::sqrt(x);
        break;
      case Op::Floor:
        r.f = std::floor(x);
        break;
      case Op::Ceil:
        r.f = std::ceil(x);
        break;
      case Op::Trunc:
        r.f = std::trunc(x);
        break;
      case Op::Round:
        r.f = std::nearbyint(x);
        break;
      case Op::Add:
        r.f = x + y;
        break;
      case Op::Sub:
        r.f = x - y;
        break;
      case Op::Mul:
        r.f = x * y;
        break;
      case Op::Div:
        r.f = x / y;
        break;
      case Op::Min:
        r.f = std::isnan(x) || std::isnan(y) ? NAN : std::fmin(x, y);
        break;
      case Op::Max:
        r.f = std::isnan(x) || std::isnan(y) ? NAN : std::fmax(x, y);
        break;
      case Op::IsNan:
        r.i = std::isnan(x);
        return r;
      case Op::IsInf:
        r.i = std::isinf(x);
        return r;
      case Op::Eq:
        r.i = x == y;
        return r;
      case Op::Ne:
        r.i = x != y;
        return r;
      case Op::Lt:
        r.i = x < y;
        return r;
      case Op::Le:
        r.i = x <= y;
        return r;
      case Op::Gt:
        r.i = x > y;
        return r;
      case Op::Ge:
        r.i = x >= y;
        return r;
      default:
        return std::nullopt;
    }
    r.f = round_to(r.f, t.scalar);
    return r;
  }
  int64_t x = a[0].i, y = a[1].i;
  bool u = !is_signed(s);
  auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  switch (op) {
    case Op::Neg:
      r.i = static_cast<int64_t>(0 - ux);
      break;
    case Op::Abs:
      r.i = x < 0 ? static_cast<int64_t>(0 - ux) : x;
      break;
    case Op::Not:
      r.i = s == ScalarType::Bool ? !x : ~x;
      break;
    case Op::Add:
      r.i = static_cast<int64_t>(ux + uy);
      break;
    case Op::Sub:
      r.i = static_cast<int64_t>(ux - uy);
      break;
    case Op::Mul:
      r.i = static_cast<int64_t>(ux * uy);
      break;
    case Op::MulHi:
      r.i = u ? static_cast<int64_t>(
                    (static_cast<uint64_t>(static_cast<uint32_t>(x)) * static_cast<uint32_t>(y)) >>
                    32)
              : (static_cast<int64_t>(static_cast<int32_t>(x)) * static_cast<int32_t>(y)) >> 32;
      break;
    case Op::Div:
    case Op::Rem:
      if (y == 0 || (!u && y == -1)) return std::nullopt;
      r.i = op == Op::Div ? (u ? static_cast<int64_t>(ux / uy) : x / y)
                          : (u ? static_cast<int64_t>(ux % uy) : x % y);
      break;
    case Op::Min:
      r.i = u ? static_cast<int64_t>(std::min(ux, uy)) : std::min(x, y);
      break;
    case Op::Max:
      r.i = u ? static_cast<int64_t>(std::max(ux, uy)) : std::max(x, y);
      break;
    case Op::And:
      r.i = x & y;
      break;
    case Op::Or:
      r.i = x | y;
      break;
    case Op::Xor:
      r.i = x ^ y;
      break;
    case Op::Shl:
    case Op::Shr:
      if (y < 0 || y >= byte_size(s) * 8) return std::nullopt;
      r.i = op == Op::Shl ? static_cast<int64_t>(ux << y)
                          : (u ? static_cast<int64_t>(ux >> y) : x >> y);
      break;
    case Op::Eq:
      r.i = x == y;
      return r;
    case Op::Ne:
      r.i = x != y;
      return r;
    case Op::Lt:
      r.i = u ? ux < uy : x < y;
      return r;
    case Op::Le:
      r.i = u ? ux <= uy : x <= y;
      return r;
    case Op::Gt:
      r.i = u ? ux > uy : x > y;
      return r;
    case Op::Ge:
      r.i = u ? ux >= uy : x >= y;
      return r;
    default:
      return std::nullopt;
  }
  r.i = wrap(r.i, t.scalar);
  return r;
}

bool is_const(const Inst* d, double v) {
  if (!d || d->op != Op::Const || d->type.width != 1) return false;
  return is_float(d->type) ? d->fimm == v : static_cast<double>(d->imm) == v;
}

}  // namespace

bool fold_constants(Kernel& k) {
  bool changed = false;
  std::vector<ValueId> repl = detail::identity_map(k);
  std::vector<int> def = detail::def_index(k);
  std::vector<bool> drop(k.body.size(), false);
  auto find = [&](ValueId v) {
    while (v < repl.size() && repl[v] != v) v = repl[v];
    return v;
  };
  auto def_of = [&](ValueId v) -> Inst* {
    return v < def.size() && def[v] >= 0 ? &k.body[def[v]] : nullptr;
  };
  for (size_t n = 0; n < k.body.size(); ++n) {
    Inst& i = k.body[n];
    for (ValueId& a : i.args) a = find(a);
    if (info(i.op).effect != Effect::Pure || i.result == kNoValue || i.type.width != 1) continue;
    Inst* d[3] = {};
    bool all_const = !i.args.empty();
    for (size_t j = 0; j < i.args.size() && j < 3; ++j) {
      d[j] = def_of(i.args[j]);
      all_const = all_const && d[j] && d[j]->op == Op::Const && d[j]->type.width == 1;
    }
    auto to_const = [&](const C& c) {
      i.op = Op::Const;
      i.args.clear();
      i.imm = is_float(i.type) ? 0 : c.i;
      i.fimm = is_float(i.type) ? c.f : 0;
      changed = true;
    };
    auto forward = [&](ValueId v) {
      repl[i.result] = v;
      drop[n] = changed = true;
    };
    if (i.op == Op::Select && d[0] && d[0]->op == Op::Const && d[0]->type.width == 1) {
      forward(d[0]->imm ? i.args[1] : i.args[2]);
      continue;
    }
    if (all_const && i.op != Op::Vec && i.op != Op::Extract && i.op != Op::Bitcast &&
        i.op != Op::Fma && i.op != Op::Select && i.args.size() <= 2) {
      ScalarType s = d[0]->type.scalar;
      C in[2] = {{d[0]->imm, d[0]->fimm}, {}};
      if (i.args.size() > 1) in[1] = {d[1]->imm, d[1]->fimm};
      std::optional<C> r =
          i.op == Op::Cast ? cast(in[0], s, i.type.scalar) : eval(i.op, i.type, in, s);
      if (r) to_const(*r);
      continue;
    }
    // Identities that hold for every value (no float x + 0: -0 + 0 is +0).
    if (i.args.size() == 2) {
      bool int_type = !is_float(i.type);
      if ((i.op == Op::Mul && is_const(d[1], 1)) || (i.op == Op::Div && is_const(d[1], 1)) ||
          (int_type &&
           (i.op == Op::Add || i.op == Op::Sub || i.op == Op::Or || i.op == Op::Xor ||
            i.op == Op::Shl || i.op == Op::Shr) &&
           is_const(d[1], 0)))
        forward(i.args[0]);
      else if ((i.op == Op::Mul && is_const(d[0], 1)) ||
               (int_type && (i.op == Op::Add || i.op == Op::Or || i.op == Op::Xor) &&
                is_const(d[0], 0)))
        forward(i.args[1]);
      else if (int_type && i.op == Op::Mul && (is_const(d[0], 0) || is_const(d[1], 0)))
        to_const(C{});
    }
    (void)as_double;
  }
  if (changed) detail::compact(k, drop);
  // Branches on constants: keep the taken block, drop the markers.
  std::vector<int> partner = detail::block_partner(k);
  def = detail::def_index(k);
  std::vector<bool> drop2(k.body.size(), false);
  bool branch = false;
  for (size_t n = 0; n < k.body.size(); ++n) {
    const Inst& i = k.body[n];
    if (i.op != Op::If || drop2[n] || partner[n] < 0) continue;
    const Inst* c = def_of(i.args[0]);
    if (!c || c->op != Op::Const) continue;
    size_t mid = partner[n], end = k.body[mid].op == Op::Else ? partner[mid] : mid;
    drop2[n] = drop2[mid] = drop2[end] = true;
    if (c->imm) {
      for (size_t j = mid; j <= end; ++j) drop2[j] = true;  // the else block
    } else {
      for (size_t j = n; j <= mid; ++j) drop2[j] = true;  // the then block
    }
    branch = true;
  }
  if (branch) detail::compact(k, drop2);
  return changed || branch;
}

}  // namespace ember::kernel
