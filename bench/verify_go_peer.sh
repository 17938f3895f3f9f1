#!/usr/bin/env bash
# Builds bench/verify_go_peer.go, go-sev-guest's verify package as a peer for
# bench/verify_bench.sh, OFFLINE from Debian's packages, unpacked under
# $BUILD/verify-go and never installed; `make test` never runs this.
#
#   bench/verify_go_peer.sh [BUILD]    prints the peer's path on stdout
#
# Debian 12 (bookworm) has Go 1.19 but no go-sev-guest: Debian packages
# go-sev-guest 0.13 (golang-github-google-go-sev-guest-dev) from Debian 13
# (trixie) on. GO_PEER_SUITE picks the toolchain:
#   bookworm (default)  golang-1.19-go and the Go libraries bookworm has
#                       (protobuf 1.28, x/crypto 0.4, ...); go-sev-guest 0.13
#                       and google/logger, which bookworm lacks, from trixie.
#                       (trixie's protobuf 1.36 needs Go >= 1.20.)
#   trixie              golang-1.24-go and every library from trixie.
# Debian's go-sev-guest-dev lacks the six AMD ASK/ARK PEM files that its
# verify/trust embeds (//go:embed); Debian's source tarball has them: they
# come from `apt-get source --download-only` (apt checks the file against
# the signed Sources index) into the unpacked tree under $BUILD, never into
# the repository. trixie comes through a private apt configuration under
# $BUILD/verify-go/apt (deb and deb-src lines); bookworm through the
# system's. The build is offline: GOPATH mode over the unpacked
# /usr/share/gocode, GO111MODULE=off, GOPROXY=off, GOFLAGS empty.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-${BUILD:-build}}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
SUITE=${GO_PEER_SUITE:-bookworm}
W=$BUILD/verify-go
A=$W/apt
die() { echo "verify_go_peer: $*" >&2; exit 1; }

case $SUITE in
bookworm)
	SYS_PKGS="golang-1.19-go golang-1.19-src golang-github-google-go-cmp-dev golang-github-google-uuid-dev
	          golang-go.uber-multierr-dev golang-go.uber-atomic-dev golang-golang-x-sys-dev
	          golang-golang-x-crypto-dev golang-google-protobuf-dev"
	TRIXIE_PKGS="golang-github-google-go-sev-guest-dev golang-github-google-logger-dev"
	GOVER=1.19 ;;
trixie)
	SYS_PKGS=""
	TRIXIE_PKGS="golang-1.24-go golang-1.24-src golang-github-google-go-sev-guest-dev
	             golang-github-google-logger-dev golang-github-google-go-cmp-dev golang-github-google-uuid-dev
	             golang-go.uber-multierr-dev golang-go.uber-atomic-dev golang-golang-x-sys-dev
	             golang-golang-x-crypto-dev golang-google-protobuf-dev"
	GOVER=1.24 ;;
*) die "GO_PEER_SUITE must be bookworm or trixie" ;;
esac
OUT=$W/verify_go_peer-$SUITE
R=$W/root-$SUITE

# The private apt configuration for trixie (binary and source indexes).
. "$ROOT/tests/linux/private-apt.sh"
private_apt "$A" || die "cannot make the private apt tree $A"
K=/usr/share/keyrings/debian-archive-keyring.gpg
printf 'deb [signed-by=%s] http://deb.debian.org/debian trixie main\ndeb-src [signed-by=%s] http://deb.debian.org/debian trixie main\n' \
	"$K" "$K" >"$A/etc/sources.list"
tapt() { APT_CONFIG=$A/apt.conf "$@"; }
if [ -z "$(find "$A/state/lists" -name '*Sources*' -mtime -7 2>/dev/null | head -n1)" ]; then
	tapt apt-get update -q >"$W/apt-update.log" 2>&1 || die "apt-get update (trixie) failed: see $W/apt-update.log"
fi

# name=version of each package, so that a new version rebuilds the tree.
versions() { # versions APT-CACHE-CMD PKG...
	local cmd=$1; shift
	for p in "$@"; do
		v=$($cmd policy "$p" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
		[ -n "$v" ] && [ "$v" != "(none)" ] || die "no candidate for $p"
		echo "$p=$v"
	done
}
# The system's lists (bookworm) may not be there yet on a fresh machine.
if [ -n "$SYS_PKGS" ] && ! apt-cache policy golang-1.19-go 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	apt-get update -q >"$W/apt-update-system.log" 2>&1 || die "apt-get update failed: see $W/apt-update-system.log"
fi
# shellcheck disable=SC2086
mapfile -t sys < <([ -z "$SYS_PKGS" ] || versions apt-cache $SYS_PKGS)
# shellcheck disable=SC2086
mapfile -t tri < <(versions "env APT_CONFIG=$A/apt.conf apt-cache" $TRIXIE_PKGS)
src=$(tapt apt-cache showsrc golang-github-google-go-sev-guest | awk '$1 == "Version:" { print $2; exit }')
want=$(printf '%s\n' "${sys[@]}" "${tri[@]}" "source=$src" "peer=$(sha256sum "$ROOT/bench/verify_go_peer.go" | cut -d' ' -f1)")
if [ -x "$OUT" ] && [ "$(cat "$OUT.closure" 2>/dev/null)" = "$want" ]; then
	echo "$OUT"
	exit 0
fi

d=$W/debs-$SUITE
rm -rf "$d" "$R" && mkdir -p "$d" "$R" "$W/src"
[ ${#sys[@]} = 0 ] || (cd "$d" && apt-get download -q "${sys[@]}" >"$W/download.log" 2>&1) ||
	die "apt-get download (bookworm) failed: see $W/download.log"
(cd "$d" && tapt apt-get download -q "${tri[@]}" >>"$W/download.log" 2>&1) ||
	die "apt-get download (trixie) failed: see $W/download.log"
for deb in "$d"/*.deb; do
	dpkg-deb -x "$deb" "$R"
	printf 'package=%s sha256=%s\n' "$(basename "$deb")" "$(sha256sum "$deb" | cut -d' ' -f1)" >>"$R/.packages"
done

# The six PEMs from Debian's source tarball (orig.tar.gz: upstream's files).
(cd "$W/src" && tapt apt-get source --download-only -q golang-github-google-go-sev-guest >"$W/source.log" 2>&1) || true
orig=$(ls "$W/src/golang-github-google-go-sev-guest_${src%-*}".orig.tar.* 2>/dev/null | head -n1)
[ -n "$orig" ] || die "Debian's source tarball of go-sev-guest $src did not download: see $W/source.log"
# apt checked it against the signed Sources index; say which file it was.
want_sha=$(tapt apt-cache showsrc golang-github-google-go-sev-guest |
	awk -v f="$(basename "$orig")" '/^Checksums-Sha256:/ { c = 1; next } /^[^ ]/ { c = 0 } c && $3 == f { print $1; exit }')
[ "$(sha256sum "$orig" | cut -d' ' -f1)" = "$want_sha" ] || die "$orig does not match the Sources index"
T=$R/usr/share/gocode/src/github.com/google/go-sev-guest/verify/trust
[ -f "$T/trust.go" ] || die "go-sev-guest's verify/trust is not in the package"
tar -xaf "$orig" -C "$T" --strip-components=3 --wildcards '*/verify/trust/*.pem'
[ "$(ls "$T"/*.pem | wc -l)" = 6 ] || die "expected the six AMD PEM files in $orig"
printf 'source=%s sha256=%s (verify/trust/*.pem)\n' "$(basename "$orig")" "$want_sha" >>"$R/.packages"

GOROOT=$R/usr/lib/go-$GOVER
mkdir -p "$W/gopath-$SUITE" "$W/home"
ln -sfn "$R/usr/share/gocode/src" "$W/gopath-$SUITE/src"
env -i PATH=/usr/bin:/bin HOME="$W/home" GOROOT="$GOROOT" GOPATH="$W/gopath-$SUITE" \
	GO111MODULE=off GOPROXY=off GOFLAGS= GOTOOLCHAIN=local GONOSUMDB= GOSUMDB=off CGO_ENABLED=0 \
	GOCACHE="$W/cache-$SUITE" "$GOROOT/bin/go" build -o "$OUT.new" "$ROOT/bench/verify_go_peer.go" \
	>"$W/build.log" 2>&1 || die "go build failed: see $W/build.log"
mv "$OUT.new" "$OUT"
printf '%s\n' "$want" >"$OUT.closure"
env GOROOT="$GOROOT" "$GOROOT/bin/go" version >"$OUT.goversion" 2>/dev/null || echo "go$GOVER" >"$OUT.goversion"
echo "$OUT"
