/*
 * libFuzzer over csvsm-kbs's request layer (kbs/service.c kbs_handle): the
 * method, path, Content-Type, cookie and body of one request, as the HTTP
 * server hands them over. Behind it: the JSON decoders of the Request and
 * the Attestation (both shapes), the TEE key's JWK, both evidence forms
 * (kbs/evidence.c: the virtee/sev serde report rebuilt byte by byte, the
 * SVSM form's base64 and certificate table), RFC 8785, the appraisal and
 * the resource path. The registry is SQLite in memory.
 *
 * Input: byte 0 selects the method (GET, POST, PUT, DELETE), byte 1 the
 * content type (JSON, JSON with a parameter, text/plain, none), byte 2 the
 * cookie (none, a fresh session's, garbage, an attested one), byte 3 the
 * path length L, then L bytes of path, then the body.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ec.h>

#include "kbs/jose.h"
#include "kbs/kbs.h"

static struct kbs k;
static struct registry *reg;

static void setup(void)
{
	static const char pol[] =
	    "{\"version\":1,\"snp\":{\"policy\":\"0x30000\",\"measurement\":\""
	    "c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5"
	    "c5c5c5c5c5"
	    "\"},\"svsm\":{}}";
	struct appraisal_policy p;
	char err[256];
	if (appraisal_policy_parse(pol, sizeof(pol) - 1, &p, err, sizeof(err)) ||
	    registry_open("sqlite::memory:", &reg, err, sizeof(err)))
		abort();
	kbs_init(&k, reg, &p, EVP_EC_gen("prime256v1"));
	static const uint8_t v[] = "secret";
	registry_resource_put(reg, "a", "b", "c", "affirming", v, 6);
}

/* A fresh session's cookie value, through /auth itself. */
static void new_session(char out[KBS_SESSION_ID_LEN + 1])
{
	static const char body[] = "{\"version\":\"0.4.0\",\"tee\":\"snp\",\"extra-params\":{}}";
	struct kbs_request rq = {.method = "POST",
				 .url = "/kbs/v0/auth",
				 .content_type = "application/json",
				 .body = (const uint8_t *)body,
				 .body_len = sizeof(body) - 1};
	struct kbs_response rs;
	kbs_handle(&k, &rq, &rs);
	const char *c = strstr(rs.set_cookie, "kbs-session-id=");
	snprintf(out, KBS_SESSION_ID_LEN + 1, "%s", c ? c + 15 : "");
	kbs_response_free(&rs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *methods[] = {"GET", "POST", "PUT", "DELETE"};
	static const char *types[] = {"application/json", "application/json; charset=utf-8",
				      "text/plain", NULL};
	char url[300], cookie[64], sid[KBS_SESSION_ID_LEN + 1];

	if (!reg)
		setup();
	if (size < 4)
		return 0;
	size_t ul = data[3] < size - 4 ? data[3] : size - 4;
	if (ul >= sizeof(url))
		ul = sizeof(url) - 1;
	memcpy(url, data + 4, ul);
	url[ul] = 0;
	if (strlen(url) != ul) /* the server hands over C strings */
		return 0;
	struct kbs_request rq = {.method = methods[data[0] & 3],
				 .url = url,
				 .content_type = types[data[1] & 3],
				 .body = data + 4 + ul,
				 .body_len = size - 4 - ul};
	switch (data[2] & 3) {
	case 1:
		new_session(sid);
		snprintf(cookie, sizeof(cookie), "kbs-session-id=%s", sid);
		rq.cookie = cookie;
		break;
	case 2:
		rq.cookie = "kbs-session-id=0123456789abcdef0123456789abcdef; x=y";
		break;
	case 3:
		rq.cookie = "a=b;;kbs-session-id=";
		break;
	}
	struct kbs_response rs;
	kbs_handle(&k, &rq, &rs);
	/* every answer is a status and, but for none, a JSON body */
	if (rs.status < 200 || rs.status > 599 || (rs.body && !rs.len))
		abort();
	kbs_response_free(&rs);
	return 0;
}
