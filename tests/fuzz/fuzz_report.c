/*
 * libFuzzer target: the ATTESTATION_REPORT decoder (attest/report.c) on
 * arbitrary bytes. Any length must be refused or decoded without reading
 * outside the input; a decoded report's fields must decode for every
 * product layout. Build: make fuzz-verify (clang, ASan + UBSan).
 */
#include <attest/report.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct snp_report r;
	uint8_t full[SNP_REPORT_SIZE];
	int err = snp_report_parse(data, size, &r);

	if (size != SNP_REPORT_SIZE && err != SNP_REPORT_ERR_SIZE)
		__builtin_trap();
	/* Also feed every input, padded or cut to 1184 bytes, through the rules. */
	memset(full, 0, sizeof(full));
	memcpy(full, data, size < sizeof(full) ? size : sizeof(full));
	if (snp_report_decode(full, sizeof(full), &r) != SNP_REPORT_OK)
		__builtin_trap();
	err = snp_report_check(&r);
	long off = snp_report_first_reserved_nonzero(&r);
	if (err == SNP_REPORT_OK && off >= 0)
		__builtin_trap();
	if (off >= (long)SNP_REPORT_SIZE)
		__builtin_trap();
	(void)snp_report_strerror(err);
	for (int p = SNP_PRODUCT_UNKNOWN; p <= SNP_PRODUCT_TURIN; p++) {
		struct snp_tcb a, b;
		snp_tcb_decode(r.raw.reported_tcb, (enum snp_product)p, &a);
		snp_tcb_decode(r.raw.current_tcb, (enum snp_product)p, &b);
		if (!snp_tcb_at_least(&a, &a))
			__builtin_trap();
		(void)snp_tcb_at_least(&a, &b);
	}
	(void)snp_product_name(r.product);
	return 0;
}
