#!/usr/bin/env bash
# tpm2-tools (Debian) against build/csvsm-tpm over the mssim TCTI: startup,
# getrandom, pcrread/pcrextend (checked against a hash computed here), the
# EK (byte-compared with csvsm's own template L-1 EK), AK, quote and
# checkquote; then malformed frames, after each of which the server must
# still serve. Prints TAP lines. The servers are always stopped at exit.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN="$ROOT/build/csvsm-tpm"
T=$(mktemp -d)
n=0; failed=0
PIDS=()
cleanup() {
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
nok() { n=$((n + 1)); failed=1; echo "not ok $n - $1"; [ -n "${2:-}" ] && sed 's/^/# /' "$2" | tail -20; }
check() { # check "description" command...
	local d=$1; shift
	if "$@" >"$T/out" 2>&1; then ok "$d"; else nok "$d" "$T/out"; fi
}

if ! command -v tpm2_startup >/dev/null || ! command -v python3 >/dev/null || [ ! -x "$BIN" ]; then
	echo "not ok 1 - prerequisites: tpm2-tools, python3, $BIN"; exit 1
fi

# start_server <logfile> [args]: picks a free port, sets PORT and the PID.
start_server() {
	local log=$1; shift
	for _ in $(seq 1 20); do
		PORT=$(( (RANDOM % 20000) * 2 + 20000 ))
		"$BIN" --port "$PORT" --timeout 300 "$@" >"$log" 2>&1 &
		local pid=$!
		for _ in $(seq 1 50); do
			grep -q listening "$log" 2>/dev/null && { PIDS+=("$pid"); SPID=$pid; return 0; }
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	done
	return 1
}

if start_server "$T/server.log"; then ok "csvsm-tpm listens on 127.0.0.1:$PORT"; else nok "csvsm-tpm starts" "$T/server.log"; exit 1; fi
export TPM2TOOLS_TCTI="mssim:host=127.0.0.1,port=$PORT"
cd "$T"
# No resource manager in between: flush transient objects after each tool (libtpms has 3 slots).
flush() { tpm2_flushcontext -t >/dev/null 2>&1; tpm2_flushcontext -s >/dev/null 2>&1; true; }

check "tpm2_startup -c" tpm2_startup -c
# A second Startup must be refused with TPM_RC_INITIALIZE (tpm2_startup hides
# that rc, so send it raw: mssim TPM_SEND_COMMAND framing, big-endian).
rc=$(python3 -c "
import socket,struct
s=socket.create_connection(('127.0.0.1',$PORT),timeout=5)
cmd=bytes.fromhex('80010000000c000001440000')
s.sendall(struct.pack('>IBI',8,0,len(cmd))+cmd)
n=struct.unpack('>I',s.recv(4))[0]; r=b''
while len(r)<n+4: r+=s.recv(n+4-len(r))
print(hex(struct.unpack('>I',r[6:10])[0]), struct.unpack('>I',r[n:n+4])[0])
s.sendall(struct.pack('>I',20))" 2>&1)
if [ "$rc" = "0x100 0" ]; then ok "second TPM2_Startup gets TPM_RC_INITIALIZE (raw mssim frame, ack 0)"; else nok "second TPM2_Startup ($rc)"; fi

r1=$(tpm2_getrandom --hex 16 2>/dev/null); r2=$(tpm2_getrandom --hex 16 2>/dev/null)
if [[ "$r1" =~ ^[0-9a-f]{32}$ && "$r2" =~ ^[0-9a-f]{32}$ && "$r1" != "$r2" ]]; then ok "tpm2_getrandom: 16 random bytes, twice different"; else nok "tpm2_getrandom ($r1 / $r2)"; fi

pcr() { tpm2_pcrread "$1" 2>/dev/null | awk '/ 0 : /{print tolower($3)}' | sed 's/^0x//'; }
Z64=$(printf '0%.0s' $(seq 64)); Z96=$(printf '0%.0s' $(seq 96))
a=$(pcr sha256:0); b=$(pcr sha384:0)
if [ "$a" = "$Z64" ] && [ "$b" = "$Z96" ]; then ok "tpm2_pcrread: PCR0 is zero in SHA-256 and SHA-384"; else nok "tpm2_pcrread initial PCR0 ($a / $b)"; fi
if tpm2_pcrread sha1:0 2>/dev/null | grep -q ' 0 : '; then nok "SHA-1 bank is not allocated"; else ok "SHA-1 bank is not allocated"; fi

D256=$(printf 'csvsm' | sha256sum | cut -d' ' -f1); D384=$(printf 'csvsm' | sha384sum | cut -d' ' -f1)
check "tpm2_pcrextend 0:sha256,sha384" tpm2_pcrextend "0:sha256=$D256,sha384=$D384"
E256=$(python3 -c "import hashlib;print(hashlib.sha256(bytes(32)+bytes.fromhex('$D256')).hexdigest())")
E384=$(python3 -c "import hashlib;print(hashlib.sha384(bytes(48)+bytes.fromhex('$D384')).hexdigest())")
a=$(pcr sha256:0); b=$(pcr sha384:0)
if [ "$a" = "$E256" ] && [ "$b" = "$E384" ]; then ok "PCR0 after extend = H(0 || digest) in both banks"; else nok "PCR0 after extend ($a vs $E256)"; fi

flush
check "tpm2_createek -G rsa" tpm2_createek -c ek.ctx -G rsa -u ek.pub
flush
check "tpm2_createak (ECC P-256, ECDSA)" tpm2_createak -C ek.ctx -c ak.ctx -G ecc -g sha256 -s ecdsa -u ak.pem -f pem -n ak.name
flush
check "tpm2_quote over PCR0 (sha256+sha384)" tpm2_quote -c ak.ctx -l sha256:0+sha384:0 -q 0badc0de -m q.msg -s q.sig -o q.pcrs -g sha256
flush
check "tpm2_checkquote verifies" tpm2_checkquote -u ak.pem -m q.msg -s q.sig -f q.pcrs -g sha256 -q 0badc0de
if tpm2_checkquote -u ak.pem -m q.msg -s q.sig -f q.pcrs -g sha256 -q 0badc0df >"$T/out" 2>&1; then
	nok "tpm2_checkquote rejects a wrong nonce"; else ok "tpm2_checkquote rejects a wrong nonce"; fi

# Malformed frames: each must close (or be answered on) that connection only.
cat >"$T/bad.py" <<'PYEOF'
import socket, struct, sys, time
port = int(sys.argv[1]); case = sys.argv[2]
plat = case.startswith("plat")
s = socket.create_connection(("127.0.0.1", port + (1 if plat else 0)), timeout=5)
frames = {
    "truncated-header": b"\x00\x00\x00",
    "truncated-body": struct.pack(">IBI", 8, 0, 100) + b"\x80\x01",
    "oversized": struct.pack(">IBI", 8, 0, 0x100000) + b"\x00" * 64,
    "huge-size": struct.pack(">IBI", 8, 0, 0xFFFFFFFF),
    "garbage-cmd": struct.pack(">I", 0xDEADBEEF) + b"junk" * 10,
    "hash-start": struct.pack(">I", 5),
    "random": bytes(range(256)) * 4,
    "plat-garbage": struct.pack(">I", 0x12345678),
    "plat-truncated": b"\x00\x00",
}
s.sendall(frames[case])
if case in ("truncated-header", "truncated-body", "plat-truncated"):
    pass  # the server must give up on its own (I/O timeout), not hang
try:
    data = s.recv(4096)
    while data:
        data = s.recv(4096)
    print("closed")
except socket.timeout:
    print("still open after 5 s"); sys.exit(1)
except ConnectionResetError:
    print("reset")
PYEOF
for c in truncated-header truncated-body oversized huge-size garbage-cmd hash-start random plat-garbage plat-truncated; do
	if python3 "$T/bad.py" "$PORT" "$c" >"$T/out" 2>&1 && r=$(tpm2_getrandom --hex 8 2>/dev/null) && [[ "$r" =~ ^[0-9a-f]{16}$ ]]; then
		ok "malformed frame ($c): connection closed, server still serves"
	else
		nok "malformed frame ($c)" "$T/out"
	fi
done
# A stalled client does not block others (2 s I/O timeout). Timing-free: the
# stalled client holds its connection open until it is killed, so a served
# GetRandom while it is still connected shows the server dropped it.
rm -f "$T/stalled"
python3 -c "
import socket,time; s=socket.create_connection(('127.0.0.1',$PORT)); s.sendall(b'\x00\x00\x00\x08\x00'); open('$T/stalled','w').close(); time.sleep(600)" &
STALL=$!
for _ in $(seq 200); do [ -e "$T/stalled" ] && break; sleep 0.05; done
r=$(timeout 60 tpm2_getrandom --hex 8 2>/dev/null)
if [ -e "$T/stalled" ] && kill -0 "$STALL" 2>/dev/null && [[ "$r" =~ ^[0-9a-f]{16}$ ]]; then ok "a stalled client is dropped; others are served"; else nok "stalled client ($r)"; fi
kill "$STALL" 2>/dev/null; wait "$STALL" 2>/dev/null

# PCR state survived all of that.
a=$(pcr sha256:0)
if [ "$a" = "$E256" ]; then ok "PCR0 unchanged by the malformed traffic"; else nok "PCR0 after malformed traffic ($a)"; fi

# csvsm's own EK (template L-1, as placed in the attestation manifest) equals tpm2-tools' RSA EK.
if start_server "$T/server2.log" --startup --ek-out "$T/ek.mine"; then
	P2=$PORT
	if TPM2TOOLS_TCTI="mssim:host=127.0.0.1,port=$P2" tpm2_createek -c ek2.ctx -G rsa -u ek2.pub >"$T/out" 2>&1 &&
	   tail -c +3 ek2.pub | cmp -s - "$T/ek.mine"; then
		ok "csvsm EK TPMT_PUBLIC == tpm2_createek -G rsa public (TCG template L-1)"
	else nok "csvsm EK equals tpm2_createek's" "$T/out"; fi
	# Positive evidence first: STOP answered 0, then the server ended with
	# status 0 saying why (a server that died of anything else fails).
	reply=$(python3 -c "import socket,struct; s=socket.create_connection(('127.0.0.1',$P2+1),timeout=10); s.sendall(struct.pack('>I',21)); print(s.recv(4).hex())" 2>&1)
	for _ in $(seq 200); do kill -0 "${PIDS[-1]}" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "${PIDS[-1]}" 2>/dev/null; then st=running; else wait "${PIDS[-1]}"; st=$?; fi
	if [ "$reply" = 00000000 ] && [ "$st" = 0 ] && grep -q '^csvsm-tpm: stopped (platform STOP)' "$T/server2.log"; then
		ok "platform STOP ends the server (reply $reply, status $st)"
	else nok "platform STOP ends the server (reply $reply, status $st)" "$T/server2.log"; fi
else
	nok "second csvsm-tpm (--startup --ek-out) starts" "$T/server2.log"
fi

# --once: the server ends when its first command-port client leaves (tests cannot hang on it).
if start_server "$T/server3.log" --once; then
	TPM2TOOLS_TCTI="mssim:host=127.0.0.1,port=$PORT" tpm2_startup -c >"$T/out" 2>&1
	for _ in $(seq 200); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.05; done
	if kill -0 "$SPID" 2>/dev/null; then st=running; else wait "$SPID"; st=$?; fi
	if [ "$st" = 0 ] && grep -q '^csvsm-tpm: stopped (--once' "$T/server3.log"; then
		ok "--once exits after the first client (status $st)"
	else nok "--once exits after the first client (status $st)" "$T/server3.log"; fi
else
	nok "third csvsm-tpm (--once) starts" "$T/server3.log"
fi

echo "1..$n"
exit $failed
