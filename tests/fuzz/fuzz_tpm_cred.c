/*
 * libFuzzer target: what a verifier reads from the guest for credential
 * activation (attest/tpm_cred.c): a public area in either form (EK from the
 * manifest, AK from tpm2_readpublic), its judgement, Name and key, and the
 * SVSM manifest lookup. Any input must be refused or parsed without reading
 * outside it; a parsed area's fields must lie inside it.
 * Build: make fuzz-verify (clang, ASan + UBSan).
 */
#include <attest/tpm_cred.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const uint8_t *data, size_t size, const uint8_t *p, size_t n)
{
	if (n && (p < data || p + n > data + size))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t g[16] = {0xeb, 0xf1, 0x76, 0xc4, 0x23, 0x01, 0xa5, 0x45,
				      0x96, 0x41, 0xb4, 0xe7, 0xdd, 0xe5, 0xbf, 0xe3};
	struct tpm_public p;
	uint8_t name[TPM_NAME_MAX];
	char d[256];
	const uint8_t *e;
	size_t el;

	if (tpm_public_parse_any(data, size, &p, d, sizeof(d))) {
		inside(data, size, p.raw, p.raw_len);
		inside(data, size, p.n, p.n_len);
		inside(data, size, p.x, p.x_len);
		inside(data, size, p.y, p.y_len);
		tpm_public_name(&p, name);
		bool ak = tpm_ak_check(&p, d, sizeof(d));
		bool ek = tpm_ek_check(&p, d, sizeof(d));
		if (ak && ek)
			__builtin_trap(); /* sign and decrypt exclude each other */
		if (ak) {
			mbedtls_pk_context pk;
			mbedtls_pk_init(&pk);
			tpm_public_to_pk(&p, &pk);
			mbedtls_pk_free(&pk);
		}
	}
	if (svsm_manifest_find(data, size, g, &e, &el, d, sizeof(d)))
		inside(data, size, e, el);
	return 0;
}
