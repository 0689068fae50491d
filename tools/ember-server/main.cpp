// ember-server: runs the ops of Remote clients (remote:HOST:PORT devices) on a device of this
// machine. See docs/remote.md.
//
//   EMBER_REMOTE_TOKEN=secret ember-server --backend cuda:0 --listen 127.0.0.1:7070
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "ember/backends/remote/server.h"
#include "ember/core/thread_pool.h"

namespace {

constexpr const char* kUsage = R"(usage: ember-server [options]
  --backend DEVICE      device the ops run on: cpu, cuda:0, vulkan:0, ... (default cpu)
  --listen HOST:PORT    address to listen on (default 127.0.0.1:7070; port 0: any free port)
  --token-file PATH     file whose first line is the token clients must present
                        (default: $EMBER_REMOTE_TOKEN; one of the two is required)
  --port-file PATH      write the port listened on to PATH once listening
  --threads N           threads serving sessions (default: the number of cores, at least 2)
  --max-sessions N      sessions at once (default 64)
  --max-message-mib N   largest message (default 1024)
  --max-tensor-mib N    largest tensor (default 1024)
  --max-tensors N       live tensors per session (default 1000000)
  --max-session-mib N   bytes of live tensors per session (default 4096)
  --hello-timeout S     seconds a connection has to present its token (default 10)
Stops on SIGINT or SIGTERM. EMBER_FUSION=1 runs the CPU's ops through Fusion<Cpu>.
)";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "ember-server: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

uint64_t number(const std::string& flag, const std::string& v) {
  uint64_t n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || p != v.data() + v.size() || n == 0)
    usage_error(flag + " needs a positive integer, not '" + v + "'");
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ember;
  remote::ServerConfig config;
  std::string listen = "127.0.0.1:7070", port_file, token_file, backend = "cpu";
  int threads = std::max(2, available_cpus());
  double hello_timeout = 10;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) usage_error("unknown option or missing value: " + a);
    std::string v = argv[++i];
    if (a == "--backend")
      backend = v;
    else if (a == "--listen")
      listen = v;
    else if (a == "--token-file")
      token_file = v;
    else if (a == "--port-file")
      port_file = v;
    else if (a == "--threads")
      threads = static_cast<int>(std::min<uint64_t>(number(a, v), 256));
    else if (a == "--max-sessions")
      config.max_sessions = static_cast<int>(std::min<uint64_t>(number(a, v), 1 << 20));
    else if (a == "--max-message-mib")
      config.limits.max_message = number(a, v) << 20;
    else if (a == "--max-tensor-mib")
      config.limits.max_tensor_bytes = number(a, v) << 20;
    else if (a == "--max-tensors")
      config.limits.max_tensors = number(a, v);
    else if (a == "--max-session-mib")
      config.limits.max_session_bytes = number(a, v) << 20;
    else if (a == "--hello-timeout")
      hello_timeout = static_cast<double>(number(a, v));
    else
      usage_error("unknown option " + a);
  }
  if (!token_file.empty()) {
    std::ifstream f(token_file);
    if (!f || !std::getline(f, config.token)) usage_error("cannot read a token from " + token_file);
  } else if (const char* t = std::getenv("EMBER_REMOTE_TOKEN")) {
    config.token = t;
  }
  if (config.token.empty()) usage_error("no token: give --token-file or set EMBER_REMOTE_TOKEN");
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) usage_error("--listen needs HOST:PORT");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  uint64_t port = 0;
  std::string port_s = listen.substr(colon + 1);
  auto [p, ec] = std::from_chars(port_s.data(), port_s.data() + port_s.size(), port);
  if (ec != std::errc() || p != port_s.data() + port_s.size() || port > 65535)
    usage_error("bad port in --listen " + listen);
  try {
    config.device = Device::parse(backend);
    if (config.device.kind == DeviceKind::Remote) usage_error("--backend cannot be remote");
    device_backend(config.device);  // this machine has it, or a clear error now
    remote::Server server(config, host, static_cast<uint16_t>(port));
    server.set_hello_timeout(hello_timeout);
    if (!port_file.empty()) {
      std::string tmp = port_file + ".tmp";
      std::ofstream(tmp) << server.port() << "\n";
      std::rename(tmp.c_str(), port_file.c_str());  // readers never see a half-written file
    }
    std::printf("ember-server: serving %s on %s:%u\n", config.device.to_string().c_str(),
                host.c_str(), server.port());
    std::fflush(stdout);
    server.run(threads);
    const auto& s = server.stats();
    std::printf(
        "ember-server: stopped after %lld sessions (%lld refused, %lld protocol errors), "
        "%lld ops\n",
        static_cast<long long>(s.sessions_total.load()), static_cast<long long>(s.refused.load()),
        static_cast<long long>(s.protocol_errors.load()), static_cast<long long>(s.ops.load()));
  } catch (const ember::Error& e) {
    std::fprintf(stderr, "ember-server: %s\n", e.what());
    return 1;
  }
  return 0;
}
