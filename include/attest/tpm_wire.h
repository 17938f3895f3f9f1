/*
 * A bounds-checked reader for TPM 2.0 wire structures (big-endian integers,
 * TPM2B size-prefixed fields; TPM 2.0 Part 1 §18, Part 2 §10) and tpm2-tools'
 * host-order files: a read past the end sets `bad` and returns 0/NULL, and
 * every later read fails too, so a parser checks `bad` once per structure.
 * Host library only (attest/snp_verify.c, attest/tpm_cred.c).
 */
#ifndef ATTEST_TPM_WIRE_H
#define ATTEST_TPM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tpm_rd {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

/* n (<= 4) bytes big-endian. */
static inline uint32_t tpm_rd_be(struct tpm_rd *r, size_t n)
{
	uint32_t v = 0;
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v = v << 8 | r->p[r->off + i];
	r->off += n;
	return v;
}

/* n (<= 4) bytes little-endian (tpm2-tools' "serialized" files). */
static inline uint32_t tpm_rd_le(struct tpm_rd *r, size_t n)
{
	uint32_t v = 0;
	if (r->bad || n > r->len - r->off) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint32_t)r->p[r->off + i] << (8 * i);
	r->off += n;
	return v;
}

/* A TPM2B: its bytes (in place) and their count in *n. */
static inline const uint8_t *tpm_rd_2b(struct tpm_rd *r, size_t *n)
{
	size_t l = tpm_rd_be(r, 2);
	if (r->bad || l > r->len - r->off) {
		r->bad = true;
		*n = 0;
		return NULL;
	}
	*n = l;
	r->off += l;
	return r->p + r->off - l;
}

#endif
