// The dashboard's hold on the terminal (internal): ncurses set up and torn down, the
// character locale, the colour pairs, and the guards that restore the terminal from signal
// handlers, std::terminate and exit. Includes <curses.h> without its function-like macros.
#pragma once
#include <string>

// curses.h without its function-like macros (erase(), clear(), move() would clash with
// std::vector and friends).
#ifndef NCURSES_NOMACROS
#define NCURSES_NOMACROS
#endif
#include <curses.h>

namespace ember::train::dashboard_detail {

/// The colour pairs the dashboard draws with (set up by Terminal::open()).
enum Pair : short { kTrain = 1, kValid = 2, kBar = 3, kTitle = 4, kPrompt = 5 };

/// The terminal, held by at most one dashboard of the process at a time.
class Terminal {
 public:
  /// Takes the terminal: a UTF-8 character locale where the program left "C", an ncurses
  /// screen (keys without Enter and without waiting, no echo, no cursor), the colour pairs,
  /// and the restore guards. False, with nothing held, when another dashboard has the
  /// terminal or ncurses cannot set it up.
  bool open();
  /// Leaves the screen and gives back what open() took. Nothing when not open.
  void close();
  /// Open, but a signal whose handler returned restored the terminal behind our back.
  bool lost() const;
  /// The character locale is UTF-8 (else: draw ASCII only).
  bool unicode() const { return unicode_; }
  /// The terminal has colours (the pairs are set up).
  bool color() const { return color_; }

 private:
  SCREEN* screen_ = nullptr;
  std::string saved_ctype_ = "C";
  bool unicode_ = false, color_ = false;
};

}  // namespace ember::train::dashboard_detail
