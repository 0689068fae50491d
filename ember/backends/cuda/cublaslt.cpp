#include "ember/backends/cuda/cublaslt.h"

#include "ember/kernel/dynlib.h"

namespace ember::cuda::lt {

namespace {
struct Loaded : Api {
  kernel::DynLib lib;
  Loaded() {
    if (!lib.open(
            {"libcublasLt.so.13", "libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so.13",
             "/usr/local/cuda/lib64/libcublasLt.so.12", "/usr/local/cuda/lib64/libcublasLt.so"},
            error)) {
      error = "no cuBLASLt: " + error;
      return;
    }
    bool ok = true;
    auto get = [&](auto& fn, const char* n) { ok = lib.bind(fn, {n}, error) && ok; };
    get(Create, "cublasLtCreate");
    get(MatmulDescCreate, "cublasLtMatmulDescCreate");
    get(MatmulDescDestroy, "cublasLtMatmulDescDestroy");
    get(MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
    get(MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
    get(MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
    get(MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
    get(MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
    get(MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
    get(MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
    get(MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
    get(Matmul, "cublasLtMatmul");
    get(GetVersion, "cublasLtGetVersion");
    GetStatusName = lib.symbol<decltype(GetStatusName)>("cublasLtGetStatusName");
    GetStatusString = lib.symbol<decltype(GetStatusString)>("cublasLtGetStatusString");
    ready = ok;
  }
};
}  // namespace

const Api& api() {
  static Loaded a;
  return a;
}

std::string describe(Status s) {
  const Api& a = api();
  const char* n = a.GetStatusName ? a.GetStatusName(s) : nullptr;
  const char* d = a.GetStatusString ? a.GetStatusString(s) : nullptr;
  return std::string(n ? n : "cuBLAS status " + std::to_string(s)) +
         (d ? std::string(" (") + d + ")" : "");
}

}  // namespace ember::cuda::lt
