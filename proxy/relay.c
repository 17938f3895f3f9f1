/*
 * csvsm-proxy's relay to csvsm-kbs (proxy/relay.h): one HTTP(S) exchange
 * per csvsm RELAY frame, through Debian's libcurl. The proxy does not
 * interpret what it relays: the request body and the answer go through as
 * bytes, csvsm checks what comes back (broker signature, nonce). One curl
 * handle per csvsm connection, with its cookie engine on, so that the KBS
 * session cookie of /kbs/v0/auth (Trustee kbs_attestation_protocol.md:
 * "kbs-session-id") comes back on /attest and /resource within one boot.
 */
#include <curl/curl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/relay.h"

struct sink {
	uint8_t *buf;
	size_t cap, len;
	bool overflow;
};

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
	struct sink *s = ctx;
	size_t k = size * n;
	if (k > s->cap - s->len) {
		s->overflow = true;
		return 0; /* curl stops: an answer over the limit is not relayed */
	}
	memcpy(s->buf + s->len, p, k);
	s->len += k;
	return k;
}

int relay_init(struct relay *r, const char *base_url, const char *cacert, long timeout_s)
{
	memset(r, 0, sizeof(*r));
	if (!base_url)
		return 0;
	if (strlen(base_url) >= sizeof(r->base))
		return -1;
	strcpy(r->base, base_url);
	r->cacert = cacert;
	r->timeout_s = timeout_s > 0 ? timeout_s : 10;
	r->curl = curl_easy_init();
	if (!r->curl)
		return -1;
	curl_easy_setopt(r->curl, CURLOPT_COOKIEFILE, ""); /* cookie engine on, no file */
	return 0;
}

void relay_new_session(struct relay *r)
{
	if (r->curl)
		curl_easy_setopt(r->curl, CURLOPT_COOKIELIST,
				 "ALL"); /* a new boot: forget cookies */
}

void relay_free(struct relay *r)
{
	if (r->curl)
		curl_easy_cleanup(r->curl);
	r->curl = NULL;
}

int relay_http(struct relay *r, uint32_t method, const char *path, const uint8_t *body,
	       size_t body_len, uint8_t *out, size_t cap, size_t *out_len, long *http)
{
	char url[sizeof(r->base) + 256];
	struct sink s = {out, cap, 0, false};
	struct curl_slist *hdr = NULL;
	CURLcode rc;

	*out_len = 0;
	*http = 0;
	if (!r->curl)
		return RELAY_NONE;
	/* Only paths of the KBS API, never a URL of the host's choosing. */
	if (strncmp(path, "/kbs/v0/", 8) || strstr(path, "..") || strpbrk(path, "?#@ \r\n") ||
	    snprintf(url, sizeof(url), "%s%s", r->base, path) >= (int)sizeof(url))
		return RELAY_UNREACH;
	curl_easy_setopt(r->curl, CURLOPT_URL, url);
	curl_easy_setopt(r->curl, CURLOPT_TIMEOUT, r->timeout_s);
	curl_easy_setopt(r->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(r->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(r->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (r->cacert)
		curl_easy_setopt(r->curl, CURLOPT_CAINFO, r->cacert);
	curl_easy_setopt(r->curl, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(r->curl, CURLOPT_WRITEDATA, &s);
	if (method == RELAY_POST) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(r->curl, CURLOPT_POST, 1L);
		curl_easy_setopt(r->curl, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
		curl_easy_setopt(r->curl, CURLOPT_POSTFIELDSIZE, (long)body_len);
	} else {
		curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
		curl_easy_setopt(r->curl, CURLOPT_HTTPGET, 1L);
	}
	rc = curl_easy_perform(r->curl);
	curl_easy_setopt(r->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK || s.overflow)
		return RELAY_UNREACH;
	curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, http);
	*out_len = s.len;
	return RELAY_OK;
}
