/* ----------------------------------------------------------------------
   USER-NVALCHEMI: zip archive integrity (central directory, entry bounds, CRC-32).
------------------------------------------------------------------------- */

#include "nvalchemi_model_archive.h"

#include "nvalchemi_contract_tables.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string_view>

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

  namespace {
    // The start of the data of the zip entry <name>/data.pkl (stored, as PyTorch writes it) and
    // the first thing its pickle makes: the module of the class it names ("mace.modules.models",
    // "__torch__.Model"), "dict" for a dictionary; "" where there is no such entry.
    std::string top_level_pickle(const std::string &bytes)
    {
      const auto u16 = [&](size_t at) {
        return static_cast<size_t>(static_cast<unsigned char>(bytes[at])) |
            static_cast<size_t>(static_cast<unsigned char>(bytes[at + 1])) << 8;
      };
      for (size_t at = bytes.find("PK\x03\x04"); at != std::string::npos && at + 30 < bytes.size();
           at = bytes.find("PK\x03\x04", at + 4)) {
        const size_t name_length = u16(at + 26), data = at + 30 + name_length + u16(at + 28);
        if (data + 2 >= bytes.size()) break;
        const std::string name = bytes.substr(at + 30, name_length);
        if (name.size() < 9 || name.compare(name.size() - 9, 9, "/data.pkl") != 0 ||
            name.find('/') != name.size() - 9)
          continue;
        // PROTO n, then GLOBAL "module\nname\n" or EMPTY_DICT
        const size_t op = static_cast<unsigned char>(bytes[data]) == 0x80 ? data + 2 : data;
        if (bytes[op] == '}') return "dict";
        if (bytes[op] != 'c') return "object";
        const size_t end = bytes.find('\n', op + 1);
        return end == std::string::npos ? "object" : bytes.substr(op + 1, end - op - 1);
      }
      return "";
    }
  }    // namespace

  std::string describe_non_model(const std::string &bytes)
  {
    const auto holds = [&](std::string_view text) {
      return bytes.find(text) != std::string::npos;
    };
    const std::string formats = "pair_style nvalchemi reads TorchScript files (.pt) and "
                                "AOTInductor packages (.pt2)";
    if (bytes.compare(0, 2, "PK") != 0) {
      // pickle protocol 2 and above start with the PROTO opcode 0x80
      if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
        return "it is a Python pickle (torch.save's legacy format), which needs Python to read; " +
            formats + ": export the model with the package's exporter";
      return "it is not a model file (" + formats + ", which are zip archives; this file is " +
          "not one): check the path and the file given to pair_style";
    }
    // torch.save's archive and TorchScript's both hold <name>/data.pkl (torch.save's may hold
    // code/ too, for TorchScript parts of the object): what its pickle makes first tells them
    // apart, a TorchScript module (__torch__.*) or any other object
    const std::string top = top_level_pickle(bytes);
    if (!top.empty() && top.compare(0, 9, "__torch__") != 0 && !holds(AOTI_PACKAGE_MARKER)) {
      // what each framework's pickle names: its model's module, or a key of its config
      struct Framework {
        const char *marker, *name, *exporter;
      };
      static constexpr Framework FRAMEWORKS[] = {
          {"mace.modules", "MACE (such as its training output, name.model)",
           "nvalchemi-mace-export <file> -o model.pt2"},
          {"num_convolution_layer", "SevenNet (such as checkpoint_best.pth)",
           "nvalchemi-sevenn-export <file> -o model.pt2"},
          {"nequip", "nequip or Allegro (such as best.ckpt)",
           "nvalchemi-nequip-export <file> -o model.pt2"}};
      for (const Framework &f : FRAMEWORKS)
        if (holds(f.marker))
          return std::string("it is a checkpoint of ") + f.name +
              " written by torch.save, a pickled Python object that needs Python and the "
              "framework to read, not a deployed model: export it with " +
              f.exporter;
      return "it is a checkpoint written by torch.save (a pickled Python object that needs "
             "Python to read), not a deployed model: export the model with the package's "
             "exporter (nvalchemi-mace-export, nvalchemi-sevenn-export, nvalchemi-nequip-export) "
             "or nvalchemi_lammps.export.save_model";
    }
    if (top.empty() && !holds(AOTI_PACKAGE_MARKER))
      return "it is a zip archive but neither a TorchScript file nor an AOTInductor package (" +
          formats + ")";
    return "";
  }

}    // namespace NVAlchemi
}    // namespace LAMMPS_NS
