#include "ember/record/zip.h"

#include <zlib.h>

#include <algorithm>
#include <set>

#include "ember/core/error.h"

namespace ember::record::detail {

namespace {

constexpr uint32_t kLocal = 0x04034b50, kCentral = 0x02014b50, kEnd = 0x06054b50;
constexpr uint32_t kEnd64 = 0x06064b50, kLocator64 = 0x07064b50;

// Little-endian reads at checked offsets of the whole archive.
struct Bytes {
  std::span<const std::byte> b;
  const std::string& what;

  [[noreturn]] void bad(const std::string& why) const {
    throw ValueError("[zip] " + what + ": " + why);
  }
  bool fits(uint64_t at, uint64_t n) const { return at <= b.size() && n <= b.size() - at; }
  uint64_t get(uint64_t at, int n) const {
    if (!fits(at, static_cast<uint64_t>(n)))
      bad("a record at byte " + std::to_string(at) + " runs past the end");
    uint64_t v = 0;
    for (int k = 0; k < n; ++k)
      v |= uint64_t{static_cast<uint8_t>(b[static_cast<size_t>(at) + k])} << (8 * k);
    return v;
  }
  uint32_t u32(uint64_t at) const { return static_cast<uint32_t>(get(at, 4)); }
  uint16_t u16(uint64_t at) const { return static_cast<uint16_t>(get(at, 2)); }
};

struct Directory {
  uint64_t entries, size, offset;
};

Directory find_directory(const Bytes& z) {
  if (z.b.size() < 22)
    z.bad("too short for a zip archive (" + std::to_string(z.b.size()) + " bytes)");
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
  uint64_t end = z.b.size() - 22;
  const uint64_t lowest = end > 65535 ? end - 65535 : 0;
  while (z.u32(end) != kEnd) {
    if (end == lowest) z.bad("no end of central directory record");
    --end;
  }
  Directory d{z.u16(end + 10), z.u32(end + 12), z.u32(end + 16)};
  if (z.u16(end + 4) != 0 || z.u16(end + 6) != 0) z.bad("multi-disk archives are not supported");
  if (d.entries == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff) {
    if (end < 20 || z.u32(end - 20) != kLocator64) z.bad("ZIP64 locator missing");
    const uint64_t at = z.get(end - 20 + 8, 8);
    if (z.u32(at) != kEnd64) z.bad("ZIP64 end record missing at byte " + std::to_string(at));
    d = {z.get(at + 32, 8), z.get(at + 40, 8), z.get(at + 48, 8)};
  }
  if (!z.fits(d.offset, d.size)) z.bad("central directory outside the archive");
  if (d.entries > d.size / 46)
    z.bad(std::to_string(d.entries) + " entries do not fit the directory");
  return d;
}

}  // namespace

std::vector<ZipEntry> read_zip(std::span<const std::byte> bytes, const std::string& what) {
  const Bytes z{bytes, what};
  const Directory dir = find_directory(z);
  std::vector<ZipEntry> out;
  std::set<std::string> names;
  uint64_t at = dir.offset;
  const uint64_t dir_end = dir.offset + dir.size;
  for (uint64_t k = 0; k < dir.entries; ++k) {
    if (at + 46 > dir_end || z.u32(at) != kCentral)
      z.bad("central directory entry " + std::to_string(k) + " is malformed");
    const uint16_t flags = z.u16(at + 8), method = z.u16(at + 10);
    const uint32_t crc = z.u32(at + 16);
    uint64_t csize = z.u32(at + 20), usize = z.u32(at + 24);
    const uint16_t nlen = z.u16(at + 28), elen = z.u16(at + 30), clen = z.u16(at + 32);
    uint64_t local = z.u32(at + 42);
    if (at + 46 + nlen + elen + clen > dir_end)
      z.bad("central directory entry " + std::to_string(k) + " runs past the directory");
    std::string name(reinterpret_cast<const char*>(bytes.data()) + at + 46, nlen);
    // ZIP64 extra field: the 8-byte values of the fields that hold 0xffffffff, in order.
    for (uint64_t e = at + 46 + nlen, e_end = e + elen; e + 4 <= e_end;) {
      const uint16_t id = z.u16(e), n = z.u16(e + 2);
      if (e + 4 + n > e_end) z.bad("entry '" + name + "': extra field runs past its end");
      if (id == 0x0001) {
        uint64_t p = e + 4, p_end = p + n;
        auto wide = [&](uint64_t& field) {
          if (field != 0xffffffff) return;
          if (p + 8 > p_end) z.bad("entry '" + name + "': ZIP64 field too short");
          field = z.get(p, 8);
          p += 8;
        };
        wide(usize);
        wide(csize);
        wide(local);
      }
      e += 4 + n;
    }
    at += 46 + nlen + elen + clen;
    if (flags & 1) z.bad("entry '" + name + "' is encrypted");
    if (method != 0)
      z.bad("entry '" + name + "' is compressed (method " + std::to_string(method) +
            "); torch.save stores its entries uncompressed");
    if (csize != usize) z.bad("entry '" + name + "' is stored with two different sizes");
    if (!names.insert(name).second) z.bad("entry '" + name + "' appears twice");
    if (z.u32(local) != kLocal) z.bad("entry '" + name + "': no local header at its offset");
    const uint64_t data = local + 30 + z.u16(local + 26) + z.u16(local + 28);
    if (!z.fits(data, usize))
      z.bad("entry '" + name + "': " + std::to_string(usize) + " bytes at byte " +
            std::to_string(data) + " run past the end");
    std::span<const std::byte> d =
        bytes.subspan(static_cast<size_t>(data), static_cast<size_t>(usize));
    // zlib's crc32 takes at most 4 GiB a call.
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t off = 0; off < d.size();) {
      const size_t n = std::min<size_t>(d.size() - off, size_t{1} << 30);
      c = crc32(c, reinterpret_cast<const Bytef*>(d.data() + off), static_cast<uInt>(n));
      off += n;
    }
    if (static_cast<uint32_t>(c) != crc) z.bad("entry '" + name + "' fails its CRC-32 check");
    out.push_back({std::move(name), d});
  }
  return out;
}

}  // namespace ember::record::detail
