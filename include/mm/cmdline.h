/*
 * Kernel command-line helpers (mm/cmdline.c). The command line comes from
 * the hypervisor (PVH cmdline_paddr): callers pass an explicit length and
 * nothing here reads past it or trusts a terminator.
 */
#ifndef MM_CMDLINE_H
#define MM_CMDLINE_H

#include "base/types.h"

/*
 * Find the whitespace-separated token "key=value" (key given without '=').
 * Returns true and sets *val and *vlen to the value (not NUL-terminated), or
 * false when absent. A later occurrence wins, as in Linux.
 */
bool cmdline_get(const char *cmdline, size_t len, const char *key, const char **val, size_t *vlen);
/*
 * Parse one hex number (optional 0x/0X prefix, at least one digit, at most
 * 16 digits) at *p, not reading at or past `end`; advances *p. 0 / -1.
 */
int cmdline_parse_hex(const char **p, const char *end, uint64_t *out);
/* Decimal number, same rules (at most 19 digits). 0 / -1. */
int cmdline_parse_dec(const char **p, const char *end, uint64_t *out);

#endif
