#!/usr/bin/env python3
"""Scan a run's console for the run's known secrets (issue 34 item 5).

The console (every byte QEMU's serial port carried: csvsm on all its vCPUs,
the SNP machine, OVMF, Linux) is read by the host, so it must hold none of
the secrets the SNP machine wrote to its own file (tests/snpm/main.c,
snpm.secrets_out, port 0xE9; never the console):

  secret vmpck0..vmpck3 <hex>   the VMPCKs the machine put in the secrets page
  secret tpm-state <hex>        csvsm's libtpms PERSISTENT_DATA `gp` when the
                                VM ended: the primary seeds and hierarchy
                                proofs are taken from it by libtpms 0.9.2's
                                layout (src/tpm2/Global.h PERSISTENT_DATA), each
                                a TPM2B whose size must read 64

Each secret is looked for in every 8-byte window, so that a part of it is
found too, in these forms:
  raw     the bytes themselves
  hex     two hex digits a byte, either case, with or without any separators
          or "0x" prefixes between them (the console's hex digits are read as
          one run, so "de:ad", "DE AD", "0xde, 0xad" all count)
  le64    the window as a little-endian 64-bit number printed in hex, the way
          a register dump shows 8 bytes of memory
With --self-check the same scan also runs on a copy of the console with the
secrets planted in each form at random places and must find every plant:
the scan can fail. Prints one line of counts; exit 1 on a leak, a failed
self-check or a secrets file without the expected secrets.
"""
import argparse
import random
import re
import sys

WINDOW = 8
# libtpms 0.9.2 PERSISTENT_DATA: 4 (BOOL) + 3 * 2 (algs) + 6 * 66 (three
# TPM2B_DIGEST policies, three TPM2B_AUTH) = 406, then three TPM2B_SEED of
# 2 + 64, three SEED_COMPAT_LEVEL bytes, alignment, three TPM2B_PROOF.
TPM_FIELDS = (("tpm-eps", 406), ("tpm-sps", 472), ("tpm-pps", 538),
              ("tpm-phproof", 608), ("tpm-shproof", 674), ("tpm-ehproof", 740))
TPM2B_SIZE = 64


def read_secrets(path):
    secrets, problems = {}, []
    for line in open(path, "rb").read().decode("ascii", "replace").splitlines():
        f = line.split()
        if len(f) != 3 or f[0] != "secret":
            continue
        try:
            secrets[f[1]] = bytes.fromhex(f[2])
        except ValueError:
            problems.append(f"{f[1]}: not hex")
    for k in range(4):
        v = secrets.get(f"vmpck{k}")
        if v is None or len(v) != 32 or not any(v):
            problems.append(f"vmpck{k} missing or not 32 bytes")
    state = secrets.pop("tpm-state", None)
    if state is None:
        problems.append("tpm-state missing")
    else:
        for name, off in TPM_FIELDS:
            size = int.from_bytes(state[off:off + 2], "little") if len(state) >= off + 2 else -1
            buf = state[off + 2:off + 2 + TPM2B_SIZE]
            if size != TPM2B_SIZE or len(buf) != TPM2B_SIZE or not any(buf):
                problems.append(f"{name}: no 64-byte TPM2B at offset {off} (size field {size})")
            else:
                secrets[name] = buf
    return secrets, problems


def patterns(secrets):
    raw, hexes = {}, {}
    for name, s in secrets.items():
        for i in range(len(s) - WINDOW + 1):
            w = s[i:i + WINDOW]
            raw[w] = name
            hexes[w.hex().encode()] = (name, "hex")
            hexes[w[::-1].hex().encode()] = (name, "le64")
    return raw, hexes


def hex_view(data):
    """The console's hex digits as one lower-case run, '0x' prefixes dropped."""
    low = data.lower().replace(b"0x", b" ")
    return re.sub(rb"[^0-9a-f]", b"", low)


def scan(data, raw, hexes):
    hits = []
    for i in range(len(data) - WINDOW + 1):
        name = raw.get(data[i:i + WINDOW])
        if name:
            hits.append((name, "raw", i))
    hv = hex_view(data)
    n = 2 * WINDOW
    for i in range(len(hv) - n + 1):
        hit = hexes.get(hv[i:i + n])
        if hit:
            hits.append((hit[0], hit[1], i))
    return hits


def plant(data, secrets, rng):
    """The console with every secret planted once in each form."""
    out = bytearray(data)
    planted = []
    for name, s in sorted(secrets.items()):
        w = s[:WINDOW]
        forms = {
            "raw": s,
            "hex": s.hex().encode(),
            "hex-upper-spaced": " ".join(f"{b:02X}" for b in s).encode(),
            "hex-0x-comma": ", ".join(f"0x{b:02x}" for b in s).encode(),
            "le64": ("rax=%016x" % int.from_bytes(w, "little")).encode(),
        }
        for form, text in forms.items():
            at = rng.randrange(len(out) + 1)
            out[at:at] = b"\n" + text + b"\n"
            planted.append((name, form))
    return bytes(out), planted


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--secrets", required=True)
    ap.add_argument("--self-check", action="store_true")
    ap.add_argument("console", nargs="+")
    a = ap.parse_args()
    secrets, problems = read_secrets(a.secrets)
    data = b"".join(open(p, "rb").read() for p in a.console)
    raw, hexes = patterns(secrets)
    hits = scan(data, raw, hexes)
    names = ",".join(sorted(secrets))
    print(f"console-scan: secrets={len(secrets)} ({names}) windows={len(raw)} "
          f"forms=raw,hex,le64 patterns={len(raw) + len(hexes)} bytes={len(data)} "
          f"hits={len(hits)}")
    for p in problems:
        print(f"console-scan: secrets file: {p}")
    for name, form, at in hits[:20]:
        print(f"console-scan: LEAK: {name} ({form}) at offset {at}")
    ok = not hits and not problems and len(secrets) == 4 + len(TPM_FIELDS)
    if a.self_check:
        rng = random.Random(34)
        planted_data, planted = plant(data, secrets, rng)
        found = {(n, f) for n, f, _ in scan(planted_data, raw, hexes)}
        # Each planted form of each secret must be found, under its own form.
        want_forms = {"raw": "raw", "hex": "hex", "hex-upper-spaced": "hex",
                      "hex-0x-comma": "hex", "le64": "le64"}
        missed = [f"{n}/{f}" for n, f in planted if (n, want_forms[f]) not in found]
        print(f"console-scan: self-check: planted={len(planted)} found="
              f"{len(planted) - len(missed)} missed={len(missed)}"
              + (f" ({', '.join(missed[:10])})" if missed else ""))
        ok = ok and not missed and len(planted) > 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
