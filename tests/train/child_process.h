// Child processes for the fault tests: run a program to its end (capturing stdout and stderr),
// or start one, read its output line by line and SIGKILL it at a chosen moment. A child can
// run with a file-size limit (RLIMIT_FSIZE: writes past it fail with EFBIG, like a full disk)
// or as another user (so that permission bits hold even when the tests run as root).
#pragma once
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ember::test {

struct ChildOptions {
  std::vector<std::pair<std::string, std::string>> env;  // set in the child's environment
  std::optional<rlim_t> file_size_limit;                 // RLIMIT_FSIZE, in bytes
  std::optional<uid_t> uid;                              // setgid + setuid before exec
};

/// Exit status as a shell shows it: the exit code, or 128 + the signal that ended it.
inline int shell_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

/// The "nobody" user's id, for running a child without root's permission override.
inline std::optional<uid_t> nobody_uid() {
  const passwd* pw = ::getpwnam("nobody");
  if (pw == nullptr) return std::nullopt;
  return pw->pw_uid;
}

/// A running child whose stdout and stderr go to one pipe.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const ChildOptions& opt = {}) {
    // Everything the child needs is built before fork: between fork and exec it only makes
    // system calls.
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string s = *e;
      bool replaced = false;
      for (const auto& [k, v] : opt.env) replaced |= s.starts_with(k + "=");
      if (!replaced) env_strings.push_back(std::move(s));
    }
    for (const auto& [k, v] : opt.env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      if (opt.file_size_limit) {
        ::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG instead
        rlimit r{*opt.file_size_limit, *opt.file_size_limit};
        ::setrlimit(RLIMIT_FSIZE, &r);
      }
      if (opt.uid && (::setgid(*opt.uid) != 0 || ::setuid(*opt.uid) != 0)) ::_exit(126);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (fd_ >= 0) ::close(fd_);
  }

  bool started() const { return pid_ > 0; }

  /// The next line of output (without '\n'), or nullopt at the end or after `seconds`.
  std::optional<std::string> read_line(double seconds = 30) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      if (auto nl = pending_.find('\n'); nl != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        return line;
      }
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            end - std::chrono::steady_clock::now())
                            .count();
      if (fd_ < 0 || left <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      const ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) {
        ::close(fd_);
        fd_ = -1;
        if (!pending_.empty()) {
          std::string rest = std::move(pending_);
          pending_.clear();
          output_ += rest;
          return rest;
        }
        return std::nullopt;
      }
      pending_.append(buf, static_cast<size_t>(n));
      output_.append(buf, static_cast<size_t>(n));
    }
  }

  /// Reads lines until one contains `what`; false if the output ended or `seconds` passed.
  bool wait_for(const std::string& what, double seconds = 30) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < end) {
      auto line =
          read_line(std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count());
      if (!line) return false;
      if (line->find(what) != std::string::npos) return true;
    }
    return false;
  }

  void kill9() const {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }

  /// Waits for the end (reading the rest of the output); the shell-style status.
  int wait() {
    if (status_) return *status_;
    while (fd_ >= 0) read_line(60);
    int st = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &st, 0) != pid_) return -1;
    status_ = shell_status(st);
    return *status_;
  }

  /// Everything the child wrote so far.
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_, output_;
  std::optional<int> status_;
};

struct ChildResult {
  int status = -1;  // shell-style
  std::string output;
};

/// Runs a program to its end.
inline ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& opt = {}) {
  Child c(argv, opt);
  ChildResult r;
  r.status = c.wait();
  r.output = c.output();
  return r;
}

inline std::string read_text_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// A fresh folder under the temp directory, removed at the end; readable by any user (so that
/// a child running as "nobody" can read what the test puts there).
struct TempFolder {
  std::filesystem::path dir;
  explicit TempFolder(const std::string& name)
      : dir(std::filesystem::temp_directory_path() /
            ("ember_" + name + "_" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms(0755));
  }
  ~TempFolder() {
    std::error_code ec;
    // Read-only folders made by a test are made writable again so they can be removed.
    for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_directory(ec))
        std::filesystem::permissions(it->path(), std::filesystem::perms(0755), ec);
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace ember::test
