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
 * Then it waits until no other vCPU is inside a section (below), at most
 * SECRET_QUIESCE_US of the host's time or SECRET_QUIESCE_SPINS tries, and
 * only then zeroes (issue 34 item 3).
 */
void secret_wipe_all(void);
bool secret_terminating(void);
/* Forget the registrations, the sections and the terminating state (host tests). */
void secret_reset(void);

/*
 * A section: code that reads or writes registered memory while other vCPUs
 * run: every heap call (base/libc/malloc.c) and every request that runs
 * the libraries (src/requests.c). secret_enter() marks this vCPU inside one
 * (sections nest) and returns false, entering nothing, once csvsm is
 * terminating; secret_leave() ends the innermost one.
 */
bool secret_enter(void);
void secret_leave(void);
/*
 * For a vCPU inside a section that finds csvsm terminating (the heap, at
 * its next call): it never returns into the section. This marks it parked,
 * so that no wipe waits for it; it then ends the VM itself through the
 * platform (which wipes again and, on snp, zeroes this vCPU's stack).
 */
void secret_park_self(void);

/* The bound of the wait for the other vCPUs: a host that never runs one
 * again delays the wipe by this much and cannot stop it. */
#define SECRET_QUIESCE_US    1000000ULL
#define SECRET_QUIESCE_SPINS 100000000ULL

/* What the last wipe on this vCPU found (for tests and the dashboard). */
struct secret_wipe_info {
	unsigned busy_at_start; /* other vCPUs inside a section when it began */
	unsigned still_busy;	/* ... and still inside when it zeroed (the bound ran out) */
	uint64_t waited_us;
};
void secret_last_wipe(struct secret_wipe_info *out);

/*
 * The end of a vCPU that terminates: zero its stack [lo, hi), which holds
 * the frames of whatever it ran (library locals, key schedules), then run
 * end(arg) on a fresh frame at hi; end never returns. lo == hi: no stack
 * known, end(arg) runs where it is.
 */
__noreturn void secret_end_on_clean_stack(vaddr_t lo, vaddr_t hi, void (*end)(uint64_t),
					  uint64_t arg);

#endif
