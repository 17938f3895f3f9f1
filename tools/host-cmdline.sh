#!/usr/bin/env bash
# Print the QEMU command line that launches build/csvsm.igvm on COCONUT-SVSM's
# current host stack -- KVM planes: coconut-svsm/linux and coconut-svsm/qemu,
# branch svsm, since 2026-06-15 -- and the csvsm-measure commands, with their
# results, for the launch MEASUREMENT that host produces: first the digest
# that host measures, then the alternative. docs/hardware.md says why, which
# kernel and QEMU each line needs, and what is not yet done. Usage:
#   tools/host-cmdline.sh [IGVM] [SMP] [MEM] [CBITPOS] [KVM=planes]
set -eu
IGVM=${1:-build/csvsm.igvm}
SMP=${2:-4}
MEM=${3:-8G}
CBIT=${4:-51}
KVM=${5:-planes}
MEASURE=${MEASURE:-build/csvsm-measure}
[ -f "$IGVM" ] || { echo "host-cmdline: $IGVM not found (run make)" >&2; exit 1; }
[ -x "$MEASURE" ] || { echo "host-cmdline: $MEASURE not found (run make)" >&2; exit 1; }
case "$KVM" in
planes | coconut) ;; # COCONUT's host is the planes host (svsm 4b2f71de, f4effdf8)
upstream)
	# Upstream KVM reports no multi-VMPL support (GHCB HV feature bit 5) and
	# knows neither RUN_VMPL nor the MSR-form VMPL request: it runs VMPL0
	# only, so csvsm cannot run its guest there and refuses it at launch.
	echo "host-cmdline: KVM=upstream: upstream KVM runs VMPL0 only (no GHCB multi-VMPL" \
		"support, HV feature bit 5); csvsm refuses such a host (docs/hardware.md)" >&2
	exit 1
	;;
*)
	echo "host-cmdline: KVM must be planes (coconut is the same host; docs/hardware.md)" >&2
	exit 1
	;;
esac
# The planes series runs VMPLs as planes of one KVM vCPU: it creates planes
# only with a split irqchip (v1 PATCH 54/60 kvm_arch_max_planes), and QEMU's
# device-plane=2 sends device interrupts to the guest's plane (csvsm at VMPL0
# drops what reaches it). COCONUT's INSTALL.md (4b2f71de) and
# scripts/launch_guest.sh (f4effdf8) add both; launch_guest.sh needs QEMU >= 11.
MACHINE=q35,confidential-guest-support=sev0,memory-backend=mem0,igvm-cfg=igvm0,kernel-irqchip=split,device-plane=2
# QEMU with IGVM (backends/igvm.c): guest_memfd-backed RAM, the IGVM file as
# the machine's igvm-cfg, an sev-snp-guest object; -vga none as COCONUT does.
cat <<CMD
qemu-system-x86_64 -enable-kvm -cpu EPYC-v4 -smp $SMP \\
  -machine $MACHINE \\
  -object memory-backend-memfd,id=mem0,size=$MEM,share=true,prealloc=false,reserve=false \\
  -object igvm-cfg,id=igvm0,file=$IGVM \\
  -object sev-snp-guest,id=sev0,cbitpos=$CBIT,reduced-phys-bits=1 \\
  -nographic -vga none -monitor none -serial stdio -no-reboot
CMD
FEAT=$("$MEASURE" --igvm "$IGVM" --dump 2>/dev/null | sed -n 's/.*VP_CONTEXT .* sev_features=\(0x[0-9a-f]*\) .*/\1/p' | head -n1)
echo "# needs: kernel coconut-svsm/linux branch svsm (v7.1 + KVM planes), QEMU coconut-svsm/qemu"
echo "# branch svsm (>= 11.0, machine property device-plane), kvm_amd restricted_injection=1"
echo "# and debug_swap=1 for the image's SEV_FEATURES ${FEAT:-?}: check with"
echo "#   $MEASURE --igvm $IGVM --host-sev-features N"
echo "# (N = 0x8 if /sys/module/kvm_amd/parameters/restricted_injection is Y, plus 0x20 if"
echo "# .../debug_swap is Y; csvsm-igvm --no-debug-swap builds an image without DebugSwap)"
# Which VMSAs that host measures (docs/hardware.md "Which VMSAs the planes
# host measures"): the BSP's only, as COCONUT's release test attests
# (RELEASE-TESTPLAN.md, igvmmeasure --check-kvm at launch_guest.sh's -smp 4);
# one per vCPU if its KVM launches the legacy way for every vCPU.
echo "# expected MEASUREMENT: the BSP's VMSA only (COCONUT's planes host, as its release test attests):"
echo "$MEASURE --igvm $IGVM --vcpus 1 --vcpu-type EPYC-v4"
"$MEASURE" --igvm "$IGVM" --vcpus 1 --vcpu-type EPYC-v4
if [ "$SMP" != 1 ]; then
	echo "# if that KVM measures one VMSA per vCPU (its legacy launch for every vCPU, as the planes series v1 alone):"
	echo "$MEASURE --igvm $IGVM --vcpus $SMP --vcpu-type EPYC-v4"
	"$MEASURE" --igvm "$IGVM" --vcpus "$SMP" --vcpu-type EPYC-v4
fi
# A persistent vTPM (docs/vtpm.md "Persistence"): csvsm's channel is a
# 16550 on a unix socket that build/csvsm-proxy listens on. Printed only for
# an image whose measured boot block names a persistent mode.
if ! "$MEASURE" --igvm "$IGVM" --vtpm-mode ephemeral >/dev/null 2>&1; then
	cat <<CMD
# the image's vTPM is persistent: start csvsm-proxy first, then add to the QEMU line
# (0x2e8 unless the image was built with another --vtpm-port):
build/csvsm-proxy --socket /run/csvsm/vm.sock --state /var/lib/csvsm/vm.state [--kbs-url https://KBS:8080]
  -chardev socket,id=csvsm-vtpm,path=/run/csvsm/vm.sock \\
  -device isa-serial,chardev=csvsm-vtpm,iobase=0x2e8,irq=3
CMD
fi
