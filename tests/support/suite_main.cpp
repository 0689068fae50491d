// The main of a device-aware suite (suite.h): runs every test on $EMBER_TEST_DEVICE, or exits
// 77 (skipped) when this machine has no such device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "ember/backend/dispatch.h"
#include "ember/core/error.h"
#include "suite.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ember::Device dev = ember::Device::cpu();
  try {
    dev = ember::test::suite_device();
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "EMBER_TEST_DEVICE: %s\n", e.what());
    return 2;
  }
  std::vector<ember::Device> have = ember::available_devices();
  if (std::find(have.begin(), have.end(), dev) == have.end()) {
    std::string list;
    for (const auto& d : have) list += (list.empty() ? "" : ", ") + d.to_string();
    std::printf("[ember] skipped: the suite runs on %s, which this machine lacks (it has %s)\n",
                dev.to_string().c_str(), list.c_str());
    return 77;
  }
  ember::Dispatch::set_default_device(dev);
  std::printf("[ember] the suite runs on %s\n", dev.to_string().c_str());
  return RUN_ALL_TESTS();
}
