// A shared library opened at run time (dlopen), so that binaries start on machines without
// the library and report what is missing. Used for NVRTC, the CUDA driver, cuBLASLt and cuDNN.
//
//   kernel::DynLib lib;
//   std::string why;
//   if (lib.open({"libm.so.6"}, why)) { auto* f = lib.symbol<double (*)(double)>("cos"); }
//   double (*sine)(double) = nullptr;
//   bool found = lib.bind(sine, {"sin"}, why);
#pragma once
#include <dlfcn.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace ember::kernel {

class DynLib {
 public:
  DynLib() = default;
  DynLib(const DynLib&) = delete;
  DynLib& operator=(const DynLib&) = delete;
  ~DynLib() = default;  // kept loaded: drivers do not like being unloaded at exit

  /// Tries the names in order; on failure `why` lists each dlopen error.
  bool open(const std::vector<std::string>& names, std::string& why) {
    for (const std::string& n : names) {
      if (n.empty()) continue;
      handle_ = ::dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_) {
        name_ = n;
        return true;
      }
      const char* e = ::dlerror();
      why += (why.empty() ? "" : "; ") + std::string(e ? e : n + ": cannot open");
    }
    return false;
  }
  /// The symbol, or nullptr.
  template <class F>
  F symbol(const char* name) const {
    return handle_ ? reinterpret_cast<F>(::dlsym(handle_, name)) : nullptr;
  }
  /// Sets `fn` to the first of `names` the library has. When it has none, `fn` is nullptr and
  /// `why` gets "<library> has no <first name>" appended; returns whether it was found.
  template <class F>
  bool bind(F& fn, std::initializer_list<const char*> names, std::string& why) const {
    for (const char* n : names)
      if ((fn = symbol<F>(n))) return true;
    why += (why.empty() ? "" : "; ") + name_ + " has no " + *names.begin();
    return false;
  }
  bool loaded() const { return handle_ != nullptr; }
  const std::string& name() const { return name_; }

 private:
  void* handle_ = nullptr;
  std::string name_;
};

}  // namespace ember::kernel
