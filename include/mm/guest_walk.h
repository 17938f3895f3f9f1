/*
 * A walk of the guest's own page tables, as the CPU would do it for an
 * access csvsm performs on the guest's behalf (string I/O, instruction
 * bytes of an emulated MMIO access): 32-bit, PAE and 4-level paging,
 * large pages, and the permission checks of AMD APM vol. 2 §5.6 (U/S,
 * R/W with CR0.WP, NX, SMEP, SMAP). Every page-table entry is read through
 * a callback that must refuse pages the guest itself may not read, so the
 * walk never uses memory the guest has no access to (a VMSA page, csvsm's
 * own memory). The C-bit (SEV) is not part of an address. Pure code,
 * unit-tested on the host (tests/unit/test_guest_walk.c).
 */
#ifndef MM_GUEST_WALK_H
#define MM_GUEST_WALK_H

#include "base/types.h"

enum gw_access { GW_READ, GW_WRITE, GW_FETCH };

/* #PF error code bits (APM vol. 2 §8.4.2). */
#define GW_PF_P	   (1u << 0)
#define GW_PF_W	   (1u << 1)
#define GW_PF_U	   (1u << 2)
#define GW_PF_RSVD (1u << 3)
#define GW_PF_ID   (1u << 4)

struct gw_cpu {
	uint64_t cr0, cr3, cr4, efer, rflags;
	unsigned cpl;
	uint64_t cbit_mask; /* the C-bit, cleared from every address (0 = none) */
	/* Read `size` (4 or 8) bytes of a page-table entry at guest-physical
	 * `gpa`; 0, or -1 when the guest may not read that memory. */
	int (*read_pte)(void *arg, gpa_t gpa, unsigned size, uint64_t *val);
	void *arg;
};

enum gw_result {
	GW_OK,
	GW_PAGE_FAULT, /* the CPU raises #PF(err) with CR2 = la */
	GW_BLOCKED,    /* a page-table page the guest may not read: not the guest's to use */
};

/* Translate linear address `la` for `acc`; on GW_PAGE_FAULT *err is the error code. */
enum gw_result guest_walk(const struct gw_cpu *c, uint64_t la, enum gw_access acc, gpa_t *pa,
			  uint32_t *err);

#endif
