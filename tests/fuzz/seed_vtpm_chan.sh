#!/usr/bin/env bash
# Seeds for build/fuzz/fuzz_vtpm_chan (tests/fuzz/fuzz_vtpm_chan.c), written
# into an empty corpus directory: one input per parser, each well formed
# as far as can be without keys (the signatures and tags are random, so the
# fuzzer starts past the parsing into the checks).
set -eu
dir=$1
mkdir -p "$dir"
[ -z "$(ls -A "$dir")" ] || exit 0
python3 - "$dir" <<'PY'
import base64, json, os, struct, sys, zlib
d = sys.argv[1]
def b64u(b): return base64.urlsafe_b64encode(b).rstrip(b"=")
def esc(b): return b"".join(bytes([1, x + 1]) if x <= 1 else bytes([x]) for x in b)
def frame(t, seq, p):
    h = struct.pack("<IBBHII", 0x54565343, 1, t, 0, seq, len(p))
    return esc(h + p + struct.pack("<I", zlib.crc32(h + p)))
def put(name, sel, body): open(os.path.join(d, name), "wb").write(bytes([sel]) + body)
put("frames", 0, frame(2, 1, struct.pack("<I", 1)) + b"\0\0" + frame(4, 2, struct.pack("<I", 0)))
hdr = b"CSVSMVT1" + struct.pack("<II", 1, 1) + bytes([1, 2, 3]) + bytes(13) + struct.pack("<QII", 1, 1, 32) + os.urandom(12) + bytes(4) + os.urandom(16) + bytes(16)
put("sealed", 1, hdr + os.urandom(32 + 16))
put("json", 2, b'{"nonce":"abc","version":3,"jwk":{"x":"AA","kty":"EC"},"alg":"ES384","a":[1,2.5e3,true,null]}')
jwk = {"kty": "EC", "crv": "P-384", "x": b64u(os.urandom(48)).decode(), "y": b64u(os.urandom(48)).decode()}
jwk256 = {"kty": "EC", "crv": "P-256", "x": b64u(os.urandom(32)).decode(), "y": b64u(os.urandom(32)).decode()}
jws_h = b64u(json.dumps({"alg": "ES256", "typ": "JWT", "jwk": jwk256}).encode())
jwe_h = b64u(json.dumps({"alg": "ECDH-ES+A256KW", "enc": "A256GCM", "epk": jwk}).encode())
jwe = json.dumps({"protected": jwe_h.decode(), "encrypted_key": b64u(os.urandom(40)).decode(), "iv": b64u(os.urandom(12)).decode(),
                  "ciphertext": b64u(os.urandom(32)).decode(), "tag": b64u(os.urandom(16)).decode()}).encode()
payload = b'{"instance":"01000000000000000000000000000000","nonce":"nonce","version":1,"lease":"l","lease-expires":1,"key":' + jwe + b"}"
jws = jws_h + b"." + b64u(payload) + b"." + b64u(os.urandom(64))
put("jws", 3, jws)
put("jwe", 4, jwe)
put("release", 5, jws)
PY
