#include <gtest/gtest.h>

#include "ember/core/device.h"
#include "ember/core/error.h"
#include "ember/core/shape.h"

using namespace ember;

TEST(Shape, Basics) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.rank(), 3u);
  EXPECT_EQ(s.numel(), 24);
  EXPECT_EQ(Shape{}.numel(), 1);
  EXPECT_EQ((Shape{2, 0}.numel()), 0);
  EXPECT_EQ(s.to_string(), "[2, 3, 4]");
  EXPECT_EQ(contiguous_strides(s), (Dims{12, 4, 1}));
}

TEST(Shape, Broadcast) {
  EXPECT_EQ(broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes(Shape{}, Shape{5}), (Shape{5}));
  EXPECT_EQ(broadcast_shapes(Shape{0, 1}, Shape{1, 3}), (Shape{0, 3}));
  try {
    broadcast_shapes(Shape{2, 3}, Shape{4, 3}, "add");
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "[add] shapes do not broadcast: [2, 3] and [4, 3]");
  }
}

TEST(Shape, WrapDim) {
  EXPECT_EQ(wrap_dim(-1, 3, "x"), 2);
  EXPECT_EQ(wrap_dim(0, 0, "x"), 0);
  EXPECT_THROW(wrap_dim(3, 3, "x"), IndexError);
  EXPECT_THROW(wrap_dim(-4, 3, "x"), IndexError);
}

TEST(SmallVec, GrowsPastInline) {
  Dims d;
  for (int i = 0; i < 20; ++i) d.push_back(i);
  EXPECT_EQ(d.size(), 20u);
  EXPECT_EQ(d[19], 19);
  Dims e = d;
  EXPECT_EQ(e, d);
  Dims f = std::move(e);
  EXPECT_EQ(f, d);
  f.insert(0, -1);
  EXPECT_EQ(f[0], -1);
  f.erase(0);
  EXPECT_EQ(f, d);
}

TEST(Device, Parse) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:1").index, 1);
  EXPECT_EQ(Device::parse("cuda:1").to_string(), "cuda:1");
  EXPECT_THROW(Device::parse("tpu"), DeviceError);
  EXPECT_THROW(Device::parse("cuda:x"), DeviceError);
  EXPECT_THROW(Device::parse("cuda:-1"), DeviceError);
}

// A remote device names its server's endpoint; the same endpoint is the same device.
TEST(Device, ParseRemote) {
  Device a = Device::parse("remote:127.0.0.1:7070");
  EXPECT_EQ(a.kind, DeviceKind::Remote);
  EXPECT_EQ(a.to_string(), "remote:127.0.0.1:7070");
  EXPECT_EQ(remote_endpoint(a.index), "127.0.0.1:7070");
  EXPECT_EQ(Device::parse("remote:127.0.0.1:7070"), a);
  Device b = Device::parse("remote:gpu-box.local:9000");
  EXPECT_NE(a, b);
  EXPECT_EQ(remote_endpoint(b.index), "gpu-box.local:9000");
  EXPECT_EQ(Device::parse("remote:[::1]:7070").to_string(), "remote:[::1]:7070");
  EXPECT_GE(remote_endpoint_count(), 3);
  for (const char* bad : {"remote", "remote:", "remote:host", "remote:host:", "remote::7070",
                          "remote:host:0", "remote:host:65536", "remote:host:70x",
                          "remote:ho st:7070", "remote:host/x:7070"})
    EXPECT_THROW(Device::parse(bad), DeviceError) << bad;
  EXPECT_THROW(remote_endpoint(-1), DeviceError);
  EXPECT_THROW(remote_endpoint(1 << 20), DeviceError);
}

// Element counts and byte sizes are checked: an overflow is an error, never a wrapped value.
TEST(Shape, CountsThatOverflowInt64AreErrors) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_THROW((Shape{big, big}.numel()), ShapeError);  // used to wrap to 0
  EXPECT_THROW((Shape{INT64_MAX, 3}.numel()), ShapeError);
  EXPECT_THROW((Shape{0, big, big}.numel()), ShapeError);  // its strides would overflow
  EXPECT_EQ((Shape{0, big}.numel()), 0);
  EXPECT_EQ((Shape{INT64_MAX}.numel()), INT64_MAX);
  EXPECT_EQ(byte_size(Shape{3, 5}, 4), 60);
  EXPECT_EQ(byte_size(Shape{0, 5}, 8), 0);
  EXPECT_THROW(byte_size(Shape{INT64_MAX}, 2), ShapeError);
  EXPECT_THROW(byte_size(Shape{int64_t{1} << 62}, 4), ShapeError);
  EXPECT_THROW(byte_size(Shape{2, -1}, 4), ValueError);
  try {
    byte_size(Shape{big, big}, 4, "zeros");
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "[zeros] shape [1099511627776, 1099511627776] has more elements than int64 can "
                 "count");
  }
}
