// Internal: int_conv's direct kernel on AVX-512 VNNI (int_conv_vnni.cpp), for int_conv.cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ember/backends/cpu/wide.h"

namespace ember::cpu {

/// Whether the direct kernel takes a convolution: stride 1 (the wide layout), a u8 or i8 input
/// and an i8 weight, on a CPU with AVX-512 VNNI.
bool int_conv_direct_fits(const Geom& g, DType x, DType w);

/// One group's convolution of geometry g (int_conv_direct_fits) with its weight w [cog][cg][taps]
/// packed once, run image by image.
///
///   IntConvDirect conv(g, w, cg, cog, false);   // a u8 input
///   Scratch<std::byte> s(conv.scratch_bytes());
///   conv.run(x, y, s.get(), true);   // x: cg planes of g.in, y: cog planes of g.out (i32)
class IntConvDirect {
 public:
  IntConvDirect(const Geom& g, const uint8_t* w, int64_t cg, int64_t cog, bool x_signed);
  /// The bytes `run` needs: the interleaved input and the outputs at the wide pitch.
  int64_t scratch_bytes() const;
  /// y = the convolution of x; on the worker pool where `parallel`.
  void run(const uint8_t* x, int32_t* y, std::byte* scratch, bool parallel) const;

 private:
  Geom g_;
  Wide wl_;
  int64_t cg_ = 0, cog_ = 0, taps_ = 0, quads_ = 0;
  uint8_t flip_ = 0;              // 0x80 for an i8 input, stored as u8
  std::vector<int32_t> row_;      // where each output channel's sums start
  std::vector<uint8_t> weights_;  // A panels: [cog / 12][taps][quads][12][4]
  std::vector<int64_t> toff_;     // each tap's byte offset in the interleaved input
  int64_t quad_bytes_ = 0, tiles_ = 0, input_bytes_ = 0, out_ld_ = 0;
};

}  // namespace ember::cpu
