#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/ir/ir.h"

using namespace ember;

// Every op in the table, with every attribute field set, survives encode/decode.
TEST(Ir, EveryOpRoundTrips) {
  for (int c = 0; c < kNumOps; ++c) {
    Op op{static_cast<OpCode>(c), {}};
    op.attrs.shape = {2, 3};
    op.attrs.dims = {0, -1};
    op.attrs.ends = {5, 7};
    op.attrs.steps = {1, 2};
    op.attrs.scalar = Scalar(int64_t{1} << 60);
    op.attrs.scalar2 = Scalar(-0.25);
    op.attrs.dim = -2;
    op.attrs.dtype = DType::BF16;
    op.attrs.flag = true;
    op.attrs.seed = 0xdeadbeefcafef00dull;
    op.attrs.window = {{3, 3}, {2, 1}, {1, 0}, {1, 2}, {1, 0}, 4, true, false};
    op.attrs.interp = InterpMode::Cubic;
    auto bytes = ir::encode(op);
    EXPECT_EQ(ir::decode_op(bytes), op) << name(op.code);
    EXPECT_EQ(op_from_name(name(op.code)), op.code);
  }
}

TEST(Ir, NodesRoundTrip) {
  ir::Node n{Op{OpCode::Matmul, {}}, {3, 4}, 5, TensorMeta{Shape{2, 2}, DType::F16}};
  ir::Writer w;
  write(w, n);
  ir::Reader r(w.bytes());
  EXPECT_EQ(ir::read_node(r), n);
  EXPECT_TRUE(r.done());
}

// Malformed bytes give ValueError at every truncation point, never a crash.
TEST(Ir, RejectsMalformedBytes) {
  Op op{OpCode::Reshape, {}};
  op.attrs.shape = {4, -1};
  auto bytes = ir::encode(op);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(ir::decode_op(std::span(bytes.data(), n)), ValueError) << n;
  auto bad = bytes;
  bad[0] = std::byte{0xff};
  bad[1] = std::byte{0xff};
  EXPECT_THROW(ir::decode_op(bad), ValueError);
  auto extra = bytes;
  extra.push_back(std::byte{0});
  EXPECT_THROW(ir::decode_op(extra), ValueError);
  auto longdims = bytes;
  longdims[2] = std::byte{200};  // dim count of the shape
  EXPECT_THROW(ir::decode_op(longdims), ValueError);
}
