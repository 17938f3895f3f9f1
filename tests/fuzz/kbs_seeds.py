#!/usr/bin/env python3
"""Seeds for tests/fuzz/fuzz_kbs_request.c (its header gives the input layout)."""
import base64, json, os, sys

out = sys.argv[1]
def seed(name, method, ctype, cookie, path, body):
    p = path.encode()
    open(os.path.join(out, "seed-" + name), "wb").write(bytes([method, ctype, cookie, len(p)]) + p + body.encode())

b64 = lambda b: base64.b64encode(b).decode()
jwk = {"kty": "EC", "crv": "P-256", "alg": "ECDH-ES+A256KW",
       "x": "MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4", "y": "4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}
svsm = {"svsm": {"report": b64(bytes(1184)), "manifest": b64(bytes.fromhex("bb9e8463923d7046a1ff58f9c94b87bb") + (24).to_bytes(4, "little") + bytes(4))}}
report = {"version": 3, "guest_svn": 0, "policy": 196608, "family_id": [0] * 16, "image_id": [0] * 16, "vmpl": 0,
          "sig_algo": 1, "current_tcb": {"fmc": None, "bootloader": 4, "tee": 0, "snp": 21, "microcode": 209},
          "plat_info": 3, "key_info": 0, "report_data": [0] * 64, "measurement": [0] * 48, "host_data": [0] * 32,
          "id_key_digest": [0] * 48, "author_key_digest": [0] * 48, "report_id": [0] * 32, "report_id_ma": [0] * 32,
          "reported_tcb": {"fmc": None, "bootloader": 4, "tee": 0, "snp": 21, "microcode": 209},
          "cpuid_fam_id": 25, "cpuid_mod_id": 1, "cpuid_step": 1, "chip_id": [0] * 64,
          "committed_tcb": {"fmc": None, "bootloader": 4, "tee": 0, "snp": 21, "microcode": 209},
          "current": {"major": 1, "minor": 55, "build": 0}, "committed": {"major": 1, "minor": 55, "build": 0},
          "launch_tcb": {"fmc": None, "bootloader": 4, "tee": 0, "snp": 21, "microcode": 209},
          "launch_mit_vector": None, "current_mit_vector": None, "signature": {"r": [0] * 72, "s": [0] * 72}}
snp = {"attestation_report": report, "cert_chain": [{"cert_type": "VCEK", "data": [48, 0]}]}
new = lambda ev: json.dumps({"runtime-data": {"nonce": "AAAA", "tee-pubkey": jwk},
                             "tee-evidence": {"primary_evidence": ev, "additional_evidence": ""}})
seed("auth", 1, 0, 0, "/kbs/v0/auth", json.dumps({"version": "0.4.0", "tee": "snp", "extra-params": {"supported-hash-algorithms": ["sha384"]}}))
seed("attest-svsm", 1, 0, 1, "/kbs/v0/attest", new(svsm))
seed("attest-snp", 1, 0, 1, "/kbs/v0/attest", new(snp))
seed("attest-legacy", 1, 0, 1, "/kbs/v0/attest", json.dumps({"tee-pubkey": jwk, "tee-evidence": svsm}))
seed("resource", 0, 3, 2, "/kbs/v0/resource/a/b/c", "")
# the persistent vTPM (kbs/vtpm.c): an unlock manifest's attestation, the state key's
# release, a commit and an EK request as flattened JWS (the signature does not verify:
# the fuzzer explores the parsing before it and the refusals)
b64u = lambda b: base64.urlsafe_b64encode(b).decode().rstrip("=")
unlock = (bytes.fromhex("bb9e8463923d7046a1ff58f9c94b87bb") + (72).to_bytes(4, "little") + (1).to_bytes(4, "little")
          + bytes.fromhex("0ca3eb9768caa34f986cd3a1e4444973") + (48).to_bytes(4, "little") + (24).to_bytes(4, "little")
          + bytes(16) + (2).to_bytes(4, "little") + (1).to_bytes(4, "little"))
seed("attest-vtpm", 1, 0, 1, "/kbs/v0/attest", json.dumps({"tee-pubkey": jwk, "tee-evidence": {"svsm": {"report": b64(bytes(1184)), "manifest": b64(unlock)}}}))
seed("vtpm-release", 0, 3, 2, "/kbs/v0/resource/csvsm-vtpm/" + "00" * 16 + "/state-key", "")
hdr = b64u(json.dumps({"alg": "ES384", "jwk": {"crv": "P-384", "kty": "EC", "x": b64u(bytes(48)), "y": b64u(bytes(48))}}).encode())
jws = lambda p: json.dumps({"protected": hdr, "payload": b64u(json.dumps(p).encode()), "signature": b64u(bytes(96))})
seed("vtpm-commit", 1, 0, 0, "/kbs/v0/csvsm/vtpm/commit", jws({"instance": "00" * 16, "lease": "L", "nonce": "n", "seq": 1, "version": 1, "sealed-sha256": "00" * 32}))
seed("vtpm-ek", 1, 0, 0, "/kbs/v0/csvsm/vtpm/ek-certificate", jws({"instance": "00" * 16, "lease": "L", "nonce": "n", "ek-public": b64u(bytes(314)), "tpm-manufacturer": 1, "tpm-model": "m", "tpm-version": 1, "tpm-level": 0, "tpm-revision": 164}))
