#!/usr/bin/env bash
# `make run`: boot csvsm's launch image build/csvsm.igvm in the SNP machine
# (build/snpm.elf: SEV-SNP hardware, PSP and KVM host models;
# docs/snp-machine.md) under QEMU TCG with the console on this terminal;
# csvsm pre-accepts memory, then runs the trixie OVMF the image carries at
# VMPL2 as an SEV-SNP guest, with:
#   GUEST=probe (default)  the probe (or PROBE=) as OVMF's kernel
#   GUEST=ovmf             OVMF alone (PROBE=none)
#   GUEST=linux            trixie's SVSM-aware OVMF and trixie-backports'
#                          Linux with the test initramfs (tests/linux), all
#                          vCPUs, as an SEV-SNP guest; its second serial
#                          port (ttyS1, csvsm_chan=) is the host verifier's
#                          channel, answered here as tests/linux/linux.sh
#                          does (tests/linux/cred-channel.sh): the guest's
#                          credential activation (tpm-activate) runs
#   FW=trixie (default)    the image build/csvsm.igvm (trixie's OVMF 2025.02)
#   FW=forky               build/csvsm-forky.igvm (Debian's OVMF 2026.08,
#                          which drives the vTPM and measures the boot)
#   VTPM=kbs               csvsm's vTPM persistent in kbs mode (docs/vtpm.md
#                          "Persistence"): csvsm-kbs (loopback), csvsm-proxy
#                          and a kbs image of the same firmware, their state in
#                          build/vtpm-run/ (kept: the next run restores the
#                          same TPM; the lease of a run that was stopped is
#                          released for the next one)
# Usage: tests/qemu/run.sh [MEM=4G] [SMP=2] [GUEST=probe|ovmf|linux] [FW=trixie|forky] [VTPM=kbs]
#                [PROBE=file.efi|none] [APPEND="snpm.x=y"] [KAPPEND="linux args"] [extra qemu args]
# APPEND= is the machine's command line (snpm.trace=1, docs/snp-machine.md).
set -u
cd "$(dirname "$0")/../.."
MEM=4G SMP=2 APPEND="" KAPPEND="" PROBE=build/probe.efi GUEST=probe FW=trixie VTPM=ephemeral
chan="" console=(-serial stdio) guest_bad=
args=()
for a in "$@"; do
	case "$a" in
	MEM=*) MEM=${a#MEM=} ;;
	SMP=*) SMP=${a#SMP=} ;;
	APPEND=*) APPEND=${a#APPEND=} ;;
	KAPPEND=*) KAPPEND=${a#KAPPEND=} ;;
	PROBE=*) PROBE=${a#PROBE=} ;;
	GUEST=*) GUEST=${a#GUEST=} ;;
	FW=*) FW=${a#FW=} ;;
	VTPM=*) VTPM=${a#VTPM=} ;;
	*) args+=("$a") ;;
	esac
done
. tests/qemu/lib.sh
[ -n "$APPEND" ] && args+=(-append "$APPEND")
case "$FW" in
trixie) ;;
forky) CSVSM_IGVM=build/csvsm-forky.igvm KAPPEND="${KAPPEND:+$KAPPEND }csvsm_fw=forky" ;;
*) echo "csvsm: FW=$FW: use trixie or forky" >&2; exit 2 ;;
esac
GMEM=$(snpm_guest_mem "$MEM") || exit 2
vtpm_proxy=
case "$VTPM" in
ephemeral) ;;
kbs)
	# csvsm-kbs and csvsm-proxy for this run (tests/vtpm/kbs-env.sh), on loopback
	. tests/vtpm/kbs-env.sh
	vd=build/vtpm-run inst=637376736d2d6d616b652d72756e2d31 # "csvsm-make-run-1"
	ovmf=build/guests/OVMF.fd
	[ "$FW" = forky ] && ovmf=build/guests/OVMF-forky.fd
	{ [ -f "$vd/token.pem" ] || vtpm_kbs_keys "$vd"; } && vtpm_kbs_image "$vd" "$vd/csvsm-kbs.igvm" "$inst" "$ovmf" &&
		VTPM_KBS_SECONDS=${RUN_TIMEOUT:-600} vtpm_kbs_start "$vd" "$inst" "$VTPM_KBS_MEAS" ||
		{ echo "csvsm: VTPM=kbs: csvsm-kbs did not start ($vd/kbs.log)" >&2; exit 2; }
	"$VTPM_KBS_BIN" vtpm-release --db "sqlite:$vd/registry.db" "$inst" >/dev/null
	QEMU_TIMEOUT=${RUN_TIMEOUT:-600} snpm_vtpm_proxy "$vd/sock" "$vd/state" "$vd/proxy.log" \
		--kbs-url "http://127.0.0.1:$VTPM_KBS_PORT" || { echo "csvsm: VTPM=kbs: csvsm-proxy did not start" >&2; exit 2; }
	vtpm_proxy=$VTPM_PROXY_PID
	trap 'kill "$vtpm_proxy" 2>/dev/null; vtpm_kbs_stop' EXIT
	CSVSM_IGVM=$vd/csvsm-kbs.igvm
	# shellcheck disable=SC2207
	args+=($(snpm_vtpm_args "$vd/sock"))
	KAPPEND="${KAPPEND:+$KAPPEND }csvsm_vtpm=kbs"
	echo "csvsm: VTPM=kbs: csvsm-kbs on 127.0.0.1:$VTPM_KBS_PORT, csvsm-proxy on $vd/sock, state $vd/state, image $CSVSM_IGVM (${VTPM_KBS_MEAS:0:16}...)"
	;;
*) echo "csvsm: VTPM=$VTPM: use ephemeral or kbs" >&2; exit 2 ;;
esac
for f in "$SNPM_ELF" "$CSVSM_IGVM"; do
	[ -f "$f" ] || { echo "csvsm: $f missing: run 'make'" >&2; exit 2; }
done
case "$GUEST" in
probe | ovmf)
	[ "$GUEST" = ovmf ] && PROBE=none
	[ "$PROBE" = none ] && PROBE=""
	if [ -n "$PROBE" ] && [ ! -f "$PROBE" ]; then echo "csvsm: no such probe: $PROBE" >&2; exit 2; fi
	# shellcheck disable=SC2207
	args+=($(snpm_guest_args probe "$MEM" "$SMP" "$PROBE"))
	;;
linux)
	if ! lx=$(linux_guest_args "$MEM" "$SMP" "$KAPPEND"); then exit 2; fi
	# shellcheck disable=SC2206
	args+=($lx)
	# The verifier's channel (issue 18 item 4), as in tests/linux/linux.sh:
	# QEMU's pipe chardev on FIFOs as the guest's COM2 (ttyS1), the console
	# also logged to a file that a watcher reads; on "linux-guest: tpm
	# credential-request" cred_challenge verifies the SNP report the guest
	# printed, takes the EK from the manifest it binds and sends a
	# credential for the guest's AK under it ("refused" if the report does
	# not verify). The summary below checks the secret the guest's TPM
	# recovered (csvsm-cred check).
	chan=$(mktemp -d)
	trap 'rm -rf "$chan"; kill ${vtpm_proxy:+"$vtpm_proxy"} 2>/dev/null; [ "$VTPM" = kbs ] && vtpm_kbs_stop' EXIT
	. tests/linux/cred-channel.sh
	cred_channel_open "$chan" || exit 2
	# shellcheck disable=SC2207
	args+=($(cred_channel_qemu_args "$chan"))
	console=(-chardev "stdio,id=con,signal=on,logfile=$chan/console.log" -serial chardev:con)
	args+=(-fw_cfg "name=opt/csvsm/linux/cmdline,string=$(linux_cmdline "$GMEM" "$SMP" "${KAPPEND:+$KAPPEND }csvsm_chan=ttyS1")")
	;;
*) echo "csvsm: GUEST=$GUEST: use probe, ovmf or linux" >&2; exit 2 ;;
esac
# shellcheck disable=SC2207
boot=($(snpm_args))
if [ -n "$chan" ]; then
	# The watcher: the console log, less CRs and escape sequences, into
	# $chan/guest.log (what cred_challenge reads), answering the request.
	meas=
	for f in "${VERIFY:=build/csvsm-verify}" "${CRED:=build/csvsm-cred}" "${CHAIN:=build/test-chain}/ark.pem" "${MEASURE:=build/csvsm-measure}"; do
		[ -e "$f" ] || { echo "csvsm: $f missing ('make'): the guest's credential request will be refused" >&2; touch "$chan/no-tools"; }
	done
	[ -e "$chan/no-tools" ] || meas=${VTPM_KBS_MEAS:-$("$MEASURE" --igvm "$CSVSM_IGVM")} || meas=
	: >"$chan/console.log"
	: >"$chan/guest.log"
	mkfifo "$chan/console.fifo"
	tail -n +1 -F "$chan/console.log" >"$chan/console.fifo" 2>/dev/null &
	tail_pid=$!
	(
		shopt -s extglob
		while IFS= read -r line; do
			line=${line//$'\r'/}
			line=${line//$'\e'\[*([0-9;=?])[A-Za-z]/}
			[ "$line" = "csvsm-run: end" ] && break
			printf '%s\n' "$line" >>"$chan/guest.log"
			if [ "$line" = "linux-guest: tpm credential-request" ]; then
				if cred_challenge "$chan/guest.log" "$chan" "$meas"; then
					echo answered >"$chan/answer"
				else
					echo refused >"$chan/answer"
				fi
			fi
		done <"$chan/console.fifo"
	) &
	watch_pid=$!
	trap 'kill "$tail_pid" "$watch_pid" ${vtpm_proxy:+"$vtpm_proxy"} 2>/dev/null; [ "$VTPM" = kbs ] && vtpm_kbs_stop; rm -rf "$chan"' EXIT
fi
timeout --foreground -k 5 "${RUN_TIMEOUT:-600}" "$QEMU" -machine "$QEMU_MACHINE" -accel "$QEMU_ACCEL" -cpu "$QEMU_CPU" \
	-m "$MEM" -smp "$SMP" -nodefaults -net none -display none -no-reboot "${console[@]}" \
	-device isa-debug-exit,iobase=0xf4,iosize=0x04 "${boot[@]}" \
	"${args[@]}" 2> >(grep -v "TCG doesn't support requested feature" >&2)
rc=$?
if [ -n "$chan" ]; then
	# Let the watcher read the rest of the log, then stop it.
	echo "csvsm-run: end" >>"$chan/console.log"
	for _ in $(seq 1 50); do kill -0 "$watch_pid" 2>/dev/null || break; sleep 0.1; done
	kill "$tail_pid" "$watch_pid" 2>/dev/null
	cred_channel_close
	summary=$(grep -E '^linux-guest: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' "$chan/guest.log" | tail -n1)
	act=$(grep -E '^(not )?ok [0-9]+ - tpm-activate: ' "$chan/guest.log" | head -n1 | cut -c1-160)
	echo "csvsm: /init: ${summary:-no summary}"
	skips=$(sed -n 's/^ok [0-9]* - \([a-z0-9-]*\): # SKIP.*/\1/p' "$chan/guest.log" | tr '\n' ' ')
	[ -z "$skips" ] || echo "csvsm: /init skipped: ${skips% }"
	# A skip fails the run unless ALLOW_SKIP=1, as in tests/run.sh.
	case "$summary" in
	*" passed, 0 failed, 0 skipped") ;;
	*" passed, 0 failed, "*" skipped") [ "${ALLOW_SKIP:-0}" = 1 ] || guest_bad=1 ;;
	*) guest_bad=1 ;;
	esac
	case "$(cat "$chan/answer" 2>/dev/null)" in
	answered)
		if cred_check "$chan/guest.log" "$chan" >"$chan/check.out" 2>&1; then
			echo "csvsm: credential activation: the SNP report verified, a credential for the guest's AK made under the manifest's EK, and the secret the guest's TPM recovered is the credential's (csvsm-cred check)"
		else
			guest_bad=1
			echo "csvsm: credential activation FAILED: the guest's secret is not the credential's: $(tail -n1 "$chan/check.out")"
		fi
		;;
	refused)
		why=$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("; ".join(c["name"] + ": " + c.get("detail", "") for c in d.get("checks", []) if not c["ok"]))' "$chan/challenge.json" 2>/dev/null)
		guest_bad=1
		echo "csvsm: credential activation FAILED: refused: ${why:-no SNP evidence from the guest, or the host tools are missing, or csvsm-cred make failed: $(tail -n1 "$chan/cred-make.out" 2>/dev/null)}"
		;;
	*) echo "csvsm: credential activation: the guest made no credential request (its TPM checks stopped before, or the image has no tpm_svsm.ko)" ;;
	esac
	echo "csvsm: ${act:-no tpm-activate check}"
fi
case $rc in
1)
	echo "csvsm: VM ended with success status"
	[ -z "$guest_bad" ] || { echo "csvsm: but the Linux guest's checks did not all pass (above)"; exit 1; }
	;;
124) echo "csvsm: stopped after ${RUN_TIMEOUT:-600}s: the VM did not end by itself (guest hung?)"; exit 1 ;;
*) echo "csvsm: VM ended with status $rc (failure)"; exit 1 ;;
esac
