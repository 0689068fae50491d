#include "ember/kernel/codegen/glsl_header.h"

#include <algorithm>

#include "ember/core/error.h"
#include "ember/kernel/codegen/glsl_math.h"

namespace ember::kernel {

namespace glsl {

[[noreturn]] void cannot(const Kernel& k, const std::string& what) {
  throw ValueError("[kernel " + k.name + "] no GLSL for " + what);
}

std::vector<char> u32_views(const Kernel& k) {
  std::vector<char> alias(k.params.size(), 0);
  for (const Inst& i : k.body) {
    if ((info(i.op).form != Form::Atomic && info(i.op).form != Form::AtomicCas) ||
        i.space != Space::Global)
      continue;
    ScalarType s = k.params[i.ref].type.scalar;
    bool native = s == ScalarType::I32 || s == ScalarType::U32 || s == ScalarType::I64 ||
                  (s == ScalarType::F32 && i.op == Op::AtomicAdd);
    if (native) continue;
    if (s != ScalarType::F32 && s != ScalarType::F16 && s != ScalarType::BF16 &&
        s != ScalarType::F64)
      cannot(k, "atomic " + std::string(name(i.op)) + " on " + std::string(name(s)));
    if ((is_half(s) || s == ScalarType::F64) && i.op != Op::AtomicAdd)
      cannot(k, "atomic " + std::string(name(i.op)) + " on " + std::string(name(s)));
    alias[i.ref] = 1;
  }
  return alias;
}

// Shared arrays accessed 4 elements at a time have indices that are multiples of 4, as the IR
// promises for vector accesses.
std::string vec4_of(ScalarType s) {
  return s == ScalarType::F32 ? "vec4" : s == ScalarType::U32 ? "uvec4" : "ivec4";
}

std::vector<Type> value_types(const Kernel& k) {
  std::vector<Type> t(k.num_values);
  for (const Inst& i : k.body)
    if (i.result != kNoValue) t[i.result] = i.type;
  return t;
}

std::vector<char> fragment_shared(const Kernel& k) {
  std::vector<char> out(k.shared.size(), 0);
  for (const Inst& i : k.body)
    if (info(i.op).form == Form::FragMemory && i.space == Space::Shared) out[i.ref] = 1;
  return out;
}

namespace {
// The distinct fragment types (use, element, shape) in order of first declaration; `of`: each
// fragment's.
struct FragmentTypes {
  std::vector<const Fragment*> types;
  std::vector<uint32_t> of;
};
FragmentTypes fragment_types(const Kernel& k) {
  FragmentTypes t;
  for (const Fragment& f : k.fragments) {
    uint32_t at = 0;
    while (at < t.types.size() && !(t.types[at]->use == f.use && t.types[at]->scalar == f.scalar &&
                                    t.types[at]->rows == f.rows && t.types[at]->cols == f.cols))
      ++at;
    if (at == t.types.size()) t.types.push_back(&f);
    t.of.push_back(at);
  }
  return t;
}
std::string coopmat_of(const Kernel& k, ScalarType s) {
  if (s == ScalarType::F16) return "fcoopmatNV<16, 3";  // 3: gl_ScopeSubgroup
  if (s == ScalarType::F32) return "fcoopmatNV<32, 3";
  cannot(k, "cooperative matrices of " + std::string(name(s)));
}
}  // namespace

std::vector<std::string> fragment_types_glsl(const Kernel& k) {
  FragmentTypes ft = fragment_types(k);
  std::vector<std::string> out;
  for (uint32_t f = 0; f < k.fragments.size(); ++f) {
    std::string t = std::to_string(ft.of[f]);
    out.push_back(coopmat_of(k, k.fragments[f].scalar) + ", ember_fr" + t + ", ember_fc" + t + ">");
  }
  return out;
}

std::vector<char> vec4_shared(const Kernel& k, const std::vector<Type>& types) {
  std::vector<char> vec(k.shared.size(), 0);
  for (size_t a = 0; a < k.shared.size(); ++a)
    vec[a] = byte_size(k.shared[a].type.scalar) == 4 && k.shared[a].count % 4 == 0;
  for (const Inst& i : k.body) {
    if (i.space != Space::Shared) continue;
    Form f = info(i.op).form;
    if (f == Form::FragMemory) vec[i.ref] = 0;
    int w = f == Form::Load ? i.type.width : f == Form::Store ? types[i.args[1]].width : 0;
    if (f == Form::Load || f == Form::Store || f == Form::Atomic || f == Form::AtomicCas)
      if (w != 4) vec[i.ref] = 0;
  }
  return vec;
}

std::string header(const Kernel& k, const std::vector<Type>& types, const std::vector<char>& alias,
                   const GlslOptions& o, Needs& needs) {
  bool f64 = false, i64 = false, s16 = false, s8 = false, sub = false, shuf = false;
  bool ballot = false, fatomic = false, i64atomic = false;
  auto note = [&](Type t) {
    f64 = f64 || t.scalar == ScalarType::F64;
    i64 = i64 || t.scalar == ScalarType::I64;
  };
  for (const Param& p : k.params) {
    note(p.type);
    if (p.kind == Param::Buffer) {
      int bytes = byte_size(p.type.scalar);
      s16 = s16 || bytes == 2;
      s8 = s8 || bytes == 1;
    }
  }
  for (const SharedArray& s : k.shared) note(s.type);
  for (const LocalVar& v : k.vars) note(v.type);
  for (const Inst& i : k.body) {
    note(i.type);
    for (ValueId a : i.args) note(types[a]);
    if (i.op == Op::Cast && types[i.args[0]].scalar == ScalarType::F64 &&
        (i.type.scalar == ScalarType::U8 || i.type.scalar == ScalarType::U32))
      i64 = true;  // through int64_t (below)
    Form f = info(i.op).form;
    sub = sub || f == Form::SubgroupReduce || i.op == Op::SubgroupLane || i.op == Op::SubgroupSize;
    shuf = shuf || f == Form::Shuffle || f == Form::SubgroupReduce;
    ballot = ballot || f == Form::Ballot;
    if (f == Form::Atomic && i.space == Space::Shared &&
        k.shared[i.ref].type.scalar == ScalarType::F32)
      fatomic = true;
    if (f == Form::Atomic && i.space == Space::Global) {
      ScalarType s = k.params[i.ref].type.scalar;
      fatomic = fatomic || (s == ScalarType::F32 && !alias[i.ref]);
      i64atomic = i64atomic || s == ScalarType::I64 || s == ScalarType::F64;
      if (s == ScalarType::F64) i64 = true;
    }
  }
  std::string s = "// kernel " + k.name + " (generated by ember)\n#version 450\n";
  s += "#extension GL_EXT_buffer_reference : require\n";
  s += "#extension GL_EXT_buffer_reference_uvec2 : require\n";
  bool views = false;
  for (const Inst& i : k.body)
    if ((i.op == Op::Load || i.op == Op::Store) && i.space == Space::Global &&
        (i.op == Op::Load ? i.type.width : types[i.args[1]].width) > 1)
      views = true;
  if (i64 || views) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
  if (s16) s += "#extension GL_EXT_shader_16bit_storage : require\n";
  if (s8) s += "#extension GL_EXT_shader_8bit_storage : require\n";
  if (s16 || s8) {
    s += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
    s += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
  }
  if (sub || shuf || ballot) s += "#extension GL_KHR_shader_subgroup_basic : require\n";
  if (shuf) s += "#extension GL_KHR_shader_subgroup_shuffle : require\n";
  if (shuf && i64) s += "#extension GL_EXT_shader_subgroup_extended_types_int64 : require\n";
  if (ballot) s += "#extension GL_KHR_shader_subgroup_ballot : require\n";
  if (fatomic) s += "#extension GL_EXT_shader_atomic_float : require\n";
  if (i64atomic) s += "#extension GL_EXT_shader_atomic_int64 : require\n";
  bool f32 = false;
  for (const Inst& i : k.body)
    f32 = f32 || i.type.scalar == ScalarType::F32 || is_half(i.type.scalar);
  if (o.denorm_preserve_f32 && f32) {
    // f32 subnormals kept, as the CPU and CUDA keep them (Vulkan lets a driver flush them).
    // The 32-bit mode only: it is valid whatever the device's denormBehaviorIndependence,
    // where a 64-bit one alone would not be (16 and 64 bits must then agree).
    s += "#extension GL_EXT_spirv_intrinsics : require\n";
    s += "spirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], "
         "capabilities = [4464], 4459, 32);\n";  // DenormPreserve, 32 bits
  }
  if (!k.fragments.empty()) {
    s += "#extension GL_NV_cooperative_matrix : require\n";
    s += "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n";
  }
  s += "layout(local_size_x = " + std::to_string(k.workgroup[0]) +
       ", local_size_y = " + std::to_string(k.workgroup[1]) +
       ", local_size_z = " + std::to_string(k.workgroup[2]) + ") in;\n";
  FragmentTypes ft = fragment_types(k);
  for (size_t t = 0; t < ft.types.size(); ++t) {
    uint32_t id = kFragmentSpecIds + 8 * uint32_t(t) + 2 * uint32_t(ft.types[t]->use);
    s += "layout(constant_id = " + std::to_string(id) + ") const uint ember_fr" +
         std::to_string(t) + " = " + std::to_string(ft.types[t]->rows) + ";\n";
    s += "layout(constant_id = " + std::to_string(id + 1) + ") const uint ember_fc" +
         std::to_string(t) + " = " + std::to_string(ft.types[t]->cols) + ";\n";
  }
  needs = {f64, i64};
  return s;
}

}  // namespace glsl

using namespace glsl;

GlslLayout glsl_layout(const Kernel& k) {
  GlslLayout L;
  std::vector<char> views = u32_views(k);
  uint32_t at = 0;
  auto place = [&](uint32_t size) {
    at = (at + size - 1) / size * size;
    uint32_t o = at;
    at += size;
    return o;
  };
  for (size_t p = 0; p < k.params.size(); ++p) {
    const Param& pa = k.params[p];
    GlslLayout::Arg a;
    a.param = p;
    if (pa.kind == Param::Buffer) {
      a.address = true;
      a.as = ScalarType::I64;
      a.offset = place(8);
      if (views[p] && is_half(pa.type.scalar)) a.word_offset = place(8);
    } else {
      a.as = passed_as(pa.type.scalar);
      a.offset = place(static_cast<uint32_t>(byte_size(a.as)));
    }
    L.args.push_back(a);
  }
  L.bytes = std::max<uint32_t>(16, (at + 15) / 16 * 16);
  return L;
}

}  // namespace ember::kernel
