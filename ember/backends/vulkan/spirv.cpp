#include "ember/backends/vulkan/spirv.h"

#include <cstring>

#include "ember/backends/vulkan/coopmat.h"
#include "ember/core/error.h"
#include "ember/kernel/codegen/glsl.h"

#include <shaderc/shaderc.h>

namespace ember::vulkan {

std::vector<uint32_t> compile_glsl(const std::string& source, const std::string& name,
                                   const SpirvOptions& o) {
  std::string key =
      "spirv shaderc vulkan1." + std::to_string(o.vulkan_minor) + " " + name + "\n" + source;
  kernel::KernelCache& cache = o.cache ? *o.cache : kernel::KernelCache::global();
  std::vector<char> bytes = cache.get_or_build(key, [&] {
    // A compiler per call: shaderc's objects are not shared between threads.
    shaderc_compiler_t c = shaderc_compiler_initialize();
    shaderc_compile_options_t opts = shaderc_compile_options_initialize();
    shaderc_compile_options_set_target_env(
        opts, shaderc_target_env_vulkan,
        o.vulkan_minor >= 2 ? shaderc_env_version_vulkan_1_2 : shaderc_env_version_vulkan_1_1);
    shaderc_compile_options_set_optimization_level(opts, shaderc_optimization_level_performance);
    shaderc_compilation_result_t r =
        shaderc_compile_into_spv(c, source.data(), source.size(), shaderc_compute_shader,
                                 (name + ".comp").c_str(), "main", opts);
    bool ok = shaderc_result_get_compilation_status(r) == shaderc_compilation_status_success;
    std::string log = shaderc_result_get_error_message(r);
    std::vector<char> out;
    if (ok) {
      const char* p = shaderc_result_get_bytes(r);
      out.assign(p, p + shaderc_result_get_length(r));
    }
    shaderc_result_release(r);
    shaderc_compile_options_release(opts);
    shaderc_compiler_release(c);
    if (!ok) throw ValueError("[kernel " + name + "] shaderc could not compile it:\n" + log);
    return out;
  });
  if (bytes.size() % 4) throw ValueError("[kernel " + name + "] SPIR-V of a partial word");
  std::vector<uint32_t> words(bytes.size() / 4);
  std::memcpy(words.data(), bytes.data(), bytes.size());
  return words;
}

std::vector<uint32_t> compile_spirv(const kernel::Kernel& k, const SpirvOptions& o) {
  std::vector<uint32_t> words = compile_glsl(kernel::render_glsl(k), k.name, o);
  return k.fragments.empty() ? words : spirv_to_khr_coopmat(words);
}

}  // namespace ember::vulkan
