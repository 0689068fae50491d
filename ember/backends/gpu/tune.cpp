// The tuner: decisions in memory and in one text file per device, and the timing of launches
// on the runtime (events on CUDA's stream, timestamps on Vulkan).
#include "ember/backends/gpu/tune.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "ember/backends/gpu/runtime.h"
#include "ember/core/error.h"
#include "ember/kernel/cache.h"

namespace ember::gpu {

namespace {

constexpr std::string_view kFormat = "ember-tune 1";
// Another candidate replaces the heuristic only when this much faster: timing noise must not
// trade a good heuristic for an equal one measured in a lucky moment.
constexpr double kMargin = 0.97;
constexpr int kPasses = 2;

uint64_t fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

bool valid_key(const std::string& k) {
  if (k.empty() || k.size() > 200) return false;
  for (char c : k)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  return true;
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.';
    o.push_back(ok ? c : '_');
  }
  return o.empty() ? "device" : o;
}

}  // namespace

AutotuneMode autotune_mode() {
  const char* e = std::getenv("EMBER_AUTOTUNE");
  if (!e) return AutotuneMode::Deferred;
  std::string_view v = e;
  if (v == "0" || v == "off" || v == "OFF" || v == "false") return AutotuneMode::Off;
  if (v == "now" || v == "NOW") return AutotuneMode::Now;
  return AutotuneMode::Deferred;
}

bool autotune_enabled() { return autotune_mode() != AutotuneMode::Off; }

int log2_bucket(int64_t n) {
  int l = 0;
  while (l < 62 && (int64_t(1) << l) < n) ++l;
  return l;
}

Tuner::Tuner(std::filesystem::path file, std::string device)
    : file_(std::move(file)), device_(std::move(device)) {
  for (char& c : device_)
    if (c == '\n' || c == '\r') c = ' ';
}

std::filesystem::path Tuner::default_file(const std::string& device_name, int arch) {
  return default_file(device_name + "_sm" + std::to_string(arch));
}

std::filesystem::path Tuner::default_file(const std::string& id) {
  std::filesystem::path dir = kernel::KernelCache::default_dir();
  if (dir.empty()) return {};
  return dir / "tune" / (sanitize(id) + ".txt");
}

Tuner::Stats Tuner::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

// The file's entries into `out`; false (and nothing added) for a damaged file or one for
// another device. A missing file is an empty one.
bool Tuner::read_file(std::map<std::string, int64_t>& out) {
  if (file_.empty()) return true;
  std::ifstream f(file_, std::ios::binary);
  if (!f) return true;
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (text.size() > (size_t(1) << 24)) return false;
  std::map<std::string, int64_t> got;
  std::istringstream in(text);
  std::string line, body;
  if (!std::getline(in, line) || line != std::string(kFormat) + " " + device_) return false;
  body = line + "\n";
  bool ended = false;
  while (std::getline(in, line)) {
    if (ended) return false;  // nothing after the last line
    if (line.rfind("end ", 0) == 0) {
      std::istringstream e(line.substr(4));
      size_t count = 0;
      std::string sum;
      if (!(e >> count >> sum) || count != got.size()) return false;
      std::ostringstream hex;
      hex << std::hex << fnv1a(body);
      if (sum != hex.str()) return false;
      ended = true;
      continue;
    }
    size_t sp = line.find(' ');
    if (sp == std::string::npos) return false;
    std::string key = line.substr(0, sp), code = line.substr(sp + 1);
    if (!valid_key(key) || code.empty()) return false;
    char* endp = nullptr;
    long long v = std::strtoll(code.c_str(), &endp, 10);
    if (*endp != '\0') return false;
    got[key] = v;
    body += line + "\n";
  }
  if (!ended) return false;
  out.insert(got.begin(), got.end());
  return true;
}

// Merges the file's entries (another process may have written some) and writes all entries to
// a temporary file renamed over it.
void Tuner::write_file() {
  if (file_.empty()) return;
  std::map<std::string, int64_t> disk;
  if (read_file(disk)) {
    for (auto& [k, v] : disk)
      if (!entries_.count(k)) entries_[k] = Entry{v, true, false, true};
  }
  std::string body = std::string(kFormat) + " " + device_ + "\n";
  size_t count = 0;
  for (auto& [k, e] : entries_) {
    if (!e.persist || !valid_key(k)) continue;
    body += k + " " + std::to_string(e.code) + "\n";
    ++count;
  }
  std::ostringstream tail;
  tail << "end " << count << " " << std::hex << fnv1a(body) << "\n";
  std::string text = body + tail.str();
  static std::atomic<uint64_t> serial{0};
  std::error_code ec;
  std::filesystem::create_directories(file_.parent_path(), ec);
  std::filesystem::path tmp = file_;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(serial++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    if (!f) {
      ++stats_.write_errors;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, file_, ec);
  if (ec) {
    ++stats_.write_errors;
    std::filesystem::remove(tmp, ec);
  }
}

int64_t Tuner::choose(const std::string& key, std::span<const int64_t> candidates,
                      const std::function<double(int64_t)>& time,
                      const std::function<void(int64_t)>& prepare) {
  if (candidates.empty()) return 0;
  std::lock_guard lk(mu_);
  auto it = find_locked(key);
  if (it != entries_.end()) {
    Entry& e = it->second;
    if (e.from_disk && !e.used) {
      e.used = true;
      ++stats_.disk_hits;
    } else {
      ++stats_.memory_hits;
    }
    if (std::find(candidates.begin(), candidates.end(), e.code) == candidates.end()) {
      ++stats_.stale;
      return candidates[0];
    }
    return e.code;
  }
  if (prepare)  // e.g. every candidate's kernel set compiling at once, before any is timed
    for (int64_t c : candidates) try {
        prepare(c);
      } catch (...) {  // timing it fails the same way
      }
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> t(candidates.size(), inf);
  std::vector<bool> failed(candidates.size(), false);
  // Passes over all candidates, each keeping its best: the clocks may still ramp up during
  // the first candidates of the first pass.
  for (int pass = 0; pass < kPasses; ++pass)
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (failed[i]) continue;
      try {
        double v = time(candidates[i]);
        if (!std::isfinite(v) || v < 0) throw std::runtime_error("no time");
        t[i] = std::min(t[i], v);
      } catch (...) {  // a candidate that cannot run is not one to choose
        failed[i] = true;
        t[i] = inf;
        ++stats_.failures;
      }
    }
  ++stats_.timings;
  size_t best = 0;
  for (size_t i = 1; i < t.size(); ++i)
    if (t[i] < t[best]) best = i;
  // The heuristic failing too means something beyond the launch parameters is wrong: keep it,
  // in memory only, and let its own launch report the error.
  bool sound = std::isfinite(t[0]);
  if (!sound || t[best] >= kMargin * t[0]) best = 0;
  entries_[key] = Entry{candidates[best], false, true, sound};
  if (sound) write_file();
  return candidates[best];
}

std::map<std::string, Tuner::Entry>::iterator Tuner::find_locked(const std::string& key) {
  auto it = entries_.find(key);
  if (it == entries_.end() && !file_.empty()) {  // first use, or another process tuned it
    std::map<std::string, int64_t> disk;
    if (!read_file(disk)) ++stats_.corrupt;
    for (auto& [k, v] : disk)
      if (!entries_.count(k)) entries_[k] = Entry{v, true, false, true};
    it = entries_.find(key);
  }
  return it;
}

bool Tuner::known(const std::string& key) {
  std::lock_guard lk(mu_);
  return find_locked(key) != entries_.end();
}

void Tuner::note_deferred() {
  std::lock_guard lk(mu_);
  ++stats_.deferred;
}

void Tuner::demote(const std::string& key, int64_t heuristic) {
  std::lock_guard lk(mu_);
  entries_[key] = Entry{heuristic, false, true, false};
}

int64_t tuned_choice(Tuner& tuner, const std::string& key, std::span<const int64_t> candidates,
                     int64_t elements, const std::function<double(int64_t)>& time) {
  if (candidates.empty()) return 0;
  if (candidates.size() < 2 || elements < kTuneMinElements || !autotune_enabled())
    return candidates[0];
  return tuner.choose(key, candidates, time);
}

namespace {
int64_t pow2(int64_t n) { return int64_t(1) << log2_bucket(n); }
}  // namespace

int64_t row_code(bool group, bool vec, int64_t wg) {
  return (group ? 0 : 1) | (vec ? 2 : 0) | int64_t(log2_bucket(wg)) << 2;
}
// The same items as the heuristics in composite.cpp pick for their workgroup.
RowConfig row_config(int64_t code, int64_t size, int64_t vw) {
  RowConfig c;
  c.group = !(code & 1);
  if (!c.group) return c;
  c.wg = int64_t(1) << (code >> 2);
  if (code & 2) {
    int64_t per = (size / vw + c.wg - 1) / c.wg;
    if (per <= 8) {
      c.vec = true;
      c.items = pow2(per);
      return c;
    }
  }
  int64_t per = (size + c.wg - 1) / c.wg;
  c.items = per <= 16 ? pow2(per) : 0;
  return c;
}
// `big` is the bucket's longest row: from the smallest workgroup that holds it in registers to
// one element (vector) a thread.
std::vector<int64_t> row_candidates(int64_t heuristic, int ls, int64_t vw, bool vec_ok,
                                    int64_t min_wg, bool thread) {
  std::vector<int64_t> c{heuristic};
  auto add = [&](int64_t v) {
    if (std::find(c.begin(), c.end(), v) == c.end()) c.push_back(v);
  };
  int64_t big = int64_t(1) << std::min(ls, 40);
  int64_t vecs = std::max<int64_t>(1, big / vw);
  if (vec_ok && vecs <= 8 * 1024) {
    int64_t lo = std::clamp<int64_t>(pow2((vecs + 7) / 8), min_wg, 1024);
    int64_t hi = std::clamp<int64_t>(vecs, lo, 1024);
    for (int64_t wg = lo; wg <= hi; wg *= 2) add(row_code(true, true, wg));
  } else {
    int64_t lo = std::clamp<int64_t>(pow2((big + 15) / 16), min_wg, 1024);
    int64_t hi = std::clamp<int64_t>(big, lo, 1024);
    for (int64_t wg = lo; wg <= hi; wg *= 2) add(row_code(true, false, wg));
  }
  if (thread) add(row_code(false, false, 256));
  return c;
}

int64_t reduce_code(ReducePath p, int64_t wg) { return int64_t(p) | int64_t(log2_bucket(wg)) << 2; }

// Power-of-two workgroups: the tree reductions (prod, argmax, argmin) and kRows need them.
std::vector<int64_t> reduce_candidates(int64_t heuristic, bool rows, int64_t w, int lr,
                                       bool strided_inner) {
  std::vector<int64_t> c{heuristic};
  auto add = [&](int64_t v) {
    if (std::find(c.begin(), c.end(), v) == c.end()) c.push_back(v);
  };
  int64_t big = int64_t(1) << std::min(lr, 40);
  if (rows) {
    for (int64_t wg = 128; wg <= 1024; wg *= 2)
      if (2 * wg * w <= big) add(reduce_code(kRows, wg));
    add(reduce_code(kWhole, 256));
    add(reduce_code(kWhole, 1024));
    return c;
  }
  if (big >= 128)
    for (int64_t wg = 128; wg <= std::min<int64_t>(1024, std::max<int64_t>(128, big / 4)); wg *= 2)
      add(reduce_code(kWhole, wg));
  if (strided_inner || big <= 256) add(reduce_code(kSeq, 0));
  return c;
}

namespace {
std::mutex g_tuners_mu;
// Deferred tuning's keys whose candidates are compiling, with their kernels.
std::mutex g_pending_mu;
std::map<std::pair<const Runtime*, std::string>, std::vector<const Loaded*>>& pending() {
  static auto* m = new std::map<std::pair<const Runtime*, std::string>,
                                std::vector<const Loaded*>>();  // never destroyed
  return *m;
}
std::map<const Runtime*, Tuner*>& tuners() {
  static auto* m = new std::map<const Runtime*, Tuner*>();  // never destroyed, like runtimes
  return *m;
}
}  // namespace

Tuner& device_tuner(Runtime& d) {
  std::lock_guard lk(g_tuners_mu);
  Tuner*& t = tuners()[&d];
  if (!t) t = new Tuner(d.tuner_file(), d.tuner_device());
  return *t;
}

Tuner& reset_device_tuner(Runtime& d, const std::filesystem::path& file) {
  std::string text = d.tuner_device();
  std::lock_guard lk(g_tuners_mu);
  Tuner*& t = tuners()[&d];
  t = new Tuner(file, text);
  return *t;
}

void launch_tuned(Runtime& d, const std::string& key, std::span<const int64_t> candidates,
                  int64_t elements, const std::function<void(int64_t)>& launch) {
  if (candidates.empty()) return;
  int64_t heuristic = candidates[0];
  if (candidates.size() < 2 || elements < kTuneMinElements || !autotune_enabled())
    return launch(heuristic);
  Tuner& t = device_tuner(d);
  if (d.compiles_async() && autotune_mode() == AutotuneMode::Deferred && !t.known(key)) {
    std::unique_lock lk(g_pending_mu);
    auto [it, first] = pending().try_emplace({&d, key});
    if (first) {
      lk.unlock();
      {
        CompileProbe probe;  // the candidates' kernels start compiling, nothing is queued
        for (size_t i = 1; i < candidates.size(); ++i) try {
            launch(candidates[i]);
          } catch (const Error&) {  // timing it fails the same way
          }
        lk.lock();
        it->second = std::move(probe.kernels);
        lk.unlock();
      }
      t.note_deferred();
      return launch(heuristic);
    }
    bool ready = std::all_of(it->second.begin(), it->second.end(),
                             [&](const Loaded* l) { return d.ready(*l); });
    if (!ready) {
      lk.unlock();
      return launch(heuristic);
    }
    pending().erase(it);
  }
  // Every candidate launched once before any is timed: their kernels compile side by side.
  int64_t code = t.choose(
      key, candidates, [&](int64_t c) { return d.time_ms([&] { launch(c); }); }, launch);
  if (code == heuristic) return launch(heuristic);
  try {
    launch(code);
  } catch (const Error&) {  // e.g. a tuned file from another driver: the heuristic still runs
    t.demote(key, heuristic);
    launch(heuristic);
  }
}

}  // namespace ember::gpu
