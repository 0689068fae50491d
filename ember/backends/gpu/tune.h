// Internal: autotuning of launch parameters (workgroup size, layout, vector path) for kernels
// whose best configuration depends on the GPU and the shape. A `Tuner` answers, for a key (a
// kernel family, dtype and shape bucket) and a list of candidate configurations (small integer
// codes, the heuristic's first), which one to launch: the first time by timing each candidate
// once and keeping the fastest, later from memory or from a small text file per device, so a
// second process times nothing. Any failure while timing falls back to the heuristic.
//
//   // the backend's own tuner keeps its file at Tuner::default_file(device name, arch)
//   Tuner t(std::filesystem::temp_directory_path() / "ember-doc-tune.txt", "NVIDIA H200 sm_90");
//   std::vector<int64_t> candidates{heuristic, a, b};
//   int64_t code = t.choose("softmax.softmax/f32/r12/s14/f1", candidates, time_one);
//
// The file: a header line naming the format and the device, one `key code` line per entry and
// a last line with the entry count and a checksum; written to a temporary name and renamed, so
// a reader never sees half a file; a damaged or mismatched file is ignored and rewritten.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "ember/core/export.h"

namespace ember::gpu {

/// Problems of at least this many elements are tuned; smaller ones take the heuristic.
constexpr int64_t kTuneMinElements = int64_t(1) << 20;

/// How `EMBER_AUTOTUNE` (read at each call, so a test can compare the paths in one process)
/// says to tune: Off ("0", "off"): the heuristics; Now ("now"): a key's candidates are
/// compiled and timed at its first launch, which waits for them; Deferred (unset, anything
/// else): where kernels compile in the background, the first launch runs the heuristic's
/// kernel while the candidates compile at low priority, and a later launch of the key times
/// them once they are all compiled (elsewhere as Now).
enum class AutotuneMode { Off, Now, Deferred };
EMBER_API AutotuneMode autotune_mode();
/// autotune_mode() != Off.
EMBER_API bool autotune_enabled();

class EMBER_API Tuner {
 public:
  struct Stats {
    int64_t timings = 0;      // keys decided by timing their candidates
    int64_t disk_hits = 0;    // keys decided by an entry read from the file
    int64_t memory_hits = 0;  // later lookups of a decided key
    int64_t failures = 0;     // candidates that failed while timed (skipped)
    int64_t stale = 0;        // entries whose code is not a candidate (heuristic taken)
    int64_t corrupt = 0;      // files ignored as damaged or for another device
    int64_t write_errors = 0;
    int64_t deferred = 0;  // keys whose candidates were set compiling behind the heuristic
  };

  /// A tuner over `file` (its directory created when needed; empty: memory only) for the
  /// device described by `device` (the name and the architecture).
  Tuner(std::filesystem::path file, std::string device);

  /// The code to launch for `key` among `candidates` (candidates[0]: the heuristic's). On the
  /// first call for a key, `time(code)` gives each candidate's time in any unit (it may throw:
  /// that candidate is skipped); a candidate replaces the heuristic only when clearly faster.
  /// `prepare(code)`, when given, is called for every candidate before the first is timed.
  int64_t choose(const std::string& key, std::span<const int64_t> candidates,
                 const std::function<double(int64_t)>& time,
                 const std::function<void(int64_t)>& prepare = {});
  /// Records that `code` failed to launch for `key`: the heuristic is kept for it from now on
  /// (in memory only).
  void demote(const std::string& key, int64_t heuristic);
  /// Whether `key` has a decision, in memory or in the file (nothing is timed or counted).
  bool known(const std::string& key);
  /// Counts a key whose tuning was deferred (Stats::deferred).
  void note_deferred();

  Stats stats() const;
  const std::filesystem::path& file() const { return file_; }
  /// `<kernel cache dir>/tune/<device name>_sm<arch>.txt`, or empty when the kernel cache's
  /// disk part is off (`EMBER_KERNEL_CACHE=off`).
  static std::filesystem::path default_file(const std::string& device_name, int arch);
  /// `<kernel cache dir>/tune/<id>.txt` (id sanitized for a file name), or empty likewise.
  static std::filesystem::path default_file(const std::string& id);

 private:
  struct Entry {
    int64_t code = 0;
    bool from_disk = false, used = false, persist = true;
  };
  bool read_file(std::map<std::string, int64_t>& out);
  void write_file();
  // The key's entry, reading the file when memory has none (end() if neither has it).
  std::map<std::string, Entry>::iterator find_locked(const std::string& key);

  std::filesystem::path file_;
  std::string device_;
  mutable std::mutex mu_;
  bool loaded_ = false;
  std::map<std::string, Entry> entries_;
  Stats stats_;
};

/// The policy in one place: candidates[0] when tuning is off (EMBER_AUTOTUNE=0), when there
/// is nothing to choose or the problem has fewer than kTuneMinElements elements, else
/// `tuner.choose(...)`.
EMBER_API int64_t tuned_choice(Tuner& tuner, const std::string& key,
                               std::span<const int64_t> candidates, int64_t elements,
                               const std::function<double(int64_t)>& time);

// Candidate configurations, as the codes the tuner stores. Candidate lists depend only on the
// tuning key's fields and the heuristic's code (first), so a stored code stays meaningful for
// every shape of its bucket; each candidate is a valid configuration of the kernel builders.

/// A row kernel's configuration (softmax.h, norm.h): a workgroup per row (`group`, `wg`
/// threads, `items` elements or 16-byte vectors a thread in registers) or a thread per row.
struct RowConfig {
  bool group = true, vec = false;
  int64_t wg = 256, items = 0;
};
/// The code of a row configuration: bit 0 a thread per row, bit 1 vectors, log2(wg) above.
int64_t row_code(bool group, bool vec, int64_t wg);
/// The configuration of `code` for rows of `size` elements (`vw` elements a vector): items
/// chosen so the registers hold the row when they can (up to 8 vectors or 16 elements a
/// thread; items * wg always covers the row then); a vector code whose rows need more than 8
/// vectors a thread takes the scalar path with the same workgroup.
RowConfig row_config(int64_t code, int64_t size, int64_t vw);
/// Candidates for rows of up to 2^ls elements, the heuristic's first: workgroups of `min_wg`
/// to 1024 that hold such a row in registers without idle threads (vector ones when `vec_ok`:
/// the layout allows 16-byte accesses), and a thread per row when `thread`.
std::vector<int64_t> row_candidates(int64_t heuristic, int ls, int64_t vw, bool vec_ok,
                                    int64_t min_wg, bool thread);

/// A reduction's path (reduce.cpp): a workgroup per output (reduce.h, Whole), a thread per
/// output (kernels.h), or one chunk a dense row (reduce.h, Partial with vectors).
enum ReducePath : int64_t { kWhole = 0, kSeq = 1, kRows = 2 };
/// The code of a reduction configuration: the path in bits 0-1, log2 of the workgroup above.
int64_t reduce_code(ReducePath p, int64_t wg);
/// Candidates for rows of up to 2^lr elements, the heuristic's first: with `rows` (dense rows
/// of a vector width `w`, the kRows path allowed) kRows workgroups of 128 to 1024 and kWhole
/// ones; else kWhole workgroups of 128 to 1024 (at least 4 elements a thread) and kSeq along
/// an inner dim (`strided_inner`) or for short rows.
std::vector<int64_t> reduce_candidates(int64_t heuristic, bool rows, int64_t w, int lr,
                                       bool strided_inner);

class Runtime;
/// The tuner of device `d` (over Tuner::default_file for its name and architecture).
EMBER_API Tuner& device_tuner(Runtime& d);
/// Replaces the tuner of device `d` by a fresh one over `file` (empty: memory only), as a new
/// process would start: for tests. The previous one is never destroyed.
EMBER_API Tuner& reset_device_tuner(Runtime& d, const std::filesystem::path& file);
/// Launches `launch(code)` once with the code chosen for `key` (tuned_choice with the device's
/// tuner, timing each candidate's launches with events on the device's stream); the last
/// launch is always the chosen code's, so the output is its result. A chosen code whose launch
/// fails is demoted and the heuristic's launched instead. Deferred tuning (autotune_mode) on a
/// runtime that compiles in the background: the first launch of an undecided key gets the
/// candidates' kernels compiling (a CompileProbe around their launches) and launches the
/// heuristic's; each later one launches the heuristic's until they are all compiled, then
/// times them as Now does.
EMBER_API void launch_tuned(Runtime& d, const std::string& key, std::span<const int64_t> candidates,
                            int64_t elements, const std::function<void(int64_t)>& launch);

/// The bucket of `n`: ceil(log2(n)) (0 for n <= 1), so shapes within a factor of two share a
/// tuning decision.
EMBER_API int log2_bucket(int64_t n);

}  // namespace ember::gpu
