#!/usr/bin/env python3
"""Reference model for the IGVM tests, written separately from attest/igvm.c.

  igvm_ref.py measure FILE [--vcpus N --vcpu-sig SIG] [--native-zero]
      SNP launch digest of FILE as QEMU's IGVM loader issues it
      (backends/igvm.c: runs of page directives are held back until a page
      breaks the run, parameter inserts go at once, KVM measures the VMSAs
      of vCPU 0..N-1 last; vCPUs without a VP context get QEMU's reset VMSA).
      A page without file data is a NORMAL page of 4096 zero bytes, as QEMU's
      target/i386/sev.c cgs_set_guest_state() issues CGS_PAGE_TYPE_ZERO
      (KVM_SEV_SNP_PAGE_TYPE_NORMAL); --native-zero measures it as the PSP
      ZERO page type instead (a VMM that issues SNP_PAGE_TYPE_ZERO).
  igvm_ref.py vmsa FILE
      the SEV-SNP VP contexts of FILE, one line each: vp_index, GPA,
      SEV_FEATURES and the fields the COCONUT QEMU 9-era check_vmsa_supported
      refuses when non-zero (GDTR/LDTR/IDTR/TR at 0x60..0x9F, MXCSR 0x408,
      x87 FCW 0x410; struct sev_es_save_area offsets, Linux asm/svm.h).
  igvm_ref.py sample OUT
      write a small hand-made IGVM file that uses every header type QEMU's
      loader handles, for the cross-check in tests/tools/igvm.sh.

Only struct, zlib.crc32 and hashlib: no code shared with the C side.
PAGE_INFO: SEV-SNP ABI 56860 table 67 (snp-svsm-interfaces.md section 8).
"""
import hashlib
import struct
import sys
import zlib

PAGE = 4096
NORMAL, VMSA, ZERO, UNMEASURED, SECRETS, CPUID = 1, 2, 3, 4, 5, 6


def sha384(b):
    return hashlib.sha384(b).digest()


def headers(b):
    magic, ver, vho, vhs, total, crc = struct.unpack_from("<6I", b, 0)
    if magic != 0x4D564749 or ver != 1 or total != len(b):
        raise SystemExit("bad fixed header")
    fixed = bytearray(b[:24])
    fixed[20:24] = bytes(4)
    if zlib.crc32(bytes(fixed) + b[vho:vho + vhs]) != crc:
        raise SystemExit("bad checksum")
    off, out = vho, []
    while off < vho + vhs:
        t, n = struct.unpack_from("<II", b, off)
        out.append((t, b[off + 8:off + 8 + n]))
        off += 8 + ((n + 7) & ~7)
    return out


def reset_vmsa(eip, features, sig):
    """QEMU's SNP reset VMSA (sev-snp-measure vmsa.py, QEMU column)."""
    v = bytearray(PAGE)

    def seg(off, sel, attr, limit, base):
        struct.pack_into("<HHIQ", v, off, sel, attr, limit, base)

    for off in (0x00, 0x20, 0x30, 0x40, 0x50):  # es ss ds fs gs
        seg(off, 0, 0x93, 0xFFFF, 0)
    seg(0x10, 0xF000, 0x9B, 0xFFFF, eip & 0xFFFF0000)
    seg(0x60, 0, 0, 0xFFFF, 0)      # gdtr
    seg(0x70, 0, 0x82, 0xFFFF, 0)   # ldtr
    seg(0x80, 0, 0, 0xFFFF, 0)      # idtr
    seg(0x90, 0, 0x8B, 0xFFFF, 0)   # tr
    for off, val in ((0xD0, 0x1000), (0x148, 0x40), (0x158, 0x10), (0x160, 0x400),
                     (0x168, 0xFFFF0FF0), (0x170, 2), (0x178, eip & 0xFFFF),
                     (0x268, 0x0007040600070406), (0x310, sig), (0x3B0, features),
                     (0x3E8, 1)):
        struct.pack_into("<Q", v, off, val)
    struct.pack_into("<I", v, 0x408, 0x1F80)
    struct.pack_into("<H", v, 0x410, 0x37F)
    return bytes(v)


def measure(b, vcpus=1, sig=None, native_zero=False):
    hs = headers(b)
    snp = 0
    for t, body in hs:
        if t == 0x001:
            mask, _vtl, ptype = struct.unpack_from("<IBB", body)
            if ptype == 2:
                snp = mask
    if not snp:
        raise SystemExit("no SEV-SNP platform")
    ld = [bytes(48)]
    zero_hash = sha384(bytes(PAGE))

    def update(ptype, gpa, contents=bytes(48)):
        info = ld[0] + contents + struct.pack("<HBBBBBBQ", 0x70, ptype, 0, 0, 0, 0, 0, gpa)
        ld[0] = sha384(info)

    def page_type(flags, dtype, has_data):
        if dtype == 1:
            return SECRETS
        if dtype in (2, 3):
            return CPUID
        if flags & 2:
            return UNMEASURED
        return ZERO if (native_zero and not has_data) else NORMAL

    areas, vmsas, run = {}, {}, []
    directives = [(t, body) for t, body in hs if 0x301 <= t <= 0x400]

    def flush():
        for gpa, flags, dtype, data in run:
            ptype = page_type(flags, dtype, data is not None)
            for i in range(512 if flags & 1 else 1):
                g = gpa + i * PAGE
                if ptype != NORMAL:
                    update(ptype, g)
                else:
                    update(ptype, g, sha384(data) if data is not None else zero_hash)
        run.clear()

    last = [None]
    for i, (t, body) in enumerate(directives):
        if t == 0x301:
            size, index, _fo = struct.unpack_from("<QII", body)
            areas[index] = size
        elif t == 0x302:
            gpa, mask, fo, flags, dtype = struct.unpack_from("<QIIIH", body)
            if not mask & snp:
                continue
            data = b[fo:fo + PAGE] if fo else None
            if run:
                pg, pf, pd, pdata = run[-1]
                same = (pf, pd, pdata is None) == (flags, dtype, data is None)
                span = 0x200000 if pf & 1 else PAGE
                if not same or pg + span != gpa or last[0] != i - 1:
                    flush()
            run.append((gpa, flags, dtype, data))
            last[0] = i
        elif t == 0x303:
            gpa, mask, index = struct.unpack_from("<QII", body)
            if mask & snp:
                for off in range(0, areas[index], PAGE):
                    update(UNMEASURED, gpa + off)
        elif t == 0x304:
            gpa, mask, fo, vp = struct.unpack_from("<QIIH", body)
            if mask == snp:
                vmsas[vp] = b[fo:fo + PAGE]
    flush()
    features = 1
    if vmsas:
        features = struct.unpack_from("<Q", vmsas[min(vmsas)], 0x3B0)[0]
    for cpu in range(vcpus):
        v = vmsas.get(cpu)
        if v is None:
            if sig is None:
                raise SystemExit("vCPU %d needs --vcpu-sig" % cpu)
            v = reset_vmsa(0xFFFFFFF0, features, sig)
        update(VMSA, 0xFFFFFFFFF000, sha384(v))
    return ld[0].hex()


def sample():
    """Every header type QEMU handles, with the orderings that matter."""
    vh, data = [], []

    def hdr(t, body):
        if isinstance(body, tuple):  # PAGE_DATA / VP_CONTEXT: file_offset resolved later
            vh.append((t, body))
        else:
            vh.append(struct.pack("<II", t, len(body)) + body + bytes((-len(body)) % 8))

    def blob(b):  # returns a file_offset placeholder resolved below
        data.append(b)
        return ("data", len(data) - 1)

    def page(gpa, mask, flags, dtype, content):
        ref = blob(content) if content is not None else None
        hdr(0x302, (gpa, mask, ref, flags, dtype))

    # platforms: SEV-SNP (bit 0) and NATIVE (bit 1), policy for SNP
    hdr(0x001, struct.pack("<IBBHQ", 1, 2, 2, 1, 0))
    hdr(0x001, struct.pack("<IBBHQ", 2, 0, 0, 1, 0))
    hdr(0x101, struct.pack("<QII", 0x30000, 1, 0))
    # parameter areas: general (vp count + environment info), memory map, MADT
    hdr(0x301, struct.pack("<QII", PAGE, 7, 0))
    hdr(0x307, struct.pack("<II", 7, 0))
    hdr(0x313, struct.pack("<II", 7, 4))
    hdr(0x301, struct.pack("<QII", 2 * PAGE, 9, 0))
    hdr(0x30C, struct.pack("<II", 9, 0))
    hdr(0x301, struct.pack("<QII", PAGE, 11, 0))
    hdr(0x309, struct.pack("<II", 11, 0))
    hdr(0x305, struct.pack("<QIIII", 0x40000000, 1, 0x100000, 0, 0))
    # a run of two data pages, an insert between them and the third page
    p = [bytes([0x11 + k]) * PAGE for k in range(3)]
    page(0x100000, 1, 0, 0, p[0])
    page(0x101000, 1, 0, 0, p[1])
    hdr(0x303, struct.pack("<QII", 0x200000, 1, 7))
    page(0x102000, 1, 0, 0, p[2])
    # a NATIVE-only page between two otherwise contiguous zero pages
    page(0x103000, 1, 0, 0, None)
    page(0x300000, 2, 0, 0, p[0])
    page(0x104000, 1, 0, 0, None)
    # shared file data, unmeasured, secrets, CPUID, CPUID_XF, a 2 MiB zero page
    page(0x105000, 1, 0, 0, p[1])
    page(0x106000, 1, 2, 0, None)
    page(0x107000, 1, 0, 1, None)
    page(0x108000, 1, 0, 2, None)
    page(0x109000, 1, 0, 3, None)
    page(0x400000, 1, 1, 0, None)
    hdr(0x303, struct.pack("<QII", 0x210000, 1, 9))
    hdr(0x303, struct.pack("<QII", 0x220000, 3, 11))
    # ID block (ld is informational), then the BSP VMSA last
    idb = bytearray(696)
    struct.pack_into("<I", idb, 0, 1)
    idb[8:56] = bytes(range(48))
    hdr(0x30B, bytes(idb))
    v = bytearray(PAGE)
    struct.pack_into("<HHIQ", v, 0x10, 8, 0xC9B, 0xFFFFFFFF, 0)
    for off in (0x00, 0x20, 0x30, 0x40, 0x50):
        struct.pack_into("<HHIQ", v, off, 0x10, 0xC93, 0xFFFFFFFF, 0)
    for off, val in ((0xD0, 0x1000), (0x148, 0x40), (0x158, 0x31), (0x160, 0x400),
                     (0x170, 2), (0x178, 0x100000), (0x330, 0xFE000000),
                     (0x268, 0x0007040600070406), (0x3B0, 9), (0x3E8, 1)):
        struct.pack_into("<Q", v, off, val)
    ref = blob(bytes(v))
    hdr(0x304, (0xFFFFFFFFF000, 1, ref, 0))

    # Lay out: fixed header, variable headers, file data; resolve offsets.
    # PAGE_DATA bodies are 24 bytes, VP_CONTEXT 20 padded to 24.
    final = []
    vhs_len = 0
    for h in vh:
        vhs_len += len(h) if isinstance(h, bytes) else 8 + 24
    data_start = 24 + vhs_len
    offsets, pos = [], data_start
    for d in data:
        offsets.append(pos)
        pos += len(d)
    for h in vh:
        if isinstance(h, bytes):
            final.append(h)
            continue
        t, fields = h
        if t == 0x302:
            gpa, mask, ref, flags, dtype = fields
            fo = offsets[ref[1]] if ref else 0
            body = struct.pack("<QIIIHH", gpa, mask, fo, flags, dtype, 0)
        else:
            gpa, mask, ref, vp = fields
            body = struct.pack("<QIIHH", gpa, mask, offsets[ref[1]], vp, 0)
        final.append(struct.pack("<II", t, len(body)) + body + bytes((-len(body)) % 8))
    vhb = b"".join(final)
    assert len(vhb) == vhs_len
    total = data_start + sum(len(d) for d in data)
    fixed = struct.pack("<6I", 0x4D564749, 1, 24, len(vhb), total, 0)
    crc = zlib.crc32(fixed + vhb)
    fixed = struct.pack("<6I", 0x4D564749, 1, 24, len(vhb), total, crc)
    return fixed + vhb + b"".join(data)


def vmsa_lines(b):
    snp = 0
    hs = headers(b)
    for t, body in hs:
        if t == 0x001:
            mask, _vtl, ptype = struct.unpack_from("<IBB", body)
            if ptype == 2:
                snp = mask
    out = []
    for t, body in hs:
        if t != 0x304:
            continue
        gpa, mask, fo, vp = struct.unpack_from("<QIIH", body)
        if mask != snp:
            continue
        v = b[fo:fo + PAGE]
        tables = v[0x60:0xA0]
        out.append("vp=%d gpa=%#x sev_features=%#x gdtr_ldtr_idtr_tr=%s mxcsr=%#x fcw=%#x" % (
            vp, gpa, struct.unpack_from("<Q", v, 0x3B0)[0],
            "zero" if not any(tables) else "nonzero",
            struct.unpack_from("<I", v, 0x408)[0], struct.unpack_from("<H", v, 0x410)[0]))
    return out


def main(argv):
    if len(argv) >= 3 and argv[1] == "vmsa":
        with open(argv[2], "rb") as f:
            print("\n".join(vmsa_lines(f.read())))
        return 0
    if len(argv) >= 3 and argv[1] == "sample":
        with open(argv[2], "wb") as f:
            f.write(sample())
        return 0
    if len(argv) >= 3 and argv[1] == "measure":
        vcpus, sig, native_zero = 1, None, False
        rest = argv[3:]
        while rest:
            opt = rest.pop(0)
            if opt == "--vcpus":
                vcpus = int(rest.pop(0), 0)
            elif opt == "--vcpu-sig":
                sig = int(rest.pop(0), 0)
            elif opt == "--native-zero":
                native_zero = True
            else:
                raise SystemExit("unknown option " + opt)
        with open(argv[2], "rb") as f:
            print(measure(f.read(), vcpus, sig, native_zero))
        return 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
