#include "ember/data/loader.h"

#include <sstream>

namespace ember::data {

std::string LoaderPosition::to_string() const {
  return "epoch=" + std::to_string(epoch) + " batch=" + std::to_string(batch);
}

LoaderPosition LoaderPosition::parse(std::string_view s) {
  std::istringstream in{std::string(s)};
  std::string a, b, rest;
  LoaderPosition p;
  auto bad = [&] { return ValueError("[data_loader] bad position '" + std::string(s) + "'"); };
  if (!(in >> a >> b) || (in >> rest)) throw bad();
  auto digits = [](const std::string& f) { return f.size() > 6 && f[6] >= '0' && f[6] <= '9'; };
  if (a.rfind("epoch=", 0) != 0 || b.rfind("batch=", 0) != 0 || !digits(a) || !digits(b))
    throw bad();
  try {
    size_t used = 0;
    p.epoch = std::stoull(a.substr(6), &used);
    if (used != a.size() - 6) throw bad();
    p.batch = std::stoull(b.substr(6), &used);
    if (used != b.size() - 6) throw bad();
  } catch (const std::logic_error&) {
    throw bad();
  }
  return p;
}

namespace detail {
std::string exception_text(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}
}  // namespace detail

}  // namespace ember::data
