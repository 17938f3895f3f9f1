/*
 * Secrets csvsm holds (VMPCK0, the vTPM's state in the libraries' heap; in
 * the SNP machine, which links this file too, its PSP model's keys) are
 * registered here once, and every termination path (platform terminate,
 * panic, fatal exception) wipes them all before the VM ends
 * (base/secret.c). A secret that is no longer needed is wiped
 * by its owner at once; this is the backstop for the paths that end early.
 */
#ifndef BASE_SECRET_H
#define BASE_SECRET_H

#include "base/types.h"

#define SECRET_MAX_REGIONS 16

/* Register [p, p + n) to be wiped on termination; 0, or -1 when the table is full. */
int secret_register(void *p, size_t n);
/*
 * Wipe every registered region (each vCPU that ends the VM may call it).
 * It first marks csvsm terminating, for good: no request is served and no
 * guest request is sent after that, on any vCPU (issue 15, finding 3).
 */
void secret_wipe_all(void);
bool secret_terminating(void);
/* Forget the registrations and the terminating state (host tests). */
void secret_reset(void);

#endif
