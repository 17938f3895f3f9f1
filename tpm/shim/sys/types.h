/*
 * Image-only stand-in for <sys/types.h>, on the include path of the tpm/
 * objects that include <libtpms/tpm_library.h> (tpm/build.mk,
 * -idirafter tpm/shim). libtpms's public headers need only size_t and the
 * stdint types from it; nothing of glibc's ABI is declared here.
 */
#ifndef CSVSM_TPM_SHIM_SYS_TYPES_H
#define CSVSM_TPM_SHIM_SYS_TYPES_H

#include <stddef.h>
#include <stdint.h>

typedef long ssize_t; /* x86_64 glibc: long */

#endif
