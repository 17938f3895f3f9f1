/*
 * The vTPM persistence options csvsm-igvm takes and csvsm-measure checks
 * (tools/vtpm_opts.c): --vtpm-mode, --vtpm-instance, --vtpm-port,
 * --vtpm-tcb, --vtpm-broker-key. They fill the measured configuration of
 * include/csvsm/igvm_boot.h (docs/vtpm.md "Persistence").
 */
#ifndef TOOLS_VTPM_OPTS_H
#define TOOLS_VTPM_OPTS_H

#include <csvsm/igvm_boot.h>
#include <stddef.h>

struct vtpm_opts {
	struct csvsm_igvm_vtpm cfg;
	bool have_mode, have_instance, have_port, have_tcb;
	const char *broker_pem;
	char instance_hex[2 * CSVSM_IGVM_VTPM_INSTANCE + 1];
};

void vtpm_opts_init(struct vtpm_opts *o);
/* One option by its long name ("vtpm-mode", ...): 0, or -1 with a reason in err. */
int vtpm_opts_parse(struct vtpm_opts *o, const char *name, const char *arg, char *err, size_t n);
/* After the last option: reads the broker key, checks the combination. 0 or -1. */
int vtpm_opts_finish(struct vtpm_opts *o, char *err, size_t n);
/* "ephemeral", "sealed", "kbs" (or "?"). */
const char *vtpm_mode_name(uint32_t mode);
/* The thumbprint of an EC P-384 public key in a PEM file (RFC 7638). 0 or -1. */
int vtpm_broker_thumbprint(const char *pem, uint8_t out[32], char *err, size_t n);

#endif
