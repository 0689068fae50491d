// IR -> CUDA C++. Half types compute in float (as the CPU backend does) and round back.
#include "ember/kernel/codegen/cuda.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/validate.h"

namespace ember::kernel {

namespace {

const char* kPrelude =
#include "ember/kernel/codegen/cuda_prelude.inc"
    ;
// [0]: __half and its conversions; [1]: __nv_bfloat16 and its.
const char* kHalfTypes[2] = {
#include "ember/kernel/codegen/cuda_half.inc"
};

std::string ctype(ScalarType s) {
  switch (s) {
    case ScalarType::Void:
      return "void";
    case ScalarType::Bool:
      return "bool";
    case ScalarType::I8:
      return "signed char";
    case ScalarType::U8:
      return "unsigned char";
    case ScalarType::I16:
      return "short";
    case ScalarType::I32:
      return "int";
    case ScalarType::U32:
      return "unsigned";
    case ScalarType::I64:
      return "long long";
    case ScalarType::F16:
      return "__half";
    case ScalarType::BF16:
      return "__nv_bfloat16";
    case ScalarType::F32:
      return "float";
    case ScalarType::F64:
      return "double";
  }
  return "void";
}
std::string ctype(Type t) {
  if (t.width == 1) return ctype(t.scalar);
  return "ember_vec<" + ctype(t.scalar) + ", " + std::to_string(t.width) + ">";
}

std::string to_float(ScalarType s, const std::string& x) {
  if (s == ScalarType::F16) return "__half2float(" + x + ")";
  if (s == ScalarType::BF16) return "__bfloat162float(" + x + ")";
  return x;
}
std::string from_float(ScalarType s, const std::string& x) {
  if (s == ScalarType::F16) return "__float2half_rn(" + x + ")";
  if (s == ScalarType::BF16) return "__float2bfloat16_rn(" + x + ")";
  return x;
}
// Small ints promote to int in C++: wrap results back to their type.
std::string narrow(ScalarType s, const std::string& x) {
  if (s == ScalarType::I8 || s == ScalarType::U8 || s == ScalarType::I16)
    return "(" + ctype(s) + ")(" + x + ")";
  return x;
}

std::string float_literal(double v, ScalarType s) {
  char buf[64];
  bool f64 = s == ScalarType::F64;
  std::string lit;
  if (std::isnan(v)) {
    lit = f64 ? "__longlong_as_double(0x7ff8000000000000ll)" : "__int_as_float(0x7fc00000)";
  } else if (std::isinf(v)) {
    lit = f64 ? (v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)"
                       : "__longlong_as_double(0xfff0000000000000ll)")
              : (v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)");
  } else {
    std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", f64 ? v : static_cast<float>(v));
    lit = buf;
    if (lit.find_first_of(".en") == std::string::npos) lit += ".0";
    if (!f64) lit += "f";
  }
  return from_float(s, lit);
}

std::string int_literal(int64_t v, ScalarType s) {
  if (s == ScalarType::Bool) return v ? "true" : "false";
  if (v == INT64_MIN) return "(" + ctype(s) + ")(-9223372036854775807ll - 1)";
  return "(" + ctype(s) + ")(" + std::to_string(v) + "ll)";
}

const char* math_name(Op op) {
  switch (op) {
    case Op::Exp:
      return "exp";
    case Op::Exp2:
      return "exp2";
    case Op::Log:
      return "log";
    case Op::Log2:
      return "log2";
    case Op::Sqrt:
      return "sqrt";
    case Op::Rsqrt:
      return "rsqrt";
    case Op::Sin:
      return "sin";
    case Op::Cos:
      return "cos";
    case Op::Tan:
      return "tan";
    case Op::Tanh:
      return "tanh";
    case Op::Erf:
      return "erf";
    case Op::Floor:
      return "floor";
    case Op::Ceil:
      return "ceil";
    case Op::Round:
      return "rint";
    case Op::Trunc:
      return "trunc";
    case Op::Pow:
      return "pow";
    case Op::Expm1:
      return "expm1";
    case Op::Log1p:
      return "log1p";
    case Op::Asin:
      return "asin";
    case Op::Acos:
      return "acos";
    case Op::Atan:
      return "atan";
    case Op::Sinh:
      return "sinh";
    case Op::Cosh:
      return "cosh";
    case Op::Asinh:
      return "asinh";
    case Op::Acosh:
      return "acosh";
    case Op::Atanh:
      return "atanh";
    case Op::Atan2:
      return "atan2";
    default:
      return "?";
  }
}

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
    case Op::Rem:
      return "%";
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
  explicit Renderer(const Kernel& k) : k_(k), types_(k.num_values) {
    for (const Inst& i : k.body)
      if (i.result != kNoValue) types_[i.result] = i.type;
  }

  std::string run() {
    bool f16 = false, bf16 = false;
    auto note = [&](Type t) {
      f16 = f16 || t.scalar == ScalarType::F16;
      bf16 = bf16 || t.scalar == ScalarType::BF16;
    };
    for (const Param& p : k_.params) note(p.type);
    for (const SharedArray& s : k_.shared) note(s.type);
    for (const LocalVar& v : k_.vars) note(v.type);
    for (const Inst& i : k_.body) note(i.type);
    std::string s = "// kernel " + k_.name + " (generated by ember)\n";
    if (f16) s += kHalfTypes[0];
    if (bf16) s += kHalfTypes[1];
    s += kPrelude;
    s += "\nextern \"C\" __global__ void __launch_bounds__(" +
         std::to_string(k_.workgroup_threads()) + ") " + k_.name + "(";
    for (size_t p = 0; p < k_.params.size(); ++p) {
      const Param& pa = k_.params[p];
      if (p) s += ", ";
      if (pa.kind == Param::Buffer)
        s += (pa.access == Access::Read ? "const " : "") + ctype(pa.type) + "* " + pa.name;
      else
        s += ctype(pa.type) + " " + pa.name;
    }
    s += ") {\n";
    for (const SharedArray& sh : k_.shared)
      s += "  __shared__ __align__(16) " + ctype(sh.type) + " " + sh.name + "[" +
           std::to_string(sh.count) + "];\n";
    for (const LocalVar& v : k_.vars) s += "  " + ctype(v.type) + " " + v.name + "{};\n";
    out_ = std::move(s);
    for (const Inst& i : k_.body) inst(i);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  static std::string val(ValueId v) { return "_v" + std::to_string(v); }
  std::string lane(ValueId v, int l) const {
    return types_[v].width == 1 ? val(v) : val(v) + ".v[" + std::to_string(l) + "]";
  }
  void line(const std::string& s) { out_ += std::string(2 * depth_, ' ') + s + "\n"; }

  // Defines the result from a per-lane expression.
  template <class F>
  void lanes(const Inst& i, F&& expr) {
    if (i.type.width == 1) {
      line("const " + ctype(i.type) + " " + val(i.result) + " = " + expr(0) + ";");
      return;
    }
    line(ctype(i.type) + " " + val(i.result) + ";");
    for (int l = 0; l < i.type.width; ++l)
      line(val(i.result) + ".v[" + std::to_string(l) + "] = " + expr(l) + ";");
  }

  std::string mem(const Inst& i) const {
    return i.space == Space::Shared ? k_.shared[i.ref].name : k_.params[i.ref].name;
  }
  Type mem_elem(const Inst& i) const {
    return i.space == Space::Shared ? k_.shared[i.ref].type : k_.params[i.ref].type;
  }
  bool mem_const(const Inst& i) const {
    return i.space == Space::Global && k_.params[i.ref].access == Access::Read;
  }

  std::string geometry(const Inst& i) const {
    static const char* axis[] = {"x", "y", "z"};
    std::string a = axis[i.ref % 3];
    switch (i.op) {
      case Op::GlobalId:
        return "(blockIdx." + a + " * blockDim." + a + " + threadIdx." + a + ")";
      case Op::LocalId:
        return "threadIdx." + a;
      case Op::GroupId:
        return "blockIdx." + a;
      case Op::LocalSize:
        return "blockDim." + a;
      case Op::NumGroups:
        return "gridDim." + a;
      case Op::SubgroupLane:
        return "(ember_linear_tid() & 31u)";
      default:
        return "32u";
    }
  }

  std::string atomic(const Inst& i) const {
    ScalarType s = mem_elem(i).scalar;
    std::string p = "&" + mem(i) + "[" + val(i.args[0]) + "]", v = val(i.args[1]);
    if (i.op == Op::AtomicCas) {
      std::string d = val(i.args[2]);
      if (s == ScalarType::F32)
        return "__uint_as_float(atomicCAS(reinterpret_cast<unsigned*>(" + p +
               "), __float_as_uint(" + v + "), __float_as_uint(" + d + ")))";
      if (s == ScalarType::I64)
        return "(long long)atomicCAS(reinterpret_cast<unsigned long long*>(" + p +
               "), (unsigned long long)" + v + ", (unsigned long long)" + d + ")";
      return "atomicCAS(" + p + ", " + v + ", " + d + ")";
    }
    if (s == ScalarType::F32 && (i.op == Op::AtomicMin || i.op == Op::AtomicMax))
      return std::string("ember_atomic_minmax<") + (i.op == Op::AtomicMax ? "true" : "false") +
             ">(" + p + ", " + v + ")";
    const char* fn = i.op == Op::AtomicAdd   ? "atomicAdd"
                     : i.op == Op::AtomicMin ? "atomicMin"
                     : i.op == Op::AtomicMax ? "atomicMax"
                                             : "atomicExch";
    if (s == ScalarType::I64 && (i.op == Op::AtomicAdd || i.op == Op::AtomicExch))
      return std::string("(long long)") + fn + "(reinterpret_cast<unsigned long long*>(" + p +
             "), (unsigned long long)" + v + ")";
    return std::string(fn) + "(" + p + ", " + v + ")";
  }

  void inst(const Inst& i) {
    const OpInfo& in = info(i.op);
    ScalarType rs = i.type.scalar;
    ScalarType as = i.args.empty() ? ScalarType::Void : types_[i.args[0]].scalar;
    auto f = [&](size_t j, int l) {
      return to_float(types_[i.args[j]].scalar, lane(i.args[j], l));
    };
    switch (in.form) {
      case Form::Leaf:
        if (i.op == Op::Param) {
          line("const " + ctype(i.type) + " " + val(i.result) + " = " + k_.params[i.ref].name +
               ";");
        } else {
          std::string c = is_float(rs) ? float_literal(i.fimm, rs) : int_literal(i.imm, rs);
          lanes(i, [&](int) { return c; });
        }
        break;
      case Form::Geometry:
        line("const unsigned " + val(i.result) + " = " + geometry(i) + ";");
        break;
      case Form::Unary:
        lanes(i, [&](int l) {
          std::string x = f(0, l);
          if (i.op == Op::Neg) return is_half(rs) ? from_float(rs, "-" + x) : narrow(rs, "-" + x);
          if (is_float(rs))
            return from_float(rs,
                              std::string(rs == ScalarType::F64 ? "fabs(" : "fabsf(") + x + ")");
          if (!is_signed(rs)) return x;
          return narrow(rs, "(" + x + " < 0 ? -" + x + " : " + x + ")");
        });
        break;
      case Form::Logic1:
        lanes(i, [&](int l) {
          return rs == ScalarType::Bool ? "!" + f(0, l) : narrow(rs, "~" + f(0, l));
        });
        break;
      case Form::Math:
      case Form::Math2:
        lanes(i, [&](int l) {
          std::string fn = std::string(math_name(i.op)) + (rs == ScalarType::F64 ? "" : "f");
          std::string args = f(0, l) + (i.args.size() > 1 ? ", " + f(1, l) : "");
          return from_float(rs, fn + "(" + args + ")");
        });
        break;
      case Form::Test:
        lanes(i, [&](int l) {
          return std::string(i.op == Op::IsNan ? "isnan(" : "isinf(") + f(0, l) + ")";
        });
        break;
      case Form::Arith:
      case Form::Logic2:
      case Form::Shift:
      case Form::Compare:
        lanes(i, [&](int l) {
          std::string a = f(0, l), b = f(1, l);
          std::string e;
          if (i.op == Op::MulHi)
            e = std::string(as == ScalarType::U32 ? "__umulhi(" : "__mulhi(") + a + ", " + b + ")";
          else if (i.op == Op::Min || i.op == Op::Max)
            e = std::string(i.op == Op::Min ? "ember_min(" : "ember_max(") + a + ", " + b + ")";
          else if (i.op == Op::Rem && is_float(as))
            e = std::string(as == ScalarType::F64 ? "fmod(" : "fmodf(") + a + ", " + b + ")";
          else
            e = "(" + a + " " + binary_symbol(i.op, as) + " " + b + ")";
          if (in.form == Form::Compare) return e;
          return is_half(rs) ? from_float(rs, e) : narrow(rs, e);
        });
        break;
      case Form::Fma:
        lanes(i, [&](int l) {
          return from_float(rs, std::string(rs == ScalarType::F64 ? "fma(" : "fmaf(") + f(0, l) +
                                    ", " + f(1, l) + ", " + f(2, l) + ")");
        });
        break;
      case Form::Select:
        lanes(i, [&](int l) {
          return "(" + lane(i.args[0], types_[i.args[0]].width == 1 ? 0 : l) + " ? " +
                 lane(i.args[1], l) + " : " + lane(i.args[2], l) + ")";
        });
        break;
      case Form::Cast:
        lanes(i, [&](int l) {
          std::string x = f(0, l);
          if (rs == ScalarType::Bool) return "(" + x + " != 0)";
          if (is_half(rs)) return from_float(rs, "(float)(" + x + ")");
          return "(" + ctype(rs) + ")(" + x + ")";
        });
        break;
      case Form::Bitcast:
        line("const " + ctype(i.type) + " " + val(i.result) + " = ember_bitcast<" + ctype(i.type) +
             ">(" + val(i.args[0]) + ");");
        break;
      case Form::Vec: {
        std::string s = "const " + ctype(i.type) + " " + val(i.result) + " = {{";
        for (size_t j = 0; j < i.args.size(); ++j) s += (j ? ", " : "") + val(i.args[j]);
        line(s + "}};");
        break;
      }
      case Form::Extract:
        line("const " + ctype(i.type) + " " + val(i.result) + " = " + lane(i.args[0], i.ref) + ";");
        break;
      case Form::Load: {
        std::string at = mem(i) + "[" + val(i.args[0]) + "]";
        if (i.type.width != mem_elem(i).width)
          at = "*reinterpret_cast<" + std::string(mem_const(i) ? "const " : "") + ctype(i.type) +
               "*>(&" + at + ")";
        line("const " + ctype(i.type) + " " + val(i.result) + " = " + at + ";");
        break;
      }
      case Form::Store: {
        std::string at = mem(i) + "[" + val(i.args[0]) + "]";
        if (types_[i.args[1]].width != mem_elem(i).width)
          at = "*reinterpret_cast<" + ctype(types_[i.args[1]]) + "*>(&" + at + ")";
        line(at + " = " + val(i.args[1]) + ";");
        break;
      }
      case Form::Atomic:
      case Form::AtomicCas:
        line("const " + ctype(i.type) + " " + val(i.result) + " = " + atomic(i) + ";");
        break;
      case Form::VarRead:
        line("const " + ctype(i.type) + " " + val(i.result) + " = " + k_.vars[i.ref].name + ";");
        break;
      case Form::VarWrite:
        line(k_.vars[i.ref].name + " = " + val(i.args[0]) + ";");
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
        line("for (" + ctype(i.type) + " " + val(i.result) + " = " + val(i.args[0]) + "; " +
             val(i.result) + " < " + val(i.args[1]) + "; " + val(i.result) +
             " += " + val(i.args[2]) + ") {");
        ++depth_;
        break;
      case Form::Barrier:
        line("__syncthreads();");
        break;
      case Form::Shuffle:
        lanes(i, [&](int l) {
          return std::string(i.op == Op::Shuffle ? "ember_shfl(" : "ember_shfl_xor(") +
                 lane(i.args[0], l) + ", " + val(i.args[1]) + ")";
        });
        break;
      case Form::SubgroupReduce: {
        const char* fn = i.op == Op::SubgroupAdd   ? "ember_reduce_add("
                         : i.op == Op::SubgroupMax ? "ember_reduce_max("
                                                   : "ember_reduce_min(";
        line("const " + ctype(i.type) + " " + val(i.result) + " = " + fn + val(i.args[0]) + ");");
        break;
      }
      case Form::Ballot:
        line("const unsigned " + val(i.result) + " = __ballot_sync(0xffffffffu, " + val(i.args[0]) +
             ");");
        break;
      case Form::FragFill:  // refused by render_cuda
      case Form::FragMemory:
      case Form::FragMma:
        break;
    }
  }

  const Kernel& k_;
  std::vector<Type> types_;
  std::string out_;
  int depth_ = 1;
};

}  // namespace

std::string render_cuda(const Kernel& k) {
  validate(k);
  // CUDA's matmuls run on cuBLASLt; cooperative matrices are rendered for Vulkan only.
  if (!k.fragments.empty())
    throw ValueError("[kernel " + k.name + "] no CUDA for cooperative matrices (fragments)");
  return Renderer(k).run();
}

}  // namespace ember::kernel
