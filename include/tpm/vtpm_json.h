/*
 * A strict, bounded JSON reader for the few flat objects csvsm's kbs mode
 * reads from the host's relay (tpm/vtpm_json.c): the KBS challenge, JOSE
 * headers, the broker's signed answers. RFC 8259 syntax, checked in full
 * before anything is looked up; nesting at most JSON_MAX_DEPTH; a key that
 * appears twice in one object is refused (two readers of one token must not
 * see two different values, RFC 7515 §4: "MUST reject"). No heap; text is
 * never assumed NUL-terminated.
 */
#ifndef TPM_VTPM_JSON_H
#define TPM_VTPM_JSON_H

#include "base/types.h"

#define JSON_MAX_DEPTH 8

/* 0 when text[0..len) is one JSON value (surrounding whitespace allowed), else -1. */
int json_validate(const char *text, size_t len);

/*
 * In the object text[0..len) (already validated), the value of member `key`:
 * json_get_raw gives its span (for a nested object), json_get_string its
 * string value unescaped into out[0..cap) with a NUL after it (\u escapes
 * only below 0x80), json_get_u64 an unsigned integer without sign, fraction
 * or exponent. 0, or -1 when absent, repeated, of another type or too long.
 */
int json_get_raw(const char *text, size_t len, const char *key, const char **val, size_t *vlen);
int json_get_string(const char *text, size_t len, const char *key, char *out, size_t cap,
		    size_t *outlen);
int json_get_u64(const char *text, size_t len, const char *key, uint64_t *out);

#endif
