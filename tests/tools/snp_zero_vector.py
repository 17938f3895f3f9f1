#!/usr/bin/env python3
"""A launch-digest test vector for an IGVM page without file data.

  snp_zero_vector.py OUT
      write a tiny SEV-SNP IGVM file to OUT (platform, policy 0x30000, one
      PAGE_DATA without data at 0x100000, one with data at 0x200000, the BSP
      VMSA at 0xFFFFFFFFF000) and print two lines:
        normal HEX   the digest QEMU + KVM produce: the page without data is
                     an SNP_LAUNCH_UPDATE of type NORMAL whose CONTENTS is the
                     SHA-384 of 4096 zero bytes
        zero HEX     the digest of a VMM that issues the PSP ZERO page type
                     for it (CONTENTS zero)

Written from the sources, not from csvsm's code or tests/tools/igvm_ref.py:
 - IGVM layout: microsoft/igvm igvm_defs/src/lib.rs (IGVM_FIXED_HEADER,
   IGVM_VHS_SUPPORTED_PLATFORM, IGVM_VHS_GUEST_POLICY, IGVM_VHS_PAGE_DATA,
   IGVM_VHS_VP_CONTEXT; file_offset 0 = "a page of zeroes", to be treated as
   a normal page with zeros as contents).
 - QEMU: backends/igvm.c qigvm_type_to_cgs_type() makes the page
   CGS_PAGE_TYPE_ZERO; target/i386/sev.c cgs_set_guest_state() sends
   CGS_PAGE_TYPE_NORMAL and CGS_PAGE_TYPE_ZERO both to launch_update_data =
   sev_snp_launch_update_data(), i.e. KVM_SEV_SNP_PAGE_TYPE_NORMAL of the
   zero-filled buffer; KVM measures the VMSA last, at GPA 0xFFFFFFFFF000
   (snp_launch_update_vmsa(), INITIAL_VMSA_GPA).
 - PAGE_INFO (0x70 bytes): SEV-SNP ABI 56860 "PAGE_INFO" table, as COCONUT
   tools/igvmmeasure/src/page_info.rs struct PageInfo and virtee
   sev-snp-measure gctx.py _update() lay it out: DIGEST_CUR[48] CONTENTS[48]
   LENGTH u16 = 0x70, PAGE_TYPE u8, IMI_PAGE u8, three VMPL permission
   bytes and a reserved byte (all zero), GPA u64. Page types: NORMAL 1,
   VMSA 2, ZERO 3. CONTENTS: SHA-384 of the page for NORMAL and VMSA, zero
   otherwise. LD starts as 48 zero bytes; LD = SHA-384(PAGE_INFO).
Only struct, zlib and hashlib.
"""
import hashlib
import struct
import sys
import zlib

PAGE = 4096
ZERO_GPA, DATA_GPA, VMSA_GPA = 0x100000, 0x200000, 0xFFFFFFFFF000


def sha384(b):
    return hashlib.sha384(b).digest()


def vheader(t, body):
    pad = (-len(body)) % 8
    return struct.pack("<II", t, len(body)) + body + bytes(pad)


def build():
    data = bytes((i * 7 + 3) & 0xFF for i in range(PAGE))
    vmsa = bytearray(PAGE)  # struct sev_es_save_area (Linux asm/svm.h)
    struct.pack_into("<Q", vmsa, 0xD0, 0x1000)   # EFER.SVME
    struct.pack_into("<Q", vmsa, 0x148, 0x40)    # CR4.MCE
    struct.pack_into("<Q", vmsa, 0x158, 0x10)    # CR0.ET
    struct.pack_into("<Q", vmsa, 0x160, 0x400)   # DR7 reset value (KVM takes no other)
    struct.pack_into("<Q", vmsa, 0x168, 0xFFFF0FF0)  # DR6 reset value
    struct.pack_into("<Q", vmsa, 0x170, 2)       # RFLAGS
    struct.pack_into("<Q", vmsa, 0x178, 0xFFF0)  # RIP
    struct.pack_into("<Q", vmsa, 0x3B0, 1)       # SEV_FEATURES.SNPActive
    vmsa = bytes(vmsa)

    def headers(data_off):
        return b"".join([
            vheader(0x001, struct.pack("<IBBHQ", 1, 0, 2, 1, 0)),        # SUPPORTED_PLATFORM
            vheader(0x101, struct.pack("<QII", 0x30000, 1, 0)),          # GUEST_POLICY
            vheader(0x302, struct.pack("<QIIIHH", ZERO_GPA, 1, 0, 0, 0, 0)),
            vheader(0x302, struct.pack("<QIIIHH", DATA_GPA, 1, data_off, 0, 0, 0)),
            vheader(0x304, struct.pack("<QIIHH", VMSA_GPA, 1, data_off + PAGE, 0, 0)),
        ])

    vhs = len(headers(0))
    data_off = 24 + vhs
    vh = headers(data_off)
    total = data_off + 2 * PAGE
    fixed = struct.pack("<6I", 0x4D564749, 1, 24, vhs, total, 0)
    crc = zlib.crc32(fixed + vh)
    fixed = struct.pack("<6I", 0x4D564749, 1, 24, vhs, total, crc)
    return fixed + vh + data + vmsa, data, vmsa


def digest(data, vmsa, zero_type):
    ld = bytes(48)

    def update(ld, page_type, gpa, contents):
        info = ld + contents + struct.pack("<HBB4BQ", 0x70, page_type, 0, 0, 0, 0, 0, gpa)
        assert len(info) == 0x70
        return sha384(info)

    if zero_type:
        ld = update(ld, 3, ZERO_GPA, bytes(48))
    else:
        ld = update(ld, 1, ZERO_GPA, sha384(bytes(PAGE)))
    ld = update(ld, 1, DATA_GPA, sha384(data))
    ld = update(ld, 2, VMSA_GPA, sha384(vmsa))
    return ld.hex()


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    f, data, vmsa = build()
    with open(argv[1], "wb") as out:
        out.write(f)
    print("normal", digest(data, vmsa, False))
    print("zero", digest(data, vmsa, True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
