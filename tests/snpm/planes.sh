#!/usr/bin/env bash
# The planes KVM's rules for VMPL0 (issue 16 item 3, issue 35 items 4 and 5,
# docs/snp-machine.md "The planes KVM's rules"), with the probe at VMPL2 and
# 2 vCPUs (KVM planes series v1, 2026-06-08, on Linux v7.1-rc7):
#  1. restricted injection: the machine posts an NMI for the boot vCPU's
#     VMPL0 in the #HV doorbell page csvsm registered and injects #HV
#     (snpm.nmi_vmpl0=1, KVM's prepare_hv_injection); csvsm acknowledges
#     and drops it and goes on serving (before the doorbell, vector 28 was
#     a fatal fault); then an interrupt for VMPL0 (snpm.irq_vmpl0=30, KVM's
#     INJECT_IRQ: the vector in the page), taken and dropped the same way.
#     While csvsm serves a request its guest VMSA is not runnable: the
#     machine's serving audit checks EFER.SVME of the guest VMSA at each of
#     VMPL0's exits in that time (checks > 0, runnable 0). A host that runs
#     the guest VMSA on another CPU while csvsm serves it
#     (snpm.vmsa_busy=40: 64 FAIL_INUSE answers to csvsm's RMPADJUST of the
#     page): csvsm retries until the page is its own and serves then.
#     The delete ordering (snpm.delete_race=, issue 35 item 5): the probe
#     destroys its AP's VMSA at the host (AP DESTROY) and deletes it with
#     DELETE_VCPU; an interrupt wakes the AP's VMPL0 meanwhile, which must
#     not RUN_VMPL that plane (PATCH 58/60 accepts it and the vCPU stalls:
#     run-vmpl-no-vmsa counts it) but HLT.
#  2. a host that answers RUN_VMPL from VMPL0 as an unknown event
#     (snpm.run_vmpl=msr) and refuses vCPU 0's doorbell page
#     (snpm.hv_doorbell_refuse=1, a mask): csvsm switches with the MSR form,
#     says the doorbell was refused, the NMI stays blocked, the probe still
#     passes. The create ordering (snpm.create_race=1, issue 35 item 4): the
#     guest has registered the AP's VMSA with CREATE_VCPU but not yet given
#     it to the host when the AP's VMPL0 wakes: an MSR-form request for a
#     plane KVM never created fails KVM_RUN and stops the VM (PATCH 58/60),
#     so csvsm must HLT.
#  3. a host without the multi-VMPL events (snpm.multi_vmpl=0: no GHCB HV
#     feature bit 5, as upstream KVM): csvsm stops at its GHCB setup, so it
#     never switches with a VMPL request the host does not advertise.
# The APs idle in HLT until their guest VMPL has run in every run (the
# machine refuses RUN_VMPL to a plane KVM never created: a csvsm that asked
# would fail here). Builds nothing: `make` first.
set -u
cd "$(dirname "$0")/../.."
. tests/qemu/lib.sh
PROBE=${PROBE:-build/probe.efi}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ELF=${CSVSM_ELF:-build/csvsm.elf} # the ELF of $CSVSM_IGVM, for its symbols
snpm_need "$PROBE" "$ELF"
QEMU_TIMEOUT=${QEMU_TIMEOUT_PLANES:-300}

ended() { # ended NAME LOG: the probe's summary with 0 failed, then the machine's success line, no fault
	local name=$1 log=$2 summary
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n1)
	grep '^not ok ' "$log" | sed "s/^/# $name: probe FAILED: /"
	tap_check "$name: the probe reports 0 failed (${summary:-no summary})" grep -qE '^[0-9]+ passed, 0 failed' "$log"
	tap_check "$name: the machine ended with success status (QEMU exit 1, got $QEMU_RC)" test "$QEMU_RC" -eq 1
	if [ -n "$summary" ] && [ "$(tail -n1 "$log")" = "snpm: end: success" ] && ! grep -q 'FAULT\|PANIC' "$log"; then
		tap_ok "$name: no csvsm fault or panic (the run reached 'snpm: end: success')"
	else
		tap_fail "$name: no csvsm fault or panic (last line: '$(tail -n1 "$log" | cut -c1-60)')"
		tail -n 30 "$log" | sed 's/^/# /'
	fi
}
audit() { # audit NAME LOG: the serving audit ran and found the guest VMSA never runnable
	local name=$1 log=$2 line
	line=$(grep -m1 '^snpm: serving-audit: ' "$log")
	echo "# $name: $line"
	tap_check "$name: serving audit: checks=$(field checks "$line") > 0 and guest-vmsa-runnable=0" \
		test "$(field checks "$line")" -gt 0 -a "$(field guest-vmsa-runnable "$line")" = 0
	tap_check "$name: csvsm's AP idled in HLT until the guest created its vCPU (vmpl0-hlt=$(field vmpl0-hlt "$line") > 0)" \
		test "$(field vmpl0-hlt "$line")" -gt 0
	tap_check "$name: csvsm never asked to run a plane KVM never created (run-vmpl-never-created=$(field run-vmpl-never-created "$line")) or one whose VMSA was destroyed (run-vmpl-no-vmsa=$(field run-vmpl-no-vmsa "$line"))" \
		test -n "$line" -a "$(field run-vmpl-never-created "$line")" = 0 -a "$(field run-vmpl-no-vmsa "$line")" = 0
}
busy() { # busy NAME LOG WANT: the machine answered WANT of csvsm's parking RMPADJUSTs with FAIL_INUSE
	local name=$1 log=$2 want=$3 line
	line=$(grep -m1 '^snpm: serving-audit: ' "$log")
	tap_check "$name: the host ran the guest VMSA elsewhere for $want of csvsm's RMPADJUSTs while it served (vmsa-busy-answers=$(field vmsa-busy-answers "$line")); csvsm retried and served" \
		test "$(field vmsa-busy-answers "$line")" = "$want"
}

# The boot vCPU's stack guard (src/boot.S boot_stack_guard) must be absent
# from VMPL0's page tables, so that an overflow of the boot stack (nested #HV
# deliveries) faults instead of running over .bss; its neighbour, the stack's
# lowest page, is the control that the walk finds a mapped page.
guard=$(nm "$ELF" | awk '$3 == "boot_stack_guard" {print $1}')
stack=$(nm "$ELF" | awk '$3 == "boot_stack" {print $1}')
guard=$(printf %x "0x${guard:-0}") stack=$(printf %x "0x${stack:-0}")
glast=$(printf %x $((0x$stack - 0x1000))) # the guard's last page (16 KiB: src/entry.h BOOT_STACK_GUARD)
# The APs' stacks: the machine reads vCPU 1's stack_top from csvsm's percpus[]
# and walks VMPL0's tables for the guard under it (src/smp.c, AP_STACK_GUARD).
percpus=$(nm "$ELF" | awk '$3 == "percpus" {print $1}')
percpus=$(printf %x "0x${percpus:-0}")
waits=$(nm "$ELF" | awk '$3 == "vcpu_delete_waits" {print $1}')
# shellcheck disable=SC2046
snpm_qemu "$tmp/n.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") \
	-append "snpm.nmi_vmpl0=1 snpm.irq_vmpl0=30 snpm.va_probe=$guard,$glast,$stack snpm.vmsa_busy=40 snpm.ap_stack_probe=$percpus snpm.delete_race=${waits:-0}"
log=$tmp/n.log
ended "nmi" "$log"
busy "nmi" "$log" 64
g=$(grep -m1 "^snpm: vmpl0-map: va=0x$guard " "$log")
c=$(grep -m1 "^snpm: vmpl0-map: va=0x$stack " "$log")
echo "# guard: ${g:-no vmpl0-map line for boot_stack_guard 0x$guard}; control: ${c:-none}"
tap_check "guard: boot_stack_guard (0x$guard) is not mapped in VMPL0's page tables at the guest's launch" \
	test "$guard" != 0 -a "$(field mapped "$g")" = 0
l=$(grep -m1 "^snpm: vmpl0-map: va=0x$glast " "$log")
tap_check "guard: its last page, 0x$glast (16 KiB, as the APs'), is not mapped either" \
	test $((0x$stack - 0x$guard)) -eq 16384 -a "$(field mapped "$l")" = 0
tap_check "guard: the control, boot_stack (0x$stack) just above it, is mapped" \
	test "$stack" != 0 -a "$(field mapped "$c")" = 1
a=$(grep -m1 '^snpm: vmpl0-map: ap=1 ' "$log")
echo "# AP guard: ${a:-no vmpl0-map line for vCPU 1}"
tap_check "guard: vCPU 1's stack guard, first and last page (16 KiB under its stack), is not mapped; its lowest stack page is" \
	test -n "$a" -a "$(field mapped "$a")" = 0 -a "$(field mapped_last "$a")" = 0 -a "$(field mapped_low "$a")" = 1 \
	-a $(( $(field stack_low "$a" | grep -x '0x[0-9a-f]*' || echo 0) - $(field guard "$a" | grep -x '0x[0-9a-f]*' || echo 0) )) -eq 16384
m=$(grep -m1 '^snpm: #HV: NMI for VMPL0 of vCPU 0 posted in its doorbell page' "$log")
echo "# nmi: $m"
tap_check "nmi: the machine posted the NMI in csvsm's doorbell page and injected #HV" test -n "$m"
c=$(grep -m1 '^csvsm: #HV on vCPU 0: ' "$log")
echo "# nmi: $c"
tap_check "nmi: csvsm's #HV handler took it (1 NMI, acknowledged and dropped)" \
	grep -q '^csvsm: #HV on vCPU 0: 1 events, 1 NMI, .* acknowledged and dropped' "$log"
tap_check "nmi: the machine counts 1 NMI delivered" \
	test "$(field nmi-delivered "$(grep -m1 '^snpm: serving-audit: ' "$log")")" = 1
i=$(grep -m1 '^snpm: #HV: interrupt 0x30 for VMPL0 of vCPU 0 posted in its doorbell page' "$log")
echo "# irq: $i"
tap_check "irq: after the NMI, the machine posted interrupt 0x30 (a host IPI for plane 0) as the page's vector and injected #HV" \
	bash -c "grep -q '^snpm: #HV: interrupt 0x30 for VMPL0 of vCPU 0 posted in its doorbell page 0x[0-9a-f]*, #HV injected' '$log'"
tap_check "irq: csvsm's #HV handler took it too (2 events: 1 NMI, 1 vector, acknowledged and dropped)" \
	grep -q '^csvsm: #HV on vCPU 0: 2 events, 1 NMI, 1 vectors, 0 without a doorbell page: acknowledged and dropped' "$log"
tap_check "irq: the machine counts 2 interrupts delivered (0x30 to vCPU 0; the delete race's 0x31 to vCPU 1)" \
	test "$(field irq-delivered "$(grep -m1 '^snpm: serving-audit: ' "$log")")" = 2
# Each vCPU registers its page as it enters csvsm's request loop, silently
# when the host takes it: no refusal means something once vCPU 0's page took
# the NMI, an AP reached the loop (vmpl0-hlt > 0) and the run ended.
a=$(grep -m1 '^snpm: serving-audit: ' "$log")
tap_check "nmi: no vCPU was refused its doorbell page (vCPU 0's took the NMI, the AP idled in the loop, the run ended)" \
	bash -c "test -n \"\$1\" -a \"\${2:-0}\" -gt 0 && [ \"\$(tail -n1 '$log')\" = 'snpm: end: success' ] && ! grep -q 'refused the #HV doorbell\|does not report restricted injection' '$log'" \
	_ "$m" "$(field vmpl0-hlt "$a")"
audit "nmi" "$log"
# Issue 35 item 3: the launch VMSA has FCW and MXCSR zero (QEMU < 10's
# check_vmsa_supported); csvsm's entry sets the reset values itself.
f=$(grep -m1 '^snpm: launch: VMPL0 x87 ' "$log")
echo "# fpu: $f"
tap_check "fpu: from a launch VMSA with FCW and MXCSR 0, VMPL0 reached its guest's launch with FCW 0x37f MXCSR 0x1f80 (src/boot.S cpu_enable_fpu)" \
	test -n "$f" -a "$(field fcw "$f")" = 0x37f -a "$(field mxcsr "$f")" = 0x1f80 \
	-a "$(field vmsa-fcw "$f")" = 0x0 -a "$(field vmsa-mxcsr "$f")" = "0x0)"
r=$(grep -m1 '^snpm: race: delete: vCPU 1.s VMPL0 decided: ' "$log")
echo "# delete race: $(grep -m1 '^snpm: race: delete: DELETE_VCPU' "$log")"
echo "# delete race: ${r:-no decision line}"
tap_check "delete race: DELETE_VCPU waited for the AP's VMPL0, which then decided HLT (not a RUN_VMPL of the destroyed VMSA's plane)" \
	test "$waits" != "" -a "${r#*decided: HLT (vCPU 0 held until now}" != "$r"

# shellcheck disable=SC2046
snpm_qemu "$tmp/m.log" 2G 2 $(snpm_guest_args probe 2G 2 "$PROBE") \
	-append "snpm.run_vmpl=msr snpm.hv_doorbell_refuse=1 snpm.nmi_vmpl0=1 snpm.create_race=1"
log=$tmp/m.log
ended "msr" "$log"
tap_check "msr: csvsm switched to the MSR form once (one 'does not know GHCB RUN_VMPL' line)" \
	test "$(grep -c '^csvsm: the host does not know GHCB RUN_VMPL: switching to VMPL2 through the GHCB MSR protocol' "$log")" = 1
tap_check "msr: csvsm reports the refused doorbell page on vCPU 0 only (snpm.hv_doorbell_refuse=1)" \
	test "$(grep -c '^csvsm: vCPU [01]: the host refused the #HV doorbell page' "$log")" = 1 -a \
	"$(grep -c '^csvsm: vCPU 0: the host refused the #HV doorbell page' "$log")" = 1
tap_check "msr: the machine held the NMI as blocked (no doorbell page), none delivered" \
	grep -q '^snpm: #HV: NMI for VMPL0 of vCPU 0 blocked: no #HV doorbell page registered' "$log"
tap_check "msr: csvsm's #HV handler never ran on vCPU 0 (in a run that held the NMI and ended)" \
	bash -c "grep -q '^snpm: #HV: NMI for VMPL0 of vCPU 0 blocked' '$log' && [ \"\$(tail -n1 '$log')\" = 'snpm: end: success' ] && ! grep -q '^csvsm: #HV on vCPU 0' '$log'"
audit "msr" "$log"
r=$(grep -m1 '^snpm: race: create: vCPU 1.s VMPL0 decided: ' "$log")
echo "# create race: $(grep -m1 '^snpm: race: create: vCPU 0' "$log")"
echo "# create race: ${r:-no decision line}"
tap_check "create race: woken before its plane existed in KVM, the AP's VMPL0 decided HLT (not the MSR-form request that stops the VM)" \
	test "${r#*decided: HLT (vCPU 0 held until now}" != "$r"

# 3. No GHCB HV feature bit 5: csvsm stops before it registers a GHCB
# (base/ghcb.c ghcb_msr_hv_features_check; src/snp_boot.c SNP_BOOT_GHCB).
# shellcheck disable=SC2046
snpm_qemu "$tmp/u.log" 2G 1 $(snpm_guest_args probe 2G 1 "$PROBE") -append "snpm.multi_vmpl=0"
log=$tmp/u.log
p=$(grep -m1 '^snpm: guest requested termination' "$log")
echo "# no multi-VMPL: ${p:-$(tail -n1 "$log")}"
tap_check "no multi-VMPL: csvsm stops at its GHCB setup (reason set 1 code 0x43), the run fails (QEMU exit 3, got $QEMU_RC), no guest ran" \
	test "$p" = "snpm: guest requested termination (reason set 1 code 67) on vCPU 0" -a "$QEMU_RC" -eq 3 \
	-a "$(grep -c '^[0-9]* passed, \|firmware at VMPL' "$log")" = 0
[ "$TAP_FAILS" -eq 0 ]
