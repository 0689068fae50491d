#include <fstream>
#include <iterator>

#include "ember/nn/config.h"

namespace ember::nn::detail {

void bad_enum_name(std::string_view what, const std::vector<std::string>& names, const Json& j) {
  std::string list;
  for (size_t i = 0; i < names.size(); ++i)
    list += (i ? (i + 1 == names.size() ? " or \"" : ", \"") : "\"") + names[i] + "\"";
  throw ValueError(std::string(what) + ": expected " + list + ", got " + j.dump());
}

void bad_array_size(std::string_view what, size_t want, const Json& j) {
  throw ValueError(std::string(what) + ": expected an array" +
                   (want ? " of " + std::to_string(want) : std::string()) + ", got " + j.dump());
}

std::string read_config_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f || std::filesystem::is_directory(path))
    throw ValueError("[config] cannot read " + path.string());
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw ValueError("[config] cannot read " + path.string());
  return text;
}

void write_config_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  if (!f) throw ValueError("[config] cannot write " + path.string());
  f << text;
  f.flush();
  if (!f) throw ValueError("[config] cannot write " + path.string());
}

}  // namespace ember::nn::detail
