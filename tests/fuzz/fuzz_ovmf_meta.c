/*
 * libFuzzer target: the OVMF footer table / SEV metadata parser on hostile
 * flash images, and the launch-digest page walk over whatever metadata it
 * accepts (with a cheap stand-in hash so the fuzzer stays fast).
 * Build and run: make -f ... fuzz-ovmf-meta (attest/measure.mk).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <attest/launch_digest.h>
#include <attest/ovmf_meta.h>

/* Not a hash: folds the input so that every byte is read (ASan sees it). */
static void fake_sha384(const void *data, size_t len, uint8_t out[LD_SHA384_LEN])
{
	const uint8_t *p = data;

	memset(out, 0, LD_SHA384_LEN);
	for (size_t i = 0; i < len; i++)
		out[i % LD_SHA384_LEN] ^= p[i];
}

static const struct ld_hash_ops fake_ops = {.sha384 = fake_sha384};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ovmf_info info;
	static uint8_t hpage[PAGE_SIZE];
	uint8_t out[LD_SHA384_LEN];
	uint64_t pages = 0;
	/* An exact-size copy: reads past the end hit ASan's redzone. */
	uint8_t *img = malloc(size ? size : 1);

	if (!img)
		return 0;
	memcpy(img, data, size);
	if (ovmf_info_parse(img, size, &info) == OVMF_META_OK) {
		const uint8_t *d;
		size_t n;

		if (info.has_sev_meta && info.meta.n_items > OVMF_SEV_META_MAX_ITEMS)
			abort();
		for (size_t i = 0; i < info.footer.n_entries; i++) {
			/* Every entry lies inside the image. */
			if (ovmf_footer_find(&info.footer, info.footer.entries[i].guid, &d, &n))
				abort();
			if (d < img || n > size || d + n > img + size)
				abort();
		}
		/* Bound the walk: ZERO sections can describe up to 4 GiB each. */
		for (uint32_t i = 0; info.has_sev_meta && i < info.meta.n_items; i++)
			pages += info.meta.items[i].size / PAGE_SIZE;
		if (pages < 4096 && IS_ALIGNED(size, PAGE_SIZE) && size > 0) {
			struct ld_snp_launch p = {.ovmf = img,
						  .ovmf_len = size,
						  .info = &info,
						  .vcpus = 2,
						  .vcpu_sig = 0x00800F12,
						  .guest_features = 1};

			(void)launch_digest_snp(&fake_ops, &p, out);
			if (info.has_hash_table &&
			    launch_digest_hashes_page(hpage, info.hash_table_gpa & 0xFFF, out, out,
						      out) == LD_OK) {
				p.hashes_page = hpage;
				(void)launch_digest_snp(&fake_ops, &p, out);
			}
		}
	}
	free(img);
	return 0;
}
