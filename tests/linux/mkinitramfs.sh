#!/bin/bash
# Build the Linux guest's initramfs from bookworm's busybox-static, the
# downloaded kernel's own modules and tests/linux/init:
#
#   tests/linux/mkinitramfs.sh <guests dir> <init script> <out.cpio.gz>
#
# (`make` runs it: build/guests -> build/linux/initramfs.cpio.gz.)
#
# Contents: /bin/busybox with a link per applet, /init, /dev/console, and
# under /lib/modules/<release>/ the modules /init loads (sev-guest,
# tsm_report) plus everything modules.dep says they need, decompressed
# (Debian ships .ko.xz; busybox insmod hands the file to init_module()
# as is), with /lib/modules/load-order listing them dependencies first.
# For the vTPM checks: extra/tpm_svsm.ko (built by `make deps`,
# build-tpm-svsm.sh; if it is missing, /etc/csvsm-tpm-svsm-missing says why
# and /init fails those checks with that reason), the system's (bookworm)
# tpm2-tools with the shared libraries ldd lists for it and for the device
# TCTI it dlopen()s, and /etc/csvsm-expected: the PCR0 values csvsm must
# have measured, computed here from <guests dir>/OVMF.fd (and OVMF-forky.fd).
set -euo pipefail

G=${1:?guests dir}; INIT=${2:?init script}; OUT=${3:?output}
WANT="sev-guest tsm_report"   # the modules /init needs, by file name
BUSYBOX=/bin/busybox

die() { echo "csvsm: mkinitramfs: $*" >&2; exit 1; }

[ -s "$G/linux.stamp" ] && [ -e "$G/modules/kernel" ] ||
	die "no downloaded kernel under $G: run 'make deps' first"
dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'install ok installed' ||
	die "busybox-static is not installed: run 'make deps' (as root it installs it)"
for tool in depmod cpio gzip xz ldd modinfo sha256sum sha384sum xxd tpm2; do
	command -v "$tool" >/dev/null || die "'$tool' not found: run 'make deps'"
done

rel=$(cut -d' ' -f3 "$G/linux.stamp")
M=$G/modules   # -> root/linux/usr/lib/modules/<rel>

# Debian's linux-modules package has no modules.dep: its postinst runs
# depmod on the installed system. Do the same on the unpacked tree once per
# kernel (root/linux/lib -> usr/lib, so depmod -b finds lib/modules/<rel>).
if [ ! -s "$M/modules.dep" ] || [ "$M/modules.dep" -ot "$G/linux.stamp" ]; then
	depmod -b "$G/root/linux" "$rel" || die "depmod for $rel failed"
fi

# Load order: for each wanted module, its modules.dep line lists every
# module it needs (transitively) with the last to load first; load those
# right to left, then the module itself.
order=()
add() { local m; for m in "${order[@]:-}"; do [ "$m" = "$1" ] && return; done; order+=("$1"); }
for name in $WANT; do
	line=$(grep -E "(^|/)$name\.ko(\.xz|\.zst|\.gz)?:" "$M/modules.dep") ||
		die "module $name not in $M/modules.dep (is it built as a module in $rel?)"
	read -r -a deps <<<"${line#*:}"
	for ((i = ${#deps[@]} - 1; i >= 0; i--)); do add "${deps[i]}"; done
	add "${line%%:*}"
done

stage=${OUT%.cpio.gz}.d
rm -rf "$stage"
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,tmp,mnt,run,etc,lib/modules/"$rel"}

# busybox and one symlink per applet (busybox --list-full: bin/sh, sbin/insmod, ...)
cp "$BUSYBOX" "$stage/bin/busybox"
for a in $("$BUSYBOX" --list-full); do
	[ -e "$stage/$a" ] || ln -s /bin/busybox "$stage/$a"
done
install -m 0755 "$INIT" "$stage/init"

: >"$stage/lib/modules/load-order"
for m in "${order[@]}"; do
	ko=${m%.xz}; ko=${ko%.zst}; ko=${ko%.gz}
	mkdir -p "$stage/lib/modules/$rel/$(dirname "$ko")"
	case "$m" in
	*.xz) xz -dc "$M/$m" ;;
	*.zst) zstd -dcq "$M/$m" ;;
	*.gz) gzip -dc "$M/$m" ;;
	*) cat "$M/$m" ;;
	esac >"$stage/lib/modules/$rel/$ko"
	echo "$ko" >>"$stage/lib/modules/load-order"
done

# --- the vTPM: tpm_svsm.ko, tpm2-tools, the expected PCR0 --------------------
ko=$G/tpm_svsm.ko
if [ -f "$ko" ] && [ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$rel" ]; then
	mkdir -p "$stage/lib/modules/$rel/extra"
	cp "$ko" "$stage/lib/modules/$rel/extra/tpm_svsm.ko"
	tpm_svsm="extra/tpm_svsm.ko sha256=$(sha256sum "$ko" | cut -d' ' -f1)"
else
	why=$(cat "$G/tpm_svsm.missing" 2>/dev/null || true)
	[ -f "$ko" ] && why="$ko has vermagic '$(modinfo -F vermagic "$ko")', not for $rel"
	why=${why:-"no $ko (make deps builds it, as root)"}
	echo "$why" >"$stage/etc/csvsm-tpm-svsm-missing"
	tpm_svsm="missing: $why"
	echo "csvsm: mkinitramfs: warning: no tpm_svsm.ko in the initramfs: $why; the guest's vTPM checks will fail" >&2
fi
# tpm2-tools 5.4 is one multi-call binary, /usr/bin/tpm2, with tpm2_* links.
# Libraries keep the paths ldd prints (glibc's ld.so searches
# /lib/x86_64-linux-gnu by default); libtss2-tcti-device.so.0 is loaded by
# libtss2-tctildr at run time (TPM2TOOLS_TCTI=device:/dev/tpmrm0).
TPM2=$(readlink -f "$(command -v tpm2)")
TCTI=$(ls /usr/lib/x86_64-linux-gnu/libtss2-tcti-device.so.0 /lib/x86_64-linux-gnu/libtss2-tcti-device.so.0 2>/dev/null | head -n1)
[ -n "$TCTI" ] || die "libtss2-tcti-device.so.0 not found: run 'make deps' (package libtss2-tcti-device0)"
cp "$TPM2" "$stage/usr/bin/tpm2"
for l in "$(dirname "$TPM2")"/tpm2_*; do
	[ "$(readlink -f "$l")" = "$TPM2" ] && ln -sf tpm2 "$stage/usr/bin/$(basename "$l")"
done
mkdir -p "$stage/lib/x86_64-linux-gnu"
cp -L "$TCTI" "$stage/lib/x86_64-linux-gnu/libtss2-tcti-device.so.0"
# "name => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)"
{ ldd "$TPM2"; ldd "$TCTI"; } | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u |
	while read -r lib; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -L "$lib" "$stage$lib"
	done
nlibs=$(find "$stage/lib/x86_64-linux-gnu" "$stage/lib64" -type f | wc -l)
# csvsm measures the firmware image into PCR0 once, before OVMF runs
# (docs/vtpm.md): PCR0 = H(0...0 || H(OVMF.fd)) in each bank.
# One set per firmware choice, prefixed with its name (/init picks by
# csvsm_fw=): trixie (OVMF.fd) and forky (OVMF-forky.fd, when fetched).
pcr0() { # <firmware> <sha256sum|sha384sum> <bytes>
	{ head -c "$3" /dev/zero; "$2" "$1" | cut -d' ' -f1 | xxd -r -p; } | "$2" | cut -d' ' -f1
}
[ -f "$G/OVMF.fd" ] || die "no $G/OVMF.fd: run 'make deps' first"
for fw in trixie:OVMF.fd forky:OVMF-forky.fd; do
	f=$G/${fw#*:}
	[ -f "$f" ] || continue
	echo "${fw%%:*}.pcr0_sha256=$(pcr0 "$f" sha256sum 32)"
	echo "${fw%%:*}.pcr0_sha384=$(pcr0 "$f" sha384sum 48)"
	echo "${fw%%:*}.ovmf_sha256=$(sha256sum "$f" | cut -d' ' -f1)"
done >"$stage/etc/csvsm-expected"

# What the guest was built from, for /init to print.
{
	grep -E '^(ovmf_version|linux_version|linux_suite|kernel_release)=' "$G/versions"
	echo "busybox=$(dpkg-query -W -f='${Version}' busybox-static)"
	echo "modules=${order[*]}"
	echo "tpm_svsm=$tpm_svsm"
	echo "tpm2_tools=$(dpkg-query -W -f='${Version}' tpm2-tools) ($nlibs shared libraries)"
} >"$stage/etc/csvsm-guest"

# /dev/console must exist before /init runs (the kernel opens it for init's
# stdin/out/err; CONFIG_DEVTMPFS_MOUNT is off in Debian's config). A device
# node in a cpio needs no root when written by hand: one newc entry
# (Documentation/driver-api/early-userspace/buffer-format.rst: "070701",
# 13 fields of 8 hex digits, name, NUL, padding to 4), then the trailer.
# The kernel unpacks concatenated archives in order.
newc() { # <name> <mode (octal)> <rdevmajor> <rdevminor> <ino>
	local namesize=$((${#1} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
		"$5" "$((8#$2))" 0 0 1 0 0 0 0 "$3" "$4" "$namesize" 0
	printf '%s\0' "$1"
	head -c $(((4 - (110 + namesize) % 4) % 4)) /dev/zero
}

tmp=$OUT.tmp
(
	cd "$stage"
	find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --reproducible --quiet
	newc dev/console 020600 5 1 1
	newc TRAILER!!! 0 0 0 0
) | gzip -9n >"$tmp"
mv "$tmp" "$OUT"
echo "csvsm: $OUT: linux $rel, modules: ${order[*]}, tpm_svsm: $tpm_svsm, tpm2-tools with $nlibs libraries, $(stat -c %s "$OUT") bytes"
