#!/usr/bin/env bash
# csvsm's layers (docs/architecture.md "Layers"), checked in the built image
# and in the sources:
#   0 base/    console, panic, dashboard, formatting, per-CPU data, time,
#              entropy, secrets registry, platform pointer, GHCB accessors,
#              and base/libc (the glibc-ABI runtime); headers include/base/,
#              with the spec headers include/snp/ and include/arch/
#   1 mm/ tpm/ attest/   memory and acceptance, the vTPM, attestation
#   2 src/     the SNP entry and boot sequence, the request loop, the snp
#              platform, the core protocol
# Nothing calls up: an undefined symbol of a layer-0 object of
# build/csvsm.elf is never defined by a layer-1 or layer-2 object, and one
# of a layer-1 object never by a layer-2 object. Nothing includes up: files
# of layers 0 and 1 include no header of src/ (include/csvsm/) and layer-0
# files include no layer-1 header.
# The models (tests/snpm/model/: RMP, PSP, GHCB host, CPUID page, device
# policy, the RMP audit and the acceptance prediction, the PVH entry) live
# only there and never in the image: no
# object of build/csvsm.elf comes from tests/, every MODEL_SRCS file is under
# tests/snpm/model/, the product rooms (base/ mm/ tpm/ attest/ src/ and
# their include/ headers) hold only sources of the image or of the host
# library the host tools link, and no product file includes a header of
# tests/snpm/model/ outside an #ifdef CSVSM_HOST block. TAP; run after `make`.
set -u
cd "$(dirname "$0")/../.."
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

layer_of() { # object or source path -> 0, 1, 2 or - (not layered)
	case "$1" in
	*build/image/base/* | base/* | include/base/*) echo 0 ;;
	*build/image/mm/* | *build/image/tpm/* | *build/image/attest/* | mm/* | tpm/* | attest/* | \
		include/mm/* | include/tpm/* | include/attest/*) echo 1 ;;
	*build/image/src/* | src/* | include/csvsm/*) echo 2 ;;
	*) echo - ;;
	esac
}

objs=$(make -s print-image-objs 2>/dev/null)
if [ -z "$objs" ] || [ ! -f build/csvsm.elf ]; then
	nok "build/csvsm.elf and its objects exist (run make)"
	echo "$n passed, $fails failed"
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# symbol -> defining layer, from every object of the image
for o in $objs; do
	l=$(layer_of "$o")
	nm --defined-only "$o" 2>/dev/null | awk -v l="$l" -v o="$o" 'NF == 3 && $2 ~ /[TDBRVWC]/ { print $3, l, o }'
done | sort -u >"$tmp/defs"
nobj=0
for o in $objs; do
	l=$(layer_of "$o")
	[ "$l" = 0 ] || [ "$l" = 1 ] || continue
	nobj=$((nobj + 1))
	nm -u "$o" 2>/dev/null | awk '{ print $2 }' | while read -r s; do
		awk -v s="$s" -v l="$l" -v o="$o" '$1 == s && $2 != "-" && $2 > l { print o " (layer " l ") calls up: " s " defined in " $3 " (layer " $2 ")" }' "$tmp/defs"
	done
done >"$tmp/up"
sed 's/^/# /' "$tmp/up" | head -n 40
if [ -s "$tmp/up" ]; then
	nok "no call goes up a layer in build/csvsm.elf ($(wc -l <"$tmp/up") found, $nobj layer-0/1 objects)"
else
	ok "no call goes up a layer in build/csvsm.elf ($nobj layer-0/1 objects checked)"
fi
nbase=$(for o in $objs; do [ "$(layer_of "$o")" = 0 ] && echo "$o"; done | wc -l)
if [ "$nbase" -ge 5 ]; then ok "the image has a base layer ($nbase objects under base/)"; else nok "the image has a base layer ($nbase objects under base/)"; fi

# Includes: a header of a higher layer in a lower layer's file.
for f in $(git ls-files 'base/*' 'include/base/*' 'mm/*' 'tpm/*' 'attest/*' 'include/mm/*' 'include/tpm/*' \
	'include/attest/*' | grep -E '\.(c|h|S)$'); do
	l=$(layer_of "$f")
	grep -o '^#include "[^"]*"' "$f" | sed 's/#include "//; s/"$//' | while read -r h; do
		hl=$(layer_of "include/$h")
		case "$h" in src/* | tests/*) hl=2 ;; esac
		if [ "$hl" != - ] && [ "$hl" -gt "$l" ]; then echo "$f (layer $l) includes $h (layer $hl)"; fi
	done
done >"$tmp/inc"
sed 's/^/# /' "$tmp/inc" | head -n 40
if [ -s "$tmp/inc" ]; then nok "no file includes a header of a higher layer ($(wc -l <"$tmp/inc") found)"
else ok "no file of layers 0 and 1 includes a header of a higher layer"; fi

# The models: never in the image, only under tests/snpm/model/.
bad=$(for o in $objs; do case "$o" in *build/image/tests/*) echo "$o" ;; esac; done)
if [ -n "$bad" ]; then nok "no object of build/csvsm.elf comes from tests/: $(echo $bad)"
else ok "no object of build/csvsm.elf comes from tests/ (no model in the image)"; fi
models=$(make -s print-model-srcs 2>/dev/null)
bad=$(for f in $models; do case "$f" in tests/snpm/model/*) [ -f "$f" ] || echo "$f" ;; *) echo "$f" ;; esac; done)
if [ -z "$models" ] || [ -n "$bad" ]; then nok "every model source is a file under tests/snpm/model/ (${bad:-MODEL_SRCS empty})"
else ok "every model source is a file under tests/snpm/model/ ($(echo $models | wc -w) files)"; fi
# Every source of a product room is an image object or host-library source.
host=$(make -s print-host-srcs 2>/dev/null)
for f in $(git ls-files 'base/*' 'mm/*' 'tpm/*' 'attest/*' 'src/*' | grep -E '\.(c|S)$'); do
	case " $objs " in *" build/image/${f%.*}.o "*) continue ;; esac
	case " $host " in *" $f "*) continue ;; esac
	echo "$f"
done >"$tmp/stray"
sed 's/^/# not in the image nor the host library: /' "$tmp/stray" | head -n 40
if [ -s "$tmp/stray" ]; then nok "the product rooms hold only image and host-tool sources ($(wc -l <"$tmp/stray") others)"
else ok "the product rooms hold only image and host-tool sources"; fi
# No product file includes a model header, except for the host build.
for f in $(git ls-files 'base/*' 'mm/*' 'tpm/*' 'attest/*' 'src/*' 'include/*' 'tools/*' | grep -E '\.(c|h|S)$'); do
	awk -v f="$f" '
	/^[ \t]*#[ \t]*if/ { host = ($0 ~ /^[ \t]*#[ \t]*(ifdef[ \t]+CSVSM_HOST|if[ \t]+defined\(CSVSM_HOST\))/);
		neg = ($0 ~ /^[ \t]*#[ \t]*(ifndef[ \t]+CSVSM_HOST|if[ \t]+!defined\(CSVSM_HOST\))/);
		d++; h[d] = host; g[d] = neg; next }
	/^[ \t]*#[ \t]*else/ { if (d) { t = h[d]; h[d] = g[d]; g[d] = t } next }
	/^[ \t]*#[ \t]*endif/ { if (d) d--; next }
	/^[ \t]*#[ \t]*include[ \t]*"tests\/snpm\/model\// {
		ok = 0; for (i = 1; i <= d; i++) if (h[i]) ok = 1
		if (!ok) print f ":" NR ": " $0 }' "$f"
done >"$tmp/model-inc"
sed 's/^/# /' "$tmp/model-inc" | head -n 40
if [ -s "$tmp/model-inc" ]; then nok "no product file includes a tests/snpm/model/ header outside CSVSM_HOST ($(wc -l <"$tmp/model-inc") found)"
else ok "no product file includes a tests/snpm/model/ header outside CSVSM_HOST"; fi
echo "$n passed, $fails failed"
[ "$fails" -eq 0 ]
