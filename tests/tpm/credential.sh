#!/usr/bin/env bash
# csvsm-cred (the verifier's side of TPM credential activation, issue 18
# item 4) against a TPM csvsm did not write: libtpms behind build/csvsm-tpm,
# driven by Debian's tpm2-tools over the mssim TCTI. Checks, as TAP:
#   - the AK Name csvsm-cred computes is the one tpm2_createak -n gives;
#   - libtpms' TPM2_ActivateCredential opens csvsm-cred's credential and
#     `csvsm-cred check` accepts the secret it returns;
#   - the same for tpm2-tools' own tpm2_makecredential -T none, as a second
#     maker of the same file format;
#   - a credential made for another AK's Name, or one byte changed, does
#     not open (the TPM checks the integrity HMAC over the Name);
#   - a public-only object with an AK's attributes (TPM2_LoadExternal) gets
#     a credential but the TPM will not activate it;
#   - csvsm-cred refuses an unrestricted signing key as the AK, the EK as
#     the AK, a truncated AK, an AK other than the credential's at check
#     time, and a wrong secret (exit 1), and bad usage (exit 2).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TPMSRV="$ROOT/build/csvsm-tpm"
CRED="$ROOT/build/csvsm-cred"
T=$(mktemp -d)
n=0 failed=0 SPID=
cleanup() {
	[ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -20; }
check() { # check "description" command...
	local d=$1; shift
	if "$@" >"$T/out" 2>&1; then ok "$d"; else nok "$d" "$T/out"; fi
}
refuse() { # refuse "description" RC command...: the command exits with RC
	local d=$1 want=$2; shift 2
	"$@" >"$T/out" 2>&1
	local rc=$?
	if [ "$rc" -eq "$want" ]; then ok "$d (exit $rc: $(tail -n1 "$T/out" | cut -c1-120))"; else nok "$d (exit $rc, want $want)" "$T/out"; fi
}

if ! command -v tpm2_activatecredential >/dev/null || [ ! -x "$TPMSRV" ] || [ ! -x "$CRED" ]; then
	echo "not ok 1 - prerequisites: tpm2-tools, $TPMSRV, $CRED"; exit 1
fi
for _ in $(seq 1 20); do
	PORT=$(((RANDOM % 20000) * 2 + 20000))
	"$TPMSRV" --port "$PORT" --timeout 300 >"$T/server.log" 2>&1 &
	SPID=$!
	for _ in $(seq 1 50); do
		grep -q listening "$T/server.log" 2>/dev/null && break 2
		kill -0 "$SPID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
done
[ -n "$SPID" ] || { echo "not ok 1 - csvsm-tpm starts"; exit 1; }
export TPM2TOOLS_TCTI="mssim:host=127.0.0.1,port=$PORT"
cd "$T"
# No resource manager: flush transient objects and sessions after each tool.
flush() { tpm2_flushcontext -t >/dev/null 2>&1; tpm2_flushcontext -s >/dev/null 2>&1; true; }
setup() {
	tpm2_startup -c && tpm2_createek -c ek.ctx -G rsa -u ek.pub && flush &&
		tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pem -f pem -n ak.name && flush &&
		tpm2_readpublic -c ak.ctx -o ak.pub -f tss && flush &&
		tpm2_createak -C ek.ctx -c ak2.ctx -G ecc -g sha256 -s ecdsa -u ak2.pem -f pem -n ak2.name && flush &&
		tpm2_readpublic -c ak2.ctx -o ak2.pub -f tss && flush &&
		tpm2_createprimary -C o -c prim.ctx -G ecc && flush &&
		tpm2_create -C prim.ctx -G ecc -u plain.tpub -r plain.priv -a 'fixedtpm|fixedparent|sensitivedataorigin|userwithauth|sign' &&
		flush && tpm2_load -C prim.ctx -u plain.tpub -r plain.priv -c plain.ctx && flush &&
		tpm2_readpublic -c plain.ctx -o plain.pub -f tss && flush
}
check "tpm2-tools: EK (template L-1), two AKs under it, an unrestricted signing key" setup
activate() { # activate AKCTX CRED OUT: TPM2_ActivateCredential under the EK's PolicySecret(endorsement)
	tpm2_startauthsession --policy-session -S s.ctx && tpm2_policysecret -S s.ctx -c e >/dev/null &&
		tpm2_activatecredential -c "$1" -C ek.ctx -i "$2" -o "$3" -P session:s.ctx >/dev/null 2>&1
	local rc=$?
	flush
	return $rc
}

check "csvsm-cred make: EK from tpm2_createek, AK from tpm2_readpublic" \
	"$CRED" make --ek ek.pub --ak ak.pub --state st --out cred.bin
name=$(sed -n 's/^ak-name //p' st)
tap_name() { [ -n "$name" ] && [ "$name" = "$(xxd -p -c 256 ak.name)" ]; }
check "the AK Name csvsm-cred computed ($name) is tpm2_createak's" tap_name
tail -c +3 ek.pub >ek.tpmt
check "csvsm-cred make takes the EK as the manifest carries it too (TPMT_PUBLIC, no size)" \
	"$CRED" make --ek ek.tpmt --ak ak.pub --state st2 --out cred2.bin
check "libtpms' TPM2_ActivateCredential opens csvsm-cred's credential for the AK" activate ak.ctx cred.bin act.bin
check "csvsm-cred check accepts the secret the TPM recovered" "$CRED" check --state st --ak ak.pub --secret act.bin
head -c 32 /dev/urandom >secret.bin
tpm2_makecredential -T none -e ek.pub -s secret.bin -n "$(xxd -p -c 256 ak.name)" -o tcred.bin >/dev/null 2>&1
tools_same() { activate ak.ctx tcred.bin tact.bin && cmp -s secret.bin tact.bin && [ "$(head -c 8 tcred.bin | xxd -p)" = "$(head -c 8 cred.bin | xxd -p)" ] && [ "$(stat -c %s tcred.bin)" = "$(stat -c %s cred.bin)" ]; }
check "tpm2-tools' tpm2_makecredential -T none gives a file of the same header and size that opens alike" tools_same
if activate ak2.ctx cred.bin act2.bin; then nok "a credential for AK 1 does not open with AK 2 (it did)"; else ok "a credential for AK 1 does not open with AK 2: the TPM checks the Name"; fi
cp cred.bin bad.bin
# XOR, not a constant: a constant equal to the byte already there (1 in 256
# for random data) changes nothing and the refusal check fails by chance.
python3 -c 'import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p, "rb").read()); b[o] ^= 0xff; open(p, "wb").write(b)' bad.bin 20
if activate ak.ctx bad.bin act3.bin; then nok "a credential with one byte changed does not open (it did)"; else ok "a credential with one byte changed does not open (integrity HMAC)"; fi
# The public-only attack: a guest loads an outside RSA key's public part
# with an AK's attributes (TPM2_LoadExternal lets a public-only object claim
# fixedTPM) and an authPolicy for the ADMIN role, so that it could sign
# "quotes" outside the TPM. csvsm-cred cannot tell it from a real AK by its
# public area; the TPM refuses to activate for an object with no sensitive
# part (TPM_RC_AUTH_UNAVAILABLE), so the secret never comes back.
pubonly() {
	tpm2_startauthsession -S t.ctx && tpm2_policycommandcode -S t.ctx -L pol.bin TPM2_CC_ActivateCredential >/dev/null &&
		flush && openssl genrsa -out fake.pem 2048 2>/dev/null && openssl rsa -in fake.pem -pubout -out fakepub.pem 2>/dev/null &&
		tpm2_loadexternal -C n -G rsa:rsassa-sha256:null -u fakepub.pem -L pol.bin -g sha256 -c fake.ctx \
			-a 'fixedtpm|fixedparent|sensitivedataorigin|restricted|sign|adminwithpolicy' >/dev/null &&
		tpm2_readpublic -c fake.ctx -o fake.pub -f tss >/dev/null && flush &&
		"$CRED" make --ek ek.pub --ak fake.pub --state fst --out fcred.bin >/dev/null &&
		tpm2_loadexternal -C n -G rsa:rsassa-sha256:null -u fakepub.pem -L pol.bin -g sha256 -c fake.ctx \
			-a 'fixedtpm|fixedparent|sensitivedataorigin|restricted|sign|adminwithpolicy' >/dev/null
}
if ! command -v openssl >/dev/null || ! pubonly >"$T/out" 2>&1; then
	nok "the public-only attack could not be set up" "$T/out"
else
	{
		tpm2_startauthsession --policy-session -S s1.ctx && tpm2_policycommandcode -S s1.ctx TPM2_CC_ActivateCredential &&
			tpm2_startauthsession --policy-session -S s2.ctx && tpm2_policysecret -S s2.ctx -c e
	} >/dev/null 2>&1
	tpm2_activatecredential -c fake.ctx -p session:s1.ctx -C ek.ctx -P session:s2.ctx -i fcred.bin -o fact.bin >"$T/out" 2>&1
	arc=$?
	flush
	if [ "$arc" -ne 0 ] && grep -q '0x12F' "$T/out" && [ ! -s fact.bin ]; then
		ok "the public-only attack: csvsm-cred made the credential (it cannot tell), the TPM refused to activate for a public-only object (TPM_RC_AUTH_UNAVAILABLE)"
	else
		nok "the public-only attack was not refused by the TPM as expected (exit $arc)" "$T/out"
	fi
fi
refuse "csvsm-cred refuses an unrestricted signing key as the AK" 1 "$CRED" make --ek ek.pub --ak plain.pub --state x --out x.bin
refuse "csvsm-cred refuses the EK as the AK" 1 "$CRED" make --ek ek.pub --ak ek.pub --state x --out x.bin
refuse "csvsm-cred refuses an AK as the EK" 1 "$CRED" make --ek ak.pub --ak ak.pub --state x --out x.bin
head -c 50 ak.pub >short.pub
refuse "csvsm-cred refuses a truncated AK" 1 "$CRED" make --ek ek.pub --ak short.pub --state x --out x.bin
refuse "csvsm-cred check refuses an AK other than the credential's" 1 "$CRED" check --state st --ak ak2.pub --secret act.bin
refuse "csvsm-cred check refuses another secret" 1 "$CRED" check --state st --ak ak.pub --secret secret.bin
head -c 31 act.bin >act31.bin
refuse "csvsm-cred check refuses a 31-byte prefix of the secret" 1 "$CRED" check --state st --ak ak.pub --secret act31.bin
refuse "csvsm-cred: usage error without --state" 2 "$CRED" make --ek ek.pub --ak ak.pub --out x.bin
printf 'csvsm-cred 1\nek-name zz\n' >badstate
refuse "csvsm-cred check: a malformed state file is a usage error" 2 "$CRED" check --state badstate --ak ak.pub --secret act.bin
echo "1..$n"
exit $failed
