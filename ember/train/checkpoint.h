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
#include <vector>

namespace ember::train {

class CheckpointDir {
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
void write_text_atomic(const std::filesystem::path& path, const std::string& text);
std::string read_text(const std::filesystem::path& path);

}  // namespace ember::train
