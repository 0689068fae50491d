// Internal: cuDNN, opened at run time (libcudnn.so.9, then /usr/local/cuda/lib64), with the few
// declarations of its legacy convolution API that the conv ops use (present in every 9.x);
// no CUDA header is needed to build ember. cudnn_conv runs conv, conv_transpose (cuDNN's
// backward data) and conv_weight_grad (backward filter) when cuDNN takes the case, and
// otherwise says so, so that spatial.cpp falls back to unfold + GEMM.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ember/backends/cuda/runtime.h"

namespace ember::cuda::dnn {

using Status = int;
using Handle = struct DnnContext*;
using TensorDesc = struct DnnTensor*;
using FilterDesc = struct DnnFilter*;
using ConvDesc = struct DnnConvolution*;

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t: the three share this layout.
struct AlgoPerf {
  int algo;
  Status status;
  float time;  // ms (Find), -1 from the heuristics
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

// cudnnDataType_t, cudnnTensorFormat_t, cudnnConvolutionMode_t and cudnnMathType_t (the values
// documented for cuDNN 9).
enum DataType : int { kFloat = 0, kDouble = 1, kHalf = 2, kBFloat16 = 9 };
enum : int { kNchw = 0 };
enum : int { kCrossCorrelation = 1 };
enum MathType : int {
  kDefaultMath = 0,  // on Ampere and later this permits TF32 for f32
  kTensorOpMath = 1,
  kTensorOpMathAllowConversion = 2,
  kFmaMath = 3  // FMA kernels only: exact f32
};

struct Api {
  size_t (*GetVersion)() = nullptr;
  const char* (*GetErrorString)(Status) = nullptr;
  Status (*Create)(Handle*) = nullptr;
  Status (*SetStream)(Handle, CuStream*) = nullptr;
  Status (*CreateTensorDescriptor)(TensorDesc*) = nullptr;
  Status (*SetTensorNdDescriptor)(TensorDesc, int type, int nb, const int* dims,
                                  const int* strides) = nullptr;
  Status (*DestroyTensorDescriptor)(TensorDesc) = nullptr;
  Status (*CreateFilterDescriptor)(FilterDesc*) = nullptr;
  Status (*SetFilterNdDescriptor)(FilterDesc, int type, int format, int nb,
                                  const int* dims) = nullptr;
  Status (*DestroyFilterDescriptor)(FilterDesc) = nullptr;
  Status (*CreateConvolutionDescriptor)(ConvDesc*) = nullptr;
  Status (*SetConvolutionNdDescriptor)(ConvDesc, int n, const int* pad, const int* stride,
                                       const int* dilation, int mode, int compute) = nullptr;
  Status (*SetConvolutionGroupCount)(ConvDesc, int) = nullptr;
  Status (*SetConvolutionMathType)(ConvDesc, int) = nullptr;
  Status (*DestroyConvolutionDescriptor)(ConvDesc) = nullptr;
  // Forward: (x, w, conv, y); backward data: (w, dy, conv, dx); backward filter: (x, dy, conv, dw).
  Status (*GetForwardAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*GetBackwardDataAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*GetBackwardFilterAlgorithmMaxCount)(Handle, int*) = nullptr;
  Status (*GetForwardAlgorithm)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int, int*,
                                AlgoPerf*) = nullptr;
  Status (*GetBackwardDataAlgorithm)(Handle, FilterDesc, TensorDesc, ConvDesc, TensorDesc, int,
                                     int*, AlgoPerf*) = nullptr;
  Status (*GetBackwardFilterAlgorithm)(Handle, TensorDesc, TensorDesc, ConvDesc, FilterDesc, int,
                                       int*, AlgoPerf*) = nullptr;
  Status (*FindForwardAlgorithmEx)(Handle, TensorDesc, const void*, FilterDesc, const void*,
                                   ConvDesc, TensorDesc, void*, int, int*, AlgoPerf*, void*,
                                   size_t) = nullptr;
  Status (*FindBackwardDataAlgorithmEx)(Handle, FilterDesc, const void*, TensorDesc, const void*,
                                        ConvDesc, TensorDesc, void*, int, int*, AlgoPerf*, void*,
                                        size_t) = nullptr;
  Status (*FindBackwardFilterAlgorithmEx)(Handle, TensorDesc, const void*, TensorDesc, const void*,
                                          ConvDesc, FilterDesc, void*, int, int*, AlgoPerf*, void*,
                                          size_t) = nullptr;
  Status (*GetForwardWorkspaceSize)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int algo,
                                    size_t*) = nullptr;
  Status (*GetBackwardDataWorkspaceSize)(Handle, FilterDesc, TensorDesc, ConvDesc, TensorDesc,
                                         int algo, size_t*) = nullptr;
  Status (*GetBackwardFilterWorkspaceSize)(Handle, TensorDesc, TensorDesc, ConvDesc, FilterDesc,
                                           int algo, size_t*) = nullptr;
  // (handle, alpha, a desc, a, b desc, b, conv, algo, workspace, bytes, beta, out desc, out)
  Status (*ConvolutionForward)(Handle, const void*, TensorDesc, const void*, FilterDesc,
                               const void*, ConvDesc, int, void*, size_t, const void*, TensorDesc,
                               void*) = nullptr;
  Status (*ConvolutionBackwardData)(Handle, const void*, FilterDesc, const void*, TensorDesc,
                                    const void*, ConvDesc, int, void*, size_t, const void*,
                                    TensorDesc, void*) = nullptr;
  Status (*ConvolutionBackwardFilter)(Handle, const void*, TensorDesc, const void*, TensorDesc,
                                      const void*, ConvDesc, int, void*, size_t, const void*,
                                      FilterDesc, void*) = nullptr;
  int version = 0;  // cudnnGetVersion(), e.g. 91400
  bool ready = false;
  std::string error;  // why cuDNN is unusable
};

/// The loaded library (`ready` false, `error` saying why, when it cannot be used).
const Api& api();
/// "CUDNN_STATUS_NOT_SUPPORTED" and the like (cudnnGetErrorString), with the number.
std::string describe(Status s);
/// Whether the conv ops may use cuDNN: the library is ready and EMBER_CUDNN is not 0 (read at
/// each call, so a test can compare both paths in one process).
bool enabled();

}  // namespace ember::cuda::dnn

namespace ember::cuda::detail {

/// Runs `op` (Conv, ConvTranspose or ConvWeightGrad on contiguous inputs) through cuDNN into
/// the new dense `out`. False, with nothing queued, when cuDNN is off or missing, or when it
/// does not take the case (its descriptors or algorithm search fail, no algorithm): the caller
/// takes its other path. A failure while running raises DeviceError naming the op, the shapes
/// and cuDNN's error.
bool cudnn_conv(const Op& op, const CudaTensor& a, const CudaTensor& b, const CudaTensor& out);

}  // namespace ember::cuda::detail
