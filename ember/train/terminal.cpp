#include "ember/train/terminal.h"

#include <errno.h>
#include <langinfo.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>

#include "ember/train/dashboard.h"

// term.h for the terminfo queries. It defines every capability name as a macro: the short
// ones that could collide with ordinary names are undefined.
#include <term.h>
#undef lines
#undef columns
#undef tab
#undef bell
#undef newline
#undef buttons
#undef hangup

namespace ember::train {

// ---------------------------------------------------------------------------------------
// Restoring the terminal from anywhere: signal handlers, std::terminate, exit.

namespace {

std::atomic<bool> g_owned{false};    // a dashboard holds the terminal
volatile sig_atomic_t g_active = 0;  // the screen is in curses mode
char g_restore[512];                 // what leaves it: sgr0, cnorm, rmkx, rmcup
size_t g_restore_len = 0;
bool g_have_tty = false;  // g_tty holds stdout's modes from before
struct termios g_tty;
constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kNumSignals = static_cast<int>(sizeof kSignals / sizeof kSignals[0]);
struct sigaction g_prev_action[kNumSignals];
std::terminate_handler g_prev_terminate = nullptr;

/// Leaves the alternate screen and puts the terminal modes back. Async-signal-safe (write
/// and tcsetattr only).
void restore_terminal() noexcept {
  if (!g_active) return;
  g_active = 0;
  size_t off = 0;
  while (off < g_restore_len) {
    const ssize_t n = ::write(STDOUT_FILENO, g_restore + off, g_restore_len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
  if (g_have_tty) ::tcsetattr(STDOUT_FILENO, TCSADRAIN, &g_tty);
}

void on_signal(int sig) {
  const int saved_errno = errno;
  restore_terminal();
  // Give the signal the program's own disposition back and raise it again: it is delivered
  // when this handler returns (default: the process ends with that signal).
  for (int i = 0; i < kNumSignals; ++i)
    if (kSignals[i] == sig) ::sigaction(sig, &g_prev_action[i], nullptr);
  ::raise(sig);
  errno = saved_errno;
}

[[noreturn]] void on_terminate() {
  restore_terminal();
  if (g_prev_terminate && g_prev_terminate != on_terminate) g_prev_terminate();
  std::abort();
}

void append_cap(const char* name) {
  const char* s = tigetstr(name);
  if (s == nullptr || s == reinterpret_cast<char*>(-1)) return;
  const size_t n = std::strlen(s);
  if (g_restore_len + n >= sizeof g_restore) return;
  std::memcpy(g_restore + g_restore_len, s, n);
  g_restore_len += n;
}

/// Installs the handlers that restore the terminal (once the screen is up).
void install_guards() {
  g_restore_len = 0;
  append_cap("sgr0");
  append_cap("cnorm");
  append_cap("rmkx");
  append_cap("rmcup");
  g_active = 1;
  for (int i = 0; i < kNumSignals; ++i) {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int s : kSignals) sigaddset(&sa.sa_mask, s);
    ::sigaction(kSignals[i], &sa, nullptr);
  }
  g_prev_terminate = std::set_terminate(on_terminate);
  static const bool at_exit = [] { return std::atexit([] { restore_terminal(); }) == 0; }();
  (void)at_exit;
}

/// Gives the signals and std::terminate their previous handlers.
void remove_guards() {
  for (int i = 0; i < kNumSignals; ++i) ::sigaction(kSignals[i], &g_prev_action[i], nullptr);
  std::set_terminate(g_prev_terminate);
  g_prev_terminate = nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Setting the screen up and tearing it down.

namespace dashboard_detail {

bool Terminal::open() {
  if (g_owned.exchange(true)) return false;  // another dashboard has the terminal
  std::cout.flush();
  std::fflush(stdout);
  // ncursesw draws UTF-8 only under a UTF-8 character locale; take the environment's if
  // the program left the default "C" one (only LC_CTYPE: number formatting is untouched).
  const char* ct = std::setlocale(LC_CTYPE, nullptr);
  saved_ctype_ = ct ? ct : "C";
  if (saved_ctype_ == "C" || saved_ctype_ == "POSIX") std::setlocale(LC_CTYPE, "");
  const char* cs = nl_langinfo(CODESET);
  unicode_ = cs && std::strcmp(cs, "UTF-8") == 0;

  g_have_tty = ::tcgetattr(STDOUT_FILENO, &g_tty) == 0;
  for (int i = 0; i < kNumSignals; ++i) ::sigaction(kSignals[i], nullptr, &g_prev_action[i]);
  screen_ = newterm(nullptr, stdout, stdin);
  if (screen_ == nullptr) {
    std::setlocale(LC_CTYPE, saved_ctype_.c_str());
    g_owned = false;
    return false;
  }
  set_term(screen_);
  cbreak();  // keys without Enter; Ctrl-C still raises SIGINT
  noecho();
  keypad(stdscr, TRUE);
  nodelay(stdscr, TRUE);  // getch() never waits
  leaveok(stdscr, TRUE);
  curs_set(0);
  set_escdelay(25);
  color_ = has_colors();
  if (color_) {
    start_color();
    // The terminal's own background where it has one (-1), black otherwise.
    const short bg = use_default_colors() == OK ? -1 : COLOR_BLACK;
    init_pair(kTrain, COLOR_CYAN, bg);
    init_pair(kValid, COLOR_YELLOW, bg);
    init_pair(kBar, COLOR_GREEN, bg);
    init_pair(kTitle, COLOR_MAGENTA, bg);
    init_pair(kPrompt, COLOR_BLACK, COLOR_YELLOW);
  }
  install_guards();
  return true;
}

void Terminal::close() {
  if (screen_ == nullptr) return;
  // When a signal already restored the terminal, endwin() would leave the alternate
  // screen a second time (on some terminals that moves the cursor): only free the screen.
  if (g_active) endwin();
  g_active = 0;
  delscreen(screen_);
  screen_ = nullptr;
  remove_guards();
  std::setlocale(LC_CTYPE, saved_ctype_.c_str());
  g_owned = false;
}

bool Terminal::lost() const { return screen_ != nullptr && !g_active; }

}  // namespace dashboard_detail

bool terminal_supports_dashboard() {
  if (!::isatty(STDOUT_FILENO)) return false;
  const char* term = std::getenv("TERM");
  if (term == nullptr || *term == '\0' || std::strcmp(term, "dumb") == 0) return false;
  if (g_owned) return false;  // a dashboard is already up
  // Load the terminfo entry on the side and drop it again.
  TERMINAL* before = cur_term;
  int err = 0;
  if (setupterm(term, STDOUT_FILENO, &err) != OK) {
    set_curterm(before);
    return false;
  }
  const char* cup = tigetstr("cup");
  const bool ok = cup != nullptr && cup != reinterpret_cast<char*>(-1);
  TERMINAL* probe = set_curterm(before);
  if (probe != before) del_curterm(probe);
  return ok;
}

}  // namespace ember::train
