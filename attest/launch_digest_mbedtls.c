/*
 * Host implementation of the launch-digest hash ops with mbedTLS 2.28
 * (Debian libmbedtls-dev). Kept apart from launch_digest.c so that the core
 * computation builds freestanding; the image will supply its own ops.
 */
#include <attest/launch_digest.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include <string.h>

static void ld_sha384_mbedtls(const void *data, size_t len, uint8_t out[LD_SHA384_LEN])
{
	/* mbedTLS declares the output as 64 bytes even for SHA-384 (is384 = 1);
	 * the software backend cannot fail for in-memory input. */
	unsigned char full[64];

	(void)mbedtls_sha512_ret(data, len, full, 1);
	memcpy(out, full, LD_SHA384_LEN);
}

void ld_sha256_mbedtls(const void *data, size_t len, uint8_t out[LD_SHA256_LEN])
{
	(void)mbedtls_sha256_ret(data, len, out, 0);
}

const struct ld_hash_ops ld_hash_mbedtls = {
    .sha384 = ld_sha384_mbedtls,
};
