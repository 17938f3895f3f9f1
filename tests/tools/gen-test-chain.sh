#!/bin/sh
# gen-test-chain.sh OUTDIR: a test SEV-SNP certificate chain shaped like
# AMD's (snp-svsm-interfaces.md §7 "Certificate chain"), and the keys blob
# for the SNP machine's PSP model (tests/snpm/model/psp.h). Run at build time;
# the private keys stay in OUTDIR (under build/) and are never committed.
#
#   ARK  RSA-4096, self-signed, RSASSA-PSS SHA-384 / MGF1-SHA384 / salt 48, CN ARK-Test
#   ASK  RSA-4096, signed by the ARK, same PSS parameters,              CN SEV-Test
#   VCEK ECDSA P-384, signed by the ASK with PSS, CN SEV-VCEK, with AMD's
#        extensions 1.3.6.1.4.1.3704.1.{1 structVersion, 2 productName,
#        3.1 blSPL, 3.2 teeSPL, 3.3 snpSPL, 3.8 ucodeSPL, 4 hwID}
#
# Outputs: ark.pem ask.pem vcek.pem vcek.der vcek-key.der (SEC1 DER private
# key) psp-keys.bin (fw_cfg opt/csvsm/psp-keys) and chip-id.hex / tcb.txt.
# The TCB and CHIP_ID in the VCEK equal what the sim PSP puts in reports.
# Also ark-key.pem and ask-key.pem, the CA keys, so tests can sign CRLs
# (tests/kbs/kbs.sh: the ARK's CRL revoking the ASK, the ASK's revoking the
# VCEK, as AMD's KDS `crl` is the ARK's); serials: ARK 1, ASK 2, VCEK 3.
set -eu

OUT=${1:?usage: gen-test-chain.sh OUTDIR}
# Milan TCB_VERSION: BL byte 0, TEE byte 1, SNP byte 6, UCODE byte 7.
BL_SPL=${BL_SPL:-4}
TEE_SPL=${TEE_SPL:-0}
SNP_SPL=${SNP_SPL:-21}
UCODE_SPL=${UCODE_SPL:-209}
PRODUCT=${PRODUCT:-Milan-B0}
# CPUID family/model/stepping the reports carry (Milan: 0x19, 0x01, 0x01).
CPUID_FAM=25 CPUID_MOD=1 CPUID_STEP=1
DAYS=3650

mkdir -p "$OUT"
T=$(mktemp -d "$OUT/.gen.XXXXXX")
trap 'rm -rf "$T"' EXIT
umask 077

PSS="-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384"
SUBJ="/OU=Engineering/O=csvsm test"

cat >"$T/ca.ext" <<EOT
basicConstraints=critical,CA:true
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
EOT

# ARK (self-signed)
openssl req -x509 -newkey rsa:4096 -nodes -keyout "$T/ark-key.pem" -sha384 $PSS \
	-subj "$SUBJ/CN=ARK-Test" -days $DAYS -set_serial 1 \
	-addext "basicConstraints=critical,CA:true" \
	-addext "keyUsage=critical,keyCertSign,cRLSign" -out "$T/ark.pem" 2>/dev/null

# ASK (signed by the ARK)
openssl req -new -newkey rsa:4096 -nodes -keyout "$T/ask-key.pem" -subj "$SUBJ/CN=SEV-Test" \
	-out "$T/ask.csr" 2>/dev/null
openssl x509 -req -in "$T/ask.csr" -CA "$T/ark.pem" -CAkey "$T/ark-key.pem" -sha384 $PSS \
	-set_serial 2 -days $DAYS -extfile "$T/ca.ext" -out "$T/ask.pem" 2>/dev/null

# VCEK (P-384, signed by the ASK)
openssl rand -hex 64 | tr -d '\n' >"$T/chip-id.hex"
CHIP=$(cat "$T/chip-id.hex")
openssl ecparam -name secp384r1 -genkey -noout -out "$T/vcek-key.pem"
openssl ec -in "$T/vcek-key.pem" -outform DER -out "$T/vcek-key.der" 2>/dev/null
openssl req -new -key "$T/vcek-key.pem" -subj "$SUBJ/CN=SEV-VCEK" -out "$T/vcek.csr"
cat >"$T/vcek.ext" <<EOT
keyUsage=critical,digitalSignature
1.3.6.1.4.1.3704.1.1=ASN1:INTEGER:1
1.3.6.1.4.1.3704.1.2=ASN1:IA5STRING:$PRODUCT
1.3.6.1.4.1.3704.1.3.1=ASN1:INTEGER:$BL_SPL
1.3.6.1.4.1.3704.1.3.2=ASN1:INTEGER:$TEE_SPL
1.3.6.1.4.1.3704.1.3.3=ASN1:INTEGER:$SNP_SPL
1.3.6.1.4.1.3704.1.3.8=ASN1:INTEGER:$UCODE_SPL
1.3.6.1.4.1.3704.1.4=DER:$CHIP
EOT
openssl x509 -req -in "$T/vcek.csr" -CA "$T/ask.pem" -CAkey "$T/ask-key.pem" -sha384 $PSS \
	-set_serial 3 -days $DAYS -extfile "$T/vcek.ext" -out "$T/vcek.pem" 2>/dev/null
openssl x509 -in "$T/vcek.pem" -outform DER -out "$T/vcek.der"
openssl x509 -in "$T/ask.pem" -outform DER -out "$T/ask.der"
openssl x509 -in "$T/ark.pem" -outform DER -out "$T/ark.der"

# Self-check: the chain verifies with the PSS parameters above.
openssl verify -CAfile "$T/ark.pem" "$T/ask.pem" >/dev/null
openssl verify -CAfile "$T/ark.pem" -untrusted "$T/ask.pem" "$T/vcek.pem" >/dev/null

# The PSP model's keys blob (format in tests/snpm/model/psp.h).
python3 - "$T" "$BL_SPL" "$TEE_SPL" "$SNP_SPL" "$UCODE_SPL" "$CPUID_FAM" "$CPUID_MOD" "$CPUID_STEP" <<'EOT'
import struct, sys, uuid
t = sys.argv[1]
bl, tee, snp, ucode, fam, mod, step = (int(x) for x in sys.argv[2:9])

def sec1_scalar(der):
    # ECPrivateKey ::= SEQUENCE { INTEGER 1, OCTET STRING privateKey, ... } (RFC 5915)
    assert der[0] == 0x30
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    assert der[i:i + 3] == b"\x02\x01\x01" and der[i + 3] == 0x04
    n = der[i + 4]
    d = der[i + 5:i + 5 + n]
    assert n <= 48
    return d.rjust(48, b"\0")

d = sec1_scalar(open(f"{t}/vcek-key.der", "rb").read())
chip = bytes.fromhex(open(f"{t}/chip-id.hex").read().strip())
assert len(chip) == 64
tcb = bl | tee << 8 | snp << 48 | ucode << 56
certs = [("63da758d-e664-4564-adc5-f4b93be8accd", "vcek.der"),
         ("4ab7b379-bbac-4fe4-a02f-05aef327c782", "ask.der"),
         ("c0b406a4-a803-4952-9743-3fb6014cd0ae", "ark.der")]
# §6.5: 24-byte entries (RFC-4122 GUID bytes, offset, length), zero entry, data.
off = 24 * (len(certs) + 1)
table, data = b"", b""
for g, f in certs:
    blob = open(f"{t}/{f}", "rb").read()
    table += uuid.UUID(g).bytes + struct.pack("<II", off + len(data), len(blob))
    data += blob
table += bytes(24) + data
hdr = b"CSVSMPSK" + struct.pack("<II", 1, 0x98 + len(table)) + struct.pack("<Q", tcb)
hdr += bytes([fam, mod, step]) + bytes(5) + chip + d + struct.pack("<II", len(table), 0)
assert len(hdr) == 0x98
open(f"{t}/psp-keys.bin", "wb").write(hdr + table)
open(f"{t}/tcb.txt", "w").write(f"0x{tcb:016x}\n")
EOT

for f in ark.pem ask.pem vcek.pem vcek.der vcek-key.der chip-id.hex tcb.txt ark-key.pem ask-key.pem \
	psp-keys.bin; do
	mv -f "$T/$f" "$OUT/$f"
done
echo "gen-test-chain: $OUT (ARK-Test -> SEV-Test -> SEV-VCEK, TCB $(cat "$OUT/tcb.txt"))"
