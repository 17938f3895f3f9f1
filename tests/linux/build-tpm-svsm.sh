#!/bin/bash
# Build Linux's SVSM vTPM driver, drivers/char/tpm/tpm_svsm.c, as a module
# for the fetched kernel: Debian's kernels leave CONFIG_TCG_SVSM unset, so
# without it the guest has the `tpm-svsm` platform device but no /dev/tpm0.
# Everything comes from Debian packages at the kernel's exact version; nothing
# is installed on the system and nothing of the driver is kept in the
# repository.
#
#   tests/linux/build-tpm-svsm.sh <guests dir>
#
# fetch-guests.sh runs it (`make deps`) with APT_CONFIG naming its private apt
# configuration and the lists just updated (CSVSM_OFFLINE=1: the archive
# could not be reached). Steps (tests/linux/README.md, "tpm_svsm.ko"):
#   1. the build root: linux-headers-<release> plus make, binutils, the
#      shell tools, resolved by apt against an empty dpkg status (trixie's
#      gcc-14 and kbuild tools need glibc 2.38, the system has bookworm's),
#      downloaded and unpacked with dpkg-deb -x into <guests>/root/kbuild;
#   2. the driver source: tpm_svsm.c and tpm.h out of linux-source-X.Y at the
#      kernel's version, into <guests>/tpm_svsm-src (the .deb is deleted);
#   3. `make M=... modules` in a chroot of that root, inside a private mount
#      namespace (proc and /dev/{null,zero,urandom} bound there only), twice
#      in two fresh directories: both builds must be byte-identical;
#   4. vermagic must be the kernel release's, equal to that of Debian's own
#      modules for it.
# Result: <guests>/tpm_svsm.ko, tpm_svsm.info (key=value lines for
# <guests>/versions), tpm_svsm.stamp ("<version> <release>").
#
# The chroot needs root. Without root (or without the archive, or when the
# build fails) there is no tpm_svsm.ko, <guests>/tpm_svsm.missing says why,
# a warning says so, and this script still exits 0 for missing root or
# archive: the initramfs is then built without the module and /init
# reports each vTPM check as failed with that reason (nothing is skipped).
set -euo pipefail

G=$(cd "${1:?guests dir}" && pwd)
A=$G/apt
KO=$G/tpm_svsm.ko
STAMP=$G/tpm_svsm.stamp
INFO=$G/tpm_svsm.info
WHY=$G/tpm_svsm.missing
R=$G/root/kbuild
SRC=$G/tpm_svsm-src

missing() { # <reason>: no module; say why, for make deps and for /init
	rm -f "$KO" "$STAMP" "$INFO"
	echo "$1" >"$WHY"
	echo "csvsm: warning: tpm_svsm.ko not built: $1" >&2
	echo "csvsm: warning: the initramfs will not carry it, and the Linux guest's vTPM checks (tpm-driver, tpm-dev, tpm-pcr0-sha256, tpm-pcr0-sha384, tpm-eventlog, tpm-getrandom, tpm-ek, tpm-ak, tpm-activate, tpm-quote) fail with this reason" >&2
}
die() { missing "$*"; exit 1; }

[ -s "$G/linux.stamp" ] || die "no fetched kernel ($G/linux.stamp)"
read -r ver _ rel <"$G/linux.stamp"
[ -n "$rel" ] || die "$G/linux.stamp names no kernel release"

# vermagic of a module file (modinfo reads .ko and .ko.xz alike)
vermagic() { modinfo -F vermagic "$1" 2>/dev/null | head -n1; }
# What Debian's own modules for this kernel say, e.g.
# "7.3.4+deb13-amd64 SMP preempt mod_unload modversions"
ref_ko=$(find "$G/modules/kernel/fs/configfs" -name 'configfs.ko*' | head -n1)
[ -n "$ref_ko" ] || die "no configfs module under $G/modules to compare vermagic with"
want_vm=$(vermagic "$ref_ko")
case "$want_vm" in "$rel "*) ;; *) die "Debian's $ref_ko has vermagic '$want_vm', not for $rel" ;; esac
vm_ok() { # <ko>: vermagic equals Debian's for this release
	local v
	v=$(vermagic "$1")
	[ "$v" = "$want_vm" ] && [ "${v%% *}" = "$rel" ]
}
report() { echo "csvsm: guest tpm_svsm.ko for $rel ($(stat -c %s "$KO") bytes, vermagic '$(vermagic "$KO")')"; }

# --- already built for this kernel? -----------------------------------------
if [ -s "$STAMP" ] && [ "$(cat "$STAMP")" = "$ver $rel" ] && [ -f "$KO" ] && [ -s "$INFO" ] && vm_ok "$KO"; then
	rm -f "$WHY"
	report
	exit 0
fi
if [ "${CSVSM_OFFLINE:-0}" = 1 ]; then
	missing "the Debian archive could not be reached to fetch the build root and linux-source for $ver"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	missing "building it needs root (a chroot into the unpacked trixie build root $R); run 'make deps' as root"
	exit 0
fi
for tool in apt-get dpkg-deb chroot unshare mount modinfo xz tar sha256sum; do
	command -v "$tool" >/dev/null || die "'$tool' not found"
done
[ -n "${APT_CONFIG:-}" ] && [ -r "$APT_CONFIG" ] || die "APT_CONFIG does not name the private apt configuration (run tests/linux/fetch-guests.sh)"

sha() { sha256sum "$1" | cut -d' ' -f1; }
pkgline() { printf 'package=%s size=%s sha256=%s\n' "$(basename "$1")" "$(stat -c %s "$1")" "$(sha "$1")"; }

# --- 1. the build root ------------------------------------------------------------
# The headers' Makefile sets CC = x86_64-linux-gnu-gcc-14 (gcc-14-for-host
# is a dependency); kbuild's scripts run under sh/bash and use the usual
# tools; binutils is not in the headers' closure but without `as` every
# cc-option probe fails quietly. apt resolves against the private, empty
# dpkg status: the result is a complete root, whatever the system has.
want=("linux-headers-$rel=$ver" make binutils dash bash coreutils sed grep mawk findutils diffutils)
sim=$(apt-get install -s -q --no-install-recommends "${want[@]}" 2>&1) ||
	die "apt cannot resolve the build root for $rel: $(grep -E '^E:' <<<"$sim" | head -3 | tr '\n' ' ')"
# "Inst <pkg> (<version> <suites> [arch])"
mapfile -t pkgs < <(awk '$1 == "Inst" { v = $3; sub(/^\(/, "", v); print $2 "=" v }' <<<"$sim" | LC_ALL=C sort)
[ ${#pkgs[@]} -gt 10 ] || die "apt resolved only ${#pkgs[@]} packages for the build root"
if [ ! -s "$R/.closure" ] || [ "$(cat "$R/.closure")" != "$(printf '%s\n' "${pkgs[@]}")" ]; then
	echo "csvsm: tpm_svsm: build root for $rel: ${#pkgs[@]} packages"
	d=$A/kbuild-debs
	rm -rf "$d" && mkdir -p "$d"
	(cd "$d" && apt-get download -q "${pkgs[@]}" >/dev/null) || die "apt-get download of the build root failed"
	tmp=$R.new
	rm -rf "$tmp" && mkdir -p "$tmp/usr/bin" "$tmp/usr/sbin" "$tmp/usr/lib" "$tmp/usr/lib64"
	# Merged /usr, as base-files lays it out (made first so that no package
	# unpacked before base-files turns /bin into a directory).
	for l in bin sbin lib lib64; do ln -s "usr/$l" "$tmp/$l"; done
	for deb in "$d"/*.deb; do
		dpkg-deb -x "$deb" "$tmp"
		pkgline "$deb" >>"$tmp/.packages"
	done
	# What the maintainer scripts would have done and kbuild needs: the awk
	# alternative (mawk's postinst), mount points for /proc and the three
	# device nodes (bound from the system in the build's mount namespace).
	[ -e "$tmp/usr/bin/awk" ] || ln -s mawk "$tmp/usr/bin/awk"
	mkdir -p "$tmp/proc" "$tmp/dev" "$tmp/tmp" "$tmp/build"
	chmod 1777 "$tmp/tmp"
	for n in null zero urandom; do : >"$tmp/dev/$n"; done
	printf '%s\n' "${pkgs[@]}" >"$tmp/.closure"
	rm -rf "$R" && mv "$tmp" "$R"
	rm -rf "$d"
fi
HDR=/usr/src/linux-headers-$rel
[ -f "$R$HDR/Makefile" ] || die "the build root has no $HDR"

# --- 2. the driver's source -------------------------------------------------------
# linux-source-X.Y (X.Y of the release) at exactly the kernel's version: a
# .deb holding usr/src/linux-source-X.Y.tar.xz; only the driver and its
# local header are taken (include/linux/tpm_svsm.h is in the headers).
xy=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$rel")
srcpkg=linux-source-$xy
if [ ! -s "$SRC/.version" ] || [ "$(cat "$SRC/.version")" != "$srcpkg=$ver" ] ||
	[ ! -f "$SRC/tpm_svsm.c" ] || [ ! -f "$SRC/tpm.h" ]; then
	echo "csvsm: tpm_svsm: fetching $srcpkg $ver (about 170 MB; only drivers/char/tpm/tpm_svsm.c and tpm.h are kept)"
	d=$A/src-debs
	rm -rf "$d" && mkdir -p "$d"
	(cd "$d" && apt-get download -q "$srcpkg=$ver" >/dev/null) || die "apt-get download $srcpkg=$ver failed"
	deb=$(ls "$d"/*.deb)
	tmp=$SRC.new
	rm -rf "$tmp" && mkdir -p "$tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$srcpkg.tar.xz" | xz -dc |
		tar -x -C "$tmp" --strip-components=4 "$srcpkg/drivers/char/tpm/tpm_svsm.c" "$srcpkg/drivers/char/tpm/tpm.h" ||
		die "$srcpkg $ver: no drivers/char/tpm/tpm_svsm.c and tpm.h in usr/src/$srcpkg.tar.xz"
	pkgline "$deb" >"$tmp/.packages"
	echo "$srcpkg=$ver" >"$tmp/.version"
	rm -rf "$SRC" && mv "$tmp" "$SRC"
	rm -rf "$d"
fi

# --- 3. build, twice -----------------------------------------------------------------
# In the chroot nothing of the system is seen but the kernel and the bound
# device nodes; env -i: no variable of the caller reaches kbuild. The
# directory is always /build/tpm_svsm (the GNU build-id is a hash over the
# unstripped object, whose debug info names the directory), made afresh for
# each build; the second build must give the same bytes as the first.
B=/build/tpm_svsm
build() { # <output file>: a fresh $R$B, make, strip, copy out
	rm -rf "$R$B" && mkdir -p "$R$B"
	cp "$SRC/tpm_svsm.c" "$SRC/tpm.h" "$R$B/"
	echo 'obj-m := tpm_svsm.o' >"$R$B/Kbuild"
	unshare -m --propagation private /bin/sh -ec '
		R=$1; shift
		mount -t proc proc "$R/proc"
		for n in null zero urandom; do mount --bind "/dev/$n" "$R/dev/$n"; done
		exec chroot "$R" /usr/bin/env -i PATH=/usr/bin:/usr/sbin HOME=/build LC_ALL=C "$@"
	' sh "$R" /bin/sh -ec "make -C $HDR M=$B modules && strip --strip-debug $B/tpm_svsm.ko" \
		>"$G/tpm_svsm.build.log" 2>&1 || {
		tail -20 "$G/tpm_svsm.build.log" | sed 's/^/  /' >&2
		die "make M=$B modules failed in the chroot (log: $G/tpm_svsm.build.log)"
	}
	[ -f "$R$B/tpm_svsm.ko" ] || die "the build made no tpm_svsm.ko"
	cp "$R$B/tpm_svsm.ko" "$1"
}
rm -rf "$R/build" && mkdir -p "$R/build"
t0=$(date +%s.%N)
build "$R/build/first.ko"
t1=$(date +%s.%N)
build "$R/build/second.ko"
cmp -s "$R/build/first.ko" "$R/build/second.ko" ||
	die "two builds of tpm_svsm.ko differ ($(sha "$R/build/first.ko") vs $(sha "$R/build/second.ko"))"
warnings=$(grep -ciE 'warning' "$G/tpm_svsm.build.log" || true)

# --- 4. vermagic ---------------------------------------------------------------------
got_vm=$(vermagic "$R/build/first.ko")
vm_ok "$R/build/first.ko" || die "tpm_svsm.ko has vermagic '$got_vm', Debian's modules for $rel '$want_vm'"
name=$(modinfo -F name "$R/build/first.ko")
[ "$name" = tpm_svsm ] || die "the module calls itself '$name'"

cp "$R/build/first.ko" "$KO.new" && mv "$KO.new" "$KO"
{
	echo "tpm_svsm_sha256=$(sha "$KO")"
	echo "tpm_svsm_size=$(stat -c %s "$KO")"
	echo "tpm_svsm_vermagic=$got_vm"
	echo "tpm_svsm_source=$(cat "$SRC/.version") tpm_svsm.c sha256=$(sha "$SRC/tpm_svsm.c") tpm.h sha256=$(sha "$SRC/tpm.h")"
	sed 's/^/tpm_svsm_source_/' "$SRC/.packages"
	echo "tpm_svsm_build_root_packages=$(wc -l <"$R/.closure")"
	sed 's/^/tpm_svsm_root_/' "$R/.packages"
} >"$INFO"
echo "$ver $rel" >"$STAMP"
rm -f "$WHY"
echo "csvsm: tpm_svsm: built in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s, twice, identical; $warnings warning lines"
report
