/*
 * vTPM persistence options for csvsm-igvm and csvsm-measure
 * (tools/vtpm_opts.h). The broker key is read with mbedTLS's PEM parser
 * and named by its RFC 7638 thumbprint (tpm/vtpm_jose.c), the value csvsm
 * compares the "jwk" of every broker signature with.
 */
#include <mbedtls/ecp.h>
#include <mbedtls/pk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mm/cmdline.h>
#include <tpm/vtpm_jose.h>

#include "vtpm_opts.h"

void vtpm_opts_init(struct vtpm_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cfg.port = CSVSM_IGVM_VTPM_PORT;
}

const char *vtpm_mode_name(uint32_t mode)
{
	switch (mode) {
	case CSVSM_VTPM_MODE_EPHEMERAL:
		return "ephemeral";
	case CSVSM_VTPM_MODE_SEALED:
		return "sealed";
	case CSVSM_VTPM_MODE_KBS:
		return "kbs";
	}
	return "?";
}

/* A number as the other csvsm-* options take it: 0x... hex or decimal (mm/cmdline.c). */
static int parse_u64(const char *s, uint64_t *out)
{
	const char *p = s, *end = s + strlen(s);
	bool hex = end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	if ((hex ? cmdline_parse_hex(&p, end, out) : cmdline_parse_dec(&p, end, out)) || p != end)
		return -1;
	return 0;
}

int vtpm_opts_parse(struct vtpm_opts *o, const char *name, const char *arg, char *err, size_t n)
{
	uint64_t v;

	if (!strcmp(name, "vtpm-mode")) {
		if (!strcmp(arg, "ephemeral"))
			o->cfg.mode = CSVSM_VTPM_MODE_EPHEMERAL;
		else if (!strcmp(arg, "sealed"))
			o->cfg.mode = CSVSM_VTPM_MODE_SEALED;
		else if (!strcmp(arg, "kbs"))
			o->cfg.mode = CSVSM_VTPM_MODE_KBS;
		else
			return snprintf(err, n, "bad --vtpm-mode '%s' (ephemeral|sealed|kbs)", arg),
			       -1;
		o->have_mode = true;
	} else if (!strcmp(name, "vtpm-instance")) {
		if (strlen(arg) != 2 * CSVSM_IGVM_VTPM_INSTANCE)
			return snprintf(err, n, "--vtpm-instance wants 32 hex digits"), -1;
		for (unsigned i = 0; i < CSVSM_IGVM_VTPM_INSTANCE; i++) {
			const char *p = arg + 2 * i;
			uint64_t b;
			if (p[1] == 'x' || p[1] == 'X' || cmdline_parse_hex(&p, p + 2, &b) ||
			    p != arg + 2 * i + 2)
				return snprintf(err, n, "--vtpm-instance wants 32 hex digits"), -1;
			o->cfg.instance[i] = (uint8_t)b;
			o->instance_hex[2 * i] = (char)(arg[2 * i] | 0x20);
			o->instance_hex[2 * i + 1] = (char)(arg[2 * i + 1] | 0x20);
		}
		o->have_instance = true;
	} else if (!strcmp(name, "vtpm-port")) {
		if (parse_u64(arg, &v) || !v || v > 0xFFF8)
			return snprintf(err, n, "bad --vtpm-port '%s'", arg), -1;
		o->cfg.port = (uint16_t)v;
		o->have_port = true;
	} else if (!strcmp(name, "vtpm-tcb")) {
		if (parse_u64(arg, &v))
			return snprintf(err, n, "bad --vtpm-tcb '%s'", arg), -1;
		o->cfg.tcb_version = v;
		o->cfg.flags |= CSVSM_IGVM_VTPM_F_TCB;
		o->have_tcb = true;
	} else if (!strcmp(name, "vtpm-broker-key")) {
		o->broker_pem = arg;
	} else {
		return snprintf(err, n, "unknown option --%s", name), -1;
	}
	return 0;
}

int vtpm_broker_thumbprint(const char *pem, uint8_t out[32], char *err, size_t n)
{
	mbedtls_pk_context pk;
	uint8_t x[JOSE_P384_COORD], y[JOSE_P384_COORD];
	size_t coord;
	int rc = -1;

	mbedtls_pk_init(&pk);
	if (mbedtls_pk_parse_public_keyfile(&pk, pem)) {
		snprintf(err, n, "%s: not a PEM public key", pem);
		goto out;
	}
	if (mbedtls_pk_get_type(&pk) != MBEDTLS_PK_ECKEY ||
	    (mbedtls_pk_ec(pk)->grp.id != MBEDTLS_ECP_DP_SECP256R1 &&
	     mbedtls_pk_ec(pk)->grp.id != MBEDTLS_ECP_DP_SECP384R1)) {
		snprintf(err, n, "%s: the broker's key must be EC P-256 (ES256) or P-384 (ES384)",
			 pem);
		goto out;
	}
	coord = mbedtls_pk_ec(pk)->grp.id == MBEDTLS_ECP_DP_SECP256R1 ? JOSE_P256_COORD
								      : JOSE_P384_COORD;
	const mbedtls_ecp_point *q = &mbedtls_pk_ec(pk)->Q;
	if (mbedtls_mpi_write_binary(&q->X, x, coord) ||
	    mbedtls_mpi_write_binary(&q->Y, y, coord) || jose_thumbprint_ec(x, y, coord, out)) {
		snprintf(err, n, "%s: cannot compute the key's thumbprint", pem);
		goto out;
	}
	rc = 0;
out:
	mbedtls_pk_free(&pk);
	return rc;
}

int vtpm_opts_finish(struct vtpm_opts *o, char *err, size_t n)
{
	bool persistent = o->cfg.mode != CSVSM_VTPM_MODE_EPHEMERAL;

	if (!persistent && (o->have_instance || o->have_port || o->have_tcb || o->broker_pem))
		return snprintf(err, n,
				"the --vtpm-* options other than --vtpm-mode need "
				"--vtpm-mode sealed or kbs"),
		       -1;
	if (!persistent)
		return 0;
	if (!o->have_instance)
		return snprintf(err, n, "--vtpm-mode %s needs --vtpm-instance",
				vtpm_mode_name(o->cfg.mode)),
		       -1;
	if ((o->cfg.mode == CSVSM_VTPM_MODE_KBS) != (o->broker_pem != NULL))
		return snprintf(err, n,
				"--vtpm-broker-key goes with --vtpm-mode kbs, and kbs "
				"needs it (else any broker could release a key)"),
		       -1;
	if (o->broker_pem && vtpm_broker_thumbprint(o->broker_pem, o->cfg.broker_key, err, n))
		return -1;
	return 0;
}
