// ember's version, written into every record file it saves.
#pragma once
#include <string_view>

namespace ember {
inline constexpr std::string_view kVersion = "0.1.0";
}  // namespace ember
