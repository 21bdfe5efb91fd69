#!/usr/bin/env python3
"""Blanks the CUDA cubins of a shared library's .nv_fatbin section whose SM architecture is not one
of those kept (default: 90, H100/H200), in place. The file keeps its size and layout (every entry
header, so the CUDA driver still walks the same fat binaries), but the blanked payloads are zeros,
which compress to nothing: scripts/gpu-machine/cvcuda-slim.sh uses it to carry CV-CUDA's 187 MB library to a
device machine as a few tens of MB. Only uncompressed ELF (cubin) entries are blanked; PTX entries
and compressed entries are kept. Refuses to blank a fat binary that has no kept cubin.

    python3 scripts/gpu-machine/fatbin-keep-arch.py LIB.so [--keep 90,90a] [--list]
"""
import argparse
import collections
import struct
import subprocess
import sys

MAGIC = 0xBA55ED50
KIND_ELF = 2
FLAG_COMPRESSED = 0x2000


def section(path):
    out = subprocess.check_output(["readelf", "-S", "-W", path]).decode()
    for line in out.splitlines():
        if ".nv_fatbin" in line and "]" in line:
            f = line.split("]", 1)[1].split()
            return int(f[3], 16), int(f[4], 16)
    raise SystemExit("%s: no .nv_fatbin section" % path)


def blobs(data, off, size):
    """Yields (entries) per fat binary: a list of (offset of the entry, header size, payload size,
    kind, arch, flags), offsets absolute in the file."""
    p, end_sec = off, off + size
    while p + 16 <= end_sec:
        magic, _ver, hs, fs = struct.unpack_from("<IHHQ", data, p)
        if magic != MAGIC:
            p += 8
            continue
        q, end = p + hs, p + hs + fs
        ents = []
        while q < end:
            kind, _u1, ehs, esize, _csize, _u2, _mn, _mj, arch = struct.unpack_from("<HHIQIIHHI", data, q)
            (flags,) = struct.unpack_from("<Q", data, q + 40)
            ents.append((q, ehs, esize, kind, arch, flags))
            q += ehs + esize
        yield ents
        p = end


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lib")
    ap.add_argument("--keep", default="90", help="SM architectures to keep, comma-separated (default 90)")
    ap.add_argument("--list", action="store_true", help="only list the entries by (kind, arch)")
    a = ap.parse_args()
    keep = {int(x.rstrip("a")) for x in a.keep.split(",") if x}
    off, size = section(a.lib)
    data = bytearray(open(a.lib, "rb").read())
    stats, blanked, n_blobs = collections.Counter(), 0, 0
    for ents in blobs(data, off, size):
        n_blobs += 1
        for q, ehs, esize, kind, arch, flags in ents:
            stats[("ELF" if kind == KIND_ELF else "PTX" if kind == 1 else str(kind), arch)] += esize
        if a.list:
            continue
        if not any(k == KIND_ELF and arch in keep for _q, _h, _s, k, arch, _f in ents):
            print("fat binary at 0x%x has no cubin for %s: left whole" % (ents[0][0] if ents else 0, sorted(keep)), file=sys.stderr)
            continue
        for q, ehs, esize, kind, arch, flags in ents:
            if kind == KIND_ELF and arch not in keep and not flags & FLAG_COMPRESSED:
                # Keep the ELF identification and header (64 bytes): only the body goes.
                start = q + ehs + 64
                data[start : q + ehs + esize] = bytes(q + ehs + esize - start)
                blanked += esize
    for (kind, arch), n in sorted(stats.items()):
        print("  %s sm_%d: %.1f MB" % (kind, arch, n / 1e6))
    if not a.list:
        open(a.lib, "wb").write(data)
        print("%s: %d fat binaries, %.1f MB of cubins blanked (kept sm_%s)" % (a.lib, n_blobs, blanked / 1e6, a.keep))


if __name__ == "__main__":
    main()
