// ember-run: starts the ranks of a data-parallel job on this host (docs/distributed.md).
//
//   ember-run --nproc 4 -- ./train --epochs 3
//
// Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and EMBER_STORE
// (a fresh rendezvous directory, removed at the end) in its environment, with NVLink multicast
// kept off for NCCL. Signals (INT, TERM, HUP) are passed on to every rank. When a rank fails,
// the others get --grace seconds to end on their own (their collectives fail within the
// group's timeout), then SIGTERM, then SIGKILL; ember-run exits with the first failure's
// status (128 + the signal for a killed rank), naming the rank.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace {

volatile sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "ember-run: %s\n"
               "usage: ember-run --nproc N [--grace SECONDS] [--store DIR] -- COMMAND [ARGS...]\n",
               why);
  std::exit(2);
}

int to_int(const char* flag, const char* v, int lo, int hi) {
  char* end = nullptr;
  long n = v ? std::strtol(v, &end, 10) : 0;
  if (!v || *end || n < lo || n > hi)
    usage((std::string(flag) + " wants a number from " + std::to_string(lo) + " to " +
           std::to_string(hi))
              .c_str());
  return int(n);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "ended";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int nproc = 0, grace = 10;
  std::string store;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "--nproc" || a == "-n")
      nproc = to_int("--nproc", i + 1 < argc ? argv[++i] : nullptr, 1, 1024);
    else if (a == "--grace")
      grace = to_int("--grace", i + 1 < argc ? argv[++i] : nullptr, 0, 3600);
    else if (a == "--store")
      store = i + 1 < argc ? argv[++i] : "";
    else if (a == "--help" || a == "-h")
      usage("starts N ranks of COMMAND");
    else
      usage(("unknown option " + a).c_str());
  }
  if (nproc < 1) usage("--nproc is required");
  if (i >= argc) usage("no command after --");

  bool own_store = store.empty();
  if (own_store) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ember-run-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      std::perror("ember-run: mkdtemp");
      return 1;
    }
    store = tmpl;
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaction(s, &sa, nullptr);

  std::vector<pid_t> pids(nproc, -1);
  for (int r = 0; r < nproc; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("ember-run: fork");
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      setenv("RANK", std::to_string(r).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 0);
      setenv("EMBER_STORE", store.c_str(), 1);
      setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast stays off
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "ember-run: cannot start %s: %s\n", argv[i], std::strerror(errno));
      _exit(127);
    }
    pids[r] = pid;
  }

  int alive = nproc, first_code = 0, failed_rank = -1;
  auto deadline = std::chrono::steady_clock::time_point::max();
  bool termed = false, killed = false;
  int forwarded = 0;
  while (alive > 0) {
    if (g_signal && g_signal != forwarded) {  // pass the user's signal on
      forwarded = g_signal;
      for (pid_t p : pids)
        if (p > 0) kill(p, forwarded);
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (int r = 0; r < nproc; ++r)
        if (pids[r] == pid) {
          pids[r] = -1;
          --alive;
          if (exit_code(status) != 0 && failed_rank < 0) {
            failed_rank = r;
            first_code = exit_code(status);
            std::fprintf(stderr,
                         "[ember-run] rank %d (pid %d) %s; %d rank(s) left, stopped in %d s\n", r,
                         int(pid), describe(status).c_str(), alive, grace);
            deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace);
          } else if (exit_code(status) != 0) {
            std::fprintf(stderr, "[ember-run] rank %d %s\n", r, describe(status).c_str());
          }
        }
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (!termed && now >= deadline) {
      termed = true;
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGTERM);
      deadline = now + std::chrono::seconds(3);
    } else if (termed && !killed && now >= deadline) {
      killed = true;
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (own_store) {
    std::error_code ec;
    std::filesystem::remove_all(store, ec);
  }
  if (failed_rank >= 0)
    std::fprintf(stderr, "[ember-run] failed: rank %d, status %d\n", failed_rank, first_code);
  return first_code;
}
