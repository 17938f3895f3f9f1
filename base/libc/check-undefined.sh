#!/usr/bin/env bash
# ABI check of the glibc-ABI layer (glibc-abi-notes.md §3.9, §6): links
# Debian's libtpms.a, libcrypto.a and libmbedcrypto.a against the layer's
# objects, rooted at every public entry point csvsm may call (all TPMLIB_*
# and all mbedtls_* functions), and fails if anything the archives need is
# provided by neither the layer nor libgcc. The only symbols allowed to stay
# undefined are the image services the layer itself imports.
#
# Usage: base/libc/check-undefined.sh [layer objects...]
#   (default: build/image/base/libc/*.o, built first through make)
# Output: TAP lines; exit status non-zero on a missing symbol.
set -u
cd "$(dirname "$0")/../.."
LIBDIR=${LIBC_LIBDIR:-/usr/lib/x86_64-linux-gnu}
ARCHIVES=("$LIBDIR/libtpms.a" "$LIBDIR/libcrypto.a" "$LIBDIR/libmbedcrypto.a")
LIBGCC=$(${CC:-gcc} -print-libgcc-file-name)
# What base/libc takes from the rest of the image (base/libc/libc.h).
IMAGE_IMPORTS="con_write con_printf panic timer_us random_bytes secret_enter secret_leave secret_park_self secret_terminating platform"
# Linker-defined in a final link (linker.ld: the image's read-only part,
# which bounds the library output the console shows, base/libc/stdio.c).
LINKER_DEFINED="_GLOBAL_OFFSET_TABLE_ __image_start __text_end"

if [ $# -eq 0 ]; then
	objs=(build/image/base/libc/string.o build/image/base/libc/malloc.o build/image/base/libc/stdio.o
	      build/image/base/libc/posix.o build/image/base/libc/stubs.o build/image/base/libc/setjmp.o)
	if ! make -s "${objs[@]}" >/dev/null; then
		echo "not ok 1 - libc ABI check: building the layer failed"
		exit 1
	fi
else
	objs=("$@")
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Roots: the libraries' public entry points.
roots=()
for s in $(nm -g --defined-only "$LIBDIR/libtpms.a" 2>/dev/null | awk '$2 == "T" && $3 ~ /^TPMLIB_/ {print $3}') \
	 $(nm -g --defined-only "$LIBDIR/libmbedcrypto.a" 2>/dev/null | awk '$2 == "T" && $3 ~ /^mbedtls_/ {print $3}'); do
	roots+=(-u "$s")
done

# A relocatable link pulls archive members exactly as the final link does
# (-u roots, then everything they reference) and keeps what stays undefined.
if ! ld -r -e TPMLIB_MainInit "${roots[@]}" -o "$tmp/all.o" "${objs[@]}" "${ARCHIVES[@]}" "$LIBGCC" 2>"$tmp/ld.err"; then
	echo "not ok 1 - libc ABI check: ld failed"
	sed 's/^/# /' "$tmp/ld.err"
	exit 1
fi

# Undefined strong references (weak ones, like OpenSSL's getentropy, are optional).
nm -u "$tmp/all.o" | awk '$1 == "U" {print $2}' | sort -u >"$tmp/undef"
missing=()
while read -r s; do
	case " $IMAGE_IMPORTS $LINKER_DEFINED " in *" $s "*) continue ;; esac
	missing+=("$s")
done <"$tmp/undef"

# Also: which glibc symbols the archives need, and that the layer is what provides them.
needed=$(ld -r "${roots[@]}" -o "$tmp/libs.o" "${ARCHIVES[@]}" 2>/dev/null && nm -u "$tmp/libs.o" | awk '{print $NF}' | sort -u | grep -vxF -f <(tr ' ' '\n' <<<"$LINKER_DEFINED") | wc -l)

if [ ${#missing[@]} -eq 0 ]; then
	echo "ok 1 - libc ABI check: all $needed external symbols the archives reference are provided (roots: ${#roots[@]} entry points)"
	exit 0
fi
echo "not ok 1 - libc ABI check: ${#missing[@]} symbols needed by the archives are not provided: ${missing[*]}"
for s in "${missing[@]}"; do
	echo "# missing: $s (referenced by $(nm -A "${ARCHIVES[@]}" 2>/dev/null | awk -v s="$s" '$NF == s && $(NF-1) ~ /^[Uw]$/ {split($1, a, ":"); print a[2]}' | sort -u | head -3 | tr '\n' ' '))"
done
exit 1
