#!/usr/bin/env python3
"""The shared library's ABI is the public header, no more and no less.

Reads every LKV_API declaration of include/lazykv.h and every symbol the
shared library defines in its dynamic table (nm -D --defined-only), and
fails unless the two sets of names are equal: a header function the library
lacks, or an internal the library exports (every internal would be ABI),
names itself. The toolchain's own markers (_init, _edata, ...) and the
sanitizer runtime's hooks of an instrumented build are not ours and are
left out.

With a static library as a third argument, also checks that every global
symbol it defines starts with lkv_: a static link pulls in the internals
too, and they must not collide with the application's names.

Usage: check_exports.py HEADER SHARED_LIBRARY [STATIC_LIBRARY]
"""
import re
import subprocess
import sys

TOOLCHAIN = re.compile(r"^(_init|_fini|_edata|_end|__bss_start|_+(asan|ubsan|lsan|sanitizer|odr_asan)[\w.$]*)$")


def declared(header):
    text = open(header, encoding="utf-8").read()
    # A declaration: LKV_API, a return type, the name, "(".
    names = re.findall(r"^LKV_API\s+[^;{(]*?\b(lkv_\w+)\s*\(", text, re.M)
    if not names:
        sys.exit(f"check_exports: no LKV_API declaration found in {header}")
    return set(names)


def exported(library, nm):
    out = subprocess.run([nm, "-D", "--defined-only", library], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name = parts[-1].split("@")[0]
        if not TOOLCHAIN.match(name):
            names.add(name)
    return names


def unprefixed_globals(archive, nm):
    out = subprocess.run([nm, "-g", "--defined-only", archive], check=True,
                         capture_output=True, text=True).stdout
    bad = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDRBCVW" and not parts[2].startswith("lkv_") \
                and not TOOLCHAIN.match(parts[2]):
            bad.add(parts[2])
    return sorted(bad)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    header, library = sys.argv[1], sys.argv[2]
    nm = "nm"
    if len(sys.argv) > 3:
        bad = unprefixed_globals(sys.argv[3], nm)
        for n in bad:
            print(f"check_exports: {sys.argv[3]} defines a global without the lkv_ prefix: {n}")
        if bad:
            return 1
    want, have = declared(header), exported(library, nm)
    missing, extra = sorted(want - have), sorted(have - want)
    for n in missing:
        print(f"check_exports: declared LKV_API in the header, not exported: {n}")
    for n in extra:
        print(f"check_exports: exported, not in the public header: {n}")
    if missing or extra:
        print(f"check_exports: {len(missing)} missing, {len(extra)} extra "
              f"({len(want)} declared, {len(have)} exported)")
        return 1
    print(f"check_exports: the {len(want)} exported symbols are the header's {len(want)} declarations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
