/*
 * Guest page-table walk with the CPU's permission checks (include/mm/guest_walk.h).
 * AMD APM vol. 2 §5.3 (legacy and PAE paging), §5.3.3 (long mode, 4 levels),
 * §5.6 (page protection: U/S, R/W and CR0.WP, NX, SMEP, SMAP), §8.4.2 (#PF
 * error code). Accessed/dirty bits are not set: csvsm's access is the
 * guest's but never changes its page tables.
 */
#include "mm/guest_walk.h"

#define CR0_PG	  (1ULL << 31)
#define CR0_WP	  (1ULL << 16)
#define CR4_PSE	  (1ULL << 4)
#define CR4_PAE	  (1ULL << 5)
#define CR4_SMEP  (1ULL << 20)
#define CR4_SMAP  (1ULL << 21)
#define EFER_LMA  (1ULL << 10)
#define EFER_NXE  (1ULL << 11)
#define RFLAGS_AC (1ULL << 18)

#define PTE_P	  (1ULL << 0)
#define PTE_RW	  (1ULL << 1)
#define PTE_US	  (1ULL << 2)
#define PTE_PS	  (1ULL << 7)
#define PTE_NX	  (1ULL << 63)
#define ADDR_MASK 0x000FFFFFFFFFF000ULL

struct walk {
	const struct gw_cpu *c;
	bool user_ok, write_ok, nx;
};

static enum gw_result read_entry(struct walk *w, gpa_t gpa, unsigned size, uint64_t *e)
{
	if (w->c->read_pte(w->c->arg, gpa, size, e))
		return GW_BLOCKED;
	return GW_OK;
}

/* Fold one present entry's permissions into the walk. */
static void fold(struct walk *w, uint64_t e, bool has_rw_us)
{
	if (has_rw_us) {
		w->user_ok &= (e & PTE_US) != 0;
		w->write_ok &= (e & PTE_RW) != 0;
	}
	w->nx |= (e & PTE_NX) != 0;
}

static uint32_t err_bits(const struct gw_cpu *c, enum gw_access acc)
{
	uint32_t err = 0;
	if (acc == GW_WRITE)
		err |= GW_PF_W;
	if (c->cpl == 3)
		err |= GW_PF_U;
	if (acc == GW_FETCH && (c->efer & EFER_NXE || c->cr4 & CR4_SMEP))
		err |= GW_PF_ID;
	return err;
}

enum gw_result guest_walk(const struct gw_cpu *c, uint64_t la, enum gw_access acc, gpa_t *pa,
			  uint32_t *err)
{
	struct walk w = {.c = c, .user_ok = true, .write_ok = true, .nx = false};
	uint64_t e, mask = ADDR_MASK & ~c->cbit_mask;
	uint64_t page_mask = 0xFFF;
	bool nxe = (c->efer & EFER_NXE) != 0;
	enum gw_result r;

	*err = 0;
	if (!(c->cr0 & CR0_PG)) {
		*pa = la & 0xFFFFFFFFULL;
		return GW_OK;
	}
	if (c->efer & EFER_LMA) {
		/* Long mode: a non-canonical address is #GP, not #PF. */
		if ((uint64_t)((int64_t)(la << 16) >> 16) != la)
			return GW_BLOCKED;
		gpa_t t = c->cr3 & mask;
		for (int level = 3;; level--) {
			unsigned shift = 12 + 9 * level;
			if ((r = read_entry(&w, t + ((la >> shift) & 511) * 8, 8, &e)) != GW_OK)
				return r;
			if (!(e & PTE_P))
				goto not_present;
			if ((e & PTE_NX) && !nxe)
				goto reserved;
			fold(&w, e, true);
			if (level == 0 || (level <= 2 && (e & PTE_PS))) {
				page_mask = (1ULL << shift) - 1;
				*pa = (e & mask & ~page_mask) | (la & page_mask);
				break;
			}
			t = e & mask;
		}
	} else if (c->cr4 & CR4_PAE) {
		la &= 0xFFFFFFFFULL;
		/* PDPTEs carry no R/W or U/S bits in legacy PAE mode (APM §5.3.2). */
		if ((r = read_entry(&w, (c->cr3 & 0xFFFFFFE0ULL) + ((la >> 30) & 3) * 8, 8, &e)) !=
		    GW_OK)
			return r;
		if (!(e & PTE_P))
			goto not_present;
		gpa_t t = e & mask;
		for (int level = 1;; level--) {
			unsigned shift = 12 + 9 * level;
			if ((r = read_entry(&w, t + ((la >> shift) & 511) * 8, 8, &e)) != GW_OK)
				return r;
			if (!(e & PTE_P))
				goto not_present;
			if ((e & PTE_NX) && !nxe)
				goto reserved;
			fold(&w, e, true);
			if (level == 0 || (e & PTE_PS)) {
				page_mask = (1ULL << shift) - 1;
				*pa = (e & mask & ~page_mask) | (la & page_mask);
				break;
			}
			t = e & mask;
		}
	} else {
		la &= 0xFFFFFFFFULL;
		if ((r = read_entry(&w, (c->cr3 & 0xFFFFF000ULL) + ((la >> 22) & 1023) * 4, 4,
				    &e)) != GW_OK)
			return r;
		if (!(e & PTE_P))
			goto not_present;
		fold(&w, e, true);
		if ((e & PTE_PS) && (c->cr4 & CR4_PSE)) {
			*pa = (e & 0xFFC00000ULL) | (la & 0x3FFFFF);
		} else {
			if ((r = read_entry(&w, (e & 0xFFFFF000ULL) + ((la >> 12) & 1023) * 4, 4,
					    &e)) != GW_OK)
				return r;
			if (!(e & PTE_P))
				goto not_present;
			fold(&w, e, true);
			*pa = (e & 0xFFFFF000ULL) | (la & 0xFFF);
		}
	}

	/* Protection checks (APM vol. 2 §5.6). */
	bool user = c->cpl == 3;
	bool fault = false;
	if (user && !w.user_ok)
		fault = true;
	if (acc == GW_WRITE && !w.write_ok && (user || (c->cr0 & CR0_WP)))
		fault = true;
	if (acc == GW_FETCH && w.nx && nxe)
		fault = true;
	if (!user && w.user_ok && acc == GW_FETCH && (c->cr4 & CR4_SMEP))
		fault = true;
	if (!user && w.user_ok && acc != GW_FETCH && (c->cr4 & CR4_SMAP) &&
	    !(c->rflags & RFLAGS_AC))
		fault = true;
	if (fault) {
		*err = GW_PF_P | err_bits(c, acc);
		return GW_PAGE_FAULT;
	}
	return GW_OK;

not_present:
	*err = err_bits(c, acc);
	return GW_PAGE_FAULT;
reserved:
	*err = GW_PF_P | GW_PF_RSVD | err_bits(c, acc);
	return GW_PAGE_FAULT;
}
