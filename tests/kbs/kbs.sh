#!/usr/bin/env bash
# csvsm-kbs end to end on loopback (docs/kbs.md "Tests"): daemons on
# 127.0.0.1 (plain HTTP, --insecure-http), bounded by --max-seconds, each
# stopped by its PID on every exit path; a throw-away PostgreSQL cluster
# (tests/kbs/pg.sh); csvsm's hosted vTPM (build/csvsm-tpm) for the quote.
#
#   - full RCAR exchanges, affirming under the matching policy, the secret
#     opened with the TEE key (EC and RSA keys, the 0.1 and 0.4 Attestation
#     shapes, cookie and bearer token, csvsm's SVSM and Trustee's SNP forms,
#     certificates from the evidence or the offline KDS cache)
#   - contraindicated, with the reason, for: wrong measurement, DEBUG,
#     MIGRATE_MA, TCB below minimum, VMPL 2, a nonce not the server's, a key
#     not the bound one, an EK not the manifest's, quote PCRs not the reference
#     (and a bit-flipped report, a chain without a trusted root, no certificates)
#   - bad input gets an HTTP error: malformed and oversized JSON, truncated
#     reports, unknown paths, methods, content types, slow and half-open
#     clients, a replayed /attest
#   - 64 concurrent clients, every answer right, no registry update lost
#   - SIGKILL while writing: the registry is consistent and the secret intact
#   - the registry's guarantees on SQLite and PostgreSQL; two replicas on one
#     PostgreSQL never both accept a nonce or a lease
#   - csvsm-verify --policy gives the same verdict offline
#   - CRLs: the ARK's revoking the ASK, an ASK's revoking the VCEK, the VCEK's serial on the
#     ARK's CRL (not revoked), another product line's, a foreign and a forged one (--crl,
#     signed with build/test-chain's ark-key.pem and ask-key.pem)
#   - the review's attacks (docs/kbs.md "Review"): a failing check after 48 others, an 11 KB
#     EAR, a contraindicated report naming a registered instance, a token or session of an
#     edited policy, a flood of /auth (--max-sessions), a trickling client and one address's
#     connections (--request-timeout, --max-conn-per-ip), an oversized TEE key
#   - the persistent vTPM (csvsm's own client): the signed key release, the first
#     manufacture's consent and EK certificate (openssl verify, the TCG fields), commits,
#     and each refusal: a clone while the lease runs, another digest, an older or skipped
#     version, a replayed commit, a forged signer, an EK after the first manufacture, an
#     unregistered instance, another launch image, the lapsed lease taken (database
#     clock) and the old holder's next commit refused, the owner's release
# Builds nothing: `make` first. KBS=binary runs the same cases on another build.
set -u
cd "$(dirname "$0")/../.."
. tests/kbs/pg.sh
KBS=${KBS:-build/csvsm-kbs} # KBS=other-binary: the same tests on another build (before/after)
CLIENT=build/csvsm-kbs-client
REGTEST=build/kbs-registry-test
APPTEST=build/kbs-appraise-test
VERIFY=build/csvsm-verify
TPMSRV=build/csvsm-tpm
CHAIN=${CHAIN:-build/test-chain}
T=$(mktemp -d)
PIDS=()
n=0 failed=0
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	pg_stop
	rm -rf "$T"
}
trap cleanup EXIT
trap "exit 143" TERM INT HUP
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/# /' "$2" | tail -n 15; }

for f in "$KBS" "$CLIENT" "$REGTEST" "$APPTEST" "$VERIFY" "$CHAIN/psp-keys.bin" "$CHAIN/ark.pem" "$CHAIN/ark-key.pem"; do
	[ -e "$f" ] || { echo "not ok 1 - $f exists (make)"; exit 1; }
done
command -v python3 >/dev/null || { echo "not ok 1 - python3"; exit 1; }

M=$(printf 'c5%.0s' $(seq 48))
M2=$(printf 'a1%.0s' $(seq 48))
policy() { # policy FILE MIN_SNP EXTRA_TOP SVSM
	cat >"$1" <<EOF
{"version": 1, "comment": "tests/kbs/kbs.sh",
 "snp": {"policy": "0x30000", "vmpl": 0, "measurement": "$M",
         "minimum_tcb": {"bl": 4, "tee": 0, "snp": $2, "ucode": 209}}$3$4}
EOF
}
policy "$T/main.json" 21 "" ', "svsm": {}'
policy "$T/hightcb.json" 22 "" ', "svsm": {}'
policy "$T/snp.json" 21 "" ""
policy "$T/same.json" 21 ', "instance_identity": "host_data"' ', "svsm": {}'
printf 's3cret' >"$T/secret"

# start NAME POLICY DB [options]: a daemon on an ephemeral loopback port; sets PORT_NAME
start() {
	local name=$1 pol=$2 db=$3
	shift 3
	rm -f "$T/$name.port"
	"$KBS" serve --policy "$pol" --db "$db" --listen 127.0.0.1:0 --insecure-http \
		--port-file "$T/$name.port" --max-seconds 600 --idle-timeout 2 "$@" 2>"$T/$name.log" &
	local pid=$!
	PIDS+=("$pid")
	eval "PID_$name=$pid"
	for _ in $(seq 1 100); do
		[ -s "$T/$name.port" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	eval "PORT_$name=$(cat "$T/$name.port" 2>/dev/null || echo 0)"
	[ -s "$T/$name.port" ]
}
stop() { local p; eval "p=\$PID_$1"; kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; }
put() { "$KBS" put-secret --db "$1" default/key/one --rule "${2:-affirming}" --file "$T/secret" >/dev/null; }

# rcar NAME OUT [client options]: one exchange against daemon NAME
rcar() {
	local name=$1 out=$2
	shift 2
	local port
	eval "port=\$PORT_$name"
	"$CLIENT" rcar --port "$port" --chain "$CHAIN" --resource default/key/one "$@" >"$out" 2>&1
}
affirmed() { grep -qx 'status affirming' "$1" && grep -qx 'secret s3cret' "$1" && grep -qx 'token-tee-pubkey is ours' "$1"; }
# contra OUT CHECK: contraindicated, the check failed and is the claim's reason, no secret
contra() {
	grep -qx 'status contraindicated' "$1" && grep -q "^fail $2:" "$1" && grep -q "^reason [a-z-]* $2:" "$1" &&
		grep -q '^resource-http 403 .*PolicyDeny' "$1" && ! grep -q '^secret' "$1"
}
check_ok() { if "$@"; then ok "$D"; else nok "$D" "$LAST"; fi; }

put "sqlite:$T/a.db"
start A "$T/main.json" "sqlite:$T/a.db" --trust-ark "$CHAIN/ark.pem" || { nok "csvsm-kbs starts" "$T/A.log"; exit 1; }
ok "csvsm-kbs serves on 127.0.0.1 ($(head -n1 "$T/A.log" | cut -c1-100))"

# --- affirming exchanges ---------------------------------------------------------------------
LAST=$T/r1; rcar A "$LAST" --measurement "$M"
D="RCAR with csvsm's SVSM evidence (PSP model, test chain): affirming, the secret opens with the EC TEE key"; check_ok affirmed "$LAST"
LAST=$T/r2; rcar A "$LAST" --measurement "$M" --rsa
D="the same with an RSA TEE key (RSA-OAEP-256 + A256GCM)"; check_ok affirmed "$LAST"
LAST=$T/r3; rcar A "$LAST" --measurement "$M" --legacy
D="the protocol 0.1 Attestation shape (tee-pubkey, tee-evidence): affirming"; check_ok affirmed "$LAST"
LAST=$T/r4; rcar A "$LAST" --measurement "$M" --bearer
D="the resource with the token as a bearer (Authorization), no cookie"; check_ok affirmed "$LAST"
LAST=$T/r5; rcar A "$LAST" --measurement "$M" --replay
D="a replayed /attest on the same session is refused (401), the first one stands"
check_ok grep -qx 'replay-http 401' "$LAST"

# --- contraindicated, each with its reason ---------------------------------------------------
while IFS='|' read -r what chk opts; do
	LAST=$T/c-$chk.$n
	# shellcheck disable=SC2086
	rcar A "$LAST" $opts
	D="$what: contraindicated, reason '$chk', no secret (403)"
	check_ok contra "$LAST" "$chk"
done <<EOF
wrong measurement|measurement|--measurement $M2
guest POLICY with DEBUG|policy.debug|--measurement $M --guest-policy 0xB0000
guest POLICY with MIGRATE_MA|policy.migrate_ma|--measurement $M --guest-policy 0x70000
a guest's report at VMPL 2 forging the SVSM binding|policy.vmpl|--measurement $M --vmpl 2
runtime-data.nonce not the server's|freshness.nonce|--measurement $M --claim-nonce AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
evidence binding another TEE key than the one sent|report_data|--measurement $M --wrong-key
a report with one bit flipped (VMPL field)|signature|--measurement $M --flip 0x30
no certificates in the evidence and no offline cache (no VCEK to check the signature with)|signature|--measurement $M --no-certs
EOF
LAST=$T/jp; rcar A "$LAST" --measurement "$M" --jwk-pad 3000
D="a TEE key JWK with a 3000-character extra member is a 400 naming tee-pubkey (before: 500 once the nonce was used)"
check_ok grep -q '^http-attest 400' "$LAST"
LAST=$T/t1; rcar A "$LAST" --measurement "$M" --truncate 1000
D="a truncated report (1000 bytes) is a 400 naming svsm.report"; check_ok grep -q '^http-attest 400' "$LAST"
grep -q 'svsm.report: 1000 bytes' "$LAST" || nok "the 400 says why" "$LAST"

put "sqlite:$T/b.db"
start B "$T/hightcb.json" "sqlite:$T/b.db" --trust-ark "$CHAIN/ark.pem"
LAST=$T/b1; rcar B "$LAST" --measurement "$M"
D="TCB below the policy's minimum (snp 21 < 22): contraindicated, reason 'policy.min_tcb'"; check_ok contra "$LAST" policy.min_tcb

put "sqlite:$T/n.db"
start N "$T/main.json" "sqlite:$T/n.db"
LAST=$T/n1; rcar N "$LAST" --measurement "$M"
D="a chain whose root is not an AMD ARK nor a configured one: contraindicated, reason 'chain'"; check_ok contra "$LAST" chain

# Trustee's SNP form, and the offline KDS cache
put "sqlite:$T/s.db"
start S "$T/snp.json" "sqlite:$T/s.db" --trust-ark "$CHAIN/ark.pem"
LAST=$T/s1; rcar S "$LAST" --measurement "$M" --snp-form
D="Trustee's SNP evidence form (virtee/sev AttestationReport serde, cert_chain): affirming"; check_ok affirmed "$LAST"
LAST=$T/s2; rcar S "$LAST" --measurement "$M" --snp-form --wrong-key
D="Trustee's SNP form binding another key: contraindicated, reason 'report_data'"; check_ok contra "$LAST" report_data
mkdir -p "$T/kds/vcek/$(cat "$CHAIN/chip-id.hex")" "$T/kds/milan"
cp "$CHAIN/vcek.der" "$T/kds/vcek/$(cat "$CHAIN/chip-id.hex")/vcek.der"
cp "$CHAIN/ask.pem" "$T/kds/milan/ask.pem"
cp "$CHAIN/ark.pem" "$T/kds/milan/ark.pem"
put "sqlite:$T/k.db"
start K "$T/main.json" "sqlite:$T/k.db" --trust-ark "$CHAIN/ark.pem" --kds-dir "$T/kds"
LAST=$T/k1; rcar K "$LAST" --measurement "$M" --no-certs
D="no certificates in the evidence, VCEK/ASK/ARK from the offline cache (KDS layout): affirming"; check_ok affirmed "$LAST"

# --- CRLs (appraisal_crl_judge, RFC 5280 §6.3.3: a CRL speaks for what its issuer issued) -------
# mkcrl OUT CA-CERT CA-KEY [SERIAL...]: a CRL by that CA (RSASSA-PSS SHA-384 salt 48, as AMD's
# KDS `crl`) revoking the given serials (hex), from an `openssl ca` database written here.
mkcrl() {
	local out=$1 cert=$2 key=$3 d
	shift 3
	d=$(mktemp -d "$T/ca.XXXXXX")
	: >"$d/index.txt"
	for s in "$@"; do printf 'R\t351231000000Z\t240101000000Z\t%s\tunknown\t/CN=revoked\n' "$s" >>"$d/index.txt"; done
	echo 01 >"$d/crlnumber"
	printf '[ca]\ndefault_ca=d\n[d]\ndatabase=%s\ncrlnumber=%s\ndefault_md=sha384\ndefault_crl_days=30\n' \
		"$d/index.txt" "$d/crlnumber" >"$d/ca.cnf"
	openssl ca -config "$d/ca.cnf" -gencrl -keyfile "$key" -cert "$cert" -out "$out" \
		-sigopt rsa_padding_mode:pss -sigopt rsa_pss_saltlen:48 -sigopt rsa_mgf1_md:sha384 >"$d/log" 2>&1
}
mkdir -p "$T/ca"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca/k.pem" -out "$T/ca/c.pem" -subj /CN=not-the-ark -days 1 >/dev/null 2>&1
# a root with the test ARK's name and another key (a forged "ARK" CRL)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca/fk.pem" -out "$T/ca/fc.pem" \
	-subj "/OU=Engineering/O=csvsm test/CN=ARK-Test" -days 1 >/dev/null 2>&1
ask_serial=$(openssl x509 -in "$CHAIN/ask.pem" -noout -serial | cut -d= -f2)
vcek_serial=$(openssl x509 -in "$CHAIN/vcek.pem" -noout -serial | cut -d= -f2)
mkcrl "$T/ca/other.pem" "$T/ca/c.pem" "$T/ca/k.pem" &&
	mkcrl "$T/ca/ark-none.pem" "$CHAIN/ark.pem" "$CHAIN/ark-key.pem" &&
	mkcrl "$T/ca/ark-ask.pem" "$CHAIN/ark.pem" "$CHAIN/ark-key.pem" 10 "$ask_serial" &&
	mkcrl "$T/ca/ark-vcekserial.pem" "$CHAIN/ark.pem" "$CHAIN/ark-key.pem" "$vcek_serial" &&
	mkcrl "$T/ca/ask-vcek.pem" "$CHAIN/ask.pem" "$CHAIN/ask-key.pem" "$vcek_serial" &&
	mkcrl "$T/ca/forged.pem" "$T/ca/fc.pem" "$T/ca/fk.pem" ||
	nok "test CRLs signed with the test chain's ARK and ASK keys ($CHAIN/ark-key.pem, make)"
# crlcase NAME WHAT CHECK|affirming CRL...: a daemon with these CRLs, one exchange, and
# csvsm-verify --policy --crl on that exchange's evidence gives the same verdict
crlcase() {
	local name=$1 what=$2 want=$3 args=() vargs=()
	shift 3
	for c in "$@"; do args+=(--crl "$c"); done
	vargs=("${args[@]}")
	put "sqlite:$T/$name.db"
	start "$name" "$T/main.json" "sqlite:$T/$name.db" --trust-ark "$CHAIN/ark.pem" "${args[@]}"
	mkdir -p "$T/$name.ev"
	LAST=$T/$name.out; rcar "$name" "$LAST" --measurement "$M" --dump "$T/$name.ev"
	"$VERIFY" --policy "$T/main.json" --report "$T/$name.ev/report.bin" --cert-table "$T/$name.ev/certs.bin" \
		--trust-ark "$CHAIN/ark.pem" --nonce "$(cat "$T/$name.ev/nonce64.hex")" \
		--manifest "$T/$name.ev/manifest.bin" "${vargs[@]}" >"$T/$name.vp" 2>&1
	local vrc=$?
	if [ "$want" = affirming ]; then
		D="$what: affirming, the secret released; csvsm-verify --policy --crl agrees (exit $vrc)"
		check_ok eval "affirmed $LAST && [ $vrc -eq 0 ] && grep -q 'PASS. chain.crl' $T/$name.vp"
	else
		D="$what: contraindicated, reason '$want' ($(sed -n "s/^fail $want: //p" "$LAST" | head -1)); csvsm-verify --policy --crl agrees (exit $vrc)"
		check_ok eval "contra $LAST $want && [ $vrc -eq 1 ] && grep -q 'FAIL. $want' $T/$name.vp"
	fi
}
crlcase C0 "the ARK's CRL revoking nothing" affirming "$T/ca/ark-none.pem"
crlcase C1 "the ARK's CRL revoking the ASK (serial $ask_serial)" chain.crl "$T/ca/ark-ask.pem"
grep -q "revoked: the ASK/ASVK (serial $ask_serial)" "$T/C1.out" || nok "the reason names the revoked ASK" "$T/C1.out"
crlcase C2 "the ASK's CRL revoking the VCEK (serial $vcek_serial), with the ARK's" chain.crl "$T/ca/ark-none.pem" "$T/ca/ask-vcek.pem"
grep -q "revoked: the VCEK/VLEK (serial $vcek_serial)" "$T/C2.out" || nok "the reason names the revoked VCEK" "$T/C2.out"
crlcase C3 "the ARK's CRL listing the VCEK's serial number (the ARK did not issue the VCEK; AMD's VCEKs all have serial 0)" affirming "$T/ca/ark-vcekserial.pem"
crlcase C4 "another product line's CRL next to this chain's ARK's (a fleet of Milan and Genoa)" affirming "$T/ca/ark-none.pem" "$T/ca/other.pem"
crlcase C5 "a CRL another CA issued, none of this chain's ARK" chain.crl "$T/ca/other.pem"
crlcase C6 "a CRL naming the ARK as issuer, signed by another key" chain.crl "$T/ca/forged.pem" "$T/ca/ark-none.pem"
"$VERIFY" --report "$T/C1.ev/report.bin" --cert-table "$T/C1.ev/certs.bin" --trust-ark "$CHAIN/ark.pem" \
	--crl "$T/ca/ark-ask.pem" >"$T/vcrl" 2>&1; rc=$?
LAST=$T/vcrl; D="csvsm-verify --crl without --policy: the revoked ASK fails 'chain.crl' (exit $rc)"
check_ok eval "[ $rc -eq 1 ] && grep -q 'FAIL. chain.crl.*revoked: the ASK' $T/vcrl"

# HTTPS with a key and certificate; plain HTTP refused off loopback
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$T/tls.key" -out "$T/tls.crt" \
	-subj /CN=127.0.0.1 -days 1 >/dev/null 2>&1
rm -f "$T/tls.port"
"$KBS" serve --policy "$T/main.json" --db "sqlite:$T/tls.db" --listen 127.0.0.1:0 --tls-cert "$T/tls.crt" \
	--tls-key "$T/tls.key" --port-file "$T/tls.port" --max-seconds 60 2>"$T/tls.log" &
PIDS+=("$!")
for _ in $(seq 1 100); do [ -s "$T/tls.port" ] && break; sleep 0.05; done
python3 - "$(cat "$T/tls.port" 2>/dev/null || echo 0)" "$T/tls.crt" >"$T/tls.out" 2>&1 <<'EOF2'
import http.client, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[2]); ctx.check_hostname = False
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[1]), context=ctx, timeout=10)
c.request("POST", "/kbs/v0/auth", '{"version":"0.4.0","tee":"snp","extra-params":{}}', {"Content-Type": "application/json"})
r = c.getresponse()
print(r.status, r.getheader("Set-Cookie"))
EOF2
LAST=$T/tls.out; D="HTTPS (--tls-cert/--tls-key): /auth answers 200 over TLS, the cookie marked Secure"
check_ok grep -q '^200 kbs-session-id=.*; Secure' "$T/tls.out"
"$KBS" serve --policy "$T/main.json" --db "sqlite:$T/off.db" --listen 0.0.0.0:0 --insecure-http --max-seconds 1 >"$T/off.log" 2>&1
rc=$?
LAST=$T/off.log; D="--insecure-http on 0.0.0.0 is refused (exit $rc: $(cut -c1-80 "$T/off.log"))"
check_ok eval "[ $rc -eq 2 ] && grep -q 'loopback address only' $T/off.log"

# --- csvsm-verify --policy: the same verdict offline -----------------------------------------
mkdir -p "$T/dump" "$T/dump2"
rcar A "$T/v1" --measurement "$M" --dump "$T/dump" >/dev/null
rcar A "$T/v2" --measurement "$M" --guest-policy 0xB0000 --dump "$T/dump2" >/dev/null
verify_policy() { "$VERIFY" --policy "$T/main.json" --report "$1/report.bin" --cert-table "$1/certs.bin" \
	--trust-ark "$CHAIN/ark.pem" --nonce "$(cat "$1/nonce64.hex")" --manifest "$1/manifest.bin"; }
verify_policy "$T/dump" >"$T/vp1" 2>&1; rc=$?
LAST=$T/vp1; D="csvsm-verify --policy on the affirmed evidence: exit 0, EAR status affirming (rc $rc)"
check_ok eval "[ $rc -eq 0 ] && grep -qx 'EAR status: affirming' $T/vp1"
verify_policy "$T/dump2" >"$T/vp2" 2>&1; rc=$?
LAST=$T/vp2; D="csvsm-verify --policy on the DEBUG evidence: exit 1, contraindicated by policy.debug, as csvsm-kbs said (rc $rc)"
check_ok eval "[ $rc -eq 1 ] && grep -qx 'EAR status: contraindicated' $T/vp2 && grep -q 'FAIL. policy.debug' $T/vp2 && grep -q '^fail policy.debug' $T/v2"

# --- bad input ---------------------------------------------------------------------------------
python3 - "$PORT_A" >"$T/bad" 2>&1 <<'EOF'
import socket, sys, time, json
port = int(sys.argv[1])
def req(raw, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.sendall(raw)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            data += b
    except socket.timeout:
        pass
    s.close()
    return data
def http(method, path, body=None, ctype="application/json", extra=""):
    b = body if isinstance(body, bytes) else (body or "").encode()
    h = f"{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
    if body is not None and ctype: h += f"Content-Type: {ctype}\r\n"
    h += extra + f"Content-Length: {len(b)}\r\n\r\n"
    r = req(h.encode() + b)
    head, _, rest = r.partition(b"\r\n\r\n")
    code = int(head.split()[1]) if head.startswith(b"HTTP/1.1") else 0
    return code, head.decode(errors="replace"), rest
def case(name, code, want, body=b"", head=""):
    t = ""
    try: t = json.loads(body).get("type", "").rsplit("/", 1)[-1]
    except Exception: pass
    ok = code == want
    print(f"{'ok' if ok else 'FAIL'} {name}: {code} {t}")
auth = '{"version":"0.4.0","tee":"snp","extra-params":{}}'
c, h, b = http("POST", "/kbs/v0/auth", "{not json"); case("malformed JSON -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/auth", '["a list"]'); case("a JSON list, not an object -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/auth", '{"version":"0.4.0","tee":"snp"}'); case("a Request missing extra-params -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/auth", '{"version":"0.4.0","version":"0.4.0","tee":"snp","extra-params":{}}'); case("a duplicated key -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/auth", '{"a":"' + "x" * 300000 + '"}'); case("oversized JSON (300 KB) -> 413", c, 413, b)
c, h, b = http("POST", "/kbs/v0/auth", auth, ctype="text/plain"); case("wrong content type -> 415", c, 415, b)
c, h, b = http("POST", "/kbs/v0/auth", auth, ctype=None); case("no content type -> 415", c, 415, b)
c, h, b = http("GET", "/kbs/v0/auth"); case("GET /auth -> 405", c, 405, b)
print(("ok" if "Allow: POST" in h else "FAIL") + " the 405 names the method (Allow: POST)")
c, h, b = http("DELETE", "/kbs/v0/resource/a/b/c"); case("DELETE a resource -> 405", c, 405, b)
c, h, b = http("GET", "/kbs/v1/nothing"); case("unknown path -> 404", c, 404, b)
c, h, b = http("GET", "/kbs/v0/resource/a/../c"); case("a path with .. -> 404", c, 404, b)
c, h, b = http("GET", "/kbs/v0/resource/a/b"); case("a resource path of two segments -> 404", c, 404, b)
c, h, b = http("GET", "/kbs/v0/resource/a/b/c%2f"); case("an escaped path -> 404", c, 404, b)
c, h, b = http("GET", "/kbs/v0/resource/default/key/one"); case("a resource without cookie or token -> 401", c, 401, b)
c, h, b = http("GET", "/kbs/v0/resource/default/key/one", extra="Cookie: kbs-session-id=" + "0" * 32 + "\r\n"); case("a resource with an unknown session -> 401", c, 401, b)
c, h, b = http("GET", "/kbs/v0/resource/default/key/one", extra="Authorization: Bearer a.b.c\r\n"); case("a forged bearer token -> 401", c, 401, b)
c, h, b = http("POST", "/kbs/v0/attest", "{}"); case("/attest without a cookie -> 401", c, 401, b)
c, h, b = http("POST", "/kbs/v0/attest", "{}", extra="Cookie: kbs-session-id=zz\r\n"); case("/attest with a malformed cookie -> 401", c, 401, b)
c, h, b = http("POST", "/kbs/v0/auth", '{"version":"9.0.0","tee":"snp","extra-params":{}}'); case("a protocol version it does not speak -> 401", c, 401, b)
c, h, b = http("POST", "/kbs/v0/auth", '{"version":"0.4.0","tee":"sample","extra-params":{}}'); case("the sample TEE -> 401", c, 401, b)
c, h, b = http("POST", "/kbs/v0/auth", auth)
cookie = h.split("kbs-session-id=")[1].split(";")[0] if "kbs-session-id=" in h else "x"
case("a good Request -> 200 (for the next cases)", c, 200, b)
ck = f"Cookie: kbs-session-id={cookie}\r\n"
c, h, b = http("POST", "/kbs/v0/attest", '{"runtime-data":{"nonce":"x","tee-pubkey":{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}},"tee-evidence":{"primary_evidence":{}}}', extra=ck)
case("a TEE key that is not a point -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/attest", '{"runtime-data":{"nonce":"x"},"tee-evidence":{}}', extra=ck); case("runtime-data without a key -> 400", c, 400, b)
c, h, b = http("POST", "/kbs/v0/attest", '{"tee-pubkey":{"kty":"EC"},"tee-evidence":{"snp-report":"AAAA"}}', extra=ck); case("an incomplete key / aproxy's snp-report form -> 400", c, 400, b)
print(("ok" if b"aproxy" in b or c == 400 else "FAIL") + " the answer says why")
# a header flood: libmicrohttpd's connection memory limit answers
c, h, b = http("GET", "/kbs/v0/auth", extra="X-Pad: " + "p" * 100000 + "\r\n")
print(("ok" if c in (400, 413, 431) or c == 0 else "FAIL") + f" a 100 KB header is refused or the connection dropped ({c})")
# slow and half-open clients: dropped after the idle timeout (2 s here), and the server serves others meanwhile
slow = socket.create_connection(("127.0.0.1", port)); slow.sendall(b"POST /kbs/v0/auth HTTP/1.1\r\nHost: x\r\nContent-Le")
half = socket.create_connection(("127.0.0.1", port))
part = socket.create_connection(("127.0.0.1", port)); part.sendall(b"POST /kbs/v0/auth HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ver")
c, h, b = http("POST", "/kbs/v0/auth", auth); case("while three clients stall, another is served", c, 200, b)
time.sleep(3.5)
for name, s in (("slow (half a header)", slow), ("half-open (nothing sent)", half), ("a body shorter than its Content-Length", part)):
    s.settimeout(2)
    try:
        d = s.recv(100)
        print(("ok" if not d or d.startswith(b"HTTP/1.1 4") else "FAIL") + f" {name}: dropped by the server after its idle timeout ({d[:20]!r})")
    except socket.timeout:
        print(f"FAIL {name}: still open after the idle timeout")
    s.close()
c, h, b = http("POST", "/kbs/v0/auth", auth); case("the server still serves afterwards", c, 200, b)
EOF
while read -r st rest; do
	if [ "$st" = ok ]; then ok "bad input: $rest"; else nok "bad input: $rest"; fi
done <"$T/bad"
[ -s "$T/bad" ] || nok "bad input cases ran" "$T/bad"
kill -0 "$PID_A" 2>/dev/null && ok "the daemon is alive after the bad input" || nok "the daemon is alive after the bad input" "$T/A.log"

# --- the review's findings (docs/kbs.md "Review") ------------------------------------------
LAST=$T/apptest; "$APPTEST" >"$LAST" 2>&1
D="appraisal bookkeeping: a failing check is never overwritten, more checks than room is contraindicated; one TCB parser ($(tail -n1 "$LAST"))"
check_ok grep -q '^[0-9]* passed, 0 failed$' "$LAST"

# A contraindicated appraisal does not rewrite the instance its HOST_DATA (or EK) names.
put "sqlite:$T/ip.db"
start IP "$T/same.json" "sqlite:$T/ip.db" --trust-ark "$CHAIN/ark.pem"
rcar IP "$T/ip1" --measurement "$M"
rcar IP "$T/ip2" --measurement "$M2"
"$KBS" list-instances --db "sqlite:$T/ip.db" --json >"$T/ip.inst" 2>&1
LAST=$T/ip.inst
D="a genuine report with another launch image and the same HOST_DATA: contraindicated, and the instance keeps its measurement, status and count"
check_ok eval "affirmed $T/ip1 && contra $T/ip2 measurement && [ \$(wc -l <$T/ip.inst) -eq 1 ] &&
	grep -q '\"measurement\": \"$M\".*\"attestations\": 1, \"last_status\": \"affirming\"' $T/ip.inst"

# A changed policy: tokens and sessions appraised under the old one release nothing.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/tok.pem" >/dev/null 2>&1
sed 's/"comment": "tests\/kbs\/kbs.sh"/"comment": "the owner edited it"/' "$T/main.json" >"$T/main2.json"
put "sqlite:$T/pc.db"
mkdir -p "$T/keep"
start P1 "$T/main.json" "sqlite:$T/pc.db" --trust-ark "$CHAIN/ark.pem" --token-key "$T/tok.pem"
rcar P1 "$T/pc1" --measurement "$M" --keep "$T/keep"
stop P1
start P2 "$T/main2.json" "sqlite:$T/pc.db" --trust-ark "$CHAIN/ark.pem" --token-key "$T/tok.pem"
"$CLIENT" resource --port "$PORT_P2" --chain "$CHAIN" --keep "$T/keep" --resource default/key/one >"$T/pc2" 2>&1
"$CLIENT" resource --port "$PORT_P2" --chain "$CHAIN" --keep "$T/keep" --resource default/key/one --bearer >"$T/pc3" 2>&1
stop P2
start P3 "$T/main.json" "sqlite:$T/pc.db" --trust-ark "$CHAIN/ark.pem" --token-key "$T/tok.pem"
"$CLIENT" resource --port "$PORT_P3" --chain "$CHAIN" --keep "$T/keep" --resource default/key/one >"$T/pc4" 2>&1
LAST=$T/pc2; D="restarted on an edited policy: the old session's cookie gets 401 TokenNotFound, the old token 401 TokenVerifierError"
check_ok eval "affirmed $T/pc1 && grep -q '^resource-http 401 .*TokenNotFound' $T/pc2 && grep -q '^resource-http 401 .*TokenVerifierError' $T/pc3"
LAST=$T/pc4; D="restarted on the same policy: the same session still releases the secret (the policy, not the restart, decides)"
check_ok grep -qx 'secret s3cret' "$T/pc4"

# Sessions that can release nothing are bounded (--max-sessions): beyond, the oldest of them
# (not attested, or contraindicated) make room; those of VMs that passed stay.
start SC "$T/main.json" "sqlite:$T/sc.db" --max-sessions 5
python3 - "$PORT_SC" "$T/sc.db" >"$T/sc" 2>&1 <<'EOF'
import http.client, sqlite3, sys
def req(method, path, body, cookie=None):
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
    h = {"Content-Type": "application/json"}
    if cookie: h["Cookie"] = "kbs-session-id=" + cookie
    c.request(method, path, body, h)
    r = c.getresponse()
    return r.status, (r.getheader("Set-Cookie") or "").split(";")[0].split("=")[-1]
got = [req("POST", "/kbs/v0/auth", '{"version":"0.4.0","tee":"snp","extra-params":{}}') for _ in range(12)]
db = sqlite3.connect(sys.argv[2])
rows = db.execute("select count(*) from kbs_sessions").fetchone()[0]
first = db.execute("select count(*) from kbs_sessions where id = ?", (got[0][1],)).fetchone()[0]
last = db.execute("select count(*) from kbs_sessions where id = ?", (got[-1][1],)).fetchone()[0]
print(" ".join(str(g[0]) for g in got), "rows", rows, "first", first, "last", last)
EOF
LAST=$T/sc; D="--max-sessions 5: twelve /auth all get 200, the registry keeps at most 5 sessions, the oldest evicted, the newest kept ($(cat "$T/sc"))"
check_ok grep -qE '^(200 ){12}rows [1-5] first 0 last 1$' "$T/sc"
put "sqlite:$T/sf.db"
start SF "$T/main.json" "sqlite:$T/sf.db" --trust-ark "$CHAIN/ark.pem" --max-sessions 3
mkdir -p "$T/sfk"
rcar SF "$T/sf1" --measurement "$M" --keep "$T/sfk"
for i in 2 3 4 5 6; do rcar SF "$T/sf$i" --measurement "$M2"; done
"$CLIENT" resource --port "$PORT_SF" --chain "$CHAIN" --keep "$T/sfk" --resource default/key/one >"$T/sf7" 2>&1
rows=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from kbs_sessions").fetchone()[0])' "$T/sf.db")
LAST=$T/sf7; D="--max-sessions 3: five contraindicated exchanges after an affirming one; the affirming session still releases its secret, $rows sessions kept"
check_ok eval "affirmed $T/sf1 && contra $T/sf6 measurement && grep -qx 'secret s3cret' $T/sf7 && [ $rows -le 4 ]"

# Slow clients: a byte within every idle timeout no longer holds a connection for ever
# (--request-timeout), and one address holds at most --max-conn-per-ip connections.
start RT "$T/main.json" "sqlite:$T/rt.db" --idle-timeout 2 --request-timeout 3 --max-conn-per-ip 4
python3 - "$PORT_RT" >"$T/rt" 2>&1 <<'EOF'
import http.client, socket, sys, time
port = int(sys.argv[1])
def conn(src):
    s = socket.socket(); s.bind((src, 0)); s.connect(("127.0.0.1", port)); return s
# a trickle: one header byte each 0.5 s (the idle timeout is 2 s), for at most 10 s
s = conn("127.0.0.1"); t0 = time.time(); closed = None
for b in b"POST /kbs/v0/auth HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 1000:
    try:
        s.send(bytes([b]))
        s.settimeout(0.5)
        if s.recv(100) == b"":
            closed = time.time() - t0; break
    except socket.timeout:
        pass
    except OSError:
        closed = time.time() - t0; break
    if time.time() - t0 > 10: break
print(("ok" if closed is not None and closed < 6 else "FAIL") + " a client trickling a header byte every 0.5 s (idle timeout 2 s) is dropped by --request-timeout 3 (after %s s)" % (None if closed is None else round(closed, 1)))
# per address: 4 connections from 127.0.0.2 are kept, a 5th is refused, 127.0.0.1 is served
held = [conn("127.0.0.2") for _ in range(4)]
for h in held: h.send(b"POST /kbs/v0/auth HTTP/1.1\r\n")
time.sleep(0.3)
fifth = conn("127.0.0.2"); fifth.settimeout(2)
try:
    refused = fifth.recv(100) == b""
except socket.timeout:
    refused = False
except OSError:
    refused = True
print(("ok" if refused else "FAIL") + " a 5th connection from 127.0.0.2 is refused (--max-conn-per-ip 4)")
c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
c.request("POST", "/kbs/v0/auth", '{"version":"0.4.0","tee":"snp","extra-params":{}}', {"Content-Type": "application/json"})
print(("ok" if c.getresponse().status == 200 else "FAIL") + " meanwhile 127.0.0.1 is served")
EOF
while read -r st rest; do
	if [ "$st" = ok ]; then ok "slow clients: $rest"; else nok "slow clients: $rest" "$T/RT.log"; fi
done <"$T/rt"
[ "$(grep -c . "$T/rt")" -eq 3 ] || nok "slow-client cases ran" "$T/rt"

# --- 64 concurrent clients: every answer right, no registry update lost -----------------------
put "sqlite:$T/h.db"
start H "$T/same.json" "sqlite:$T/h.db" --trust-ark "$CHAIN/ark.pem" --threads 8 --idle-timeout 30 --max-conn-per-ip 256
"$CLIENT" load --port "$PORT_H" --chain "$CHAIN" --resource default/key/one --measurement "$M" \
	--clients 64 --seconds "${KBS_LOAD_SECONDS:-8}" >"$T/load" 2>&1
lrc=$?
sed 's/^/# /' "$T/load"
ex=$(sed -n 's/.* exchanges \([0-9]*\) errors \([0-9]*\).*/\1/p' "$T/load")
er=$(sed -n 's/.* exchanges \([0-9]*\) errors \([0-9]*\).*/\2/p' "$T/load")
at=$(sed -n 's/.* attested \([0-9]*\)$/\1/p' "$T/load")
LAST=$T/load; D="64 clients for ${KBS_LOAD_SECONDS:-8} s: $ex exchanges, each affirming with the secret opened, $er errors"
check_ok eval "[ $lrc -eq 0 ] && [ ${ex:-0} -gt 64 ] && [ ${er:-1} -eq 0 ]"
"$KBS" list-instances --db "sqlite:$T/h.db" --json >"$T/inst" 2>&1
cnt=$(python3 -c 'import json,sys; l=[json.loads(x) for x in open(sys.argv[1])]; print(sum(i["attestations"] for i in l), len(l))' "$T/inst" 2>/dev/null)
LAST=$T/inst; D="the registry counted every affirming /attest on the one instance (HOST_DATA identity): ${cnt:-?} (want ${at:-?} 1)"
check_ok [ "$cnt" = "${at:-x} 1" ]

# --- SIGKILL while writing ------------------------------------------------------------------
put "sqlite:$T/x.db"
start X "$T/main.json" "sqlite:$T/x.db" --trust-ark "$CHAIN/ark.pem" --threads 8 --idle-timeout 30 --max-conn-per-ip 256
"$CLIENT" load --port "$PORT_X" --chain "$CHAIN" --resource default/key/one --measurement "$M" \
	--clients 16 --seconds 4 >"$T/xload" 2>&1 &
lp=$!
PIDS+=("$lp")
sleep 2
before=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select count(*) from kbs_instances").fetchone()[0])' "$T/x.db" 2>/dev/null)
kill -KILL "$PID_X"
wait "$PID_X" 2>/dev/null
wait "$lp" 2>/dev/null
python3 - "$T/x.db" >"$T/xcheck" 2>&1 <<'EOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print("integrity", c.execute("pragma integrity_check").fetchone()[0])
print("instances", c.execute("select count(*) from kbs_instances").fetchone()[0])
print("half", c.execute("select count(*) from kbs_instances where attestations < 1 or first_attested > last_attested").fetchone()[0])
print("secret", bytes.fromhex(c.execute("select value from kbs_resources where repository='default' and type='key' and tag='one'").fetchone()[0]).decode())
EOF
LAST=$T/xcheck; D="killed (SIGKILL) during a 16-client load after ${before:-?} instances: the SQLite registry passes integrity_check, no half-written instance, the secret intact"
check_ok eval "grep -qx 'integrity ok' $T/xcheck && grep -qx 'half 0' $T/xcheck && grep -qx 'secret s3cret' $T/xcheck && [ \$(sed -n 's/^instances //p' $T/xcheck) -ge ${before:-1} ]"
start X2 "$T/main.json" "sqlite:$T/x.db" --trust-ark "$CHAIN/ark.pem"
LAST=$T/x2; rcar X2 "$LAST" --measurement "$M"
D="restarted on the same registry: an exchange is affirming and the secret released"; check_ok affirmed "$LAST"

# --- the registry on both backends; replicas on PostgreSQL ------------------------------------
LAST=$T/reg-sqlite; "$REGTEST" unit "sqlite:$T/reg.db" >"$LAST" 2>&1
D="registry guarantees on SQLite ($(tail -n1 "$LAST"))"; check_ok grep -q '^[0-9]* passed, 0 failed$' "$LAST"
if pg_start; then
	ok "a throw-away PostgreSQL cluster (initdb/pg_ctl in $PG_DIR, unix socket only, as ${PG_AS[*]:-the user})"
	LAST=$T/reg-pg; "$REGTEST" unit "$PGURL" >"$LAST" 2>&1
	D="registry guarantees on PostgreSQL ($(tail -n1 "$LAST"))"; check_ok grep -q '^[0-9]* passed, 0 failed$' "$LAST"
	put "$PGURL"
	start R1 "$T/main.json" "$PGURL" --trust-ark "$CHAIN/ark.pem"
	start R2 "$T/main.json" "$PGURL" --trust-ark "$CHAIN/ark.pem"
	LAST=$T/rep1; rcar R1 "$LAST" --measurement "$M"
	D="replica 1 on PostgreSQL: affirming, the secret put through PostgreSQL released"; check_ok affirmed "$LAST"
	: >"$T/races"
	for _ in $(seq 1 20); do "$CLIENT" rcar --port "$PORT_R1" --race-port "$PORT_R2" --chain "$CHAIN" --measurement "$M" >>"$T/races" 2>&1; done
	LAST=$T/races; D="20 sessions' /attest sent to both replicas at once: each time exactly one 200 and one 401"
	check_ok eval "[ \$(grep -cE '^race (200 401|401 200)$' $T/races) -eq 20 ]"
	if "$REGTEST" race-setup "$PGURL" 300; then
		"$REGTEST" race "$PGURL" 300 one >"$T/race1" &
		rp=$!
		"$REGTEST" race "$PGURL" 300 two >"$T/race2"
		wait "$rp"
	fi
	both=$(sort "$T/race1" "$T/race2" | uniq -d | wc -l)
	all=$(sort -u "$T/race1" "$T/race2" | wc -l)
	LAST=$T/race1; D="two processes race for 300 nonces and 300 leases on one PostgreSQL: $all won, $both by both (want 600, 0)"
	check_ok [ "$all" -eq 600 -a "$both" -eq 0 ]
else
	nok "a throw-away PostgreSQL cluster starts"
fi

# --- the vTPM: EK bound by credential activation, the quote's PCRs -----------------------------
if [ -x "$TPMSRV" ] && command -v tpm2_quote >/dev/null; then
	V=$T/vtpm
	mkdir -p "$V"
	for _ in $(seq 1 20); do
		TP=$(((RANDOM % 20000) * 2 + 20000))
		"$TPMSRV" --port "$TP" --timeout 300 >"$V/server.log" 2>&1 &
		TPID=$!
		for _ in $(seq 1 50); do
			grep -q listening "$V/server.log" 2>/dev/null && break 2
			kill -0 "$TPID" 2>/dev/null || break
			sleep 0.1
		done
		kill "$TPID" 2>/dev/null; wait "$TPID" 2>/dev/null; TPID=
	done
	PIDS+=("$TPID")
	export TPM2TOOLS_TCTI="mssim:host=127.0.0.1,port=$TP"
	flush='tpm2_flushcontext -t >/dev/null 2>&1; tpm2_flushcontext -s >/dev/null 2>&1; true'
	(cd "$V" && tpm2_startup -c && tpm2_createek -c ek.ctx -G rsa -u ek.pub && eval "$flush" &&
		tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pem -f pem -n ak.name &&
		eval "$flush" && tpm2_readpublic -c ak.ctx -o ak.pub -f tss && eval "$flush" &&
		tail -c +3 ek.pub >ek.tpmt && head -c 32 /dev/urandom >ovmf.img &&
		tpm2_pcrextend "0:sha256=$(sha256sum ovmf.img | cut -c1-64)") >"$V/setup.log" 2>&1
	cat >"$V/activate.sh" <<EOF
#!/bin/sh
cd "$V" && tpm2_startauthsession --policy-session -S s.ctx && tpm2_policysecret -S s.ctx -c e >/dev/null &&
tpm2_activatecredential -c ak.ctx -C ek.ctx -i cred.bin -o secret.bin -P session:s.ctx; rc=\$?; $flush; exit \$rc
EOF
	cat >"$V/quote.sh" <<EOF
#!/bin/sh
sel=\$(cat "$V/pcrsel" 2>/dev/null || echo sha256:0)
cd "$V" && tpm2_quote -c ak.ctx -l "\$sel" -q "\$1" -m quote.msg -s quote.sig -o quote.pcrs -g sha256; rc=\$?; $flush; exit \$rc
EOF
	chmod +x "$V/activate.sh" "$V/quote.sh"
	cat >"$T/vtpm.json" <<EOF
{"version": 1, "snp": {"policy": "0x30000", "measurement": "$M"},
 "svsm": {"require_vtpm_ek": true, "require_quote": true,
          "ovmf": {"sha256": "$(sha256sum "$V/ovmf.img" | cut -c1-64)"}}}
EOF
	python3 - "$V/ek.tpmt" "$V/other.tpmt" <<'EOF'
import sys, subprocess
ek = open(sys.argv[1], "rb").read()
# another valid RSA-2048 EK public area: the template, a fresh modulus
n = subprocess.run(["openssl", "genrsa", "2048"], capture_output=True).stdout
mod = subprocess.run(["openssl", "rsa", "-noout", "-modulus"], input=n, capture_output=True).stdout.split(b"=")[1].strip()
open(sys.argv[2], "wb").write(ek[:-256] + bytes.fromhex(mod.decode()))
EOF
	put "sqlite:$T/v.db"
	start VT "$T/vtpm.json" "sqlite:$T/v.db" --trust-ark "$CHAIN/ark.pem"
	LAST=$T/vt1; rcar VT "$LAST" --measurement "$M" --vtpm "$V"
	D="csvsm's vTPM: credential activation binds the AK to the manifest's EK, the quote's PCR0 is H(0 || H(OVMF)): affirming"
	check_ok affirmed "$LAST"
	grep -q 'setup\|error' "$V/setup.log" && sed 's/^/# /' "$V/setup.log" | tail -3
	LAST=$T/vt2; rcar VT "$LAST" --measurement "$M" --vtpm "$V" --ek "$V/other.tpmt"
	D="EK not the manifest's: contraindicated, reason 'svsm.ek_bound'"; check_ok contra "$LAST" svsm.ek_bound
	tpm2_pcrextend "0:sha256=$(printf '%064d' 1)" >/dev/null 2>&1
	LAST=$T/vt3; rcar VT "$LAST" --measurement "$M" --vtpm "$V"
	D="quote PCRs not the reference (PCR0 extended once more): contraindicated, reason 'quote.pcrs'"; check_ok contra "$LAST" quote.pcrs
	LAST=$T/vt4; rcar VT "$LAST" --measurement "$M" --ek "$V/ek.tpmt"
	D="a policy that requires the quote, evidence without one: contraindicated, reason 'quote'"; check_ok contra "$LAST" quote
	# Many checks: every pinnable report field and 24 reference PCRs, the quote over
	# all of them: affirming, and a nonce not the server's still contraindicated (before,
	# the 49th and later checks shared one slot: the failing freshness check was
	# overwritten by the passing credential checks after it)
	sel="sha256:$(seq -s, 0 23)"
	echo "$sel" >"$V/pcrsel"
	tpm2_pcrread -o "$V/pcrs24.bin" "$sel" >/dev/null 2>&1
	python3 - "$V/pcrs24.bin" "$M" >"$T/many.json" <<'EOF'
import json, sys
v = open(sys.argv[1], "rb").read()
z = lambda n: "00" * n
print(json.dumps({"version": 1, "snp": {
    "policy": "0x30000", "measurement": sys.argv[2], "minimum_guest_svn": 0, "vmpl": 0,
    "minimum_tcb": {"bl": 4, "tee": 0, "snp": 21, "ucode": 209},
    "minimum_launch_tcb": {"bl": 0, "tee": 0, "snp": 0, "ucode": 0},
    "family_id": z(16), "image_id": z(16), "host_data": z(32), "platform_info": "0xffffffffffffffff",
    "minimum_version": "0.0", "permit_provisional_firmware": True, "product": {"name": "Milan"}},
  "svsm": {"require_vtpm_ek": True, "require_quote": True,
           "pcrs": {"sha256": {str(i): v[32 * i:32 * i + 32].hex() for i in range(24)}}}}))
EOF
	put "sqlite:$T/vm.db"
	start VM "$T/many.json" "sqlite:$T/vm.db" --trust-ark "$CHAIN/ark.pem"
	mkdir -p "$T/vmkeep"
	LAST=$T/vm1; rcar VM "$LAST" --measurement "$M" --vtpm "$V" --bearer --keep "$T/vmkeep"
	D="a policy with 24 reference PCRs and every pinnable report field, the quote over all 24, its $(wc -c <"$T/vmkeep/token" 2>/dev/null)-byte EAR as the bearer: affirming"
	check_ok affirmed "$LAST"
	LAST=$T/vm2; rcar VM "$LAST" --measurement "$M" --vtpm "$V" --claim-nonce AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
	D="the same policy, runtime-data.nonce not the server's: contraindicated, reason 'freshness.nonce' (more than 48 checks before it)"
	check_ok contra "$LAST" freshness.nonce
	rm -f "$V/pcrsel"
else
	nok "csvsm-tpm and tpm2-tools for the vTPM cases"
fi

# --- the persistent vTPM (issue 33; docs/kbs.md "The persistent vTPM") ---------------------
# csvsm's own kbs-mode client (tpm/vtpm_kbs.c through csvsm-kbs-client vtpm):
# its boot evidence (the csvsm-vtpm-unlock manifest), the signed release,
# commits and the EK certificate, and every refusal the registry makes.
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/vtok.pem" >/dev/null 2>&1
openssl pkey -in "$T/vtok.pem" -pubout -out "$T/vtok.pub" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-384 -nodes -keyout "$T/ekca.key" \
	-out "$T/ekca.pem" -subj "/CN=csvsm-kbs test EK CA" -days 30 \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1
VI=76747061742d6b62732d746573742d31 # "vtpat-kbs-test-1"
VJ=76747061742d6b62732d746573742d32 # not registered
VDB="sqlite:$T/vtpm.db"
"$KBS" vtpm-register --db "$VDB" "$VI" --lease-seconds 10 >"$T/vreg" 2>&1
LAST=$T/vreg; D="vtpm-register: the instance with a state key and a 10 s lease"
check_ok grep -q "csvsm_vtpm:$VI: registered, lease 10 s" "$LAST"
"$KBS" vtpm-register --db "$VDB" "$VI" >"$T/vreg2" 2>&1; rc=$?
LAST=$T/vreg2; D="vtpm-register refuses an instance registered already (exit $rc)"; check_ok test "$rc" -eq 1
timeout 10 "$TPMSRV" --startup --ek-out "$T/vek.tpmt" --port 42911 --timeout 1 >/dev/null 2>&1
timeout 10 "$TPMSRV" --startup --ek-out "$T/vek2.tpmt" --port 42913 --timeout 1 >/dev/null 2>&1
# csvsm's boot evidence carries no certificates: the VCEK from the offline cache (KDS layout, above)
start VT2 "$T/main.json" "$VDB" --trust-ark "$CHAIN/ark.pem" --kds-dir "$T/kds" --token-key "$T/vtok.pem" \
	--ek-ca-cert "$T/ekca.pem" --ek-ca-key "$T/ekca.key" || nok "csvsm-kbs starts with an EK CA" "$T/VT2.log"
vt() { # vt OUT GRANT [--measurement M] ACTION...: csvsm's client as one VM (GRANT keeps it)
	local out=$1 grant=$2
	shift 2
	"$CLIENT" vtpm --port "$PORT_VT2" --chain "$CHAIN" --broker-key "$T/vtok.pub" --instance "$VI" \
		--grant "$grant" --measurement "$M" "$@" >"$out" 2>&1
}
line() { grep -q "^vtpm $2 $3" "$1"; }
LAST=$T/va1; vt "$LAST" "$T/gA" unlock "ek:$T/vek.tpmt:$T/ek.der" commit:1 commit:2 commit:2 replay
D="VM A: the state key released (version 0, the consent to the first manufacture), signed by the token key csvsm's image names"
check_ok line "$LAST" unlock "ok version=0 manufacture=1 lease-seconds=10"
D="VM A: the EK certificate at the first manufacture"; check_ok line "$LAST" "ek:$T/vek.tpmt:$T/ek.der" ok
D="VM A: commits 1 and 2 (each the next version), 2 again with the same digest (a retry)"
check_ok eval "line $LAST commit:1 ok && [ \$(grep -c '^vtpm commit:2 ok' $LAST) -eq 2 ]"
D="a replayed commit (the same signed request, its sequence number used) is refused: 409"
check_ok eval "grep -q '^vtpm replay refused: HTTP 409 .*sequence number .* already used' $LAST"
openssl verify -CAfile "$T/ekca.pem" <(openssl x509 -inform der -in "$T/ek.der" 2>/dev/null) >"$T/ekv" 2>&1
LAST=$T/ekv; D="openssl verify: the EK certificate chains to the EK CA"; check_ok grep -q ': OK$' "$LAST"
openssl x509 -inform der -in "$T/ek.der" -noout -text -ext subjectAltName,extendedKeyUsage,keyUsage,basicConstraints >"$T/ekt" 2>&1
python3 - "$T/ek.der" "$T/vek.tpmt" >"$T/ekp" 2>&1 <<'PY'
import subprocess, sys
der = open(sys.argv[1], "rb").read()
pub = subprocess.run(["openssl", "x509", "-inform", "der", "-noout", "-modulus"], input=der,
                     capture_output=True).stdout.decode().strip().split("=")[1].lower()
tpmt = open(sys.argv[2], "rb").read()
n = tpmt[-256:].hex()  # TPMT_PUBLIC ends with the 256-byte unique (modulus)
subj = subprocess.run(["openssl", "x509", "-inform", "der", "-noout", "-subject"], input=der,
                      capture_output=True).stdout.decode().strip()
print("modulus-matches" if pub == n else "modulus-differs", "subject:", subj)
PY
LAST=$T/ekt
D="the EK certificate (TCG EK Credential Profile): empty subject, critical SAN directoryName 2.23.133.2.1/2/3, critical CA:FALSE and keyEncipherment, EKU 2.23.133.8.1, the EK's modulus"
check_ok eval "grep -q 'X509v3 Subject Alternative Name: critical' $T/ekt && grep -q '2.23.133.2.1=id:49424D00' $T/ekt &&
	grep -q '2.23.133.2.3=id:20191023' $T/ekt && grep -q '2.23.133.8.1' $T/ekt &&
	grep -q 'Basic Constraints: critical' $T/ekt && grep -q 'Key Encipherment' $T/ekt &&
	grep -q '^modulus-matches subject: *subject=$' $T/ekp"
LAST=$T/va2; vt "$LAST" "$T/gA" commit:2:other commit:4 commit:1 "ek:$T/vek2.tpmt:$T/ek2.der" forged:3
D="commits refused with the reason: version 2 with another digest, 4 (not the next), 1 (older): 409"
check_ok eval "[ \$(grep -c '^vtpm commit:.* refused: .*HTTP 409.*the registry has version 2' $LAST) -eq 3 ]"
D="an EK certificate after the first manufacture is refused: 409"
check_ok eval "grep -q '^vtpm ek:.* refused: .*HTTP 409.*first manufacture only' $LAST"
D="a commit signed by another key naming A's lease is refused: 403"
check_ok eval "grep -q '^vtpm forged:3 refused: .*HTTP 403.*other than the lease' $LAST"
LAST=$T/vb1; vt "$LAST" "$T/gB" unlock
D="VM B (a clone: the same instance while A's lease runs): no key, 409"
check_ok eval "grep -q '^vtpm unlock refused: .*HTTP 409.*held by another TEE key' $LAST"
LAST=$T/vj; "$CLIENT" vtpm --port "$PORT_VT2" --chain "$CHAIN" --broker-key "$T/vtok.pub" --instance "$VJ" \
	--measurement "$M" unlock >"$LAST" 2>&1
D="an instance nobody registered: no key (403: the appraisal names it unregistered)"
check_ok eval "grep -q '^vtpm unlock refused: .*HTTP 403' $LAST"
LAST=$T/vm2x; vt "$LAST" "$T/gC" --measurement "$M2" unlock
D="another launch image (a measurement the policy does not list): no key, 403"
check_ok eval "grep -q '^vtpm unlock refused: .*HTTP 403' $LAST"
sleep 11 # A's 10 s lease lapses on the database's clock
LAST=$T/vb2; vt "$LAST" "$T/gB" unlock commit:3
D="after A's lease lapsed: B gets the key, version 2 (its digest), no consent to manufacture; commits 3"
check_ok eval "line $LAST unlock 'ok version=2 manufacture=0' && line $LAST commit:3 ok"
LAST=$T/va3; vt "$LAST" "$T/gA" commit:3:a
D="A's next commit after B took the lease is refused (409): A's vTPM must stop"
check_ok eval "grep -q '^vtpm commit:3:a refused: .*HTTP 409.*not this TEE key' $LAST"
"$KBS" vtpm-release --db "$VDB" "$VI" >"$T/vrel" 2>&1
LAST=$T/vc1; vt "$LAST" "$T/gC2" unlock
D="the owner's vtpm-release ends B's lease by hand: the next VM gets the key at once (version 3)"
check_ok eval "grep -q 'lease released' $T/vrel && line $LAST unlock 'ok version=3 manufacture=0'"
"$KBS" list-instances --db "$VDB" >"$T/vlist" 2>&1
LAST=$T/vlist; D="list-instances shows the instance at state version 3 under a lease"
check_ok grep -q "csvsm_vtpm:$VI .*state 3  lease [A-Za-z0-9_-]\{43\}" "$LAST"
stop VT2
# A guest (VMPL 2) binding csvsm's unlock manifest into its own report: under a
# policy that admits VMPL 2 it would pass the policy; the release needs VMPL 0.
sed 's/"vmpl": 0/"vmpl": 2/' "$T/main.json" >"$T/vmpl2.json"
"$KBS" vtpm-register --db "sqlite:$T/vtpm2.db" "$VI" --lease-seconds 10 >/dev/null 2>&1
start VT3 "$T/vmpl2.json" "sqlite:$T/vtpm2.db" --trust-ark "$CHAIN/ark.pem" --kds-dir "$T/kds" \
	--token-key "$T/vtok.pem" || nok "csvsm-kbs starts with a VMPL-2 policy" "$T/VT3.log"
LAST=$T/vg2; "$CLIENT" vtpm --port "$PORT_VT3" --chain "$CHAIN" --broker-key "$T/vtok.pub" \
	--instance "$VI" --measurement "$M" --vmpl 2 unlock >"$LAST" 2>&1
D="a guest's VMPL-2 report binding csvsm's unlock manifest, under a policy admitting VMPL 2: no key (403; without svsm.vtpm_vmpl0 the key and the consent to manufacture were released)"
check_ok eval "grep -q '^vtpm unlock refused: .*HTTP 403.*affirming appraisal' $LAST"
stop VT3

LAST=$T/vp; "$KBS" validate-policy "$T/main.json" >"$LAST" 2>&1
D="validate-policy accepts the test policy"; check_ok grep -q 'valid, id sha256:' "$LAST"
printf '{"version": 1, "snp": {"measurment": "00"}}' >"$T/bad.json"
"$KBS" validate-policy "$T/bad.json" >"$T/vp2" 2>&1; rc=$?
LAST=$T/vp2; D="validate-policy refuses an unknown field and names it (exit $rc)"
check_ok eval "[ $rc -eq 1 ] && grep -q \"unknown field 'measurment'\" $T/vp2"

echo "$((n - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
