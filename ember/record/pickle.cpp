#include "ember/record/pickle.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_map>

#include "ember/core/error.h"

namespace ember::record {

using Kind = PickleValue::Kind;

const PickleValue* PickleValue::get(const std::string& key) const {
  if (kind != Kind::Dict) return nullptr;
  for (size_t k = 0; k + 1 < items.size(); k += 2)
    if (items[k]->kind == Kind::String && items[k]->str == key) return items[k + 1];
  return nullptr;
}

const std::vector<std::string>& pytorch_globals() {
  static const std::vector<std::string> g = {
      "collections.OrderedDict",
      "builtins.set",
      "builtins.frozenset",
      "torch._utils._rebuild_tensor_v2",
      "torch._utils._rebuild_parameter",
      "torch._utils._rebuild_parameter_with_state",
      "torch._tensor._rebuild_from_type_v2",
      "torch.Tensor",
      "torch.nn.parameter.Parameter",
      "torch.FloatStorage",
      "torch.DoubleStorage",
      "torch.HalfStorage",
      "torch.BFloat16Storage",
      "torch.LongStorage",
      "torch.IntStorage",
      "torch.ShortStorage",
      "torch.CharStorage",
      "torch.ByteStorage",
      "torch.BoolStorage",
      "torch.UntypedStorage",
      "torch.storage.UntypedStorage",
  };
  return g;
}

class Unpickler {
 public:
  Unpickler(std::span<const std::byte> b, const std::string& what, const PickleOptions& o)
      : b_(b), what_(what), opt_(o) {}

  Pickle run() {
    while (true) {
      const size_t at = pos_;
      const uint8_t op = u8();
      if (op == '.') {  // STOP
        if (stack_.size() != 1 || !marks_.empty())
          bad(at, "STOP with " + std::to_string(stack_.size()) + " values on the stack and " +
                      std::to_string(marks_.size()) + " open marks");
        out_.root_ = stack_.back();
        out_.consumed_ = pos_;
        return std::move(out_);
      }
      step(op, at);
    }
  }

 private:
  [[noreturn]] void bad(size_t at, const std::string& why) const {
    throw ValueError("[pickle] " + what_ + ": byte " + std::to_string(at) + ": " + why);
  }
  void need(size_t n) const {
    if (n > b_.size() - pos_)
      bad(pos_, "truncated: " + std::to_string(n) + " bytes needed, " +
                    std::to_string(b_.size() - pos_) + " left");
  }
  uint8_t u8() {
    need(1);
    return static_cast<uint8_t>(b_[pos_++]);
  }
  uint64_t uint_le(size_t n) {
    need(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= uint64_t{static_cast<uint8_t>(b_[pos_ + k])} << (8 * k);
    pos_ += n;
    return v;
  }
  std::string bytes(uint64_t n) {
    if (n > b_.size() - pos_)
      bad(pos_, "truncated: a length of " + std::to_string(n) + " bytes, " +
                    std::to_string(b_.size() - pos_) + " left");
    std::string s(reinterpret_cast<const char*>(b_.data()) + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  std::string line(size_t at) {  // GLOBAL's newline-terminated module and name
    size_t end = pos_;
    while (end < b_.size() && end - pos_ < 256 && b_[end] != std::byte{'\n'}) ++end;
    if (end >= b_.size() || b_[end] != std::byte{'\n'}) bad(at, "GLOBAL without a newline");
    std::string s(reinterpret_cast<const char*>(b_.data()) + pos_, end - pos_);
    pos_ = end + 1;
    return s;
  }

  PickleValue* node(Kind k) {
    if (out_.nodes_.size() >= opt_.max_nodes)
      bad(pos_, "more than " + std::to_string(opt_.max_nodes) + " values");
    PickleValue& v = out_.nodes_.emplace_back();
    v.kind = k;
    return &v;
  }
  void push(PickleValue* v, size_t at) {
    if (stack_.size() >= opt_.max_stack)
      bad(at, "more than " + std::to_string(opt_.max_stack) + " values on the stack");
    stack_.push_back(v);
  }
  // Values above the innermost mark: what opcodes other than the mark ones may pop.
  size_t frame() const { return stack_.size() - (marks_.empty() ? 0 : marks_.back()); }
  PickleValue* pop(size_t at) {
    if (frame() == 0) bad(at, "stack underflow");
    PickleValue* v = stack_.back();
    stack_.pop_back();
    return v;
  }
  PickleValue* top(size_t at) const {
    if (frame() == 0) bad(at, "stack underflow");
    return stack_.back();
  }
  std::vector<const PickleValue*> pop_mark(size_t at) {
    if (marks_.empty()) bad(at, "no MARK to pop to");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<const PickleValue*> v(stack_.begin() + static_cast<ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  PickleValue* tuple(std::vector<const PickleValue*> items) {
    PickleValue* t = node(Kind::Tuple);
    t->items = std::move(items);
    return t;
  }
  PickleValue* global(const std::string& module, const std::string& name, size_t at) {
    std::string full = module + "." + name;
    const auto& allowed = opt_.allowed_globals.empty() ? pytorch_globals() : opt_.allowed_globals;
    if (std::find(allowed.begin(), allowed.end(), full) == allowed.end())
      bad(at, "global '" + full +
                  "' is not allowed (only tensors and containers are read; no code from a file "
                  "is run)");
    PickleValue* g = node(Kind::Global);
    g->str = std::move(full);
    return g;
  }
  void memo_put(uint64_t idx, size_t at) {
    PickleValue* v = top(at);
    if (memo_.size() >= opt_.max_memo && !memo_.count(idx))
      bad(at, "more than " + std::to_string(opt_.max_memo) + " memo entries");
    memo_[idx] = v;
  }
  void memo_get(uint64_t idx, size_t at) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) bad(at, "memo entry " + std::to_string(idx) + " was never stored");
    push(it->second, at);
  }
  void call(PickleValue* fn, PickleValue* args, size_t at, const char* op) {
    if (!fn->is(Kind::Global)) bad(at, std::string(op) + " of something that is not a global");
    if (!args->is(Kind::Tuple)) bad(at, std::string(op) + " arguments are not a tuple");
    if (fn->str == "collections.OrderedDict" && args->items.empty()) {
      push(node(Kind::Dict), at);
      return;
    }
    if (fn->str == "builtins.set" || fn->str == "builtins.frozenset") {
      PickleValue* s = node(Kind::List);
      if (args->items.size() > 1) bad(at, fn->str + " takes at most one argument");
      if (!args->items.empty()) {
        const PickleValue* src = args->items[0];
        if (!src->is(Kind::List) && !src->is(Kind::Tuple))
          bad(at, fn->str + " of something that is not a list");
        copied_ += src->items.size();  // copies, unlike moves off the stack, are not paid for
        if (copied_ > b_.size()) bad(at, "too many set elements for the input's size");
        s->items = src->items;
      }
      push(s, at);
      return;
    }
    PickleValue* c = node(Kind::Call);
    c->items = {fn, args};
    push(c, at);
  }
  int64_t long_value(const std::string& s) const {  // little-endian two's complement, <= 8 bytes
    uint64_t v = 0;
    for (size_t k = 0; k < s.size(); ++k) v |= uint64_t{static_cast<uint8_t>(s[k])} << (8 * k);
    if (!s.empty() && s.size() < 8 && (static_cast<uint8_t>(s.back()) & 0x80))
      v |= ~uint64_t{0} << (8 * s.size());
    return static_cast<int64_t>(v);
  }
  void push_long(std::string s, size_t at) {
    PickleValue* v = node(Kind::Int);
    if (s.size() <= 8) {
      v->i = long_value(s);
    } else {
      v->kind = Kind::BigInt;
      v->str = std::move(s);
    }
    push(v, at);
  }
  void push_string(Kind k, std::string s, size_t at) {
    PickleValue* v = node(k);
    v->str = std::move(s);
    push(v, at);
  }
  void push_int(int64_t i, size_t at) {
    PickleValue* v = node(Kind::Int);
    v->i = i;
    push(v, at);
  }

  void step(uint8_t op, size_t at) {
    switch (op) {
      case 0x80: {  // PROTO
        uint8_t p = u8();
        if (p < 2 || p > 5) bad(at, "pickle protocol " + std::to_string(p) + " is not supported");
        return;
      }
      case 0x95: {  // FRAME: a length prefix only; the opcodes follow inline
        uint64_t n = uint_le(8);
        if (n > b_.size() - pos_) bad(at, "frame of " + std::to_string(n) + " bytes past the end");
        return;
      }
      case '(':  // MARK
        if (marks_.size() >= opt_.max_marks)
          bad(at, "more than " + std::to_string(opt_.max_marks) + " nested marks");
        marks_.push_back(stack_.size());
        return;
      case '0':
        pop(at);
        return;  // POP
      case '1':
        pop_mark(at);
        return;  // POP_MARK
      case '2':
        push(top(at), at);
        return;  // DUP
      case '}':
        push(node(Kind::Dict), at);
        return;
      case ']':
        push(node(Kind::List), at);
        return;
      case ')':
        push(tuple({}), at);
        return;
      case 0x8f:
        push(node(Kind::List), at);
        return;  // EMPTY_SET
      case 'N':
        push(node(Kind::None), at);
        return;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        PickleValue* v = node(Kind::Bool);
        v->b = op == 0x88;
        push(v, at);
        return;
      }
      case 'J':
        push_int(static_cast<int32_t>(uint_le(4)), at);
        return;  // BININT
      case 'K':
        push_int(static_cast<int64_t>(uint_le(1)), at);
        return;  // BININT1
      case 'M':
        push_int(static_cast<int64_t>(uint_le(2)), at);
        return;  // BININT2
      case 0x8a:
        push_long(bytes(u8()), at);
        return;  // LONG1
      case 0x8b:
        push_long(bytes(uint_le(4)), at);
        return;    // LONG4
      case 'G': {  // BINFLOAT (big endian)
        uint64_t be = uint_le(8);
        PickleValue* v = node(Kind::Float);
        uint64_t le = 0;
        for (int k = 0; k < 8; ++k) le = (le << 8) | ((be >> (8 * k)) & 0xff);
        v->f = std::bit_cast<double>(le);
        push(v, at);
        return;
      }
      case 'X':
        push_string(Kind::String, bytes(uint_le(4)), at);
        return;  // BINUNICODE
      case 0x8c:
        push_string(Kind::String, bytes(u8()), at);
        return;  // SHORT_BINUNICODE
      case 0x8d:
        push_string(Kind::String, bytes(uint_le(8)), at);
        return;  // BINUNICODE8
      case 'T':
        push_string(Kind::String, bytes(uint_le(4)), at);
        return;  // BINSTRING
      case 'U':
        push_string(Kind::String, bytes(u8()), at);
        return;  // SHORT_BINSTRING
      case 'B':
        push_string(Kind::Bytes, bytes(uint_le(4)), at);
        return;  // BINBYTES
      case 'C':
        push_string(Kind::Bytes, bytes(u8()), at);
        return;  // SHORT_BINBYTES
      case 0x8e:
        push_string(Kind::Bytes, bytes(uint_le(8)), at);
        return;  // BINBYTES8
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1, TUPLE2, TUPLE3
        const size_t n = op - 0x84u;
        if (frame() < n) bad(at, "stack underflow");
        std::vector<const PickleValue*> v(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
        stack_.resize(stack_.size() - n);
        push(tuple(std::move(v)), at);
        return;
      }
      case 't':
        push(tuple(pop_mark(at)), at);
        return;    // TUPLE
      case 'l': {  // LIST
        PickleValue* l = node(Kind::List);
        l->items = pop_mark(at);
        push(l, at);
        return;
      }
      case 0x91: {  // FROZENSET
        PickleValue* l = node(Kind::List);
        l->items = pop_mark(at);
        push(l, at);
        return;
      }
      case 'd': {  // DICT
        auto kv = pop_mark(at);
        if (kv.size() % 2) bad(at, "DICT with an odd number of items");
        PickleValue* d = node(Kind::Dict);
        d->items = std::move(kv);
        push(d, at);
        return;
      }
      case 's': {  // SETITEM
        PickleValue* v = pop(at);
        PickleValue* k = pop(at);
        PickleValue* d = top(at);
        if (!d->is(Kind::Dict)) bad(at, "SETITEM on something that is not a dict");
        d->items.push_back(k);
        d->items.push_back(v);
        return;
      }
      case 'u': {  // SETITEMS
        auto kv = pop_mark(at);
        if (kv.size() % 2) bad(at, "SETITEMS with an odd number of items");
        PickleValue* d = top(at);
        if (!d->is(Kind::Dict)) bad(at, "SETITEMS on something that is not a dict");
        d->items.insert(d->items.end(), kv.begin(), kv.end());
        return;
      }
      case 'a': {  // APPEND
        PickleValue* v = pop(at);
        PickleValue* l = top(at);
        if (!l->is(Kind::List)) bad(at, "APPEND to something that is not a list");
        l->items.push_back(v);
        return;
      }
      case 'e':
      case 0x90: {  // APPENDS, ADDITEMS
        auto v = pop_mark(at);
        PickleValue* l = top(at);
        if (!l->is(Kind::List)) bad(at, "APPENDS to something that is not a list or set");
        l->items.insert(l->items.end(), v.begin(), v.end());
        return;
      }
      case 'q':
        memo_put(uint_le(1), at);
        return;  // BINPUT
      case 'r':
        memo_put(uint_le(4), at);
        return;  // LONG_BINPUT
      case 0x94:
        memo_put(memo_.size(), at);
        return;  // MEMOIZE
      case 'h':
        memo_get(uint_le(1), at);
        return;  // BINGET
      case 'j':
        memo_get(uint_le(4), at);
        return;    // LONG_BINGET
      case 'c': {  // GLOBAL
        std::string module = line(at);
        std::string name = line(at);
        push(global(module, name, at), at);
        return;
      }
      case 0x93: {  // STACK_GLOBAL
        PickleValue* name = pop(at);
        PickleValue* module = pop(at);
        if (!name->is(Kind::String) || !module->is(Kind::String))
          bad(at, "STACK_GLOBAL of values that are not strings");
        push(global(module->str, name->str, at), at);
        return;
      }
      case 'R': {  // REDUCE
        PickleValue* args = pop(at);
        call(pop(at), args, at, "REDUCE");
        return;
      }
      case 0x81: {  // NEWOBJ
        PickleValue* args = pop(at);
        call(pop(at), args, at, "NEWOBJ");
        return;
      }
      case 'b': {  // BUILD
        PickleValue* state = pop(at);
        PickleValue* obj = top(at);
        if (obj->is(Kind::Dict)) return;  // an OrderedDict's attributes (a state dict's _metadata)
        if (!obj->is(Kind::Call)) bad(at, "BUILD of something that is not an object");
        obj->items.resize(2);
        obj->items.push_back(state);
        return;
      }
      case 'Q': {  // BINPERSID
        PickleValue* pid = pop(at);
        PickleValue* p = node(Kind::Persistent);
        p->items = {pid};
        push(p, at);
        return;
      }
      default: {
        static const char* hex = "0123456789abcdef";
        std::string code = {'0', 'x', hex[op >> 4], hex[op & 15]};
        bad(at, "opcode " + code + " is not supported");
      }
    }
  }

  std::span<const std::byte> b_;
  const std::string& what_;
  const PickleOptions& opt_;
  size_t pos_ = 0;
  size_t copied_ = 0;
  Pickle out_;
  std::vector<PickleValue*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, PickleValue*> memo_;
};

Pickle parse_pickle(std::span<const std::byte> bytes, const std::string& what,
                    const PickleOptions& options) {
  return Unpickler(bytes, what, options).run();
}

Pickle parse_pickle(std::span<const std::byte> bytes, const std::string& what) {
  static const PickleOptions defaults{};
  return parse_pickle(bytes, what, defaults);
}

}  // namespace ember::record
