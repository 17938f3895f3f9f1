#!/bin/bash
# Fetch the real SVSM clients from Debian, unmodified and not installed:
# trixie's `ovmf` (OVMF.fd, edk2 2025.02) and trixie-backports'
# `linux-image-amd64` (the kernel and its modules), with apt and a PRIVATE
# apt configuration, lists and cache under build/guests/apt/. The system's apt
# sources are never read or changed and nothing is installed on the system.
#
#   tests/linux/fetch-guests.sh [BUILD]     (`make deps` runs it)
#
# Result (stable paths, see tests/linux/README.md):
#   build/guests/OVMF.fd      trixie's 4 MiB OVMF.fd
#   build/guests/OVMF-forky.fd  forky's (edk2 2026.08), the second firmware choice
#   build/guests/vmlinuz      the trixie-backports kernel
#   build/guests/modules      that kernel's modules tree (/usr/lib/modules/<release>)
#   build/guests/tpm_svsm.ko  the kernel's SVSM vTPM driver, built from Debian's
#                             sources for it (tests/linux/build-tpm-svsm.sh; root)
#   build/guests/versions     key=value: versions, kernel release, packages
#   build/guests/{ovmf,linux}.stamp   rewritten only when a version changes
#
# Idempotent: one `apt-get update` of the private lists per run (about 1 s);
# a package is downloaded again only when the newest version in its suite
# differs from the stamp. If the archive cannot be reached and a complete
# earlier fetch is present, that fetch is kept (with a warning); with nothing
# fetched yet it fails and says why.
set -euo pipefail

BUILD=${1:-${BUILD:-build}}
MIRROR=${CSVSM_DEBIAN_MIRROR:-http://deb.debian.org/debian}   # the mirror the system uses
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
OVMF_SUITE=trixie
LINUX_SUITE=trixie-backports

die() { echo "csvsm: fetch-guests: $*" >&2; exit 1; }

for tool in apt-get apt-cache dpkg-deb dpkg; do
	command -v "$tool" >/dev/null || die "'$tool' not found (this needs a Debian system)"
done
[ -r "$KEYRING" ] || die "$KEYRING missing: install debian-archive-keyring"

mkdir -p "$BUILD/guests"
G=$(cd "$BUILD/guests" && pwd)
A=$G/apt

# One fetch at a time (two `make deps` in one tree would race on root/).
exec 9>"$G/.lock"
flock 9

# --- the private apt tree (tests/linux/private-apt.sh) --------------------------
. "$(dirname "$0")/private-apt.sh"
private_apt "$A" && mkdir -p "$A/debs" || die "cannot make the private apt tree $A"
cat >"$A/etc/sources.list" <<EOF
deb [signed-by=$KEYRING] $MIRROR $OVMF_SUITE main
deb [signed-by=$KEYRING] $MIRROR $LINUX_SUITE main
EOF
export APT_CONFIG=$A/apt.conf

# --- what a previous run left -------------------------------------------------
stamp_ok() { # <name> <file that must exist>
	[ -s "$G/$1.stamp" ] && [ -e "$2" ]
}
have_ovmf() { stamp_ok ovmf "$G/OVMF.fd"; }
have_linux() { stamp_ok linux "$G/vmlinuz" && [ -d "$G/modules/kernel" ]; }
report() {
	echo "csvsm: guest ovmf $(cut -d' ' -f1 "$G/ovmf.stamp") ($OVMF_SUITE)"
	[ -s "$G/ovmf-forky.stamp" ] && echo "csvsm: guest ovmf-forky $(cut -d' ' -f1 "$G/ovmf-forky.stamp") (forky)"
	echo "csvsm: guest linux $(cut -d' ' -f1 "$G/linux.stamp") ($LINUX_SUITE)"
}

# --- update the private lists (once per run) ----------------------------------
# --error-on=any: without it apt-get update exits 0 when an index failed.
if ! out=$(apt-get update --error-on=any 2>&1); then
	if have_ovmf && have_linux; then
		echo "csvsm: warning: cannot reach $MIRROR ($OVMF_SUITE, $LINUX_SUITE); keeping the guests fetched before" >&2
		CSVSM_OFFLINE=1 "$(dirname "$0")/build-tpm-svsm.sh" "$G" || true
		report
		exit 0
	fi
	echo "$out" | grep -E '^(E|W|Err):' | head -5 >&2 || true
	die "cannot fetch the $OVMF_SUITE/$LINUX_SUITE package lists from $MIRROR (network or archive unreachable); the guests need them once"
fi

# --- newest version of a package in one suite ---------------------------------
# apt-cache madison prints "pkg | version | uri suite/component arch Packages";
# trixie-backports has pin priority 100 so the candidate would be trixie's:
# pick by suite and compare versions explicitly.
newest_in_suite() { # <package> <suite>
	local best="" v
	while IFS='|' read -r _ v src; do
		v=${v// /}
		case " $src " in *" $2/"*) ;; *) continue ;; esac
		if [ -z "$best" ] || dpkg --compare-versions "$v" gt "$best"; then best=$v; fi
	done < <(apt-cache madison "$1")
	[ -n "$best" ] || die "no '$1' in $2 at $MIRROR"
	echo "$best"
}

# The packages a (meta)package pulls in at exactly its own version: for
# linux-image-amd64 these are the kernel's own packages (linux-image-<abi>,
# linux-binary-<abi> with the kernel, linux-modules-<abi>, linux-base-<abi>,
# and the metapackages between them); alternatives such as
# "dracut | initramfs-tools" are not version-locked and are skipped.
version_closure() { # <package> <version>
	local todo=("$1") seen=" " p dep
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}; todo=("${todo[@]:1}")
		case "$seen" in *" $p "*) continue ;; esac
		seen="$seen$p "
		echo "$p"
		while read -r dep; do
			todo+=("$dep")
		done < <(apt-cache show "$p=$2" 2>/dev/null | awk -v v="$2" '
			/^(Pre-)?Depends:/ {
				sub(/^[^:]*: */, ""); n = split($0, d, /, */)
				for (i = 1; i <= n; i++)
					if (d[i] !~ /\|/ && (n2 = split(d[i], w, " ")) == 3 && w[2] "" w[3] == "(=" v ")")
						print w[1]
			}' | sort -u)
	done
}

# Download <pkg>=<ver>... into $A/debs (apt checks each file's hash against
# the signed index) and unpack them all into <dest>, replacing it (unpacked
# next to it, then renamed). <dest>/.packages records file, size, sha256,
# and which package brought the kernel image, if one did.
# The kernel image in an unpacked tree: /usr/lib/modules/<release>/vmlinuz
# (trixie-backports 7.x: package linux-binary-<abi>) or /boot/vmlinuz-<release>.
kernel_in() { ls -1 "$1"/usr/lib/modules/*/vmlinuz "$1"/boot/vmlinuz-* 2>/dev/null | head -n1 || true; }

fetch_unpack() { # <dest> <pkg>=<ver>...
	local dest=$1 tmp deb; shift
	rm -rf "$A/debs" && mkdir -p "$A/debs"
	(cd "$A/debs" && apt-get download -q "$@" >/dev/null) ||
		die "apt-get download $* failed (from $MIRROR)"
	tmp="$dest.new"
	rm -rf "$tmp" && mkdir -p "$tmp"
	for deb in "$A/debs"/*.deb; do
		had=$(kernel_in "$tmp")
		dpkg-deb -x "$deb" "$tmp"
		printf 'package=%s size=%s sha256=%s\n' "$(basename "$deb")" "$(stat -c %s "$deb")" \
			"$(sha256sum "$deb" | cut -d' ' -f1)" >>"$tmp/.packages"
		[ -n "$had" ] || [ -z "$(kernel_in "$tmp")" ] ||
			echo "kernel_package=$(dpkg-deb -f "$deb" Package)" >>"$tmp/.packages"
	done
	rm -rf "$dest" && mv "$tmp" "$dest"
	rm -rf "$A/debs"  # the unpacked tree is what is used; the stamp remembers the version
}

mkdir -p "$G/root"

# --- OVMF (trixie) ------------------------------------------------------------
OVMF_VER=$(newest_in_suite ovmf "$OVMF_SUITE")
if ! have_ovmf || [ "$(cut -d' ' -f1 "$G/ovmf.stamp")" != "$OVMF_VER" ]; then
	echo "csvsm: fetching ovmf $OVMF_VER ($OVMF_SUITE)"
	rm -f "$G/ovmf.stamp"
	fetch_unpack "$G/root/ovmf" "ovmf=$OVMF_VER"
	f=$G/root/ovmf/usr/share/ovmf/OVMF.fd
	[ -f "$f" ] || die "ovmf $OVMF_VER has no usr/share/ovmf/OVMF.fd"
	[ "$(stat -c %s "$f")" = 4194304 ] || die "ovmf $OVMF_VER: OVMF.fd is not 4 MiB"
	ln -sfn root/ovmf/usr/share/ovmf/OVMF.fd "$G/OVMF.fd"
	echo "$OVMF_VER $OVMF_SUITE" >"$G/ovmf.stamp"
fi

# --- Linux (trixie-backports) -------------------------------------------------
LINUX_VER=$(newest_in_suite linux-image-amd64 "$LINUX_SUITE")
if ! have_linux || [ "$(cut -d' ' -f1 "$G/linux.stamp")" != "$LINUX_VER" ]; then
	mapfile -t pkgs < <(version_closure linux-image-amd64 "$LINUX_VER")
	echo "csvsm: fetching linux $LINUX_VER ($LINUX_SUITE): ${pkgs[*]}"
	rm -f "$G/linux.stamp"
	args=(); for p in "${pkgs[@]}"; do args+=("$p=$LINUX_VER"); done
	fetch_unpack "$G/root/linux" "${args[@]}"
	r=$G/root/linux
	k=$(kernel_in "$r")
	[ -n "$k" ] || die "linux-image-amd64 $LINUX_VER: no kernel image in ${pkgs[*]}"
	case "$k" in
	*/vmlinuz) rel=$(basename "$(dirname "$k")") ;;
	*) rel=${k##*/vmlinuz-} ;;
	esac
	[ -d "$r/usr/lib/modules/$rel/kernel" ] || die "linux $LINUX_VER: no modules tree for $rel"
	# Merged /usr, as on trixie: depmod -b <root> looks in <root>/lib/modules.
	[ -e "$r/lib" ] || ln -s usr/lib "$r/lib"
	ln -sfn "root/linux${k#"$r"}" "$G/vmlinuz"
	ln -sfn "root/linux/usr/lib/modules/$rel" "$G/modules"
	echo "$LINUX_VER $LINUX_SUITE $rel" >"$G/linux.stamp"
fi

# --- tpm_svsm.ko for that kernel (needs root; without it, a warning) ----------
# Its own stamp: rebuilt only when the kernel changes. A failed build leaves
# build/guests/tpm_svsm.missing with the reason and fails `make deps`.
"$(dirname "$0")/build-tpm-svsm.sh" "$G" || die "building tpm_svsm.ko failed: $(cat "$G/tpm_svsm.missing" 2>/dev/null)"

# --- the second firmware choice: forky's OVMF (issue 18 item 3) ---------------
# Debian's 2026.08 OVMF (package ovmf-generic; `ovmf` is a metapackage for
# it) has edk2's SVSM vTPM support (edk2-stable202505 on), so it measures
# the boot into csvsm's vTPM and hands Linux a TCG2 log; trixie's 2025.02
# has not. Its own apt tree (apt-forky/): in the main one, forky's newer
# versions would win the build root's resolution (build-tpm-svsm.sh). The
# archive serves a forky snapshot whose Release file is past its
# Valid-Until date: check-valid-until=no for that one source (the
# signature is still checked against the Debian archive keyring).
FORKY_SUITE=forky
AF=$G/apt-forky
have_ovmf_forky() { stamp_ok ovmf-forky "$G/OVMF-forky.fd"; }
mkdir -p "$AF/etc/apt.conf.d" "$AF/etc/preferences.d" "$AF/etc/sources.list.d" \
	"$AF/state/lists/partial" "$AF/cache/archives/partial"
[ -e "$AF/state/status" ] || : >"$AF/state/status"
echo "deb [signed-by=$KEYRING check-valid-until=no] $MIRROR $FORKY_SUITE main" >"$AF/etc/sources.list"
sed "s#$A/#$AF/#g" "$A/apt.conf" >"$AF/apt.conf"
if ! out=$(APT_CONFIG=$AF/apt.conf apt-get update --error-on=any 2>&1); then
	if have_ovmf_forky; then
		echo "csvsm: warning: cannot reach $MIRROR ($FORKY_SUITE); keeping the OVMF fetched before" >&2
	else
		echo "$out" | grep -E '^(E|W|Err):' | head -5 >&2 || true
		die "cannot fetch the $FORKY_SUITE package list from $MIRROR (the second firmware, OVMF-forky.fd, needs it once)"
	fi
else
	FORKY_VER=$(APT_CONFIG=$AF/apt.conf newest_in_suite ovmf-generic "$FORKY_SUITE")
	if ! have_ovmf_forky || [ "$(cut -d' ' -f1 "$G/ovmf-forky.stamp")" != "$FORKY_VER" ]; then
		echo "csvsm: fetching ovmf-generic $FORKY_VER ($FORKY_SUITE)"
		rm -f "$G/ovmf-forky.stamp"
		APT_CONFIG=$AF/apt.conf fetch_unpack "$G/root/ovmf-forky" "ovmf-generic=$FORKY_VER"
		f=$G/root/ovmf-forky/usr/share/ovmf/OVMF.fd
		[ -f "$f" ] || die "ovmf-generic $FORKY_VER has no usr/share/ovmf/OVMF.fd"
		[ "$(stat -c %s "$f")" = 4194304 ] || die "ovmf-generic $FORKY_VER: OVMF.fd is not 4 MiB"
		ln -sfn root/ovmf-forky/usr/share/ovmf/OVMF.fd "$G/OVMF-forky.fd"
		echo "$FORKY_VER $FORKY_SUITE" >"$G/ovmf-forky.stamp"
	fi
fi

# --- summary ------------------------------------------------------------------
{
	echo "ovmf_version=$(cut -d' ' -f1 "$G/ovmf.stamp")"
	echo "ovmf_suite=$OVMF_SUITE"
	echo "linux_version=$(cut -d' ' -f1 "$G/linux.stamp")"
	echo "linux_suite=$LINUX_SUITE"
	echo "kernel_release=$(cut -d' ' -f3 "$G/linux.stamp")"
	echo "mirror=$MIRROR"
	echo "ovmf_forky_version=$(cut -d' ' -f1 "$G/ovmf-forky.stamp")"
	sed 's/^/ovmf_/' "$G/root/ovmf/.packages"
	sed 's/^/ovmf_forky_/' "$G/root/ovmf-forky/.packages"
	sed 's/^/linux_/' "$G/root/linux/.packages"
	if [ -s "$G/tpm_svsm.info" ]; then cat "$G/tpm_svsm.info"
	else echo "tpm_svsm_missing=$(cat "$G/tpm_svsm.missing" 2>/dev/null)"; fi
} >"$G/versions.new"
# Replaced only when it changed: the initramfs rule depends on it.
if cmp -s "$G/versions.new" "$G/versions"; then rm -f "$G/versions.new"; else mv "$G/versions.new" "$G/versions"; fi
report
