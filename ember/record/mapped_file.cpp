#include "ember/record/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ember/core/error.h"

namespace ember::record::detail {

MappedFile::MappedFile(const std::filesystem::path& path, const char* tag) {
  const std::string t = std::string("[") + tag + "] ";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw ValueError(t + "cannot open " + path.string() + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ValueError(t + path.string() + " is not a regular file");
  }
  n_ = static_cast<size_t>(st.st_size);
  if (n_ > 0) {
    p_ = ::mmap(nullptr, n_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p_ == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      p_ = nullptr;
      throw ValueError(t + "cannot map " + path.string() + ": " + std::strerror(err));
    }
  }
  ::close(fd);  // the mapping stays valid
}

MappedFile::~MappedFile() {
  if (p_) ::munmap(p_, n_);
}

}  // namespace ember::record::detail
