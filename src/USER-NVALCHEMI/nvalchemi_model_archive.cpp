/* ----------------------------------------------------------------------
   USER-NVALCHEMI: zip archive integrity (central directory, entry bounds, CRC-32).
------------------------------------------------------------------------- */

#include "nvalchemi_model_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>

namespace LAMMPS_NS {
namespace NVAlchemi {

  namespace {
    constexpr uint32_t END_OF_DIRECTORY = 0x06054b50, ZIP64_LOCATOR = 0x07064b50,
                       ZIP64_END_OF_DIRECTORY = 0x06064b50, DIRECTORY_ENTRY = 0x02014b50,
                       LOCAL_HEADER = 0x04034b50;
    constexpr uint16_t STORED = 0, DEFLATED = 8, ZIP64_EXTRA = 0x0001;

    // CRC-32 of `size` bytes (zlib takes at most 4 GiB per call)
    uLong crc_of(uLong crc, const unsigned char *data, uint64_t size)
    {
      for (uint64_t done = 0; done < size;) {
        const auto chunk = static_cast<uInt>(std::min<uint64_t>(size - done, 1u << 30));
        crc = ::crc32(crc, data + done, chunk);
        done += chunk;
      }
      return crc;
    }

    // CRC-32 of a raw deflate stream's output, inflated in chunks; false if it is not one
    bool inflated_crc(const unsigned char *data, uint64_t size, uLong &crc)
    {
      z_stream stream{};
      if (inflateInit2(&stream, -MAX_WBITS) != Z_OK) return false;
      unsigned char out[1 << 16];
      stream.next_in = const_cast<unsigned char *>(data);
      stream.avail_in = static_cast<uInt>(std::min<uint64_t>(size, 1u << 30));
      uint64_t fed = stream.avail_in;
      int status = Z_OK;
      crc = ::crc32(0L, Z_NULL, 0);
      while (status == Z_OK) {
        if (stream.avail_in == 0 && fed < size) {
          stream.avail_in = static_cast<uInt>(std::min<uint64_t>(size - fed, 1u << 30));
          fed += stream.avail_in;
        }
        stream.next_out = out;
        stream.avail_out = sizeof(out);
        status = inflate(&stream, Z_NO_FLUSH);
        crc = ::crc32(crc, out, static_cast<uInt>(sizeof(out) - stream.avail_out));
      }
      inflateEnd(&stream);
      return status == Z_STREAM_END;
    }

    // little-endian fields of the archive, bounds-checked
    class Reader {
     public:
      explicit Reader(const std::string &bytes) : bytes(bytes) {}
      uint64_t get(uint64_t offset, int width) const
      {
        if (offset + width > bytes.size() || offset + width < offset) truncated();
        uint64_t value = 0;
        for (int k = width - 1; k >= 0; --k)
          value = (value << 8) | static_cast<unsigned char>(bytes[offset + k]);
        return value;
      }
      [[noreturn]] static void truncated()
      {
        throw std::runtime_error("the zip archive is truncated or damaged (a record points "
                                 "beyond the end of the file)");
      }
      const std::string &bytes;
    };
  }    // namespace

  void check_archive(const std::string &bytes)
  {
    if (bytes.compare(0, 2, "PK") != 0) return;
    const Reader in(bytes);

    // the end-of-central-directory record: the last one, within the 64 KiB comment of the end
    int64_t end = -1;
    for (int64_t k = static_cast<int64_t>(bytes.size()) - 22;
         k >= 0 && k >= static_cast<int64_t>(bytes.size()) - 22 - 65535; --k)
      if (in.get(k, 4) == END_OF_DIRECTORY) {
        end = k;
        break;
      }
    if (end < 0)
      throw std::runtime_error("the zip archive is truncated or damaged (no end-of-central-"
                               "directory record)");
    uint64_t entries = in.get(end + 10, 2), directory = in.get(end + 16, 4);
    if ((entries == 0xFFFF || directory == 0xFFFFFFFF) && end >= 20 &&
        in.get(end - 20, 4) == ZIP64_LOCATOR) {
      const uint64_t record = in.get(end - 20 + 8, 8);
      if (in.get(record, 4) != ZIP64_END_OF_DIRECTORY) Reader::truncated();
      entries = in.get(record + 32, 8);
      directory = in.get(record + 48, 8);
    }

    uint64_t at = directory;
    for (uint64_t n = 0; n < entries; ++n) {
      if (in.get(at, 4) != DIRECTORY_ENTRY) Reader::truncated();
      const auto method = static_cast<uint16_t>(in.get(at + 10, 2));
      const auto crc = static_cast<uint32_t>(in.get(at + 16, 4));
      uint64_t stored_size = in.get(at + 20, 4), size = in.get(at + 24, 4);
      const uint64_t name_length = in.get(at + 28, 2), extra_length = in.get(at + 30, 2),
                     comment_length = in.get(at + 32, 2);
      uint64_t local = in.get(at + 42, 4);
      const std::string name = bytes.substr(at + 46, name_length);
      // zip64: the sizes and offset that do not fit 32 bits, in this order, in extra field 1
      for (uint64_t e = at + 46 + name_length; e + 4 <= at + 46 + name_length + extra_length;) {
        const uint64_t id = in.get(e, 2), length = in.get(e + 2, 2);
        if (id == ZIP64_EXTRA) {
          uint64_t field = e + 4;
          if (size == 0xFFFFFFFF) size = in.get(field, 8), field += 8;
          if (stored_size == 0xFFFFFFFF) stored_size = in.get(field, 8), field += 8;
          if (local == 0xFFFFFFFF) local = in.get(field, 8);
        }
        e += 4 + length;
      }
      if (in.get(local, 4) != LOCAL_HEADER) Reader::truncated();
      const uint64_t data = local + 30 + in.get(local + 26, 2) + in.get(local + 28, 2);
      if (data + stored_size > bytes.size()) Reader::truncated();
      const auto *start = reinterpret_cast<const unsigned char *>(bytes.data()) + data;
      uLong actual = 0;
      const bool readable = method == STORED
          ? (actual = crc_of(::crc32(0L, Z_NULL, 0), start, stored_size), true)
          : method == DEFLATED && inflated_crc(start, stored_size, actual);
      if ((method == STORED || method == DEFLATED) && (!readable || actual != crc))
        throw std::runtime_error("its entry '" + name +
                                 "' fails its CRC-32 check: the file is damaged (in transfer, "
                                 "or modified after it was written); write or copy it again");
      at += 46 + name_length + extra_length + comment_length;
    }
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
