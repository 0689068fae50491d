// The Micro backend's kernels: plain scalar loops over float32 row-major buffers, written for
// small code and no scratch memory (convolution is direct, not im2col). Layouts are the
// host's: Linear weights [in, out], conv weights [C_out, C_in / groups, kh, kw], NCHW data.
//
//   ember::micro::kernels::linear(x, w, b, y, rows, in, out);   // y = x · w + b
#pragma once
#include <cstdint>

namespace ember::micro::kernels {

/// y[m, n] = sum_k x[m, k] w[k, n] (+ b[n] when b is not null).
void linear(const float* x, const float* w, const float* b, float* y, int32_t m, int32_t k,
            int32_t n);

/// linear with int8 weights q [k, n] and one scale per column: y = (x · q) * scale + b.
void linear_q8(const float* x, const int8_t* q, const float* scale, const float* b, float* y,
               int32_t m, int32_t k, int32_t n);

/// The geometry of a 2-d convolution or pooling window (1-d: h = 1).
struct Window2d {
  int32_t n, c, h, w;      // input [n, c, h, w]
  int32_t kh, kw;          // window
  int32_t sh, sw, ph, pw;  // stride, padding
  int32_t dh = 1, dw = 1;  // dilation
  int32_t out_h() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int32_t out_w() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
};

/// y [n, c_out, out_h, out_w] from x and w [c_out, c / groups, kh, kw] (+ b [c_out]).
void conv2d(const float* x, const float* w, const float* b, float* y, const Window2d& g,
            int32_t c_out, int32_t groups);
/// y [n, c, out_h, out_w]: the maximum of each window (padding never wins).
void max_pool2d(const float* x, float* y, const Window2d& g);
/// y [n, c, out_h, out_w]: the mean of each window, padding counted as zeros.
void avg_pool2d(const float* x, float* y, const Window2d& g);

/// Row-wise over [rows, n]: softmax, log-softmax, and layer norm with optional gamma/beta.
void softmax_rows(const float* x, float* y, int32_t rows, int32_t n, bool log);
void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y, int32_t rows,
                     int32_t n, float epsilon);

/// Inference batch norm of x [n, c, inner] with per-channel statistics (gamma, beta optional).
void batch_norm(const float* x, const float* mean, const float* var, const float* gamma,
                const float* beta, float* y, int32_t n, int32_t c, int32_t inner, float epsilon);

/// One recurrent step of a hidden state h [hidden] from the input projection gi and the hidden
/// one gh, both [G * hidden] in PyTorch's gate order. Gru: r, z, n; Lstm: i, f, g, o (c: the
/// cell state, updated too).
void gru_cell(const float* gi, const float* gh, float* h, int32_t hidden);
void lstm_cell(const float* gi, const float* gh, float* h, float* c, int32_t hidden);

}  // namespace ember::micro::kernels
