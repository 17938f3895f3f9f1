#!/usr/bin/env python3
"""Print the pages inside an OVMF image's SEC area that its SEV metadata does
not name, as "start-end[,start-end...]" (hex), or "none".

A reading of edk2 independent of csvsm's C parser (attest/ovmf_meta.c):
- OvmfPkg/ResetVector/Ia16/ResetVectorVtf0.asm: the GUIDed structure table
  ends 0x20 bytes before the end of the flash with the table footer GUID
  96b582de-1fb2-45f7-baea-a366c55a082d, preceded by the table's u16 length;
  each entry is its data, then a u16 length (data + 18), then its GUID,
  walked backwards from the footer.
- SEV metadata offset GUID dc886566-984a-4798-a75e-5585a7bf67cc: a u32
  offset from the end of the flash to the "ASEV" descriptor
  (OvmfPkg/ResetVector/X64/OvmfSevMetadata.asm): signature, u32 length,
  u32 version, u32 section count, then {u32 base, u32 size, u32 type}.
- The SEC area is [lowest section base, highest section end); the page the
  metadata leaves out of it is the SEC GHCB ("The VMM does not need to
  validate the shared page", OvmfPkg/ResetVector/ResetVector.nasmb).
"""
import struct
import sys
import uuid

FOOTER = uuid.UUID("96b582de-1fb2-45f7-baea-a366c55a082d").bytes_le
SEV_META = uuid.UUID("dc886566-984a-4798-a75e-5585a7bf67cc").bytes_le


def sections(img):
    end = len(img) - 0x20
    if img[end - 16:end] != FOOTER:
        raise SystemExit("no GUIDed table footer")
    (tlen,) = struct.unpack_from("<H", img, end - 18)
    start, at = end - tlen, end - 18
    while at > start:
        guid = img[at - 16:at]
        (elen,) = struct.unpack_from("<H", img, at - 18)
        if elen < 18 or at - elen < start:
            raise SystemExit("bad GUIDed table entry")
        if guid == SEV_META:
            (off,) = struct.unpack_from("<I", img, at - 18 - 4)
            base = len(img) - off
            sig, _ln, _ver, n = struct.unpack_from("<4sIII", img, base)
            if sig != b"ASEV":
                raise SystemExit("no ASEV descriptor")
            return [struct.unpack_from("<III", img, base + 16 + 12 * i) for i in range(n)]
        at -= elen
    raise SystemExit("no SEV metadata")


def gaps(secs):
    lo = min(b for b, s, _ in secs)
    hi = max(b + s for b, s, _ in secs)
    out, at = [], lo
    for b, s, _ in sorted(secs):
        if b > at:
            out.append((at, b))
        at = max(at, b + s)
    return out, lo, hi


def main():
    img = open(sys.argv[1], "rb").read()
    g, _, _ = gaps(sections(img))
    print(",".join("%#x-%#x" % r for r in g) if g else "none")


if __name__ == "__main__":
    main()
