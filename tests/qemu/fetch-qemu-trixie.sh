#!/bin/bash
# A second QEMU for the SNP machine: trixie's qemu-system-x86 (10.0), from
# Debian's archive with the private apt configuration `make deps` made
# (build/guests/apt), unpacked under build/qemu-trixie/ and never installed.
# It runs on this system through the root's own dynamic loader and
# libraries (glibc 2.41), so nothing of the system's QEMU 7.2 is used.
#
#   tests/qemu/fetch-qemu-trixie.sh [BUILD]     (`make qemu-trixie`)
#   QEMU=build/qemu-trixie/qemu make run GUEST=linux SMP=2
#
# The suite itself runs on the system's QEMU; docs/snp-machine.md
# ("Multi-threaded TCG") records the runs made with this one.
set -euo pipefail
BUILD=${1:-${BUILD:-build}}
A=$BUILD/guests/apt
R=$BUILD/qemu-trixie
die() { echo "csvsm: fetch-qemu-trixie: $*" >&2; exit 1; }
[ -r "$A/apt.conf" ] || die "$A/apt.conf missing: run 'make deps' first"
case $A in /*) export APT_CONFIG=$A/apt.conf ;; *) export APT_CONFIG=$PWD/$A/apt.conf ;; esac
sim=$(apt-get install -s -q --no-install-recommends qemu-system-x86/trixie 2>&1) ||
	die "apt cannot resolve qemu-system-x86 from trixie: $(grep -E '^E:' <<<"$sim" | head -3 | tr '\n' ' ')"
mapfile -t pkgs < <(awk '$1 == "Inst" { v = $3; sub(/^\(/, "", v); print $2 "=" v }' <<<"$sim" | LC_ALL=C sort)
[ ${#pkgs[@]} -gt 10 ] || die "apt resolved only ${#pkgs[@]} packages"
if [ -x "$R/qemu" ] && [ "$(cat "$R/.closure" 2>/dev/null)" = "$(printf '%s\n' "${pkgs[@]}")" ]; then
	echo "csvsm: qemu-trixie: up to date ($("$R/qemu" --version | head -n1))"
	exit 0
fi
d=$R.debs
rm -rf "$d" "$R.new" && mkdir -p "$d" "$R.new/usr/bin" "$R.new/usr/lib" "$R.new/usr/lib64"
(cd "$d" && apt-get download -q "${pkgs[@]}" >/dev/null) || die "apt-get download failed"
for l in bin sbin lib lib64; do ln -s "usr/$l" "$R.new/$l"; done
for deb in "$d"/*.deb; do
	dpkg-deb -x "$deb" "$R.new"
	printf 'package=%s sha256=%s\n' "$(basename "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" >>"$R.new/.packages"
done
printf '%s\n' "${pkgs[@]}" >"$R.new/.closure"
# The wrapper: the root's loader, its libraries, its firmware directory.
cat >"$R.new/qemu" <<'WRAP'
#!/bin/sh
R=$(cd "$(dirname "$0")" && pwd)
# Its own modules (QEMU would look in the system's directory, 7.2's).
QEMU_MODULE_DIR=$R/usr/lib/x86_64-linux-gnu/qemu
export QEMU_MODULE_DIR
exec "$R/usr/lib64/ld-linux-x86-64.so.2" --library-path "$R/usr/lib/x86_64-linux-gnu:$R/usr/lib" \
	"$R/usr/bin/qemu-system-x86_64" -L "$R/usr/share/qemu" -L "$R/usr/share/seabios" "$@"
WRAP
chmod +x "$R.new/qemu"
"$R.new/qemu" --version >/dev/null || die "the unpacked QEMU does not start"
rm -rf "$R" && mv "$R.new" "$R" && rm -rf "$d"
echo "csvsm: qemu-trixie: ${#pkgs[@]} packages, $("$R/qemu" --version | head -n1)"
