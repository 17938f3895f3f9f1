/*
 * The two digests csvsm itself computes for measurements and the event log
 * (TCG PC Client crypto-agile log, SHA-256 and SHA-384 banks). A tiny
 * interface so that the host build uses OpenSSL (tpm/hash_openssl.c) and
 * the image can swap in mbedTLS without touching the callers.
 */
#ifndef TPM_HASH_H
#define TPM_HASH_H

#include "base/types.h"

#define HASH_SHA256_SIZE 32
#define HASH_SHA384_SIZE 48

void hash_sha256(const void *data, size_t len, uint8_t out[HASH_SHA256_SIZE]);
void hash_sha384(const void *data, size_t len, uint8_t out[HASH_SHA384_SIZE]);

#endif
