/*
 * csvsm-proxy's HTTP(S) relay to csvsm-kbs (proxy/relay.c, libcurl). The
 * status values are the channel's (include/tpm/vtpm_chan.h VCHAN_RELAY_*).
 */
#ifndef PROXY_RELAY_H
#define PROXY_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RELAY_OK      0 /* the broker answered: *http holds its status */
#define RELAY_UNREACH 1 /* transport failure, timeout, or an answer over the limit */
#define RELAY_NONE    2 /* no broker configured */
#define RELAY_GET     1u
#define RELAY_POST    2u

struct relay {
	void *curl; /* CURL *, NULL without a broker */
	char base[512];
	const char *cacert;
	long timeout_s;
};

/* base_url NULL: no broker (every relay answers RELAY_NONE). 0 or -1. */
int relay_init(struct relay *r, const char *base_url, const char *cacert, long timeout_s);
/* Forget the session cookie: a new csvsm connection is a new boot. */
void relay_new_session(struct relay *r);
void relay_free(struct relay *r);
/* One exchange: path must start /kbs/v0/ (no query, no host part). */
int relay_http(struct relay *r, uint32_t method, const char *path, const uint8_t *body,
	       size_t body_len, uint8_t *out, size_t cap, size_t *out_len, long *http);

#endif
