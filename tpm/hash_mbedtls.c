/*
 * Image implementation of include/tpm/hash.h on mbedTLS 2.28
 * (libmbedcrypto.a, csvsm's own crypto library; DESIGN.md "Dependencies").
 * The host build keeps tpm/hash_openssl.c; test_vtpm_svsm checks both give
 * the FIPS 180-2 digests. A digest failure means the library is broken, not
 * bad input: panic.
 */
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include "base/console.h"
#include "base/string.h"
#include "tpm/hash.h"

void hash_sha256(const void *data, size_t len, uint8_t out[HASH_SHA256_SIZE])
{
	if (mbedtls_sha256_ret(data, len, out, 0 /* not SHA-224 */) != 0)
		panic("hash: mbedtls_sha256_ret failed");
}

void hash_sha384(const void *data, size_t len, uint8_t out[HASH_SHA384_SIZE])
{
	/* mbedTLS declares the output as unsigned char[64] for both SHA-512 and SHA-384. */
	uint8_t full[64];

	if (mbedtls_sha512_ret(data, len, full, 1 /* SHA-384 */) != 0)
		panic("hash: mbedtls_sha512_ret failed");
	memcpy(out, full, HASH_SHA384_SIZE);
}
