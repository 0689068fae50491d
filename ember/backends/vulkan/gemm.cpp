#include "ember/backends/vulkan/gemm.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>

#include "ember/backends/gpu/tune.h"
#include "ember/kernel/passes.h"

namespace ember::vulkan {

namespace {

// The tile shapes: (tile_m, tile_n, depth, thread_m, thread_n), 256 threads each.
struct Shape {
  int tm, tn, depth, thm, thn;
};
constexpr Shape kShapes[] = {
    {128, 128, 8, 8, 8},   // 0: large problems
    {64, 64, 16, 4, 4},    // 1: small ones (more workgroups)
    {128, 64, 8, 8, 4},    // 2
    {64, 128, 8, 4, 8},    // 3
    {128, 128, 16, 8, 8},  // 4
    {64, 64, 8, 4, 4},     // 5: f64 (its shared tiles are twice as large)
};

bool aligned(gpu::Address p, int64_t bytes) { return p % uint64_t(bytes) == 0; }

// The load an operand allows: 4-element vectors along the dimension of stride 1 when that
// dimension's extent, the other stride, the batch stride and the address are multiples of 4
// elements (and 4 elements are 8 or 16 bytes: the vector views of the GLSL rendering).
kernel::MatmulLoad operand_load(const gpu::MatView& v, int64_t batch_stride, int64_t rows,
                                int64_t cols, gpu::Address p, int64_t esize) {
  // v.col: column-major (rows contiguous); else row-major (columns contiguous).
  int64_t extent = v.col ? rows : cols;
  bool ok = (esize == 2 || esize == 4) && extent % 4 == 0 && v.ld % 4 == 0 &&
            batch_stride % 4 == 0 && aligned(p, 4 * esize);
  if (!ok) return kernel::MatmulLoad::Scalar;
  // Shared memory holds A's K and B's N contiguous: both operands' columns.
  return v.col ? kernel::MatmulLoad::VectorTransposed : kernel::MatmulLoad::Vector;
}

// Element strides of a GEMM operand: (row, column).
std::pair<int64_t, int64_t> strides_of(const gpu::MatView& v) {
  return v.col ? std::pair<int64_t, int64_t>{1, v.ld} : std::pair<int64_t, int64_t>{v.ld, 1};
}

int64_t encode(const kernel::MatmulSpec& s, int shape) {
  return int64_t(shape) | int64_t(s.load_a) << 4 | int64_t(s.load_b) << 6 |
         int64_t(s.vector_c) << 8;
}

// Whether an operand's or the result's farthest element is past i32 indices.
bool wide_index(const gpu::GemmCall& g) {
  auto [ar, ac] = strides_of(g.va);
  auto [br, bc] = strides_of(g.vb);
  int64_t reach_a = (g.batch - 1) * std::abs(g.sa) + (g.m - 1) * ar + (g.k - 1) * ac;
  int64_t reach_b = (g.batch - 1) * std::abs(g.sb) + (g.k - 1) * br + (g.n - 1) * bc;
  return std::max({reach_a, reach_b, g.batch * g.m * g.n}) > 0x7fffffff;
}

kernel::MatmulSpec with_shape(kernel::MatmulSpec s, int shape) {
  const Shape& sh = kShapes[shape];
  s.tile_m = sh.tm, s.tile_n = sh.tn, s.depth = sh.depth, s.thread_m = sh.thm, s.thread_n = sh.thn;
  return s;
}

}  // namespace

std::vector<GemmChoice> gemm_candidates(const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
                                        gpu::Address c, int64_t shared_bytes, int multiprocessors) {
  kernel::MatmulSpec base{g.dtype};
  base.wide_index = wide_index(g);
  int64_t esize = size_of(g.dtype);
  base.load_a = operand_load(g.va, g.sa, g.m, g.k, a, esize);
  base.load_b = operand_load(g.vb, g.sb, g.k, g.n, b, esize);
  base.vector_c = (esize == 2 || esize == 4) && g.n % 4 == 0 && aligned(c, 4 * esize);
  std::vector<int> order;
  if (g.dtype == DType::F64) {
    order = {5, 1};
  } else {
    // 128 x 128 tiles where they fill the device twice over, else 64 x 64 (more workgroups).
    int64_t big_tiles = ((g.m + 127) / 128) * ((g.n + 127) / 128) * g.batch;
    order = big_tiles >= 2 * int64_t(multiprocessors) ? std::vector<int>{0, 4, 2, 3, 1}
                                                      : std::vector<int>{1, 2, 3, 0, 5};
  }
  std::vector<GemmChoice> out;
  for (int shape : order) {
    kernel::MatmulSpec s = with_shape(base, shape);
    if (shared_bytes > 0 && s.shared_bytes() > shared_bytes) continue;
    out.push_back({encode(s, shape), s});
  }
  return out;
}

bool run_gemm(gpu::Runtime& rt, const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
              gpu::Address c, int64_t shared_bytes) {
  std::vector<GemmChoice> choices = gemm_candidates(g, a, b, c, shared_bytes, rt.multiprocessors);
  if (choices.empty()) return false;
  std::vector<int64_t> codes;
  for (const GemmChoice& ch : choices) codes.push_back(ch.code);
  auto [ar, ac] = strides_of(g.va);
  auto [br, bc] = strides_of(g.vb);
  auto launch = [&](int64_t code) {
    // The tuner answers with one of `codes` (a stale entry of its file: the heuristic's).
    size_t at = size_t(std::find(codes.begin(), codes.end(), code) - codes.begin());
    const kernel::MatmulSpec& s = choices.at(at).spec;
    const gpu::Loaded& l = gpu::kernel_for(
        rt, gpu::key(gpu::Kind::Matmul, 1, g.dtype, g.dtype, 0, false, s.wide_index, int(code)),
        [&] {
          kernel::Kernel k = kernel::matmul_kernel(s);
          kernel::default_pipeline().run(k);
          return k;
        });
    gpu::Args args(l);
    args.ptr(a).ptr(b).ptr(c).i(g.m).i(g.n).i(g.k).i(g.batch);
    args.i(g.sa).i(ar).i(ac).i(g.sb).i(br).i(bc);
    args.launch(rt, kernel::matmul_groups(s, g.m, g.n, g.batch));
  };
  // Tuned per dtype, loads and size bucket (outputs and depth).
  const std::string tag = choices[0].spec.tag();  // the loads: its last part
  std::string key =
      "matmul/" + std::string(name(g.dtype)) + "/" + tag.substr(tag.rfind('/') + 1) + "/m" +
      std::to_string(gpu::log2_bucket(g.m)) + "n" + std::to_string(gpu::log2_bucket(g.n)) + "k" +
      std::to_string(gpu::log2_bucket(g.k)) + "b" + std::to_string(gpu::log2_bucket(g.batch));
  gpu::launch_tuned(rt, key, codes, g.m * g.n * g.batch, launch);
  return true;
}

std::optional<kernel::CoopMatmulSpec> coop_gemm_spec(const gpu::GemmCall& g, gpu::Address a,
                                                     gpu::Address b, const DeviceInfo& info,
                                                     int multiprocessors) {
  const kernel::CoopMatmulSpec base;
  CoopShape frag{base.frag_m, base.frag_n, base.frag_k};
  static const bool off = [] {  // read once: this runs for every f16 GEMM
    const char* e = std::getenv("EMBER_VULKAN_COOPMAT");
    return e && std::string(e) == "0";
  }();
  if (g.dtype != DType::F16 || off ||
      std::find(info.coop_f16.begin(), info.coop_f16.end(), frag) == info.coop_f16.end())
    return std::nullopt;
  kernel::CoopMatmulSpec s = base;
  s.wide_index = wide_index(g);
  s.subgroup = int(info.subgroup_size);
  // 64 x 64 tiles (2 x 2 subgroups) where 128 x 128 ones would not fill the device twice.
  int64_t big_tiles = ((g.m + 127) / 128) * ((g.n + 127) / 128) * g.batch;
  if (big_tiles < 2 * int64_t(multiprocessors)) s.tile_m = s.tile_n = 64, s.warps_m = s.warps_n = 2;
  // Each operand staged in its own layout, 4 elements at a time where it allows.
  s.a_col_major = g.va.col;
  s.b_col_major = g.vb.col;
  s.vector_a = operand_load(g.va, g.sa, g.m, g.k, a, 2) != kernel::MatmulLoad::Scalar;
  s.vector_b = operand_load(g.vb, g.sb, g.k, g.n, b, 2) != kernel::MatmulLoad::Scalar;
  if (s.threads() > 1024 || s.shared_bytes() > int64_t(info.shared_memory)) return std::nullopt;
  return s;
}

bool run_coop_gemm(gpu::Runtime& rt, const gpu::GemmCall& g, gpu::Address a, gpu::Address b,
                   gpu::Address c, const DeviceInfo& info) {
  std::optional<kernel::CoopMatmulSpec> spec = coop_gemm_spec(g, a, b, info, rt.multiprocessors);
  if (!spec) return false;
  const kernel::CoopMatmulSpec& s = *spec;
  int64_t code = int64_t(s.tile_m == 128) | int64_t(s.a_col_major) << 1 |
                 int64_t(s.b_col_major) << 2 | int64_t(s.vector_a) << 3 | int64_t(s.vector_b) << 4;
  const gpu::Loaded& l = gpu::kernel_for(  // op 2: apart from run_gemm's kernels
      rt, gpu::key(gpu::Kind::Matmul, 2, g.dtype, g.dtype, 0, false, s.wide_index, int(code)), [&] {
        kernel::Kernel k = kernel::coop_matmul_kernel(s);
        kernel::default_pipeline().run(k);
        return k;
      });
  auto [ar, ac] = strides_of(g.va);
  auto [br, bc] = strides_of(g.vb);
  gpu::Args args(l);
  args.ptr(a).ptr(b).ptr(c).i(g.m).i(g.n).i(g.k).i(g.batch);
  args.i(g.sa).i(ar).i(ac).i(g.sb).i(br).i(bc);
  args.launch(rt, kernel::coop_matmul_groups(s, g.m, g.n, g.batch));
  return true;
}

}  // namespace ember::vulkan
