#!/usr/bin/env python3
"""What csvsm-proxy saw must hold no plaintext vTPM state and no key
(tests/vtpm/sealed.sh, docs/vtpm.md "Persistence").

The test knows what csvsm's sealed mode keys are made of, because it holds
the SNP machine's test keys: it derives the MSG_KEY_REQ key the machine's
PSP model gives csvsm (tests/snpm/model/psp.c make_key, with csvsm's request
of tpm/boot.c sealed_root: VCEK root, KEY_SEL 1, policy and measurement,
VMPL 0) and the state key csvsm makes of it (tpm/vtpm_seal.c vtpm_seal_key:
HKDF-SHA-256), opens the newest sealed state the proxy keeps with it, and
then requires that
  - the state opens and holds the probe's NV marker (so the scan below
    looks for something that is there);
  - no proxy log holds the derived key, the state key, the marker, or any
    16-byte block of the plaintext state that is not all one byte value
    (the seeds are in there);
  - the state file holds none of them either.
Prints TAP lines; exit 1 when a check failed.

usage: scan.py PSP_KEYS MEASUREMENT_HEX POLICY INSTANCE_HEX STATE_BLOB MARKER LOG...
       scan.py --kbs-root ROOT_HEX INSTANCE_HEX STATE_BLOB MARKER LOG...
The second form is the kbs mode's: the root key is the instance's in csvsm-kbs's
registry (tests/vtpm/kbs.sh reads it), released to csvsm as a JWE only.
"""
import base64
import hashlib
import hmac
import struct
import sys

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

n = 0
fails = 0


def tap(ok, what):
    global n, fails
    n += 1
    if not ok:
        fails += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))


def psp_key(vcek_d, measurement, policy):
    # tests/snpm/model/psp.c psp_model_init, make_key
    root = hmac.new(vcek_d, b"csvsm sim-psp key-derivation root v1", hashlib.sha384).digest()
    root_key_select, gfs, vmpl = 1 << 1, (1 << 0) | (1 << 3), 0
    ctx = b"csvsm sim-psp derived key v1" + struct.pack("<IQI", root_key_select, gfs, vmpl)
    ctx += struct.pack("<Q", policy) + measurement
    return hmac.new(root, ctx, hashlib.sha384).digest()[:32]


def hkdf_sha256(ikm, info, length=32):
    prk = hmac.new(b"\0" * 32, ikm, hashlib.sha256).digest()  # RFC 5869, no salt
    okm, t, i = b"", b"", 1
    while len(okm) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        okm += t
        i += 1
    return okm[:length]


def main():
    if sys.argv[1] == "--kbs-root":
        root, inst, blob_path, marker = bytes.fromhex(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
        logs, mode, rname = sys.argv[6:], 2, "the registry's root key"
    else:
        keys, meas, policy, inst, blob_path, marker = sys.argv[1:7]
        logs, mode, rname = sys.argv[7:], 1, "the MSG_KEY_REQ key"
        vcek_d = open(keys, "rb").read()[0x60:0x90]
        root = psp_key(vcek_d, bytes.fromhex(meas), int(policy, 0))
    instance = bytes.fromhex(inst)
    state_key = hkdf_sha256(root, b"csvsm vtpm state key v1" + struct.pack("<I", mode) + instance)
    blob = open(blob_path, "rb").read()
    plain = b""
    try:
        hdr, body = blob[:96], blob[96:]
        plain = AESGCM(state_key).decrypt(hdr[0x30:0x3C], body, hdr)
        tap(True, "the newest sealed state opens with the key the test derives (%d bytes, version %d)"
            % (len(plain), struct.unpack_from("<Q", hdr, 0x20)[0]))
    except Exception as e:  # noqa: BLE001 - any failure is the finding
        tap(False, "the newest sealed state opens with the key the test derives (%s)" % e)
    mark = marker.encode()
    tap(mark in plain, "the opened state holds the probe's NV marker")
    blocks = {plain[i:i + 16] for i in range(0, len(plain) - 15, 16)}
    blocks = {b for b in blocks if len(set(b)) > 1}
    secrets = [(rname, root), ("the state key", state_key), ("the NV marker", mark)]
    for path in logs + [blob_path]:
        data = open(path, "rb").read()
        text = data.lower()
        for name, s in secrets:
            # raw, as hex, and base64/base64url-encoded inside a relayed JSON body
            # (which the proxy logs as hex)
            enc = [base64.b64encode(s).rstrip(b"="), base64.urlsafe_b64encode(s).rstrip(b"=")]
            found = s in data or s.hex().encode() in text or any(
                e in data or e.hex().encode() in text for e in enc)
            tap(not found, "%s: no %s" % (path.split("/")[-1], name))
        leaked = [b for b in blocks if b in data or b.hex().encode() in text]
        tap(not leaked, "%s: no 16-byte block of the plaintext state (%d blocks looked for)%s"
            % (path.split("/")[-1], len(blocks), " - %d found" % len(leaked) if leaked else ""))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
