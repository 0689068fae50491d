// remote_bench: the Remote backend on loopback (scripts/bench.sh remote, docs/remote.md).
//   - small ops: 10,000 dependent adds of 16 floats sent in batches, then one sync; and the
//     same op with a round trip each (sync after every op); the peer is the local CPU backend;
//   - large transfers: uploads and downloads of 64 MiB against raw asio on the same loopback
//     in the same run (a sink that reads into a buffer, a source that writes from one);
//   - load (--load N): 16 clients x N small ops on their own sessions.
// The server runs in this process (--endpoint HOST:PORT uses an ember-server instead, with
// $EMBER_REMOTE_TOKEN). Prints a table and writes JSON records (docs/benchmarks.md) to --out.
#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "ember/backends/remote/client.h"
#include "ember/backends/remote/server.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::remote;
using Clock = std::chrono::steady_clock;
using asio::ip::tcp;

namespace {

// Whole buffers per system call where the kernel takes them (asio's default is 64 KiB).
constexpr auto kWhole = [](const std::error_code& ec, std::size_t) -> std::size_t {
  return ec ? 0 : std::numeric_limits<std::size_t>::max();
};

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

template <class F>
double median_ms(int reps, F f) {
  std::vector<double> v;
  f();  // warm-up
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    v.push_back(ms_since(t0));
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Raw asio on the loopback: one connection to a thread that sinks `n` bytes and acks with one
// byte (upload), or sends `n` bytes after a one-byte request (download).
struct RawPeer {
  explicit RawPeer(size_t n) : buf(n), acceptor(io, {asio::ip::make_address("127.0.0.1"), 0}) {
    server = std::thread([this] {
      tcp::socket s(io);
      acceptor.accept(s);
      s.set_option(tcp::no_delay(true));
      Buffer mine(buf.size());
      char c;
      std::error_code ec;
      while (asio::read(s, asio::buffer(&c, 1), ec), !ec) {
        if (c == 'u') {
          asio::read(s, asio::buffer(mine), kWhole);
          asio::write(s, asio::buffer(&c, 1));
        } else {
          asio::write(s, asio::buffer(mine), kWhole);
        }
      }
    });
    client.connect(acceptor.local_endpoint());
    client.set_option(tcp::no_delay(true));
  }
  ~RawPeer() {
    client.close();
    server.join();
  }
  void upload() {
    char c = 'u';
    std::array<asio::const_buffer, 2> b = {asio::buffer(&c, 1), asio::buffer(buf)};
    asio::write(client, b, kWhole);
    asio::read(client, asio::buffer(&c, 1));
  }
  void download() {
    char c = 'd';
    asio::write(client, asio::buffer(&c, 1));
    asio::read(client, asio::buffer(buf), kWhole);
  }
  // The same host memory as a tensor's (huge pages for large blocks), so the two compare the
  // transport and not the page size.
  using Buffer = std::vector<std::byte, ember::detail::HostAllocator<std::byte>>;
  Buffer buf;
  asio::io_context io;
  tcp::acceptor acceptor;
  tcp::socket client{io};
  std::thread server;
};

double load(const std::string& endpoint, const std::string& token, int clients, int ops) {
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int k = 0; k < clients; ++k)
    threads.emplace_back([&] {
      Connection c(endpoint, token);
      TensorMeta m{Shape{16}, DType::F32};
      uint64_t x = c.upload(TensorData(Shape{16}, DType::F32)), acc = x;
      for (int i = 0; i < ops; ++i) {
        uint64_t ids[] = {acc, x};
        uint64_t next = c.run(Op{OpCode::Add, {}}, ids, m);
        if (acc != x) c.release(acc);
        acc = next;
      }
      c.download(acc);
    });
  for (auto& t : threads) t.join();
  return ms_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string endpoint, out = "bench/out/remote.json";
  int reps = 7, load_ops = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--endpoint")
      endpoint = v;
    else if (a == "--out")
      out = v;
    else if (a == "--reps")
      reps = std::max(1, std::atoi(v.c_str()));
    else if (a == "--load")
      load_ops = std::atoi(v.c_str());
    else {
      std::fprintf(stderr,
                   "usage: remote_bench [--endpoint HOST:PORT] [--reps N] [--load N] "
                   "[--out FILE]\n");
      return 2;
    }
  }
  std::string token = "bench";
  std::unique_ptr<Server> server;
  if (endpoint.empty()) {
    ServerConfig c;
    c.token = token;
    server = std::make_unique<Server>(c, "127.0.0.1", 0);
    server->start(2);
    endpoint = "127.0.0.1:" + std::to_string(server->port());
  } else if (const char* t = std::getenv("EMBER_REMOTE_TOKEN")) {
    token = t;
  }
  nlohmann::json records = nlohmann::json::array();
  auto row = [&](nlohmann::json r, const std::string& figure) {
    std::printf("%-28s %10.4f ms %12s %9.4f ms %9.2f  %s\n", r["name"].get<std::string>().c_str(),
                r["ember_ms"].get<double>(), r["peer"].get<std::string>().c_str(),
                r["peer_ms"].get<double>(), r["speedup"].get<double>(), figure.c_str());
    records.push_back(std::move(r));
  };

  if (load_ops > 0) {
    double ms = load(endpoint, token, 16, load_ops);
    double per_op_us = ms * 1e3 / (16.0 * load_ops);
    std::printf("load: 16 clients x %d ops in %.1f ms: %.0f ops/s, %.2f us per op\n", load_ops, ms,
                16.0 * load_ops / (ms / 1e3), per_op_us);
    return 0;
  }

  std::printf("%-28s %12s %12s %12s %9s  %s\n", "name", "ember", "peer", "peer time", "ratio",
              "figure");
  Connection conn(endpoint, token);
  {  // small ops, batched: 10,000 dependent adds, one sync
    constexpr int kOps = 10000;
    TensorMeta m{Shape{16}, DType::F32};
    uint64_t x = conn.upload(TensorData(Shape{16}, DType::F32));
    double remote = median_ms(reps, [&] {
      uint64_t acc = x;
      for (int i = 0; i < kOps; ++i) {
        uint64_t ids[] = {acc, x};
        uint64_t next = conn.run(Op{OpCode::Add, {}}, ids, m);
        if (acc != x) conn.release(acc);
        acc = next;
      }
      conn.release(acc);
      conn.sync();
    });
    using T1 = Tensor<Dispatch, 1>;
    auto xs = T1::zeros({16}, Device::cpu());
    double local = median_ms(reps, [&] {
      auto acc = xs;
      for (int i = 0; i < kOps; ++i) acc = acc + xs;
      acc.to_data();
    });
    row({{"name", "small_op/batched_add16"},
         {"backend", "remote:" + conn.server_device()},
         {"ember_ms", remote / kOps},
         {"peer", "cpu_local"},
         {"peer_ms", local / kOps},
         {"speedup", local / remote},
         {"us_per_op", remote * 1e3 / kOps}},
        "us per op: " + std::to_string(remote * 1e3 / kOps));
    // one round trip per op
    constexpr int kTrips = 500;
    double trip = median_ms(reps, [&] {
      for (int i = 0; i < kTrips; ++i) {
        uint64_t ids[] = {x, x};
        conn.release(conn.run(Op{OpCode::Add, {}}, ids, m));
        conn.sync();
      }
    });
    row({{"name", "small_op/round_trip_add16"},
         {"backend", "remote:" + conn.server_device()},
         {"ember_ms", trip / kTrips},
         {"peer", "cpu_local"},
         {"peer_ms", local / kOps},
         {"speedup", (local / kOps) / (trip / kTrips)},
         {"us_per_op", trip * 1e3 / kTrips}},
        "us per op: " + std::to_string(trip * 1e3 / kTrips));
    conn.release(x);
  }
  for (size_t mib : {1, 64}) {  // large transfers
    size_t n = mib << 20;
    TensorData d(Shape{static_cast<int64_t>(n / 4)}, DType::F32);
    RawPeer raw(n);
    double up_raw = median_ms(reps, [&] { raw.upload(); });
    double up = median_ms(reps, [&] {
      conn.release(conn.upload(d));
      conn.sync();
    });
    uint64_t id = conn.upload(d);
    TensorMeta meta{d.shape(), d.dtype()};
    double down_raw = median_ms(reps, [&] { raw.download(); });
    double down = median_ms(reps, [&] { conn.download(id, &meta); });
    conn.release(id);
    // What every download pays before a byte arrives: a new host tensor (allocated, zeroed).
    double alloc = median_ms(reps, [&] { TensorData fresh(d.shape(), d.dtype()); });
    std::printf("%-28s %10.4f ms  (a new %zu MiB host tensor: the download's own buffer)\n",
                ("alloc/" + std::to_string(mib) + "MiB").c_str(), alloc, mib);
    for (auto [what, e, p] : {std::tuple{"upload", up, up_raw}, {"download", down, down_raw}}) {
      double gbs = n / (e / 1e3) / 1e9, raw_gbs = n / (p / 1e3) / 1e9;
      char fig[96];
      std::snprintf(fig, sizeof fig, "%.2f GB/s vs %.2f GB/s raw (%.0f%%)", gbs, raw_gbs,
                    100 * gbs / raw_gbs);
      row({{"name", std::string(what) + "/" + std::to_string(mib) + "MiB"},
           {"backend", "remote:" + conn.server_device()},
           {"ember_ms", e},
           {"peer", "asio_raw"},
           {"peer_ms", p},
           {"speedup", p / e},
           {"gbps", gbs},
           {"peer_gbps", raw_gbs}},
          fig);
    }
  }
  std::ofstream(out) << records.dump(2) << "\n";
  std::fprintf(stderr, "remote_bench: wrote %s\n", out.c_str());
  return 0;
}
