#!/usr/bin/env python3
"""Marks version needs of an ELF shared library weak (VER_FLG_WEAK), in place.

usage: weaken_version_needs.py <library> <VERSION>...

The dynamic loader refuses a library whose version needs (say GLIBC_2.38 of libc.so.6) the
system does not define, even when another library provides the symbols; a weak need is not
checked. tools/install-kokkos.sh uses this, with patchelf --clear-symbol-version, so that
Debian unstable's Kokkos loads on Debian 12. Prints each need it marks; fails when one of the
named versions is not needed by the library.
"""
import struct
import sys

SHT_GNU_VERNEED = 0x6FFFFFFE
VER_FLG_WEAK = 0x2


def main(path, versions):
    with open(path, "r+b") as f:
        elf = bytearray(f.read())
        if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
            sys.exit(f"{path}: not a 64-bit little-endian ELF file")
        shoff, = struct.unpack_from("<Q", elf, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", elf, 0x3A)
        sections = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + k * shentsize)
                    for k in range(shnum)]
        found = set()
        for _, kind, _, _, offset, _, link, count, _, _ in sections:
            if kind != SHT_GNU_VERNEED:
                continue
            strings = sections[link][4]

            def name(at):
                end = elf.index(b"\0", strings + at)
                return elf[strings + at:end].decode()

            need = offset
            for _ in range(count):
                _, aux_count, file_name, aux, next_need = struct.unpack_from("<HHIII", elf, need)
                entry = need + aux
                for _ in range(aux_count):
                    _, flags, _, version, next_aux = struct.unpack_from("<IHHII", elf, entry)
                    if name(version) in versions:
                        struct.pack_into("<H", elf, entry + 4, flags | VER_FLG_WEAK)
                        found.add(name(version))
                        print(f"{path}: {name(file_name)} {name(version)} made weak")
                    entry += next_aux
                need += next_need
        missing = set(versions) - found
        if missing:
            sys.exit(f"{path}: needs no version {', '.join(sorted(missing))}")
        f.seek(0)
        f.write(elf)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
