# csvsm-kbs and a kbs-mode launch image for the SNP machine (docs/vtpm.md
# "Persistence"), sourced by tests/vtpm/kbs.sh, tests/linux/linux.sh
# (CSVSM_VTPM=kbs) and `make run VTPM=kbs` (tests/qemu/run.sh). Needs
# tests/qemu/lib.sh sourced first. All on loopback, bounded.
#
#   vtpm_kbs_keys DIR          the broker's token key (EC P-256: the key
#                              csvsm-kbs signs EARs and releases with) and an
#                              EK CA (EC P-384, self-signed), in DIR
#   vtpm_kbs_image DIR OUT INSTANCE [OVMF] [csvsm-igvm options]
#                              csvsm's image in kbs mode naming that broker
#                              key; VTPM_KBS_MEAS gets csvsm-measure's digest
#   vtpm_kbs_start DIR INSTANCE MEAS...
#                              a registry with the instance registered, a
#                              policy admitting those measurements (csvsm's
#                              SVSM evidence at VMPL 0), the test chain's VCEK
#                              in a KDS-layout directory (csvsm's boot evidence
#                              carries no certificates), then csvsm-kbs on an
#                              ephemeral port: VTPM_KBS_PORT, VTPM_KBS_PID
#   vtpm_kbs_stop              stops it
VTPM_KBS_BIN=${VTPM_KBS_BIN:-build/csvsm-kbs}
VTPM_KBS_LEASE=${VTPM_KBS_LEASE:-600}
VTPM_KBS_PID=
vtpm_kbs_keys() {
	local d=$1
	mkdir -p "$d"
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$d/token.pem" >/dev/null 2>&1 &&
		openssl pkey -in "$d/token.pem" -pubout -out "$d/token.pub" 2>/dev/null &&
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-384 -nodes -keyout "$d/ekca.key" \
			-out "$d/ekca.pem" -subj "/CN=csvsm-kbs EK CA (SNP machine test)" -days 30 \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign >/dev/null 2>&1
}
vtpm_kbs_image() {
	local d=$1 out=$2 inst=$3 ovmf=${4:-build/guests/OVMF.fd}
	shift 4 2>/dev/null || shift $#
	"${IGVM_TOOL:-build/csvsm-igvm}" --elf build/csvsm.elf --ovmf "$ovmf" --entry-symbol snp_entry32 \
		--vtpm-mode kbs --vtpm-instance "$inst" --vtpm-broker-key "$d/token.pub" "$@" -o "$out" >"$out.txt" || return 1
	VTPM_KBS_MEAS=$("${MEASURE:-build/csvsm-measure}" --igvm "$out" --vtpm-mode kbs --vtpm-instance "$inst" \
		--vtpm-broker-key "$d/token.pub")
	[ -n "$VTPM_KBS_MEAS" ]
}
vtpm_kbs_start() {
	local d=$1 inst=$2 chain=${CHAIN:-build/test-chain}
	shift 2
	local m list=""
	for m in "$@"; do list="$list${list:+, }\"$m\""; done
	cat >"$d/policy.json" <<EOF
{"version": 1, "comment": "csvsm's kbs-mode vTPM in the SNP machine (tests/vtpm/kbs-env.sh)",
 "snp": {"policy": "0x30000", "vmpl": 0, "measurement": [$list]},
 "svsm": {}}
EOF
	mkdir -p "$d/kds/vcek/$(cat "$chain/chip-id.hex")" "$d/kds/milan"
	cp "$chain/vcek.der" "$d/kds/vcek/$(cat "$chain/chip-id.hex")/vcek.der"
	cp "$chain/ask.pem" "$d/kds/milan/ask.pem"
	cp "$chain/ark.pem" "$d/kds/milan/ark.pem"
	[ -f "$d/registry.db" ] ||
		"$VTPM_KBS_BIN" vtpm-register --db "sqlite:$d/registry.db" "$inst" --lease-seconds "$VTPM_KBS_LEASE" >/dev/null ||
		return 1
	rm -f "$d/kbs.port"
	"$VTPM_KBS_BIN" serve --policy "$d/policy.json" --db "sqlite:$d/registry.db" --listen 127.0.0.1:0 \
		--insecure-http --port-file "$d/kbs.port" --max-seconds "${VTPM_KBS_SECONDS:-3600}" \
		--trust-ark "$chain/ark.pem" --kds-dir "$d/kds" --token-key "$d/token.pem" \
		--ek-ca-cert "$d/ekca.pem" --ek-ca-key "$d/ekca.key" 2>>"$d/kbs.log" &
	VTPM_KBS_PID=$!
	for _ in $(seq 100); do [ -s "$d/kbs.port" ] && break; sleep 0.05; done
	VTPM_KBS_PORT=$(cat "$d/kbs.port" 2>/dev/null)
	[ -n "$VTPM_KBS_PORT" ]
}
vtpm_kbs_stop() {
	[ -n "$VTPM_KBS_PID" ] && { kill "$VTPM_KBS_PID" 2>/dev/null; wait "$VTPM_KBS_PID" 2>/dev/null; }
	VTPM_KBS_PID=
}
