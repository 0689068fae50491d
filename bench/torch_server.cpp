#include "bench/torch_server.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace bench {

TorchServer::TorchServer(const std::string& python, const std::string& script, int threads) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0)
    throw std::runtime_error(std::string("torch peer: pipe: ") + std::strerror(errno));
  const std::string n = std::to_string(threads);
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error(std::string("torch peer: fork: ") + std::strerror(errno));
  if (pid_ == 0) {  // the child: stdin from `in`, stdout to `out`
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execl(python.c_str(), python.c_str(), script.c_str(), "--serve", "--threads", n.c_str(),
          static_cast<char*>(nullptr));
    std::fprintf(stderr, "torch peer: cannot run %s: %s\n", python.c_str(), std::strerror(errno));
    _exit(127);
  }
  close(in[0]), close(out[1]);
  to_ = in[1];
  from_ = fdopen(out[0], "r");
  try {
    if (!from_) {
      close(out[0]);
      throw std::runtime_error("torch peer: fdopen failed");
    }
    // a first question: fails here, not in the middle of a run, when the peer cannot start
    if (const std::string a = ask("has conv2d/none"); a != "0")
      throw std::runtime_error("torch peer did not start (" + script + "): '" + a + "'");
  } catch (...) {
    stop();  // no destructor runs for a constructor that throws
    throw;
  }
}

TorchServer::~TorchServer() { stop(); }

void TorchServer::stop() {
  if (to_ >= 0) close(to_);  // end of its input: the peer returns
  if (from_) std::fclose(from_);
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  to_ = -1, from_ = nullptr, pid_ = -1;
}

std::string TorchServer::ask(const std::string& line) {
  const std::string l = line + "\n";
  for (size_t done = 0; done < l.size();) {
    const ssize_t w = write(to_, l.data() + done, l.size() - done);
    if (w <= 0) throw std::runtime_error("torch peer: gone (write failed)");
    done += size_t(w);
  }
  char buf[512];
  if (!std::fgets(buf, sizeof buf, from_)) throw std::runtime_error("torch peer: gone (EOF)");
  std::string a(buf);
  while (!a.empty() && (a.back() == '\n' || a.back() == '\r')) a.pop_back();
  return a;
}

bool TorchServer::has(const std::string& name) { return ask("has " + name) == "1"; }

double TorchServer::batch(const std::string& name, double batch_ms, double gap_ms) {
  const std::string a =
      ask("run " + name + " " + std::to_string(batch_ms) + " " + std::to_string(gap_ms));
  char* end = nullptr;
  const double ms = std::strtod(a.c_str(), &end);
  if (end == a.c_str() || *end != '\0' || !(ms > 0))
    throw std::runtime_error("torch peer, " + name + ": '" + a + "'");
  return ms;
}

}  // namespace bench
