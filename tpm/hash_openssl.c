/*
 * Host implementation of include/tpm/hash.h on OpenSSL's libcrypto (the
 * same library libtpms uses as its crypto backend). A digest failure here
 * means the library is broken, not bad input: panic.
 */
#include <openssl/evp.h>
#include "base/console.h"
#include "tpm/hash.h"

static void hash_evp(const EVP_MD *md, const void *data, size_t len, uint8_t *out, unsigned want)
{
	unsigned n = 0;

	if (!EVP_Digest(data, len, out, &n, md, NULL) || n != want)
		panic("hash: EVP_Digest failed");
}

void hash_sha256(const void *data, size_t len, uint8_t out[HASH_SHA256_SIZE])
{
	hash_evp(EVP_sha256(), data, len, out, HASH_SHA256_SIZE);
}

void hash_sha384(const void *data, size_t len, uint8_t out[HASH_SHA384_SIZE])
{
	hash_evp(EVP_sha384(), data, len, out, HASH_SHA384_SIZE);
}
