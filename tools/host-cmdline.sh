#!/usr/bin/env bash
# Print the QEMU command line that launches build/csvsm.igvm on a real
# SEV-SNP host, and the csvsm-measure command (with its result) that gives
# the launch MEASUREMENT that host produces. docs/hardware.md says which
# host stack this is for and what is not yet done. Usage:
#   tools/host-cmdline.sh [IGVM] [SMP] [MEM] [CBITPOS] [KVM=coconut|upstream|planes]
set -eu
IGVM=${1:-build/csvsm.igvm}
SMP=${2:-4}
MEM=${3:-8G}
CBIT=${4:-51}
KVM=${5:-coconut}
MEASURE=${MEASURE:-build/csvsm-measure}
[ -f "$IGVM" ] || { echo "host-cmdline: $IGVM not found (run make)" >&2; exit 1; }
[ -x "$MEASURE" ] || { echo "host-cmdline: $MEASURE not found (run make)" >&2; exit 1; }
case "$KVM" in
upstream) VCPUS=$SMP ;; # KVM measures one VMSA per vCPU (snp_launch_update_vmsa)
coconut) VCPUS=1 ;;     # COCONUT's KVM with the SVSM init flag: the BSP only
planes) VCPUS=$SMP ;;   # the planes series: as upstream, per vCPU (unconfirmed: both printed)
*) echo "host-cmdline: KVM must be upstream, coconut or planes" >&2; exit 1 ;;
esac
MACHINE=q35,confidential-guest-support=sev0,memory-backend=mem0,igvm-cfg=igvm0
# The planes series runs VMPLs as planes of one KVM vCPU; its QEMU routes
# the guest's interrupts to the guest plane with a split irqchip (issue 16
# item 3, from the series' QEMU branch: device-plane=2, kernel-irqchip=split).
[ "$KVM" = planes ] && MACHINE=$MACHINE,kernel-irqchip=split,device-plane=2
# QEMU >= 9 with IGVM (qemu/qemu backends/igvm.c; the shape of COCONUT's
# scripts/launch_guest.sh): guest_memfd-backed RAM, the IGVM file as the
# machine's igvm-cfg, an sev-snp-guest object; -vga none as COCONUT does.
cat <<CMD
qemu-system-x86_64 -enable-kvm -cpu EPYC-v4 -smp $SMP \\
  -machine $MACHINE \\
  -object memory-backend-memfd,id=mem0,size=$MEM,share=true,prealloc=false,reserve=false \\
  -object igvm-cfg,id=igvm0,file=$IGVM \\
  -object sev-snp-guest,id=sev0,cbitpos=$CBIT,reduced-phys-bits=1 \\
  -nographic -vga none -monitor none -serial stdio -no-reboot
CMD
echo "# expected MEASUREMENT ($KVM KVM, $VCPUS VMSA(s) measured):"
echo "$MEASURE --igvm $IGVM --vcpus $VCPUS --vcpu-type EPYC-v4"
"$MEASURE" --igvm "$IGVM" --vcpus "$VCPUS" --vcpu-type EPYC-v4
if [ "$KVM" = planes ] && [ "$VCPUS" != 1 ]; then
	# Not confirmed on that kernel which VMSAs it measures: the other prediction too.
	echo "# if that KVM measures the BSP's VMSA only, as COCONUT's does:"
	echo "$MEASURE --igvm $IGVM --vcpus 1 --vcpu-type EPYC-v4"
	"$MEASURE" --igvm "$IGVM" --vcpus 1 --vcpu-type EPYC-v4
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
