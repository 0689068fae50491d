// IR -> GLSL 4.50 compute shader (Vulkan). Half types live in f32 registers and are rounded
// after every operation (as the CUDA renderer and the CPU do); 8- and 16-bit integers live in
// 32-bit registers, narrowed after every operation; storage keeps their real widths.
#include "ember/kernel/codegen/glsl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/codegen/glsl_header.h"
#include "ember/kernel/codegen/glsl_math.h"
#include "ember/kernel/validate.h"

namespace ember::kernel {

namespace {

using namespace glsl;

const char* binary_symbol(Op op, ScalarType s) {
  switch (op) {
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::And:
      return s == ScalarType::Bool ? "&&" : "&";
    case Op::Or:
      return s == ScalarType::Bool ? "||" : "|";
    case Op::Xor:
      return s == ScalarType::Bool ? "!=" : "^";
    case Op::Shl:
      return "<<";
    case Op::Shr:
      return ">>";
    case Op::Eq:
      return "==";
    case Op::Ne:
      return "!=";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    default:
      return "?";
  }
}

class Renderer {
 public:
  Renderer(const Kernel& k, const GlslOptions& o)
      : k_(k),
        o_(o),
        types_(value_types(k)),
        alias_(u32_views(k)),
        vec_shared_(vec4_shared(k, types_)),
        frag_shared_(fragment_shared(k)),
        frag_types_(fragment_types_glsl(k)) {}

  std::string run() {
    Needs needs;
    std::string s = header(k_, types_, alias_, o_, needs);
    bool f64 = needs.f64, i64 = needs.i64;
    // Buffers are device addresses (buffer references) held, with the scalars, in the
    // argument block at binding 0; each is copied to a local at the start.
    GlslLayout L = glsl_layout(k_);
    std::string block, locals;
    for (const GlslLayout::Arg& ar : L.args) {
      const Param& p = k_.params[ar.param];
      if (!ar.address) {
        block += "  " + reg(ar.as) + " e_" + p.name + ";\n";
        continue;
      }
      // No readonly/writeonly (nor restrict): an op may write into its input's buffer, and
      // NVIDIA's compiler took the qualifiers as a promise that the buffers do not overlap,
      // moving loads of a readonly input past stores to the writeonly output in its memory.
      bool aliased = alias_[ar.param];
      bool f64view = aliased && p.type.scalar == ScalarType::F64;
      std::string elem = f64view                              ? "uint64_t"
                         : aliased && !is_half(p.type.scalar) ? "uint"
                                                              : storage(p.type.scalar);
      int align = f64view ? 8 : aliased ? 4 : byte_size(p.type.scalar);
      std::string ref = "ember_r_" + p.name;
      s += "layout(buffer_reference, std430, buffer_reference_align = " + std::to_string(align) +
           ") buffer " + ref + " { " + elem + " v[]; };\n";
      block += "  " + ref + " e_" + p.name + ";\n";
      locals += "  " + ref + " e_" + p.name + " = ember_p.e_" + p.name + ";\n";
      if (ar.word_offset != GlslLayout::kNone) {
        // 16-bit elements: compare-and-swap on the 32-bit words holding them.
        s += "layout(buffer_reference, std430, buffer_reference_align = 4) buffer " + ref +
             "_w { uint v[]; };\n";
        block += "  " + ref + "_w e_" + p.name + "_w;\n";
        locals += "  " + ref + "_w e_" + p.name + "_w = ember_p.e_" + p.name + "_w;\n";
      }
    }
    // Vector accesses of 4, 8 or 16 bytes: one load or store of words through a view of the
    // buffer with that alignment (the IR promises an aligned index; the host an aligned base).
    for (const Inst& i : k_.body) {
      if ((i.op != Op::Load && i.op != Op::Store) || i.space != Space::Global) continue;
      int w = i.op == Op::Load ? i.type.width : types_[i.args[1]].width;
      int bytes = w * byte_size(k_.params[i.ref].type.scalar);
      if (w == 1 || alias_[i.ref] || (bytes != 4 && bytes != 8 && bytes != 16)) continue;
      std::string view = "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
      if (views_.count(view)) continue;
      views_.insert(view);
      std::string ref = "ember_r_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
      std::string words = bytes == 4 ? "uint" : bytes == 8 ? "uvec2" : "uvec4";
      // Unqualified, as the element views above.
      s += "layout(buffer_reference, std430, buffer_reference_align = " + std::to_string(bytes) +
           ") buffer " + ref + " { " + words + " v[]; };\n";
      locals += "  " + ref + " " + view + " = " + ref + "(uint64_t(ember_p.e_" +
                k_.params[i.ref].name + "));\n";
      i64 = true;
    }
    if (block.empty()) block = "  uint ember_unused;\n";
    s += "layout(std430, binding = 0) readonly buffer ember_args {\n" + block + "} ember_p;\n";
    for (size_t a = 0; a < k_.shared.size(); ++a) {
      const SharedArray& sh = k_.shared[a];
      ScalarType r = sh.type.scalar;
      if (vec_shared_[a])
        s += "shared " + vec4_of(r) + " e_" + sh.name + "[" + std::to_string(sh.count / 4) + "];\n";
      else if (frag_shared_[a])
        s +=
            "shared " + frag_element(r) + " e_" + sh.name + "[" + std::to_string(sh.count) + "];\n";
      else
        s += "shared " + reg(r) + " e_" + sh.name + "[" + std::to_string(sh.count) + "];\n";
    }
    s += prelude(f64, i64, o_.exact_fma);
    s += "\nvoid main() {\n" + locals;
    for (const LocalVar& v : k_.vars)
      s += "  " + decl(v.type, "e_" + v.name) + " = " + zero_of(v.type) + ";\n";
    for (uint32_t f = 0; f < k_.fragments.size(); ++f)
      s += "  " + frag_types_[f] + " e_" + k_.fragments[f].name + ";\n";
    out_ = std::move(s);
    for (const Inst& i : k_.body) inst(i);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  static std::string val(ValueId v) { return "_v" + std::to_string(v); }
  // An element index (GLSL indexes with 32 bits: buffers hold fewer than 2^32 elements), plus l.
  std::string index(ValueId v, int l = 0) const {
    std::string x = types_[v].scalar == ScalarType::I64 ? "uint(" + val(v) + ")" : val(v);
    return l ? "(" + x + " + " + std::to_string(l) + ")" : x;
  }
  // Element `v` (+ l) of buffer parameter `p` (not aliased): the address computed in 64 bits,
  // so an index below 0 (a view with negative strides reads before its first element) is an
  // address below the base, which indexing the runtime array does not promise.
  std::string element(const Param& p, ValueId v, int l = 0) const {
    std::string ref = "ember_r_" + p.name, size = std::to_string(byte_size(p.type.scalar));
    std::string x = val(v);
    if (l) x = "(" + x + " + " + std::to_string(l) + ")";
    if (types_[v].scalar == ScalarType::I64)  // 64-bit arithmetic there already
      return ref + "(uint64_t(e_" + p.name + ") + uint64_t(" + x + " * " + size + ")).v[0]";
    return ref + "(ember_at(uvec2(e_" + p.name + "), int(" + x + "), " + size + ")).v[0]";
  }
  std::string lane(ValueId v, int l) const {
    return types_[v].width == 1 ? val(v) : val(v) + "[" + std::to_string(l) + "]";
  }
  static std::string decl(Type t, const std::string& n) {
    return reg(t.scalar) + " " + n + (t.width > 1 ? "[" + std::to_string(t.width) + "]" : "");
  }
  static std::string zero_of(Type t) {
    if (t.width == 1) return zero(t.scalar);
    std::string s = reg(t.scalar) + "[" + std::to_string(t.width) + "](";
    for (int l = 0; l < t.width; ++l) s += (l ? ", " : "") + zero(t.scalar);
    return s + ")";
  }
  void line(const std::string& s) { out_ += std::string(2 * depth_, ' ') + s + "\n"; }

  template <class F>
  void lanes(const Inst& i, F&& expr) {
    if (i.type.width == 1) {
      line(decl(i.type, val(i.result)) + " = " + expr(0) + ";");
      return;
    }
    line(decl(i.type, val(i.result)) + ";");
    for (int l = 0; l < i.type.width; ++l)
      line(val(i.result) + "[" + std::to_string(l) + "] = " + expr(l) + ";");
  }

  // A buffer element as a register value, and a register value as a buffer element.
  std::string from_storage(ScalarType s, const std::string& x, bool aliased) const {
    if (aliased && s == ScalarType::F32) return "uintBitsToFloat(" + x + ")";
    if (aliased && s == ScalarType::F64) return "uint64BitsToDouble(" + x + ")";
    switch (s) {
      case ScalarType::Bool:
        return "(uint(" + x + ") != 0u)";
      case ScalarType::I8:
      case ScalarType::I16:
        return "int(" + x + ")";
      case ScalarType::U8:
        return "uint(" + x + ")";
      case ScalarType::F16:
        return "ember_f16(uint(" + x + "))";
      case ScalarType::BF16:
        return "ember_bf16(uint(" + x + "))";
      default:
        return x;
    }
  }
  std::string to_storage(ScalarType s, const std::string& x, bool aliased) const {
    if (aliased && s == ScalarType::F32) return "floatBitsToUint(" + x + ")";
    if (aliased && s == ScalarType::F64) return "doubleBitsToUint64(" + x + ")";
    switch (s) {
      case ScalarType::Bool:
        return "uint8_t(" + x + " ? 1u : 0u)";
      case ScalarType::I8:
        return "int8_t(" + x + ")";
      case ScalarType::I16:
        return "int16_t(" + x + ")";
      case ScalarType::U8:
        return "uint8_t(" + x + ")";
      case ScalarType::F16:
        return "uint16_t(ember_f16_bits(" + x + "))";
      case ScalarType::BF16:
        return "uint16_t(ember_bf16_bits(" + x + "))";
      default:
        return x;
    }
  }

  // Lane l (of elements of `s`) of the words `w` (a uint, uvec2 or uvec4 of `bytes`).
  std::string lane_from_words(ScalarType s, const std::string& w, int l, int bytes) const {
    int size = byte_size(s);
    auto word = [&](int k) { return bytes == 4 ? w : w + "[" + std::to_string(k) + "]"; };
    if (size == 8) {
      std::string pair = "uvec2(" + word(2 * l) + ", " + word(2 * l + 1) + ")";
      return s == ScalarType::F64 ? "packDouble2x32(" + pair + ")"
                                  : "int64_t(packUint2x32(" + pair + "))";
    }
    int k = l * size / 4, shift = (l * size % 4) * 8;
    std::string bits = word(k);
    if (size < 4) {
      std::string mask = size == 2 ? "0xffffu" : "0xffu";
      bits = "((" + bits + " >> " + std::to_string(shift) + "u) & " + mask + ")";
    }
    switch (s) {
      case ScalarType::F32:
        return "uintBitsToFloat(" + bits + ")";
      case ScalarType::I32:
        return "int(" + bits + ")";
      case ScalarType::F16:
        return "ember_f16(" + bits + ")";
      case ScalarType::BF16:
        return "ember_bf16(" + bits + ")";
      case ScalarType::I16:
        return "ember_i16(int(" + bits + "))";
      case ScalarType::I8:
        return "ember_i8(int(" + bits + "))";
      case ScalarType::Bool:
        return "(" + bits + " != 0u)";
      default:  // u32, u8
        return bits;
    }
  }
  // The words (a uint, uvec2 or uvec4 of `bytes`) holding the w lanes of value v.
  std::string words_from_lanes(ScalarType s, ValueId v, int w, int bytes) const {
    int size = byte_size(s);
    int n = bytes / 4;
    std::vector<std::string> words(static_cast<size_t>(n), std::string());
    for (int l = 0; l < w; ++l) {
      std::string x = lane(v, l);
      if (size == 8) {
        std::string pair = s == ScalarType::F64 ? "unpackDouble2x32(" + x + ")"
                                                : "unpackUint2x32(uint64_t(" + x + "))";
        words[2 * size_t(l)] = pair + ".x";
        words[2 * size_t(l) + 1] = pair + ".y";
        continue;
      }
      std::string bits;
      switch (s) {
        case ScalarType::F32:
          bits = "floatBitsToUint(" + x + ")";
          break;
        case ScalarType::F16:
          bits = "ember_f16_bits(" + x + ")";
          break;
        case ScalarType::BF16:
          bits = "ember_bf16_bits(" + x + ")";
          break;
        case ScalarType::Bool:
          bits = "(" + x + " ? 1u : 0u)";
          break;
        default:
          bits = "uint(" + x + ")";
      }
      if (size < 4)
        bits = "((" + bits + " & " + (size == 2 ? "0xffffu" : "0xffu") + ") << " +
               std::to_string(l * size % 4 * 8) + "u)";
      std::string& word = words[size_t(l * size / 4)];
      word = word.empty() ? bits : word + " | " + bits;
    }
    if (n == 1) return words[0];
    std::string r = (n == 2 ? "uvec2(" : "uvec4(");
    for (int k = 0; k < n; ++k) r += (k ? ", " : "") + words[size_t(k)];
    return r + ")";
  }

  std::string geometry(const Inst& i) const {
    static const char* axis[] = {"x", "y", "z"};
    std::string a = axis[i.ref % 3];
    switch (i.op) {
      case Op::GlobalId:
        return "gl_GlobalInvocationID." + a;
      case Op::LocalId:
        return "gl_LocalInvocationID." + a;
      case Op::GroupId:
        return "gl_WorkGroupID." + a;
      case Op::LocalSize:
        return "gl_WorkGroupSize." + a;
      case Op::NumGroups:
        return "gl_NumWorkGroups." + a;
      case Op::SubgroupLane:
        return "gl_SubgroupInvocationID";
      default:
        return "gl_SubgroupSize";
    }
  }

  // A compare-and-swap loop on the u32 word at `word` of the view `view`: `next(old)` gives the
  // new word from the old one; the result is the old word.
  void cas_loop(const std::string& view, const std::string& word, const std::string& old_name,
                const std::function<std::string(const std::string&)>& next,
                const std::string& word_type = "uint") {
    line(word_type + " " + old_name + " = " + view + "[" + word + "];");
    line("for (;;) {");
    ++depth_;
    line(word_type + " ember_want = " + next(old_name) + ";");
    line("if (ember_want == " + old_name + ") break;");
    line(word_type + " ember_seen = atomicCompSwap(" + view + "[" + word + "], " + old_name +
         ", ember_want);");
    line("if (ember_seen == " + old_name + ") break;");
    line(old_name + " = ember_seen;");
    --depth_;
    line("}");
  }

  void atomic(const Inst& i) {
    std::string r = val(i.result);
    std::string idx = index(i.args[0]), v = val(i.args[1]);
    if (i.space == Space::Shared) {
      const SharedArray& sh = k_.shared[i.ref];
      ScalarType s = sh.type.scalar;
      if (s != ScalarType::I32 && s != ScalarType::U32 &&
          !(s == ScalarType::F32 && i.op == Op::AtomicAdd))
        cannot(k_, "a shared atomic on " + std::string(name(s)));
      std::string at = "e_" + sh.name + "[" + idx + "]";
      const char* fn = i.op == Op::AtomicAdd    ? "atomicAdd("
                       : i.op == Op::AtomicMin  ? "atomicMin("
                       : i.op == Op::AtomicMax  ? "atomicMax("
                       : i.op == Op::AtomicExch ? "atomicExchange("
                                                : "atomicCompSwap(";
      std::string extra = i.op == Op::AtomicCas ? ", " + val(i.args[2]) : "";
      line(decl(i.type, r) + " = " + fn + at + ", " + v + extra + ");");
      return;
    }
    const Param& p = k_.params[i.ref];
    ScalarType s = p.type.scalar;
    if (!alias_[i.ref]) {
      std::string at = element(p, i.args[0]);
      const char* fn = i.op == Op::AtomicAdd    ? "atomicAdd("
                       : i.op == Op::AtomicMin  ? "atomicMin("
                       : i.op == Op::AtomicMax  ? "atomicMax("
                       : i.op == Op::AtomicExch ? "atomicExchange("
                                                : "atomicCompSwap(";
      std::string extra = i.op == Op::AtomicCas ? ", " + val(i.args[2]) : "";
      line(decl(i.type, r) + " = " + fn + at + ", " + v + extra + ");");
      return;
    }
    std::string old = "ember_old" + std::to_string(i.result);
    if (s == ScalarType::F32) {
      auto next = [&](const std::string& o) -> std::string {
        std::string cur = "uintBitsToFloat(" + o + ")";
        switch (i.op) {
          case Op::AtomicMin:
            return "floatBitsToUint(ember_min(" + cur + ", " + v + "))";
          case Op::AtomicMax:
            return "floatBitsToUint(ember_max(" + cur + ", " + v + "))";
          case Op::AtomicCas:
            return "(" + cur + " == " + v + " ? floatBitsToUint(" + val(i.args[2]) + ") : " + o +
                   ")";
          case Op::AtomicExch:
            return "floatBitsToUint(" + v + ")";
          default:
            return "floatBitsToUint(" + cur + " + " + v + ")";
        }
      };
      cas_loop("e_" + p.name + ".v", idx, old, next);
      line("float " + r + " = uintBitsToFloat(" + old + ");");
      return;
    }
    if (s == ScalarType::F64) {  // add, on the buffer's u64 view
      cas_loop(
          "e_" + p.name + ".v", idx, old,
          [&](const std::string& o) {
            return "doubleBitsToUint64(uint64BitsToDouble(" + o + ") + " + v + ")";
          },
          "uint64_t");
      line("double " + r + " = uint64BitsToDouble(" + old + ");");
      return;
    }
    // f16/bf16 add: the 16-bit half of a 32-bit word.
    std::string shift = "((uint(" + idx + ") & 1u) * 16u)";
    std::string word = "(uint(" + idx + ") >> 1)";
    std::string to = s == ScalarType::F16 ? "ember_f16" : "ember_bf16";
    std::string bits = s == ScalarType::F16 ? "ember_f16_bits" : "ember_bf16_bits";
    std::string rnd = s == ScalarType::F16 ? "ember_rf16" : "ember_rbf16";
    cas_loop("e_" + p.name + "_w.v", word, old, [&](const std::string& o) {
      std::string cur = to + "((" + o + " >> " + shift + ") & 0xffffu)";
      return "((" + o + " & ~(0xffffu << " + shift + ")) | (" + bits + "(" + rnd + "(" + cur +
             " + " + v + ")) << " + shift + "))";
    });
    line("float " + r + " = " + to + "((" + old + " >> " + shift + ") & 0xffffu);");
  }

  void inst(const Inst& i) {
    const OpInfo& in = info(i.op);
    ScalarType rs = i.type.scalar;
    ScalarType as = i.args.empty() ? ScalarType::Void : types_[i.args[0]].scalar;
    auto a = [&](size_t j, int l) { return lane(i.args[j], types_[i.args[j]].width == 1 ? 0 : l); };
    switch (in.form) {
      case Form::Leaf:
        if (i.op == Op::Param) {
          const Param& p = k_.params[i.ref];
          std::string x = "ember_p.e_" + p.name;
          if (rs == ScalarType::Bool) x = "(" + x + " != 0u)";
          line(decl(i.type, val(i.result)) + " = " + fix(rs, x) + ";");
        } else {
          std::string c = is_float(rs) ? float_literal(i.fimm, rs) : int_literal(i.imm, rs);
          lanes(i, [&](int) { return c; });
        }
        break;
      case Form::Geometry:
        line("uint " + val(i.result) + " = " + geometry(i) + ";");
        break;
      case Form::Unary:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          if (i.op == Op::Neg) return fix(rs, "-" + x);
          if (rs == ScalarType::U8 || rs == ScalarType::U32 || rs == ScalarType::Bool) return x;
          if (rs == ScalarType::I64) return "(" + x + " < 0l ? -" + x + " : " + x + ")";
          return fix(rs, "abs(" + x + ")");
        });
        break;
      case Form::Logic1:
        lanes(i, [&](int l) {
          return rs == ScalarType::Bool ? "!" + a(0, l) : fix(rs, "~" + a(0, l));
        });
        break;
      case Form::Math:
      case Form::Math2:
        lanes(i, [&](int l) {
          std::string call = std::string(math_function(i.op, rs)) + "(" + a(0, l) +
                             (i.args.size() > 1 ? ", " + a(1, l) : "") + ")";
          return rs == ScalarType::F64 ? call : fix(rs, call);
        });
        break;
      case Form::Test:
        lanes(i, [&](int l) {
          return std::string(i.op == Op::IsNan ? "isnan(" : "isinf(") + a(0, l) + ")";
        });
        break;
      case Form::Arith:
      case Form::Logic2:
      case Form::Shift:
      case Form::Compare:
        lanes(i, [&](int l) {
          std::string x = a(0, l), y = a(1, l);
          std::string e;
          if (i.op == Op::MulHi)
            e = "ember_mulhi(" + x + ", " + y + ")";
          else if (i.op == Op::Min || i.op == Op::Max)
            e = std::string(i.op == Op::Min ? "ember_min(" : "ember_max(") + x + ", " + y + ")";
          else if (i.op == Op::Rem)
            e = "ember_rem(" + x + ", " + y + ")";
          else if (i.op == Op::Div && is_float(as))
            e = "ember_div(" + x + ", " + y + ")";  // correctly rounded, as on the CPU
          else
            e = "(" + x + " " + binary_symbol(i.op, as) + " " + y + ")";
          if (in.form == Form::Compare) return e;
          return fix(rs, e);
        });
        break;
      case Form::Fma:
        lanes(i, [&](int l) {
          return fix(rs, "fma(" + a(0, l) + ", " + a(1, l) + ", " + a(2, l) + ")");
        });
        break;
      case Form::Select:
        lanes(i, [&](int l) { return "(" + a(0, l) + " ? " + a(1, l) + " : " + a(2, l) + ")"; });
        break;
      case Form::Cast:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          if (rs == ScalarType::Bool) return "(" + x + " != " + zero(as) + ")";
          if (as == ScalarType::Bool) return fix(rs, reg(rs) + "(" + x + ")");
          if (is_float(as) && (rs == ScalarType::U8 || rs == ScalarType::U32))
            return fix(rs, "uint(" + x + ")");  // in range: the IR saturates before a cast
          return fix(rs, reg(rs) + "(" + x + ")");
        });
        break;
      case Form::Bitcast: {
        std::string x = val(i.args[0]);
        std::string e;
        if (rs == ScalarType::F32 && as == ScalarType::U32)
          e = "uintBitsToFloat(" + x + ")";
        else if (rs == ScalarType::F32 && as == ScalarType::I32)
          e = "intBitsToFloat(" + x + ")";
        else if (rs == ScalarType::U32 && as == ScalarType::F32)
          e = "floatBitsToUint(" + x + ")";
        else if (rs == ScalarType::I32 && as == ScalarType::F32)
          e = "floatBitsToInt(" + x + ")";
        else if (rs == ScalarType::F64 && as == ScalarType::I64)
          e = "int64BitsToDouble(" + x + ")";
        else if (rs == ScalarType::I64 && as == ScalarType::F64)
          e = "doubleBitsToInt64(" + x + ")";
        else if ((rs == ScalarType::I32 && as == ScalarType::U32) ||
                 (rs == ScalarType::U32 && as == ScalarType::I32))
          e = reg(rs) + "(" + x + ")";
        else
          cannot(k_, "bitcast " + std::string(name(as)) + " -> " + std::string(name(rs)));
        line(decl(i.type, val(i.result)) + " = " + e + ";");
        break;
      }
      case Form::Vec: {
        std::string s = decl(i.type, val(i.result)) + " = " + reg(rs) + "[" +
                        std::to_string(i.type.width) + "](";
        for (size_t j = 0; j < i.args.size(); ++j) s += (j ? ", " : "") + val(i.args[j]);
        line(s + ");");
        break;
      }
      case Form::Extract:
        line(decl(i.type, val(i.result)) + " = " + lane(i.args[0], i.ref) + ";");
        break;
      case Form::Load: {
        bool shared = i.space == Space::Shared;
        std::string m = shared ? "e_" + k_.shared[i.ref].name : "e_" + k_.params[i.ref].name + ".v";
        ScalarType es = shared ? k_.shared[i.ref].type.scalar : k_.params[i.ref].type.scalar;
        bool aliased = !shared && alias_[i.ref];
        int wv = i.type.width;
        int bytes = wv * byte_size(es);
        std::string view =
            shared ? "" : "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
        if (!shared && views_.count(view)) {
          // One access of `bytes`; the lanes are cut out of its words.
          std::string wn = "ember_w" + std::to_string(i.result);
          std::string words = bytes == 4 ? "uint" : bytes == 8 ? "uvec2" : "uvec4";
          line(words + " " + wn + " = " + view + ".v[" + index(i.args[0]) + " / " +
               std::to_string(wv) + "];");
          lanes(i, [&](int l) { return lane_from_words(es, wn, l, bytes); });
          break;
        }
        if (shared && vec_shared_[i.ref]) {
          std::string wn = "ember_s" + std::to_string(i.result);
          line(vec4_of(es) + " " + wn + " = " + m + "[" + index(i.args[0]) + " >> 2];");
          lanes(i, [&](int l) { return wn + "[" + std::to_string(l) + "]"; });
          break;
        }
        auto at = [&](int l) {
          if (shared && frag_shared_[i.ref] && is_half(es))
            return "float(" + m + "[" + index(i.args[0], l) + "])";
          if (shared) return m + "[" + index(i.args[0], l) + "]";
          std::string e = aliased ? m + "[" + index(i.args[0], l) + "]"
                                  : element(k_.params[i.ref], i.args[0], l);
          return from_storage(es, e, aliased);
        };
        lanes(i, at);
        break;
      }
      case Form::Store: {
        bool shared = i.space == Space::Shared;
        std::string m = shared ? "e_" + k_.shared[i.ref].name : "e_" + k_.params[i.ref].name + ".v";
        ScalarType es = shared ? k_.shared[i.ref].type.scalar : k_.params[i.ref].type.scalar;
        bool aliased = !shared && alias_[i.ref];
        int w = types_[i.args[1]].width;
        int bytes = w * byte_size(es);
        std::string view =
            shared ? "" : "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
        if (!shared && views_.count(view)) {
          line(view + ".v[" + index(i.args[0]) + " / " + std::to_string(w) +
               "] = " + words_from_lanes(es, i.args[1], w, bytes) + ";");
          break;
        }
        if (shared && vec_shared_[i.ref]) {
          std::string v = vec4_of(es) + "(";
          for (int l = 0; l < 4; ++l) v += (l ? ", " : "") + lane(i.args[1], l);
          line(m + "[" + index(i.args[0]) + " >> 2] = " + v + ");");
          break;
        }
        for (int l = 0; l < w; ++l) {
          std::string v = lane(i.args[1], l);
          std::string e = shared || aliased ? m + "[" + index(i.args[0], l) + "]"
                                            : element(k_.params[i.ref], i.args[0], l);
          if (shared && frag_shared_[i.ref] && is_half(es)) v = frag_element(es) + "(" + v + ")";
          line(e + " = " + (shared ? v : to_storage(es, v, aliased)) + ";");
        }
        break;
      }
      case Form::Atomic:
      case Form::AtomicCas:
        atomic(i);
        break;
      case Form::VarRead:
        line(decl(i.type, val(i.result)) + " = e_" + k_.vars[i.ref].name + ";");
        break;
      case Form::VarWrite:
        line("e_" + k_.vars[i.ref].name + " = " + val(i.args[0]) + ";");
        break;
      case Form::If:
        line("if (" + val(i.args[0]) + ") {");
        ++depth_;
        break;
      case Form::Else:
        --depth_;
        line("} else {");
        ++depth_;
        break;
      case Form::End:
        --depth_;
        line("}");
        break;
      case Form::For:
        line("for (" + decl(i.type, val(i.result)) + " = " + val(i.args[0]) + "; " + val(i.result) +
             " < " + val(i.args[1]) + "; " + val(i.result) + " += " + val(i.args[2]) + ") {");
        ++depth_;
        break;
      case Form::Barrier:
        line("memoryBarrierShared();");
        line("barrier();");
        break;
      case Form::Shuffle:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          std::string fn = i.op == Op::Shuffle ? "subgroupShuffle(" : "subgroupShuffleXor(";
          return fn + x + ", " + val(i.args[1]) + ")";
        });
        break;
      case Form::SubgroupReduce: {
        std::string x = val(i.args[0]);
        std::string r = val(i.result);
        // A butterfly over the subgroup with the IR's own min/max (NaN wins) and add.
        line(decl(i.type, r) + " = " + x + ";");
        line("for (uint ember_o = gl_SubgroupSize / 2u; ember_o > 0u; ember_o >>= 1u)");
        std::string other = "subgroupShuffleXor(" + r + ", ember_o)";
        std::string e = i.op == Op::SubgroupAdd   ? fix(rs, r + " + " + other)
                        : i.op == Op::SubgroupMax ? "ember_max(" + r + ", " + other + ")"
                                                  : "ember_min(" + r + ", " + other + ")";
        line("  " + r + " = " + e + ";");
        break;
      }
      case Form::Ballot:
        line("uint " + val(i.result) + " = subgroupBallot(" + val(i.args[0]) + ").x;");
        break;
      case Form::FragFill: {
        uint32_t f = frag_of(i);
        line("e_" + k_.fragments[f].name + " = " + frag_types_[f] + "(" +
             frag_element(k_.fragments[f].scalar) + "(" + val(i.args[0]) + "));");
        break;
      }
      case Form::FragMemory: {
        // Shared memory only: GL_NV_cooperative_matrix reads arrays, and buffers are
        // references whose elements may be stored as other types (f16 as uint16_t).
        if (i.space != Space::Shared)
          cannot(k_, std::string(name(i.op)) + " on a buffer (stage it through shared memory)");
        std::string fn = i.op == Op::FragLoad ? "coopMatLoadNV(" : "coopMatStoreNV(";
        line(fn + "e_" + k_.fragments[frag_of(i)].name + ", e_" + k_.shared[i.ref].name + ", " +
             "uint(" + val(i.args[0]) + "), uint(" + val(i.args[1]) + "), " +
             (frag_col_major(i) ? "true" : "false") + ");");
        break;
      }
      case Form::FragMma: {
        std::string c = "e_" + k_.fragments[frag_of(i)].name;
        line(c + " = coopMatMulAddNV(e_" + k_.fragments[mma_a(i)].name + ", e_" +
             k_.fragments[mma_b(i)].name + ", " + c + ");");
        break;
      }
    }
  }

  // The element type of a fragment and of the shared arrays fragments use.
  std::string frag_element(ScalarType s) const {
    if (s == ScalarType::F16) return "float16_t";
    if (s == ScalarType::F32) return "float";
    cannot(k_, "cooperative matrices of " + std::string(name(s)));
  }

  const Kernel& k_;
  GlslOptions o_;
  std::vector<Type> types_;
  std::vector<char> alias_;        // buffers accessed through a u32 view (compare-and-swap atomics)
  std::vector<char> vec_shared_;   // shared arrays declared as arrays of 4-vectors
  std::vector<char> frag_shared_;  // shared arrays fragments use (their real element types)
  std::vector<std::string> frag_types_;  // each fragment's GLSL type
  std::set<std::string> views_;          // vector views declared ("e_x_w16")
  std::string out_;
  int depth_ = 1;
};

}  // namespace

std::string render_glsl(const Kernel& k, const GlslOptions& options) {
  validate(k);
  for (const Param& p : k.params)
    if (p.type.width > 1) cannot(k, "vector-typed parameter " + p.name);
  for (const SharedArray& s : k.shared)
    if (s.type.width > 1) cannot(k, "vector-typed shared array " + s.name);
  return Renderer(k, options).run();
}

}  // namespace ember::kernel
