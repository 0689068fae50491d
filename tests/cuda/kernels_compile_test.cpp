// Every kernel the CUDA backend writes itself (ember/backends/gpu/kernels.h), and a kernel of
// each kind it requests from the kernel layer, renders and compiles to an sm_90 cubin with
// NVRTC. Needs no GPU: source errors show up on any machine with the toolkit.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "ember/backends/gpu/kernels.h"
#include "ember/backends/gpu/tune.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/create.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/index.h"
#include "ember/kernel/kernels/interpolate.h"
#include "ember/kernel/kernels/norm.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/scan.h"
#include "ember/kernel/kernels/softmax.h"
#include "ember/kernel/kernels/sort.h"
#include "ember/kernel/kernels/spatial.h"
#include "ember/kernel/kernels/where.h"

using namespace ember;

namespace {

class CudaKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!kernel::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: skipped (" << why << ")";
  }
  void compiles(const kernel::Kernel& k) {
    kernel::CudaCompileOptions o;
    o.arch = 90;
    o.cache = &cache_;
    kernel::CudaBinary bin = kernel::compile_cuda(k, o);
    EXPECT_EQ(bin.format, kernel::CudaBinary::Cubin) << k.name;
    EXPECT_FALSE(bin.data.empty()) << k.name;
  }
  kernel::KernelCache cache_{""};
};

const DType kNumbers[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64,
                          DType::I32, DType::I16, DType::I8,   DType::U8};

TEST_F(CudaKernels, SequentialReductions) {
  for (OpCode op :
       {OpCode::Sum, OpCode::Prod, OpCode::Max, OpCode::Min, OpCode::ArgMax, OpCode::ArgMin})
    for (DType t : kNumbers) compiles(gpu::kernels::seq_reduce_kernel(op, t));
  compiles(gpu::kernels::seq_reduce_kernel(OpCode::Max, DType::Bool));
  compiles(gpu::kernels::seq_reduce_kernel(OpCode::Min, DType::Bool));
  EXPECT_THROW(gpu::kernels::seq_reduce_kernel(OpCode::Sum, DType::Bool), ValueError);
}

TEST_F(CudaKernels, NaiveMatmul) {
  for (DType t : kNumbers) compiles(gpu::kernels::naive_matmul_kernel(t));
}

// One of each spec shape the backend asks the kernel layer for.
TEST_F(CudaKernels, LayerKernelsAsRequested) {
  for (bool dense : {true, false})
    for (bool wide : {false, true}) {
      kernel::ElementwiseSpec es{OpCode::Add, DType::F16};
      es.rank = dense ? 1 : 3;
      es.contiguous = dense;
      es.wide_index = wide;
      compiles(kernel::elementwise_kernel(es));
      kernel::WhereSpec ws{DType::BF16};
      ws.rank = dense ? 1 : 4;
      ws.contiguous = dense;
      ws.wide_index = wide;
      compiles(kernel::where_kernel(ws));
    }
  kernel::CopySpec cs{DType::F32, DType::I8};
  cs.rank = 3;
  compiles(kernel::copy_kernel(cs));
  for (OpCode c : {OpCode::Full, OpCode::Arange, OpCode::RandomUniform, OpCode::RandomNormal,
                   OpCode::RandomBernoulli}) {
    kernel::CreateSpec s{c, DType::F64};
    compiles(kernel::create_kernel(s));
  }
  for (OpCode c : {OpCode::Sum, OpCode::Prod, OpCode::ArgMax}) {
    kernel::ReduceSpec rs{c, DType::F16};
    compiles(kernel::reduce_kernel(rs));
  }
  for (auto layout : {kernel::ScanSpec::ThreadPerRow, kernel::ScanSpec::GroupPerRow}) {
    kernel::ScanSpec ss{OpCode::CumSum, DType::F32};
    ss.layout = layout;
    compiles(kernel::scan_kernel(ss));
  }
}

// Gelu and Silu in one pass, and dense elementwise kernels with one-element operands.
TEST_F(CudaKernels, FusedUnaryAndScalarOperands) {
  for (OpCode c : {OpCode::Gelu, OpCode::Silu})
    for (DType t : {DType::F32, DType::BF16, DType::F64}) {
      EXPECT_TRUE(kernel::elementwise_supported(c, t));
      kernel::ElementwiseSpec es{c, t};
      es.contiguous = t != DType::F64;
      compiles(kernel::elementwise_kernel(es));
    }
  EXPECT_FALSE(kernel::elementwise_supported(OpCode::Gelu, DType::I32));
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::F64})
    for (int mask : {1, 2}) {
      kernel::ElementwiseSpec es{mask == 1 ? OpCode::Sub : OpCode::Less, t};
      es.contiguous = true;
      es.scalar_inputs = mask;
      compiles(kernel::elementwise_kernel(es));
    }
}

// The two passes of split reductions (few outputs, long rows) as reduce.cpp asks for them:
// every op on f32, and each dtype class on the vector and scalar partial paths.
TEST_F(CudaKernels, SplitReductions) {
  const OpCode ops[] = {OpCode::Sum, OpCode::Prod,   OpCode::Max,
                        OpCode::Min, OpCode::ArgMax, OpCode::ArgMin};
  auto all_stages = [&](OpCode c, DType t) {
    for (int stage = 0; stage < 3; ++stage) {
      kernel::ReduceSpec rs{c, t};
      rs.stage = stage == 2 ? kernel::ReduceSpec::Finish : kernel::ReduceSpec::Partial;
      rs.vector = stage == 0;
      if (rs.vector && kernel::reduce_vector_width(t) == 1) continue;
      rs.wide_index = t == DType::F64;
      compiles(kernel::reduce_kernel(rs));
    }
  };
  for (OpCode c : ops) all_stages(c, DType::F32);
  for (DType t : kNumbers) all_stages(t == DType::F32 ? OpCode::ArgMin : OpCode::Sum, t);
  all_stages(OpCode::Max, DType::BF16);
  all_stages(OpCode::Min, DType::Bool);
  all_stages(OpCode::ArgMax, DType::F16);
  all_stages(OpCode::Prod, DType::I64);
  kernel::ReduceSpec bad{OpCode::Sum, DType::Bool};
  bad.stage = kernel::ReduceSpec::Partial;
  EXPECT_THROW(kernel::reduce_kernel(bad), ValueError);
  bad = {OpCode::Sum, DType::I8};
  bad.stage = kernel::ReduceSpec::Partial;
  bad.vector = true;
  EXPECT_THROW(kernel::reduce_kernel(bad), ValueError);
}

// The indexing kernels as index.cpp asks for them: the strided-output copy (cat,
// slice_assign), gather, the three scatter stages, index_select and index_add on their
// accumulator types, with i64 and i32 indices.
TEST_F(CudaKernels, IndexKernelsAsRequested) {
  for (bool wide : {false, true}) {
    kernel::CopySpec cs{DType::BF16, DType::BF16};
    cs.rank = 4;
    cs.strided_out = true;
    cs.wide_index = wide;
    compiles(kernel::copy_kernel(cs));
  }
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::Bool, DType::F64})
    for (DType ix : {DType::I64, DType::I32}) {
      kernel::GatherSpec g{t, ix};
      g.rank = 3;
      compiles(kernel::gather_kernel(g));
      for (auto mode :
           {kernel::ScatterSpec::Claim, kernel::ScatterSpec::Assign, kernel::ScatterSpec::Add}) {
        kernel::ScatterSpec s{t, ix};
        s.rank = 2;
        s.mode = mode;
        s.wide_index = ix == DType::I32;  // the claim buffer is i64 then
        compiles(kernel::scatter_kernel(s));
      }
      compiles(kernel::index_select_kernel({t, ix}));
      compiles(kernel::index_add_kernel({t, ix}));
    }
}

// argsort as index.cpp launches it: a Block stage for each workgroup it picks (32 to 512),
// ascending and descending, and the Merge stage.
TEST_F(CudaKernels, ArgsortAsRequested) {
  for (int wg = 32; wg <= 512; wg *= 2)
    for (bool desc : {false, true}) {
      kernel::ArgsortSpec s{DType::F32, desc};
      s.workgroup = wg;
      compiles(kernel::argsort_kernel(s));
    }
  for (DType t : {DType::F16, DType::I64, DType::U8, DType::F64}) {
    kernel::ArgsortSpec s{t};
    s.workgroup = 128;
    compiles(kernel::argsort_kernel(s));
    s.stage = kernel::ArgsortSpec::Merge;
    s.workgroup = 256;
    compiles(kernel::argsort_kernel(s));
  }
}

// The fused softmax, log_softmax and logsumexp kernels composite.cpp picks: workgroups of
// 128 to 1024 with 1 to 16 register items or none, and the thread-per-row layout.
TEST_F(CudaKernels, SoftmaxAsRequested) {
  for (OpCode op : {OpCode::Softmax, OpCode::LogSoftmax, OpCode::LogSumExp}) {
    for (int items : {0, 1, 2, 4, 8, 16}) {
      kernel::SoftmaxSpec s{op, DType::F32};
      s.items = items;
      s.workgroup = items == 16 || items == 0 ? 1024 : 128 << (items % 4);
      compiles(kernel::softmax_kernel(s));
    }
    for (DType t : {DType::F16, DType::BF16, DType::F64}) {
      kernel::SoftmaxSpec s{op, t};
      s.items = 8;
      s.workgroup = 512;
      compiles(kernel::softmax_kernel(s));
      s.layout = kernel::SoftmaxSpec::ThreadPerRow;
      s.wide_index = true;
      compiles(kernel::softmax_kernel(s));
    }
    // The vector path: 16-byte vectors, 1 to 8 a thread, workgroups of 64 to 1024.
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
      for (int items : {1, 4, 8}) {
        kernel::SoftmaxSpec s{op, t};
        s.items = items;
        s.vector = true;
        s.workgroup = items == 1 ? 64 : items == 4 ? 256 : 1024;
        compiles(kernel::softmax_kernel(s));
      }
  }
  EXPECT_THROW(kernel::softmax_kernel({OpCode::Exp, DType::F32}), ValueError);
  EXPECT_THROW(kernel::softmax_kernel({OpCode::Softmax, DType::I32}), ValueError);
}

// The fused layer_norm and rms_norm kernels composite.cpp picks: a thread per row, workgroups
// of 32 to 1024 with 0 to 16 register items, and the 16-byte vector path with 1 to 8.
TEST_F(CudaKernels, NormAsRequested) {
  for (OpCode op : {OpCode::LayerNorm, OpCode::RmsNorm})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
      kernel::NormSpec s{op, t, kernel::NormSpec::ThreadPerRow};
      compiles(kernel::norm_kernel(s));
      s.layout = kernel::NormSpec::GroupPerRow;
      for (int items : {0, 2, 16}) {
        s.items = items;
        s.workgroup = items == 0 ? 1024 : 32;
        compiles(kernel::norm_kernel(s));
      }
      s.vector = true;
      s.wide_index = true;
      for (int items : {1, 8}) {
        s.items = items;
        s.workgroup = items == 1 ? 64 : 1024;
        compiles(kernel::norm_kernel(s));
      }
    }
}

// The spatial kernels as spatial.cpp asks for them: every pool op (both divisor rules for
// average pooling), interpolate in each mode forward and backward, unfold, fold and the direct
// conv, over the ranks and dtypes it launches them with.
TEST_F(CudaKernels, SpatialAsRequested) {
  const OpCode pools[] = {OpCode::MaxPool,         OpCode::MaxPoolBackward,
                          OpCode::AvgPool,         OpCode::AvgPoolBackward,
                          OpCode::AdaptiveAvgPool, OpCode::AdaptiveAvgPoolBackward};
  for (OpCode c : pools)
    for (int r = 1; r <= 3; ++r) {
      kernel::PoolSpec p{c, r == 2 ? DType::F16 : DType::F32, r};
      p.count_include_pad = r != 3;
      p.wide_index = r == 1;
      compiles(kernel::pool_kernel(p));
    }
  for (InterpMode m : {InterpMode::Nearest, InterpMode::Linear, InterpMode::Cubic})
    for (bool backward : {false, true}) {
      kernel::InterpolateSpec s{DType::BF16, m, m == InterpMode::Cubic ? 2 : 3, true, backward};
      compiles(kernel::interpolate_kernel(s));
      s.dtype = DType::F64;
      s.align_corners = false;
      s.wide_index = true;
      compiles(kernel::interpolate_kernel(s));
    }
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (bool fold : {false, true}) {
      kernel::UnfoldSpec u{t, t == DType::F64 ? 3 : 2};
      u.fold = fold;
      u.wide_index = t == DType::BF16;
      compiles(kernel::unfold_kernel(u));
    }
  for (int r = 1; r <= 3; ++r) {
    kernel::ConvSpec c{r == 1 ? DType::F16 : DType::F32, r};
    c.wide_index = r == 3;
    compiles(kernel::conv_direct_kernel(c));
  }
}

// Integer pow (square and multiply, unrolled) on every integer type, dense and strided.
TEST_F(CudaKernels, IntegerPow) {
  for (DType t : {DType::I64, DType::I32, DType::I16, DType::I8, DType::U8})
    for (bool dense : {true, false}) {
      kernel::ElementwiseSpec es{OpCode::Pow, t};
      es.rank = dense ? 1 : 2;
      es.contiguous = dense;
      compiles(kernel::elementwise_kernel(es));
    }
}

// Every configuration the tuner may choose (tune.h) for softmax, the norms and the reductions,
// over every shape bucket: the kernel builders accept it, its registers cover the row, and
// each distinct f32 kernel compiles (other dtypes are built and validated).
TEST_F(CudaKernels, TunedCandidates) {
  namespace td = gpu;
  std::set<std::tuple<int64_t, int64_t, bool, int64_t>> rows;  // wg, items, vector, width
  for (int ls = 0; ls <= 22; ++ls)
    for (int64_t vw : {2, 4, 8})
      for (bool vec_ok : {false, true})
        for (int64_t min_wg : {32, 64, 128}) {
          std::vector<int64_t> cands =
              td::row_candidates(td::row_code(false, false, 256), ls, vw, vec_ok, min_wg, true);
          EXPECT_LE(cands.size(), 8u);
          int64_t big = int64_t(1) << ls;
          for (int64_t code : cands)
            for (int64_t size : {big / 2 + 1, big}) {
              if (vec_ok) size = (size + vw - 1) / vw * vw;  // the vector layout's rows
              if (vec_ok && size > big) continue;
              td::RowConfig c = td::row_config(code, size, vw);
              if (!c.group) continue;
              std::string what = "code " + std::to_string(code) + " size " + std::to_string(size);
              EXPECT_TRUE(c.wg >= 32 && c.wg <= 1024 && c.wg % 32 == 0) << what;
              EXPECT_TRUE(!c.vec || vec_ok) << what;
              EXPECT_LE(c.items, c.vec ? 8 : 16) << what;
              if (c.vec)
                EXPECT_GE(c.items * c.wg * vw, size) << what;
              else if (c.items)
                EXPECT_GE(c.items * c.wg, size) << what;
              else
                EXPECT_GT(size, 16 * c.wg) << what;
              rows.insert({c.wg, c.items, c.vec, vw});
            }
        }
  for (auto [wg, items, vec, vw] : rows) {
    DType t = vw == 2 ? DType::F64 : vw == 4 ? DType::F32 : DType::F16;
    kernel::SoftmaxSpec ss{OpCode::Softmax, t};
    ss.workgroup = int(wg);
    ss.items = int(items);
    ss.vector = vec;
    kernel::NormSpec ns{OpCode::LayerNorm, t};
    ns.workgroup = int(wg);
    ns.items = int(items);
    ns.vector = vec;
    if (t == DType::F32) {
      compiles(kernel::softmax_kernel(ss));
      compiles(kernel::norm_kernel(ns));
    } else {
      EXPECT_NO_THROW(kernel::softmax_kernel(ss));
      EXPECT_NO_THROW(kernel::norm_kernel(ns));
    }
  }
  std::set<std::pair<int64_t, int64_t>> reduce;  // path, workgroup
  for (int lr = 0; lr <= 31; ++lr)
    for (int64_t w : {1, 2, 4, 8})
      for (bool dense : {false, true})
        for (bool strided : {false, true}) {
          if (dense && (w == 1 || strided)) continue;
          std::vector<int64_t> cands =
              td::reduce_candidates(td::reduce_code(td::kWhole, 256), dense, w, lr, strided);
          EXPECT_LE(cands.size(), 8u);
          for (int64_t code : cands) {
            int64_t path = code & 3, wg = int64_t(1) << (code >> 2);
            EXPECT_TRUE(path != td::kRows || dense);
            if (path != td::kSeq) {
              EXPECT_TRUE(wg >= 32 && wg <= 1024 && (wg & (wg - 1)) == 0);
              reduce.insert({path, wg});
            }
          }
        }
  for (auto [path, wg] : reduce)
    for (OpCode op :
         {OpCode::Sum, OpCode::Prod, OpCode::Max, OpCode::Min, OpCode::ArgMax, OpCode::ArgMin}) {
      kernel::ReduceSpec rs{op, DType::F32};
      rs.workgroup = int(wg);
      if (path == td::kRows) {
        rs.stage = kernel::ReduceSpec::Partial;
        rs.vector = true;
      }
      if (op == OpCode::Sum || op == OpCode::ArgMax)
        compiles(kernel::reduce_kernel(rs));
      else
        EXPECT_NO_THROW(kernel::reduce_kernel(rs));
    }
}

}  // namespace
