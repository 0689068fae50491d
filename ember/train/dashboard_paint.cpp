#include "ember/train/dashboard_paint.h"

#include <algorithm>

namespace ember::train::dashboard_detail {

void Painter::put(int y, int x, std::string_view s, int max_cols, int attr) const {
  const int h = LINES, w = COLS;
  if (y < 0 || y >= h || x < 0 || x >= w) return;
  max_cols = std::min(max_cols, w - x - (y == h - 1 ? 1 : 0));  // never the last cell
  if (max_cols <= 0) return;
  std::string out;
  int n = 0;
  for (size_t i = 0; i < s.size() && n < max_cols;) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    len = std::min(len, s.size() - i);
    if (c < 0x20 || c == 0x7F)
      out += ' ';
    else if (c >= 0x80 && c < 0xC0)
      out += '?';  // a stray continuation byte
    else if (len == 1 || unicode_)
      out.append(s.substr(i, len));
    else
      out += '?';
    i += len;
    ++n;
  }
  wattron(stdscr, attr);
  mvaddstr(y, x, out.c_str());
  wattroff(stdscr, attr);
}

std::string repeat(const char* g, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += g;
  return s;
}

std::string pad_left(const std::string& s, size_t w) {
  return s.size() >= w ? s : std::string(w - s.size(), ' ') + s;
}

}  // namespace ember::train::dashboard_detail
