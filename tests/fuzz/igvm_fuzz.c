/*
 * libFuzzer target: the IGVM parser (attest/igvm.c) on hostile files, then
 * the iterator and the SNP digest over whatever it accepts. The target
 * re-seals the CRC32 of each input before parsing, so mutations reach the
 * header checks instead of dying at the checksum. Stand-in hash, as in
 * fuzz_ovmf_meta.c. Build and run: make fuzz-igvm (attest/igvm.mk).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <attest/igvm.h>

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
	static struct igvm_file f;
	uint8_t *img = malloc(size ? size : 1), out[LD_SHA384_LEN];
	size_t n;
	struct igvm_range *scratch;
	uint32_t crc;

	if (!img)
		return 0;
	memcpy(img, data, size);
	if (igvm_compute_checksum(img, size, &crc) == IGVM_OK)
		memcpy(img + 20, &crc, 4);
	n = igvm_scratch_entries(img, size);
	scratch = malloc((n ? n : 1) * sizeof(*scratch));
	if (scratch && igvm_parse(&f, img, size, scratch, n) == IGVM_OK) {
		struct igvm_iter it;
		struct igvm_header h;
		struct igvm_snp_opts o = {.vcpus = 2, .vcpu_sig = 0x800F12, .have_sig = true};

		igvm_iter_init(&it, &f);
		while (igvm_iter_next(&it, &h))
			if (h.data)
				fake_sha384(h.data, h.data_len, out);
		igvm_snp_digest(&f, &fake_ops, &o, out, NULL, NULL);
	}
	free(scratch);
	free(img);
	return 0;
}
