/*
 * Find the SVSM as a guest kernel would, starting from the firmware image as
 * the guest sees it below 4 GiB: the OVMF GUIDed footer table, its SEV
 * metadata and the SNP secrets page it names (reference §8, §8.1, §1.6).
 * The flash size is not assumed: the firmware volumes (PI spec "_FVH"
 * headers) are chained down from 4 GiB until the variable store, which
 * OVMF places at the start of its image. Every offset read from the image
 * is bounds-checked against that size.
 */
#include "probe.h"
#include "probe_int.h"

static const EFI_GUID footer_guid = {
    0x96b582de, 0x1fb2, 0x45f7, {0xba, 0xea, 0xa3, 0x66, 0xc5, 0x5a, 0x08, 0x2d}};
static const EFI_GUID sev_meta_guid = {
    0xdc886566, 0x984a, 0x4798, {0xa7, 0x5e, 0x55, 0x85, 0xa7, 0xbf, 0x67, 0xcc}};
/* gEfiSystemNvDataFvGuid: the variable-store FV, first in OVMF.fd. */
static const EFI_GUID nvdata_fv_guid = {
    0xfff12b8d, 0x7696, 0x4c8b, {0xa9, 0x85, 0x27, 0x47, 0x07, 0x5b, 0x4f, 0x50}};

#define FV_SCAN_LIMIT (16ULL << 20) /* largest flash the probe looks for */
#define FV_OFF_FSGUID 0x10
#define FV_OFF_LENGTH 0x20
#define FV_OFF_SIG    0x28
#define FV_OFF_HDRLEN 0x30
#define FV_SIGNATURE  0x4856465fu /* "_FVH" */

static u8 rd8(u64 a)
{
	return *(volatile u8 *)(UINTN)a;
}
static u16 rd16(u64 a)
{
	return *(volatile u16 *)(UINTN)a;
}
static u32 rd32(u64 a)
{
	return *(volatile u32 *)(UINTN)a;
}
static u64 rd64(u64 a)
{
	return *(volatile u64 *)(UINTN)a;
}

static int guid_at(u64 a, const EFI_GUID *g)
{
	const u8 *p = (const u8 *)g;

	for (int i = 0; i < 16; i++)
		if (rd8(a + i) != p[i])
			return 0;
	return 1;
}

/* A firmware volume header at `cand` that ends exactly at `end`? */
static int fv_ends_at(u64 cand, u64 end)
{
	u64 v;
	u16 hlen, sum = 0;

	if (probe_safe_read64(cand + FV_OFF_SIG, &v) || (u32)v != FV_SIGNATURE)
		return 0;
	if (rd64(cand + FV_OFF_LENGTH) != end - cand)
		return 0;
	hlen = rd16(cand + FV_OFF_HDRLEN);
	if (hlen < 0x38 || hlen > 0x1000 || (hlen & 1))
		return 0;
	for (u16 i = 0; i < hlen; i += 2)
		sum += rd16(cand + i);
	return sum == 0;
}

int probe_flash_find_base(u64 *base)
{
	u64 bottom = FOUR_GIB, cand;

	for (int fv = 0; fv < 32; fv++) {
		int found = 0;

		for (cand = bottom - PAGE_SIZE; cand >= FOUR_GIB - FV_SCAN_LIMIT; cand -= PAGE_SIZE)
			if (fv_ends_at(cand, bottom)) {
				found = 1;
				break;
			}
		if (!found)
			break;
		bottom = cand;
		if (guid_at(bottom + FV_OFF_FSGUID, &nvdata_fv_guid))
			break;
	}
	*base = bottom;
	return bottom < FOUR_GIB ? 0 : -1;
}

int probe_flash_parse(struct flash_info *fi, CHAR16 *why, UINTN why_size)
{
	u64 end = FOUR_GIB, foot = end - OVMF_FOOTER_SKIP - OVMF_ENTRY_HDR;
	u64 start, pos, meta_off = 0;
	u16 tsize;
	int have_meta = 0;

	fi->footer_found = 0;
	fi->meta_gpa = fi->secrets_gpa = 0;
	if (probe_flash_find_base(&fi->base)) {
		/* No FV chain: still look at the footer in the last 4 KiB. */
		fi->base = end - PAGE_SIZE;
	}
	fi->size = end - fi->base;

	/* Footer entry: u16 size + GUID, 32 bytes before the end (reference §8.1). */
	if (!guid_at(foot + 2, &footer_guid)) {
		UnicodeSPrint(why, why_size, L"no footer-table GUID at 0x%lx", foot + 2);
		return -1;
	}
	tsize = rd16(foot);
	if (tsize < OVMF_ENTRY_HDR || (u64)(tsize - OVMF_ENTRY_HDR) > foot - fi->base) {
		UnicodeSPrint(why, why_size, L"footer table size %d out of bounds", tsize);
		return -1;
	}
	fi->footer_found = 1;
	start = foot - (tsize - OVMF_ENTRY_HDR);
	/* Entries run backwards from `foot`: data, then u16 size, then GUID. */
	for (pos = foot; pos - start >= OVMF_ENTRY_HDR;) {
		u16 esz = rd16(pos - OVMF_ENTRY_HDR);

		if (esz < OVMF_ENTRY_HDR || esz > pos - start) {
			UnicodeSPrint(why, why_size, L"footer entry at 0x%lx has bad size %d",
				      pos - OVMF_ENTRY_HDR, esz);
			return -1;
		}
		if (guid_at(pos - 16, &sev_meta_guid)) {
			if (esz < OVMF_ENTRY_HDR + 4) {
				UnicodeSPrint(why, why_size, L"SEV metadata entry too short");
				return -1;
			}
			meta_off = rd32(pos - esz);
			have_meta = 1;
		}
		pos -= esz;
	}
	if (!have_meta) {
		UnicodeSPrint(why, why_size, L"no SEV metadata entry in the footer table");
		return -1;
	}

	/* "ASEV" header: signature, u32 size, u32 version (1), u32 num_items. */
	if (meta_off < 16 || meta_off > fi->size) {
		UnicodeSPrint(why, why_size, L"SEV metadata offset 0x%lx outside the flash",
			      meta_off);
		return -1;
	}
	fi->meta_gpa = end - meta_off;
	{
		u64 m = fi->meta_gpa;
		u32 msize = rd32(m + 4), ver = rd32(m + 8), n = rd32(m + 12);

		if (rd32(m) != 0x56455341u /* "ASEV" */ || ver != 1 || msize < 16 ||
		    msize > meta_off || n > (msize - 16) / 12) {
			UnicodeSPrint(
			    why, why_size,
			    L"bad SEV metadata header at 0x%lx (size %d version %d items %d)", m,
			    msize, ver, n);
			return -1;
		}
		fi->meta_items = n;
		for (u32 i = 0; i < n; i++) {
			u64 it = m + 16 + 12ULL * i;
			u32 gpa = rd32(it), size = rd32(it + 4), type = rd32(it + 8);

			Print(L"# SEV metadata item %d: gpa 0x%x size 0x%x type %d\n", i, gpa, size,
			      type);
			if (type == SEV_META_ITEM_SNP_SECRETS && !fi->secrets_gpa) {
				if ((gpa & (PAGE_SIZE - 1)) || size < PAGE_SIZE) {
					UnicodeSPrint(
					    why, why_size,
					    L"SNP secrets item not a 4K page: gpa 0x%x size 0x%x",
					    gpa, size);
					return -1;
				}
				fi->secrets_gpa = gpa;
				fi->secrets_size = size;
			}
		}
	}
	if (!fi->secrets_gpa) {
		UnicodeSPrint(why, why_size, L"no SNP_SECRETS item in the SEV metadata");
		return -1;
	}
	return 0;
}
