#include "ember/fusion/settings.h"

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string_view>

namespace ember::fusion {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
bool is_off(std::string_view v) { return v == "0" || v == "off" || v == "false" || v == "no"; }
bool is_on(std::string_view v) {
  return v == "1" || v == "on" || v == "true" || v == "yes" || v == "all";
}

std::atomic<bool>& enabled_flag() {
  static std::atomic<bool> on{!is_off(env("EMBER_FUSION"))};
  return on;
}

constexpr int kCounters = static_cast<int>(detail::Counter::EpilogueSteps) + 1;
std::array<std::atomic<int64_t>, kCounters>& counters() {
  static std::array<std::atomic<int64_t>, kCounters> c{};
  return c;
}

struct DumpSink {
  std::mutex mu;
  std::string target = env("EMBER_FUSION_DUMP");
  std::atomic<bool> on{!target.empty()};
};
DumpSink& sink() {
  static DumpSink s;
  return s;
}

}  // namespace

bool enabled() { return enabled_flag().load(std::memory_order_relaxed); }
void set_enabled(bool on) { enabled_flag().store(on); }
std::atomic<bool>& epilogues_flag() {
  static std::atomic<bool> on{!is_off(env("EMBER_FUSION_EPILOGUES"))};
  return on;
}
bool epilogues() { return epilogues_flag().load(std::memory_order_relaxed); }
void set_epilogues(bool on) { epilogues_flag().store(on); }
bool cpu_requested() { return enabled() && is_on(env("EMBER_FUSION")); }

int max_steps() {
  static const int n = [] {
    int v = std::atoi(env("EMBER_FUSION_MAX_STEPS").c_str());
    return v >= 2 ? v : 64;
  }();
  return n;
}

// Stats' fields in Counter order.
constexpr int64_t Stats::*kFields[kCounters] = {
    &Stats::recorded,       &Stats::flushes,          &Stats::programs,     &Stats::fused_steps,
    &Stats::dead_steps,     &Stats::kernel_launches,  &Stats::replayed_ops, &Stats::outputs,
    &Stats::buffers_reused, &Stats::plans_compiled,   &Stats::plan_hits,    &Stats::fallbacks,
    &Stats::reductions,     &Stats::matmuls_deferred, &Stats::epilogues,    &Stats::epilogue_steps};

Stats stats() {
  Stats s;
  for (int k = 0; k < kCounters; ++k) s.*kFields[k] = counters()[k].load();
  return s;
}

void reset_stats() {
  for (auto& c : counters()) c.store(0);
}

void set_dump(const std::string& target) {
  DumpSink& s = sink();
  std::lock_guard lk(s.mu);
  s.target = target;
  s.on = !target.empty();
}

bool dumping() { return sink().on.load(std::memory_order_relaxed); }

void dump(const std::string& text) {
  DumpSink& s = sink();
  if (!s.on) return;
  std::lock_guard lk(s.mu);
  if (s.target == "stderr") {
    std::fwrite(text.data(), 1, text.size(), stderr);
    return;
  }
  if (FILE* f = std::fopen(s.target.c_str(), "a")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

namespace detail {
void count(Counter c, int64_t n) {
  counters()[static_cast<int>(c)].fetch_add(n, std::memory_order_relaxed);
}
}  // namespace detail

}  // namespace ember::fusion
