/*
 * Image-only stand-in for <netinet/in.h>: <libtpms/tpm_types.h> includes it
 * "for byte order conversions" but no libtpms header csvsm uses needs any of
 * it (tpm/build.mk puts tpm/shim on the include path with -idirafter).
 */
#ifndef CSVSM_TPM_SHIM_NETINET_IN_H
#define CSVSM_TPM_SHIM_NETINET_IN_H
#endif
