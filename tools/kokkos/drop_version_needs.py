#!/usr/bin/env python3
"""Removes version needs from an ELF shared library, in place.

usage: drop_version_needs.py <library> <VERSION>...

The dynamic loader refuses a library whose version needs (say GLIBC_2.38 of libc.so.6) the
system does not define, even when another library provides the symbols; it reports even a
need marked weak when a program starts. tools/install-kokkos.sh uses this after patchelf
--clear-symbol-version has taken the version off every symbol that named it, so that Debian
unstable's Kokkos loads on Debian 12: each named need is unlinked from its file's list (the
entry stays in the file, unreferenced). Prints each need it drops; fails when a named version
is not needed by the library, or is the only need on its file.
"""
import struct
import sys

SHT_GNU_VERNEED = 0x6FFFFFFE
VERNEED = "<HHIII"  # vn_version, vn_cnt, vn_file, vn_aux, vn_next
VERNAUX = "<IHHII"  # vna_hash, vna_flags, vna_other, vna_name, vna_next


def drop(elf, path, versions):
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + k * shentsize) for k in range(shnum)]
    dropped = set()
    for _, kind, _, _, offset, _, link, count, _, _ in sections:
        if kind != SHT_GNU_VERNEED:
            continue
        strings = sections[link][4]

        def name(at):
            return elf[strings + at:elf.index(b"\0", strings + at)].decode()

        need = offset
        for _ in range(count):
            version, aux_count, file_name, aux, next_need = struct.unpack_from(VERNEED, elf, need)
            # walk the chain of entries, remembering where the link to the current one is stored
            link_at, entry, kept = need + 8, need + aux, aux_count
            for _ in range(aux_count):
                next_aux = struct.unpack_from(VERNAUX, elf, entry)[4]
                version_name = name(struct.unpack_from(VERNAUX, elf, entry)[3])
                following = entry + next_aux if next_aux else 0
                if version_name in versions:
                    if kept == 1:
                        sys.exit(f"{path}: {version_name} is the only version needed of {name(file_name)}")
                    # the link to this entry now points past it (offsets are relative to the
                    # structure that holds the link: the Verneed for vn_aux, an entry for vna_next)
                    holder = need if link_at == need + 8 else link_at - 12
                    struct.pack_into("<I", elf, link_at, following - holder if following else 0)
                    kept -= 1
                    dropped.add(version_name)
                    print(f"{path}: {name(file_name)} {version_name} dropped")
                else:
                    link_at = entry + 12
                entry = following
            struct.pack_into("<HH", elf, need, version, kept)
            need += next_need
    missing = set(versions) - dropped
    if missing:
        sys.exit(f"{path}: needs no version {', '.join(sorted(missing))}")


def main(path, versions):
    with open(path, "r+b") as f:
        elf = bytearray(f.read())
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            sys.exit(f"{path}: not a 64-bit little-endian ELF file")
        drop(elf, path, versions)
        f.seek(0)
        f.write(elf)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
