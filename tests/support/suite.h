// The device a test suite runs on, and where its data files are. A device-aware suite links
// `suite_main.cpp` instead of gtest_main: it runs once per device, on the device named by
// $EMBER_TEST_DEVICE ("cpu" when unset), which becomes Dispatch's default device, so every
// tensor the suite makes without naming a device lives there.
//
//   EMBER_TEST_DEVICE=cuda:0 ./layer_test    # the layer goldens on the first GPU
//
// A device this machine lacks skips the whole suite with exit code 77 (ctest's SKIP_RETURN_CODE).
#pragma once
#include <string>

#include "ember/core/device.h"

namespace ember::test {

/// The device this process's suite runs on.
Device suite_device();

/// A data file of the tests, given by its path in the source tree: $EMBER_TEST_DATA/<its file
/// name> when that is set (the GPU bundle carries copies of the goldens), else `path`.
std::string data_file(const std::string& path);

}  // namespace ember::test
