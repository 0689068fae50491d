// A program in a pseudo-terminal: a private tmux server runs a shell command in a detached
// 120x40 session; the test reads the screen (`capture-pane`), presses keys (`send-keys`) and
// gets the program's exit status and whether the terminal modes came back as they were.
//
//   TmuxSession s("abort", "'/path/to/program' \"$RUN_DIR\" --epochs 1000");
//   s.wait_for("items/s");  s.keys("q");  s.exit_status();   // RUN_DIR = s.dir() / "run"
#pragma once
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

namespace ember::test {

inline std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ::pclose(p);
  return out;
}

inline bool have_tmux() { return std::system("command -v tmux >/dev/null 2>&1") == 0; }

class TmuxSession {
 public:
  /// Runs `command` (a shell command line; $RUN_DIR is dir()/run) in a new session.
  TmuxSession(const std::string& name, const std::string& command)
      : dir_(std::filesystem::temp_directory_path() /
             ("ember_tmux_" + name + "_" + std::to_string(::getpid()))),
        sock_((dir_ / "tmux.sock").string()) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // The program's exit status and whether the terminal modes came back as they were are
    // printed after it ends; the pane then stays open to be read.
    std::ofstream(dir_ / "run.sh") << "export LC_ALL=C.UTF-8 LANG=C.UTF-8\n"
                                   << "export RUN_DIR='" << (dir_ / "run").string() << "'\n"
                                   << "trap : INT\n"  // the shell outlives a Ctrl-C
                                   << "before=$(stty -g)\n"
                                   << command << "\n"
                                   << "rc=$?\n"
                                   << "[ \"$before\" = \"$(stty -g)\" ] && echo TTY_RESTORED\n"
                                   << "echo DEMO_EXIT=$rc\n"
                                   << "sleep 600\n";
    tmux("new-session -d -x 120 -y 40 -s dash 'sh " + (dir_ / "run.sh").string() + "'");
  }
  ~TmuxSession() {
    tmux("kill-server");
    std::filesystem::remove_all(dir_);
  }
  TmuxSession(const TmuxSession&) = delete;
  TmuxSession& operator=(const TmuxSession&) = delete;

  std::string tmux(const std::string& args) const {
    return run_capture("LC_ALL=C.UTF-8 tmux -u -S '" + sock_ + "' -f /dev/null " + args + " 2>&1");
  }
  std::string screen() const { return tmux("capture-pane -p -t dash"); }
  /// The pane with its scrollback.
  std::string history() const { return tmux("capture-pane -p -S -1000 -t dash"); }
  bool alternate_screen() const {
    return tmux("display-message -p -t dash '#{alternate_on}'").starts_with("1");
  }
  void keys(const std::string& k) const { tmux("send-keys -t dash " + k); }

  /// Waits until the screen has `what` (up to `seconds`); returns the last screen read.
  std::string wait_for(const std::string& what, double seconds = 30) const {
    return wait_until([&](const std::string& s) { return s.find(what) != std::string::npos; },
                      seconds);
  }
  std::string wait_until(const std::function<bool(const std::string&)>& ok,
                         double seconds = 30) const {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string s;
    while (std::chrono::steady_clock::now() < end) {
      s = screen();
      if (ok(s)) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return s;
  }
  /// Waits for the program to end; returns its exit status (-1: it did not end).
  int exit_status(double seconds = 30) const {
    const std::string s = wait_for("DEMO_EXIT=", seconds);
    const auto at = s.find("DEMO_EXIT=");
    return at == std::string::npos ? -1 : std::atoi(s.c_str() + at + 10);
  }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path run_dir() const { return dir_ / "run"; }

 private:
  std::filesystem::path dir_;
  std::string sock_;
};

}  // namespace ember::test
