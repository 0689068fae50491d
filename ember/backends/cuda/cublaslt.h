// Internal: cuBLASLt, opened at run time (libcublasLt.so.13, .so.12, then /usr/local/cuda/lib64),
// with the few declarations the matmul uses; no CUDA header is needed to build ember.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/backends/cuda/driver.h"

namespace ember::cuda::lt {

using Status = int;
using Handle = struct LtContext*;
using MatmulDesc = struct LtMatmulDesc*;
using Layout = struct LtLayout*;
using Preference = struct LtPreference*;
struct Algo {
  uint64_t data[8];
};
struct HeuristicResult {
  Algo algo;
  size_t workspace_size;
  Status state;
  float waves;
  int reserved[4];
};

// cudaDataType_t, cublasComputeType_t and attribute numbers (cuBLASLt's documented values).
enum DataType : int { kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14 };
enum ComputeType : int { kCompute32F = 68, kCompute32FFastTf32 = 77, kCompute64F = 70 };
enum : int { kOpN = 0, kOpT = 1 };
enum : int {
  kDescComputeType = 0,
  kDescScaleType = 1,
  kDescTransA = 3,
  kDescTransB = 4,
  kDescEpilogue = 7,
  kDescBiasPointer = 8
};
// cublasLtEpilogue_t: bits that combine (RELU | BIAS is RELU_BIAS).
enum : int32_t { kEpilogueDefault = 1, kEpilogueRelu = 2, kEpilogueBias = 4 };
enum : int { kLayoutBatchCount = 5, kLayoutBatchStride = 6 };
enum : int {
  kPrefMaxWorkspace = 1,
  kPrefAlignA = 5,
  kPrefAlignB = 6,
  kPrefAlignC = 7,
  kPrefAlignD = 8
};

struct Api {
  Status (*Create)(Handle*) = nullptr;
  Status (*MatmulDescCreate)(MatmulDesc*, int compute, int scale) = nullptr;
  Status (*MatmulDescDestroy)(MatmulDesc) = nullptr;
  Status (*MatmulDescSetAttribute)(MatmulDesc, int, const void*, size_t) = nullptr;
  Status (*MatrixLayoutCreate)(Layout*, int type, uint64_t rows, uint64_t cols,
                               int64_t ld) = nullptr;
  Status (*MatrixLayoutDestroy)(Layout) = nullptr;
  Status (*MatrixLayoutSetAttribute)(Layout, int, const void*, size_t) = nullptr;
  Status (*MatmulPreferenceCreate)(Preference*) = nullptr;
  Status (*MatmulPreferenceDestroy)(Preference) = nullptr;
  Status (*MatmulPreferenceSetAttribute)(Preference, int, const void*, size_t) = nullptr;
  Status (*MatmulAlgoGetHeuristic)(Handle, MatmulDesc, Layout, Layout, Layout, Layout, Preference,
                                   int, HeuristicResult*, int*) = nullptr;
  Status (*Matmul)(Handle, MatmulDesc, const void*, const void*, Layout, const void*, Layout,
                   const void*, const void*, Layout, void*, Layout, const Algo*, void*, size_t,
                   CuStream*) = nullptr;
  const char* (*GetStatusName)(Status) = nullptr;
  const char* (*GetStatusString)(Status) = nullptr;
  size_t (*GetVersion)() = nullptr;
  bool ready = false;
  std::string error;  // why cuBLASLt is unusable
};

/// The loaded library (`ready` false, `error` saying why, when it cannot be used).
const Api& api();
/// "CUBLAS_STATUS_NOT_SUPPORTED (the functionality requested is not supported)".
std::string describe(Status s);

}  // namespace ember::cuda::lt
