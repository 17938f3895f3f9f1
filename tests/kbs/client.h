/*
 * Shared by csvsm-kbs-client's parts (tests/kbs/kbs_client.c, the vtpm
 * command in tests/kbs/vtpm_client.c): one HTTP/1.1 exchange on loopback.
 */
#ifndef TESTS_KBS_CLIENT_H
#define TESTS_KBS_CLIENT_H

#include <stddef.h>

struct http_resp {
	int status;
	char cookie[64];
	char *body; /* malloc'd */
	size_t len;
};

extern int port; /* the service's, --port */
/* method path [cookie] [body]: 0 with r filled, or -1 (no connection). */
int kbs_client_http(const char *method, const char *path, const char *cookie, const char *body,
		    struct http_resp *r);
/* 2n hex digits -> out[0..n): 0, or -1 */
int hexbytes(const char *s, unsigned char *out, size_t n);
/* csvsm-kbs-client vtpm ... (tests/kbs/vtpm_client.c) */
int vtpm_client(int argc, char **argv, const char *chain_dir);

#endif
