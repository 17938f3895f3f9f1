/*
 * libFuzzer target for what csvsm's persistent vTPM reads from the host
 * (docs/vtpm.md "Persistence"): the channel's frame reader, the sealed
 * state opener, the JSON reader, the JOSE checks and the kbs release check.
 * The first input byte picks the parser, the rest is its input:
 *   0  vchan_rx_feed, the input split into chunks whose sizes the input's
 *      next bytes give (frames across reads, 0x00 fill)
 *   1  vtpm_unseal of the rest under a fixed key (mode 1, a fixed instance)
 *   2  json_validate, then every getter on the text
 *   3  jose_jws_verify against a fixed broker thumbprint (ES256, ES384)
 *   4  jose_jwe_open (flattened JSON, ECDH-ES+A256KW) with a fixed P-384 key
 *   5  vtpm_kbs_check_release (JWS, then JSON, then JWE)
 *   6  vtpm_kbs_check_commit (the broker's acknowledgement of a commit)
 *   7  vtpm_kbs_check_ek (the broker's answer with the EK certificate)
 * Every input is copied to a buffer of exactly its size (ASan catches any
 * read past it). `make fuzz-vtpm` runs it after the protocol decoder's.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tpm/vtpm_chan.h"
#include "tpm/vtpm_jose.h"
#include "tpm/vtpm_json.h"
#include "tpm/vtpm_kbs.h"
#include "tpm/vtpm_seal.h"

static uint8_t payload[VCHAN_MAX_PAYLOAD], plain[VTPM_STATE_MAX];
static const uint8_t broker[32] = {0x42};
static const struct vtpm_seal_id id = {.mode = 1, .instance = {1, 2, 3}};

/* A fixed valid P-384 private key (any scalar in [1, n-1]). */
static const struct jose_p384_key key = {.d = {0x11, 0x22, 0x33}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0] % 8;
	size_t n = size - 1;
	uint8_t *in = malloc(n ? n : 1);
	if (!in)
		return 0;
	memcpy(in, data + 1, n);

	switch (sel) {
	case 0: {
		struct vchan_rx rx;
		size_t off = 0;
		vchan_rx_init(&rx, payload, sizeof(payload));
		while (off < n) {
			size_t chunk = 1 + in[off] % 64, used = 0;
			if (chunk > n - off)
				chunk = n - off;
			int rc = vchan_rx_feed(&rx, in + off, chunk, &used);
			if (rc == VCHAN_RX_ERROR)
				break;
			if (rc == VCHAN_RX_FRAME) {
				if (rx.got > rx.want || rx.want > sizeof(payload))
					abort();
				vchan_rx_next(&rx);
			}
			off += used ? used : chunk;
		}
		break;
	}
	case 1: {
		uint8_t k[32] = {7}, kcv[16];
		size_t len;
		uint64_t ver;
		if (vtpm_seal_key(k, &id, k, kcv) == 0 &&
		    vtpm_unseal(k, kcv, &id, in, n, plain, sizeof(plain), &len, &ver) == 0 &&
		    len > sizeof(plain))
			abort();
		uint32_t mode;
		vtpm_seal_peek(in, n, &mode, &ver);
		break;
	}
	case 2: {
		char s[256];
		const char *v;
		size_t vl, sl;
		uint64_t u;
		if (json_validate((const char *)in, n) == 0) {
			static const char *const keys[] = {"nonce", "instance", "version", "jwk",
							   "x",	    "alg",	"key",	   ""};
			for (unsigned i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
				if (!json_get_raw((const char *)in, n, keys[i], &v, &vl) &&
				    (v < (const char *)in || v + vl > (const char *)in + n))
					abort();
				json_get_string((const char *)in, n, keys[i], s, sizeof(s), &sl);
				json_get_u64((const char *)in, n, keys[i], &u);
			}
		}
		break;
	}
	case 3: {
		size_t len;
		jose_jws_verify((const char *)in, n, broker, payload, sizeof(payload), &len);
		break;
	}
	case 4: {
		uint8_t out[64];
		size_t len;
		jose_jwe_open((const char *)in, n, &key, out, sizeof(out), &len);
		break;
	}
	case 5: {
		uint8_t root[32];
		struct vtpm_kbs_grant g;
		char why[160];
		static const uint8_t inst[16] = {1};
		vtpm_kbs_check_release((const char *)in, n, broker, inst, "nonce", &key, root, &g,
				       why, sizeof(why));
		break;
	}
	case 6: {
		struct vtpm_kbs_grant g = {0};
		char why[160];
		static const uint8_t inst[16] = {1};
		vtpm_kbs_check_commit((const char *)in, n, broker, inst, "nonce", 7, 3, &g, why,
				      sizeof(why));
		break;
	}
	case 7: {
		static uint8_t cert[4096];
		size_t cl;
		char why[160];
		static const uint8_t inst[16] = {1};
		vtpm_kbs_check_ek((const char *)in, n, broker, inst, "nonce", cert, sizeof(cert), &cl,
				  why, sizeof(why));
		break;
	}
	}
	free(in);
	return 0;
}
