// A PyTorch peer for the paired rows: bench/peer_torch_cpu.py --serve in a child process,
// asked over pipes for a batch of an op at a time (cpu_paired.cpp runs it between ember's).
#pragma once

#include <cstdio>
#include <string>

namespace bench {

class TorchServer {
 public:
  /// Starts `python script --serve --threads N`; throws std::runtime_error when it cannot.
  TorchServer(const std::string& python, const std::string& script, int threads);
  ~TorchServer();
  TorchServer(const TorchServer&) = delete;
  TorchServer& operator=(const TorchServer&) = delete;

  /// Whether the peer has an op named `name` ("conv2d/<size>", as the rows).
  bool has(const std::string& name);
  /// One batch of `name` timed by the peer as cpu_paired.cpp times ember's: the median ms.
  /// Throws std::runtime_error when the peer answers anything but a time.
  double batch(const std::string& name, double batch_ms, double gap_ms);

 private:
  std::string ask(const std::string& line);
  void stop();  // closes the pipes and waits for the child
  int pid_ = -1;
  int to_ = -1;           // the peer's stdin
  FILE* from_ = nullptr;  // its stdout, read by line
};

}  // namespace bench
