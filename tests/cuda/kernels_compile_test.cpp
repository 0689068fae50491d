// Every kernel the CUDA backend writes itself (ember/backends/cuda/kernels.h), and a kernel of
// each kind it requests from the kernel layer, renders and compiles to an sm_90 cubin with
// NVRTC. Needs no GPU: source errors show up on any machine with the toolkit.
#include <gtest/gtest.h>

#include "ember/backends/cuda/kernels.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/create.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/scan.h"
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
    for (DType t : kNumbers) compiles(cuda::kernels::seq_reduce_kernel(op, t));
  compiles(cuda::kernels::seq_reduce_kernel(OpCode::Max, DType::Bool));
  compiles(cuda::kernels::seq_reduce_kernel(OpCode::Min, DType::Bool));
  EXPECT_THROW(cuda::kernels::seq_reduce_kernel(OpCode::Sum, DType::Bool), ValueError);
}

TEST_F(CudaKernels, NaiveMatmul) {
  for (DType t : kNumbers) compiles(cuda::kernels::naive_matmul_kernel(t));
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

}  // namespace
