// Drawing primitives of the dashboard (internal): the glyph sets (UTF-8 or ASCII) and the
// Painter, which writes clipped text in a colour pair or attribute on the curses screen.
#pragma once
#include <string>
#include <string_view>

#include "ember/train/terminal.h"

namespace ember::train::dashboard_detail {

/// Glyphs for a UTF-8 terminal, or plain ASCII.
struct Glyphs {
  const char *hline, *vline, *axis_tick, *axis_corner, *axis_mark, *bar_full, *bar_empty, *marker,
      *selected, *train_sample, *valid_sample, *tl, *tr, *bl, *br;
};
inline constexpr Glyphs kUnicode{"─", "│",  "┤",   "└", "┴", "█", "░", "●",
                                 "▸", "⣀⣀", "─●─", "┌", "┐", "└", "┘"};
inline constexpr Glyphs kAscii{"-", "|",  "+",   "+", "+", "#", "-", "o",
                               ">", "..", "-o-", "+", "+", "+", "+"};

/// Writes on stdscr with what the terminal can show: UTF-8 or ASCII, colours or not.
class Painter {
 public:
  Painter() = default;
  Painter(bool unicode, bool color)
      : unicode_(unicode), color_(color), glyphs_(unicode ? &kUnicode : &kAscii) {}
  bool unicode() const { return unicode_; }
  bool has_color() const { return color_; }
  const Glyphs& glyphs() const { return *glyphs_; }

  /// Writes `s` at (y, x), at most `max_cols` cells, clipped to the screen.
  void put(int y, int x, std::string_view s, int max_cols, int attr = A_NORMAL) const;
  /// The attribute of a colour pair (A_NORMAL without colours).
  int color(Pair p) const { return color_ ? static_cast<int>(COLOR_PAIR(p)) : A_NORMAL; }

 private:
  bool unicode_ = false, color_ = false;
  const Glyphs* glyphs_ = &kAscii;
};

/// `g` n times.
std::string repeat(const char* g, int n);

/// `s` right-aligned in `w` columns (not cut when longer).
std::string pad_left(const std::string& s, size_t w);

}  // namespace ember::train::dashboard_detail
