#include "suite.h"

#include <cstdlib>

#include "ember/backend/dispatch.h"

namespace ember::test {

Device suite_device() {
  const char* env = std::getenv("EMBER_TEST_DEVICE");
  return Device::parse(env && *env ? env : "cpu");
}

std::string data_file(const std::string& path) {
  const char* dir = std::getenv("EMBER_TEST_DATA");
  if (!dir || !*dir) return path;
  return std::string(dir) + "/" + path.substr(path.find_last_of('/') + 1);
}

}  // namespace ember::test
