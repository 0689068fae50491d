// The op kernels beyond elementwise and reduce (create, copy/cast, where, scan, sort, index,
// reduce extras, spatial): built, validated, run through the passes, rendered and compiled
// with NVRTC to sm_90 cubins (compiles skip where NVRTC is missing). The GPU suite
// (gpu_ops_test.cpp) runs them against the CPU backend.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "ember/core/error.h"
#include "ember/core/rng.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/create.h"
#include "ember/kernel/kernels/detail.h"
#include "ember/kernel/kernels/index.h"
#include "ember/kernel/kernels/interpolate.h"
#include "ember/kernel/kernels/norm.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/scan.h"
#include "ember/kernel/kernels/sort.h"
#include "ember/kernel/kernels/spatial.h"
#include "ember/kernel/kernels/where.h"
#include "ember/kernel/passes.h"
#include "ember/kernel/validate.h"
#include "tests/kernel/compile_options.h"

using namespace ember;
using namespace ember::kernel;
namespace fs = std::filesystem;

namespace {

// Every kernel of `ks` through the default pipeline, rendered and compiled to an sm_90 cubin.
void compile_all(std::vector<Kernel> ks) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("ember-op-kernels-" + std::to_string(rd()));
  KernelCache cache(dir);
  for (Kernel& k : ks) {
    default_pipeline().run(k);
    try {
      CudaBinary bin = compile_cuda(k, opts(&cache));
      EXPECT_EQ(bin.format, CudaBinary::Cubin) << k.name;
      EXPECT_GT(bin.data.size(), 1000u) << k.name;
    } catch (const ValueError& e) {
      ADD_FAILURE() << e.what() << "\n" << render_cuda(k);
    }
  }
  fs::remove_all(dir);
}

bool contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

const DType kAll[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                      DType::I32, DType::I16, DType::I8,  DType::U8,   DType::Bool};

}  // namespace

// ---- mul_hi ----------------------------------------------------------------------------

TEST(KernelMulHi, ValidatesFoldsAndRenders) {
  KernelBuilder kb("mulhi");
  Mem out = kb.buffer("out", ScalarType::U32, Access::Write);
  Mem outs = kb.buffer("outs", ScalarType::I32, Access::Write);
  Val a = kb.lit_int(ScalarType::U32, 0xdeadbeef), b = kb.lit_int(ScalarType::U32, 0x12345678);
  kb.store(out, kb.lit(ScalarType::U32, 0), kb.mul_hi(a, b));
  kb.store(outs, kb.lit(ScalarType::U32, 0),
           kb.mul_hi(kb.lit(ScalarType::I32, -7), kb.lit(ScalarType::I32, 1 << 30)));
  Val g = kb.global_id(0);
  kb.store(out, g, kb.mul_hi(g, b));
  Kernel k = kb.finish();
  EXPECT_TRUE(contains(render_cuda(k), "__umulhi("));
  fold_constants(k);
  std::string d = dump(k);
  uint64_t want = (uint64_t{0xdeadbeef} * 0x12345678u) >> 32;
  EXPECT_TRUE(contains(d, "const " + std::to_string(want))) << d;
  EXPECT_TRUE(contains(d, "const -2")) << d;  // -7 * 2^30 >> 32 = floor(-1.75)

  KernelBuilder bad("mulhi_f32");
  Mem o = bad.buffer("o", ScalarType::F32, Access::Write);
  Val x = bad.lit(ScalarType::F32, 2);
  bad.store(o, bad.global_id(0), bad.mul_hi(x, x));
  try {
    bad.finish();
    ADD_FAILURE() << "mul_hi on f32 validated";
  } catch (const ValueError& e) {
    EXPECT_TRUE(contains(e.what(), "mul_hi needs i32 or u32")) << e.what();
  }
  compile_all({std::move(k)});
}

// ---- create ----------------------------------------------------------------------------

TEST(KernelCreate, EveryOpAndDtypeBuilds) {
  for (OpCode op : {OpCode::Full, OpCode::Arange, OpCode::RandomUniform, OpCode::RandomNormal,
                    OpCode::RandomBernoulli})
    for (DType t : kAll)
      for (bool wide : {false, true}) {
        CreateSpec s{op, t, wide};
        Kernel k = create_kernel(s);
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
      }
  Kernel k = create_kernel({OpCode::RandomNormal, DType::F32});
  std::vector<std::string> names;
  for (const Param& p : k.params) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"out", "n", "mean", "std", "seed_lo", "seed_hi"}));
  EXPECT_TRUE(contains(dump(k), "mul_hi"));
  EXPECT_THROW(create_kernel({OpCode::Add, DType::F32}), ValueError);
}

// The generator on constants folds to constants: its u32-pair splitmix64 and the f64
// uniform must give the CPU stream's exact values (a check of the arithmetic without a GPU).
TEST(KernelCreate, RandomStreamFoldsToTheCpuValues) {
  for (uint64_t seed : {uint64_t{0}, uint64_t{42}, uint64_t{0x123456789abcdefull}, ~uint64_t{0}})
    for (uint64_t i :
         {uint64_t{0}, uint64_t{1}, uint64_t{77}, uint64_t{1} << 33, uint64_t{0xfffffffffull}}) {
      KernelBuilder kb("bits");
      Mem words = kb.buffer("words", ScalarType::U32, Access::Write);
      Mem u = kb.buffer("u", ScalarType::F64, Access::Write);
      kernel::detail::U64 s = kernel::detail::u64_const(kb, seed),
                          c = kernel::detail::u64_const(kb, i);
      kernel::detail::U64 b = kernel::detail::rng_bits(kb, s, c);
      kb.store(words, kb.lit(ScalarType::U32, 0), b.lo);
      kb.store(words, kb.lit(ScalarType::U32, 1), b.hi);
      kb.store(u, kb.lit(ScalarType::U32, 0), kernel::detail::rng_uniform01(kb, s, c));
      Kernel k = kb.finish();
      default_pipeline().run(k);
      std::vector<const Inst*> stores;
      for (const Inst& in : k.body)
        if (in.op == kernel::Op::Store) stores.push_back(&in);
      ASSERT_EQ(stores.size(), 3u);
      auto def = [&](ValueId v) -> const Inst* {
        for (const Inst& in : k.body)
          if (in.result == v) return &in;
        return nullptr;
      };
      const Inst* lo = def(stores[0]->args[1]);
      const Inst* hi = def(stores[1]->args[1]);
      const Inst* uf = def(stores[2]->args[1]);
      ASSERT_TRUE(lo && hi && uf && lo->op == kernel::Op::Const && hi->op == kernel::Op::Const &&
                  uf->op == kernel::Op::Const)
          << dump(k);
      uint64_t want = rng::bits(seed, i);
      EXPECT_EQ(static_cast<uint64_t>(lo->imm), want & 0xffffffffu) << seed << " " << i;
      EXPECT_EQ(static_cast<uint64_t>(hi->imm), want >> 32) << seed << " " << i;
      EXPECT_EQ(uf->fimm, rng::uniform01(seed, i)) << seed << " " << i;
    }
}

// ---- copy, cast, where -----------------------------------------------------------------

TEST(KernelCopy, EveryDtypePairBuilds) {
  int built = 0;
  for (DType a : kAll)
    for (DType b : kAll) {
      CopySpec s{a, b};
      s.rank = 3;
      Kernel k = copy_kernel(s);
      default_pipeline().run(k);
      EXPECT_NO_THROW(render_cuda(k)) << k.name;
      ++built;
    }
  EXPECT_EQ(built, 100);
  CopySpec s{DType::F32, DType::F32};
  s.rank = 2;
  s.strided_out = true;
  Kernel k = copy_kernel(s);
  EXPECT_EQ(k.params.size(), 2u + 1 + 2 + 2 + 2 + 1);
  EXPECT_EQ(k.params.back().name, "out_offset");
  EXPECT_THROW(copy_kernel({DType::F32, DType::F32, 0}), ValueError);
  // float -> int saturates: the bounds are compared before the conversion.
  std::string d = dump(copy_kernel({DType::F32, DType::I8}));
  EXPECT_TRUE(contains(d, "is_nan")) << d;
  EXPECT_TRUE(contains(d, "const -128")) << d;
}

TEST(KernelWhere, StridedAndDense) {
  for (DType t : kAll)
    for (bool dense : {false, true}) {
      WhereSpec s{t};
      s.rank = 4;
      s.contiguous = dense;
      Kernel k = where_kernel(s);
      EXPECT_EQ(k.params[0].type, Type(ScalarType::Bool));
      EXPECT_EQ(k.params.size(), dense ? 5u : 5u + 16);
      EXPECT_NO_THROW(render_cuda(k)) << k.name;
    }
}

TEST(KernelCreateCopyWhere, CompileWithNvrtc) {
  std::vector<Kernel> ks;
  for (OpCode op : {OpCode::Full, OpCode::Arange, OpCode::RandomUniform, OpCode::RandomNormal,
                    OpCode::RandomBernoulli})
    ks.push_back(create_kernel({op, DType::F32}));
  ks.push_back(create_kernel({OpCode::RandomUniform, DType::I64, true}));
  ks.push_back(create_kernel({OpCode::RandomNormal, DType::BF16}));
  ks.push_back(create_kernel({OpCode::Full, DType::Bool}));
  ks.push_back(create_kernel({OpCode::Arange, DType::F16, true}));
  ks.push_back(copy_kernel({DType::F32, DType::F32, 4}));
  ks.push_back(copy_kernel({DType::F16, DType::BF16, 2}));
  ks.push_back(copy_kernel({DType::F64, DType::I8, 1}));
  ks.push_back(copy_kernel({DType::BF16, DType::Bool, 3}));
  ks.push_back(copy_kernel({DType::Bool, DType::F16, 3}));
  ks.push_back(copy_kernel({DType::I64, DType::F32, 2, true, true}));
  ks.push_back(where_kernel({DType::F32, 3}));
  ks.push_back(where_kernel({DType::BF16, 1, true}));
  ks.push_back(where_kernel({DType::I64, 2, false, true}));
  compile_all(std::move(ks));
}

// ---- reduce extras: prod, argmax, argmin -----------------------------------------------

TEST(KernelReduceExtras, ProdArgmaxArgmin) {
  for (OpCode op : {OpCode::Prod, OpCode::ArgMax, OpCode::ArgMin})
    for (DType t : kAll) {
      if (t == DType::Bool) {
        EXPECT_THROW(reduce_kernel({op, t}), ValueError);
        continue;
      }
      for (bool wide : {false, true}) {
        Kernel k = reduce_kernel({op, t, wide});
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
        EXPECT_EQ(k.params[1].type, Type(op == OpCode::Prod ? scalar_of(t) : ScalarType::I64));
      }
    }
  std::string d = dump(reduce_kernel({OpCode::ArgMax, DType::F16}));
  EXPECT_TRUE(contains(d, "shared idxs: i64[256]")) << d;
  EXPECT_TRUE(contains(d, "is_nan")) << d;
  ReduceSpec odd{OpCode::Prod, DType::F32};
  odd.workgroup = 96;
  EXPECT_THROW(reduce_kernel(odd), ValueError);
  compile_all({reduce_kernel({OpCode::Prod, DType::F32}), reduce_kernel({OpCode::Prod, DType::I32}),
               reduce_kernel({OpCode::ArgMax, DType::BF16}),
               reduce_kernel({OpCode::ArgMin, DType::F64, true}),
               reduce_kernel({OpCode::ArgMax, DType::U8})});
}

// ---- scan ------------------------------------------------------------------------------

TEST(KernelScan, BothLayoutsEveryOp) {
  for (OpCode op : {OpCode::CumSum, OpCode::CumProd, OpCode::CumMax, OpCode::CumMin})
    for (DType t : kAll)
      for (auto layout : {ScanSpec::ThreadPerRow, ScanSpec::GroupPerRow}) {
        ScanSpec s{op, t, layout};
        if (t == DType::Bool) {
          EXPECT_THROW(scan_kernel(s), ValueError);
          continue;
        }
        Kernel k = scan_kernel(s);
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
      }
  std::string d = dump(scan_kernel({OpCode::CumSum, DType::F16, ScanSpec::GroupPerRow}));
  EXPECT_TRUE(contains(d, "shared part: f32[256]")) << d;
  EXPECT_THROW(scan_kernel({OpCode::Sum, DType::F32}), ValueError);
  ScanSpec odd{OpCode::CumSum, DType::F32, ScanSpec::GroupPerRow};
  odd.workgroup = 96;
  EXPECT_THROW(scan_kernel(odd), ValueError);
  compile_all({scan_kernel({OpCode::CumSum, DType::F32}),
               scan_kernel({OpCode::CumProd, DType::I64, ScanSpec::GroupPerRow, true}),
               scan_kernel({OpCode::CumMax, DType::BF16, ScanSpec::GroupPerRow}),
               scan_kernel({OpCode::CumMin, DType::I8})});
}

// ---- argsort ---------------------------------------------------------------------------

TEST(KernelSort, BlockAndMergeStages) {
  for (DType t : kAll)
    for (bool desc : {false, true})
      for (auto stage : {ArgsortSpec::Block, ArgsortSpec::Merge}) {
        ArgsortSpec s{t, desc, stage};
        if (t == DType::Bool) {
          EXPECT_THROW(argsort_kernel(s), ValueError);
          continue;
        }
        Kernel k = argsort_kernel(s);
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
      }
  ArgsortSpec s{DType::F64};
  s.workgroup = 1024;
  std::string d = dump(argsort_kernel(s));
  EXPECT_TRUE(contains(d, "shared keys: f64[2048]")) << d;
  EXPECT_TRUE(contains(d, "barrier")) << d;
  EXPECT_EQ(argsort_tile(s), 2048);
  s.workgroup = 96;
  EXPECT_THROW(argsort_kernel(s), ValueError);
  compile_all({argsort_kernel({DType::F32}), argsort_kernel({DType::BF16, true}),
               argsort_kernel({DType::I64, false, ArgsortSpec::Block, true}),
               argsort_kernel({DType::F32, false, ArgsortSpec::Merge}),
               argsort_kernel({DType::I32, true, ArgsortSpec::Merge, true})});
}

// ---- index -----------------------------------------------------------------------------

TEST(KernelIndex, GatherScatterIndexSelectIndexAdd) {
  for (DType t : kAll)
    for (DType it : {DType::I64, DType::I32})
      for (bool wide : {false, true}) {
        std::vector<Kernel> ks;
        ks.push_back(gather_kernel({t, it, 3, wide}));
        for (auto mode : {ScatterSpec::Claim, ScatterSpec::Assign, ScatterSpec::Add})
          ks.push_back(scatter_kernel({t, it, 2, mode, wide}));
        ks.push_back(index_select_kernel({t, it, wide}));
        ks.push_back(index_add_kernel({t, it, wide}));
        for (Kernel& k : ks) {
          default_pipeline().run(k);
          EXPECT_NO_THROW(render_cuda(k)) << k.name;
        }
      }
  EXPECT_EQ(index_accumulator(DType::BF16), DType::F32);
  EXPECT_EQ(index_accumulator(DType::U8), DType::I32);
  EXPECT_EQ(index_accumulator(DType::F64), DType::F64);
  Kernel add = scatter_kernel({DType::F16, DType::I64, 2, ScatterSpec::Add});
  EXPECT_EQ(add.params[2].name, "out");
  EXPECT_EQ(add.params[2].type, Type(ScalarType::F32));
  EXPECT_TRUE(contains(dump(add), "atomic_add")) << dump(add);
  Kernel claim = scatter_kernel({DType::F32, DType::I64, 1, ScatterSpec::Claim});
  EXPECT_TRUE(contains(dump(claim), "atomic_max")) << dump(claim);
  EXPECT_THROW(gather_kernel({DType::F32, DType::F32}), ValueError);
  EXPECT_THROW(gather_kernel({DType::F32, DType::I64, 9}), ValueError);
  compile_all({gather_kernel({DType::F32, DType::I64, 2}),
               gather_kernel({DType::BF16, DType::I32, 3, true}),
               scatter_kernel({DType::F32, DType::I64, 2, ScatterSpec::Claim}),
               scatter_kernel({DType::F32, DType::I64, 2, ScatterSpec::Assign}),
               scatter_kernel({DType::F32, DType::I64, 2, ScatterSpec::Add}),
               scatter_kernel({DType::I64, DType::I64, 1, ScatterSpec::Add, true}),
               scatter_kernel({DType::Bool, DType::I32, 1, ScatterSpec::Add}),
               scatter_kernel({DType::F16, DType::I64, 2, ScatterSpec::Add}),
               index_select_kernel({DType::F64}), index_add_kernel({DType::F32}),
               index_add_kernel({DType::I8, DType::I32, true})});
}

// ---- spatial ---------------------------------------------------------------------------

namespace {
std::vector<std::string> param_names(const Kernel& k) {
  std::vector<std::string> names;
  for (const Param& p : k.params) names.push_back(p.name);
  return names;
}
const OpCode kPools[] = {OpCode::MaxPool,         OpCode::MaxPoolBackward,
                         OpCode::AvgPool,         OpCode::AvgPoolBackward,
                         OpCode::AdaptiveAvgPool, OpCode::AdaptiveAvgPoolBackward};
}  // namespace

TEST(KernelSpatial, PoolsUnfoldAndFoldBuild) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16})
    for (int rank = 1; rank <= 3; ++rank)
      for (bool wide : {false, true}) {
        std::vector<Kernel> ks;
        for (OpCode op : kPools)
          for (bool pad : {true, false}) ks.push_back(pool_kernel({op, t, rank, pad, wide}));
        for (bool fold : {false, true}) ks.push_back(unfold_kernel({t, rank, fold, wide}));
        for (Kernel& k : ks) {
          default_pipeline().run(k);
          EXPECT_NO_THROW(render_cuda(k)) << k.name;
        }
      }
  EXPECT_EQ(param_names(pool_kernel({OpCode::MaxPoolBackward, DType::F32, 1})),
            (std::vector<std::string>{"x", "g", "out", "n", "channels", "in0", "out0", "kernel0",
                                      "stride0", "padding0", "dilation0", "x_stride0", "x_stride1",
                                      "x_stride2", "g_stride0", "g_stride1", "g_stride2"}));
  EXPECT_EQ(param_names(pool_kernel({OpCode::AdaptiveAvgPoolBackward, DType::F32, 1})),
            (std::vector<std::string>{"g", "out", "n", "channels", "in0", "out0", "g_stride0",
                                      "g_stride1", "g_stride2"}));
  EXPECT_EQ(param_names(unfold_kernel({DType::F32, 1})),
            (std::vector<std::string>{"x", "out", "n", "channels", "in0", "out0", "kernel0",
                                      "stride0", "padding0", "dilation0", "x_stride0", "x_stride1",
                                      "x_stride2", "out_stride0", "out_stride1", "out_stride2"}));
  EXPECT_EQ(param_names(unfold_kernel({DType::F32, 2, true})).back(), "x_stride2");
  // the backward ops gather: no atomics, so they are deterministic
  for (OpCode op : {OpCode::MaxPoolBackward, OpCode::AvgPoolBackward})
    EXPECT_FALSE(contains(dump(pool_kernel({op, DType::F32, 2})), "atomic")) << name(op);
  EXPECT_FALSE(contains(dump(unfold_kernel({DType::F32, 2, true})), "atomic"));
  EXPECT_THROW(pool_kernel({OpCode::Add, DType::F32}), ValueError);
  EXPECT_THROW(pool_kernel({OpCode::MaxPool, DType::I32}), ValueError);
  EXPECT_THROW(pool_kernel({OpCode::MaxPool, DType::F32, 4}), ValueError);
  EXPECT_THROW(unfold_kernel({DType::F32, 0}), ValueError);
  std::vector<Kernel> ks;
  for (OpCode op : kPools) {
    ks.push_back(pool_kernel({op, DType::F32, 2}));
    ks.push_back(pool_kernel({op, DType::BF16, 3, false, true}));
  }
  ks.push_back(pool_kernel({OpCode::MaxPoolBackward, DType::F64, 1}));
  ks.push_back(pool_kernel({OpCode::AvgPool, DType::F16, 2, false}));
  for (bool fold : {false, true}) {
    ks.push_back(unfold_kernel({DType::F32, 2, fold}));
    ks.push_back(unfold_kernel({DType::F16, 3, fold, true}));
  }
  compile_all(std::move(ks));
}

TEST(KernelSpatial, InterpolateEveryModeBuilds) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16})
    for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
      for (int rank = 1; rank <= 3; ++rank)
        for (bool align : {false, true})
          for (bool backward : {false, true}) {
            Kernel k = interpolate_kernel({t, m, rank, align, backward});
            default_pipeline().run(k);
            EXPECT_NO_THROW(render_cuda(k)) << k.name;
          }
  EXPECT_EQ(interpolate_accumulator(DType::F16), DType::F32);
  EXPECT_EQ(interpolate_accumulator(DType::F64), DType::F64);
  Kernel b = interpolate_kernel({DType::BF16, InterpMode::Linear, 2, false, true});
  EXPECT_EQ(b.params[1].type, Type(ScalarType::F32));
  EXPECT_TRUE(contains(dump(b), "atomic_add"));
  EXPECT_EQ(param_names(interpolate_kernel({DType::F32, InterpMode::Cubic, 1})),
            (std::vector<std::string>{"x", "out", "n", "channels", "in0", "out0", "x_stride0",
                                      "x_stride1", "x_stride2"}));
  EXPECT_THROW(interpolate_kernel({DType::I64}), ValueError);
  EXPECT_THROW(interpolate_kernel({DType::F32, InterpMode::Linear, 4}), ValueError);
  std::vector<Kernel> ks;
  for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
    for (bool backward : {false, true}) {
      ks.push_back(interpolate_kernel({DType::F32, m, 2, m != InterpMode::Nearest, backward}));
      ks.push_back(interpolate_kernel({DType::F64, m, 2, false, backward, true}));
    }
  ks.push_back(interpolate_kernel({DType::F16, InterpMode::Linear, 3, true, true}));
  ks.push_back(interpolate_kernel({DType::BF16, InterpMode::Linear, 1}));
  compile_all(std::move(ks));
}

TEST(KernelSpatial, DirectConvBuilds) {
  std::vector<Kernel> ks;
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16})
    for (int rank = 1; rank <= 3; ++rank)
      for (bool wide : {false, true}) {
        Kernel k = conv_direct_kernel({t, rank, wide});
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
        if (rank == 2 && !wide) ks.push_back(std::move(k));
      }
  std::vector<std::string> names = param_names(conv_direct_kernel({DType::F32, 1}));
  EXPECT_EQ(names, (std::vector<std::string>{"x", "w", "out", "n", "in_channels", "out_channels",
                                             "groups", "in0", "out0", "kernel0", "stride0",
                                             "padding0", "dilation0", "x_stride0", "x_stride1",
                                             "x_stride2", "w_stride0", "w_stride1", "w_stride2"}));
  EXPECT_THROW(conv_direct_kernel({DType::I32}), ValueError);
  compile_all(std::move(ks));
}

// ---- layer_norm and rms_norm ------------------------------------------------------------

// Every layout the CUDA backend picks (composite.cpp), for every float dtype: a thread per row,
// a workgroup per row re-reading x or holding it in registers, and 16-byte vectors.
TEST(KernelNorm, EveryLayoutAndDtypeCompiles) {
  std::vector<Kernel> ks;
  for (OpCode op : {OpCode::LayerNorm, OpCode::RmsNorm})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
      std::vector<NormSpec> specs;
      NormSpec thread{op, t, NormSpec::ThreadPerRow};
      specs.push_back(thread);
      for (int items : {0, 1, 4, 16}) {
        NormSpec g{op, t};
        g.items = items;
        g.workgroup = items == 0 ? 1024 : items == 1 ? 32 : 256;
        specs.push_back(g);
      }
      for (int items : {1, 4, 8}) {
        NormSpec v{op, t};
        v.items = items;
        v.vector = true;
        v.workgroup = items == 8 ? 1024 : 64;
        specs.push_back(v);
      }
      NormSpec wide{op, t};
      wide.items = 2;
      wide.wide_index = true;
      specs.push_back(wide);
      for (const NormSpec& s : specs) {
        Kernel k = norm_kernel(s);
        std::string d = dump(k);
        bool layer = op == OpCode::LayerNorm;
        EXPECT_EQ(k.params.size(), layer ? 8u : 7u) << k.name;
        EXPECT_EQ(contains(d, "param beta"), layer) << k.name;
        EXPECT_EQ(contains(d, "barrier"), s.layout == NormSpec::GroupPerRow) << k.name;
        EXPECT_TRUE(contains(d, "rsqrt")) << d;
        if (s.vector) {
          std::string load = "x";  // appends: GCC 12's -Wrestrict misfires on "x" + std::string
          load.append(std::to_string(norm_vector_width(t))).append(" = load x[");
          EXPECT_TRUE(contains(d, load)) << d;
        }
        ks.push_back(std::move(k));
      }
    }
  EXPECT_EQ(norm_vector_width(DType::F32), 4);
  EXPECT_EQ(norm_vector_width(DType::BF16), 8);
  EXPECT_THROW(norm_kernel({OpCode::Softmax, DType::F32}), ValueError);
  EXPECT_THROW(norm_kernel({OpCode::LayerNorm, DType::I32}), ValueError);
  NormSpec bad{OpCode::RmsNorm, DType::F32};
  bad.workgroup = 48;
  EXPECT_THROW(norm_kernel(bad), ValueError);
  bad.workgroup = 256;
  bad.items = 17;
  EXPECT_THROW(norm_kernel(bad), ValueError);
  for (Kernel& k : ks) EXPECT_NO_THROW(render_cuda(k)) << k.name;
  compile_all(std::move(ks));
}
