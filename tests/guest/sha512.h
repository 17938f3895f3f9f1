/* Compact SHA-512 (FIPS 180-4) for the probe's attestation checks (sha512.c). */
#ifndef PROBE_SHA512_H
#define PROBE_SHA512_H

#include "probe.h"

struct sha512_ctx {
	u64 h[8];
	u64 len; /* bytes so far (< 2^61: the 128-bit length's high half is 0) */
	u8 buf[128];
	u32 fill;
};
void sha512_init(struct sha512_ctx *c);
void sha512_update(struct sha512_ctx *c, const void *data, UINTN len);
void sha512_final(struct sha512_ctx *c, u8 out[64]);
void sha512(const void *data, UINTN len, u8 out[64]);

#endif
