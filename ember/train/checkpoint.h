// Checkpoints: a folder per checkpoint holding the model, the optimizer, the scheduler and
// the training position, written atomically (into a temporary folder, flushed, renamed into
// place), so a process killed mid-save leaves the previous checkpoints intact.
//
//   train::CheckpointDir dir("runs/mnist/checkpoints");
//   auto path = dir.begin_write(3);                   // a temporary folder
//   nn::save_module(model, path / "model.safetensors");
//   ...
//   dir.commit(3);                                     // now "epoch-3" exists, complete
//   dir.latest();                                      // 3
//   dir.keep_last(2, /*keep=*/best_epoch);             // prune older ones
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/export.h"

namespace ember::train {

class EMBER_API CheckpointDir {
 public:
  explicit CheckpointDir(std::filesystem::path root);
  const std::filesystem::path& root() const { return root_; }

  /// A fresh temporary folder to write checkpoint `id`'s files into.
  std::filesystem::path begin_write(int64_t id) const;
  /// Flushes the temporary folder and renames it to the checkpoint's folder (replacing an
  /// older one of the same id).
  std::filesystem::path commit(int64_t id) const;
  /// The folder of checkpoint `id` (which may not exist).
  std::filesystem::path path(int64_t id) const;
  /// Complete checkpoints, oldest first (temporary folders of interrupted saves are ignored).
  std::vector<int64_t> list() const;
  std::optional<int64_t> latest() const;
  /// Removes all but the newest `n` checkpoints, never `keep`.
  void keep_last(int64_t n, std::optional<int64_t> keep = std::nullopt) const;
  /// Removes temporary folders left by interrupted saves.
  void clean_partial() const;

 private:
  std::filesystem::path root_;
};

/// Writes `text` to `path` atomically (temporary file, fsync, rename).
EMBER_API void write_text_atomic(const std::filesystem::path& path, const std::string& text);
EMBER_API std::string read_text(const std::filesystem::path& path);

/// Appends `text` to `path` (created if needed) and flushes it to the disk (fsync). A failure
/// (a full disk, a file-size limit, no permission) throws ValueError
/// "[what] cannot write <path>: <reason>", after cutting the file back to its old length so
/// that it never ends in a partial line.
EMBER_API void append_text(const std::filesystem::path& path, const std::string& text,
                           std::string_view what);

/// Checks that `dir` can hold a run before any work is done: creates it (and its parents),
/// then writes, flushes and removes a small probe file. Throws ValueError naming the folder:
/// an empty path, an existing file, a folder that cannot be created or written, a full disk.
EMBER_API void prepare_run_dir(const std::filesystem::path& dir, std::string_view what);

}  // namespace ember::train
