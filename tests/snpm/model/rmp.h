/*
 * Software model of the SEV-SNP Reverse Map Table (rmp.c), used by the
 * SNP machine in place of the hardware RMP and by the host unit tests (not
 * in csvsm's image).
 *
 * One 16-bit entry per 4 KiB frame (reference §5,
 * AMD APM vol. 2 §15.36.3 "RMP"): assigned (private), validated, page size
 * 2M, VMSA, and the VMPL1..3 permission nibbles (R, W, Xu, Xs in the order of
 * the RMPADJUST attribute bits 8..11). VMPL0 always has full access to a
 * validated private page. A 2 MiB RMP entry is modelled by setting the
 * page-size bit on all 512 entries of the 2 MiB block and keeping them equal.
 *
 * Concurrency: every operation touches only the entries of the 2 MiB block
 * that contains the address and holds that block's lock (one byte per 2 MiB
 * in the same storage) while it does, as the hardware makes RMP updates
 * atomic; vCPUs on disjoint 2 MiB ranges (pre-acceptance) never contend.
 * Queries read one entry without the lock. The configuration (rmp_init,
 * rmp_hv_set_4k_only) is done once before the vCPUs start.
 */
#ifndef TESTS_SNPM_MODEL_RMP_H
#define TESTS_SNPM_MODEL_RMP_H

#include "arch/x86/insn.h" /* RMP_PG_SIZE_*, PVALIDATE_* / RMPADJUST_* codes */
#include "base/types.h"

/* Entry layout (csvsm-private encoding, not the hardware's 16-byte entry). */
#define RMPE_ASSIGNED	      (1u << 0)
#define RMPE_VALIDATED	      (1u << 1)
#define RMPE_SIZE_2M	      (1u << 2)
#define RMPE_VMSA	      (1u << 3)
#define RMPE_PERM_SHIFT(vmpl) (4u * (unsigned)(vmpl)) /* vmpl 1..3 -> bits 4..15 */
#define RMPE_PERM_MASK	      0xFu

/* Permission nibble bits, = RMPADJUST attrs bits [11:8] >> 8 (reference §5.2). */
#define RMP_PERM_R   0x1u
#define RMP_PERM_W   0x2u
#define RMP_PERM_XU  0x4u
#define RMP_PERM_XS  0x8u
#define RMP_PERM_ALL 0xFu

/*
 * Frames apart from GPAs (issue 17 item 2). The hardware RMP is indexed by
 * system-physical frame, each entry naming the GPA it is assigned to, and
 * the CPU finds a GPA's entry through the nested page table (APM vol. 2
 * §15.36.3, §15.36.10). The model's frames: every GPA in [0, max_gpa) has a
 * home frame (the machine backs GPA g with the frame at g), and
 * RMP_SPARE_FRAMES spare frames a hostile host can RMPUPDATE for a GPA and
 * map there instead (rmp_hv_swap_frame), leaving the home frame assigned
 * and, if it was, validated: two frames for one GPA, the fork/rollback set-up
 * that validate-once exists for. Every guest-side operation and query acts
 * on the frame mapped at the GPA now, as the CPU's nested walk does; a host
 * page-state change on the frame it maps. Not modelled: a frame mapped at
 * a GPA other than its own (the hardware's GPA check, a #NPF), unmapping a
 * spare again.
 */
#define RMP_SPARE_FRAMES 64

/* Highest guest-physical address the model accepts (52-bit physical). */
#define RMP_MAX_GPA (1ULL << 52)
/* Hypervisor-declared 4K-only ranges (sim: csvsm.sim_4k_only=). */
#define RMP_MAX_4K_ONLY 8

struct rmp_entry_info {
	bool assigned; /* private to the guest */
	bool validated;
	bool size2m; /* part of a 2 MiB RMP entry */
	bool vmsa;
	uint8_t perms[4]; /* RMP_PERM_* per VMPL; [0] is full when validated */
};

/* Bytes of storage rmp_init needs for guest-physical memory [0, max_gpa). */
size_t rmp_storage_bytes(gpa_t max_gpa);
/*
 * Use `storage` (zeroed here) as the RMP for [0, max_gpa): every page starts
 * unassigned (shared). Returns 0, or -1 when the storage is too small or
 * max_gpa is not page-aligned / above RMP_MAX_GPA.
 */
int rmp_init(void *storage, size_t bytes, gpa_t max_gpa);
gpa_t rmp_max_gpa(void);

/*
 * Hypervisor side. rmp_hv_set_4k_only declares [start, end) as backed by
 * 4K pages only: a 2M page-state change that touches it creates 4K entries
 * (the guest's 2M PVALIDATE then fails with FAIL_SIZEMISMATCH, as on a host
 * that backs the range with small pages). Returns 0 or -1 (table full / bad).
 */
int rmp_hv_set_4k_only(gpa_t start, gpa_t end);
void rmp_hv_clear_4k_only(void);
/*
 * The host's backing of all guest memory. 4K (on): every page-state change
 * makes 4K RMP entries, as KVM does for guest_memfd memory, whose folios are
 * 4 KiB (virt/kvm/guest_memfd.c; arch/x86/kvm/svm/sev.c sev_gmem_prepare
 * makes the RMP entry at the folio's level): a guest's 2M PVALIDATE fails
 * with FAIL_SIZEMISMATCH everywhere. Off (rmp_init's default): 2M entries
 * wherever a 2M change is asked for, as on a host with 2 MiB backing
 * (hugepages), less the 4K-only ranges.
 */
void rmp_hv_set_backing_4k(bool on);
bool rmp_hv_backing_4k(void);
/* What the host did behind the guest's back (counted since rmp_init). */
struct rmp_hv_stats {
	uint64_t psmash_sizem;	/* 2M entries split on a guest's 4K PVALIDATE/RMPADJUST */
	uint64_t psmash_update; /* 2M entries split for a 4K page-state change */
};
void rmp_hv_get_stats(struct rmp_hv_stats *out);
/* True when the 2 MiB block containing gpa overlaps a 4K-only range, or
 * the backing is 4K. */
bool rmp_hv_block_is_4k_only(gpa_t gpa);
/*
 * Page-state change (RMPUPDATE): private assigns the page (validated and
 * permissions cleared, as RMPUPDATE does), shared clears the entry. A 4K
 * change inside a 2M entry smashes it first (the 511 others keep their state).
 * Returns 0, or -1 for a misaligned / out-of-range request.
 */
int rmp_hv_assign(gpa_t gpa, bool size2m, bool private);
/* PSMASH: split the 2M entry at gpa (2M-aligned) into 512 4K entries. 0 / -1. */
int rmp_hv_psmash(gpa_t gpa);
/*
 * A hostile host: RMPUPDATE a spare frame assigned (not validated) for the
 * 4K page at gpa and map it there; the frame mapped before keeps its entry.
 * A 2M home entry is PSMASHed first. Returns the spare's index, or -1
 * (misaligned, beyond the model, already swapped, no spare left). The
 * machine maps the spare's memory (rmp_hv_spare_of) before any vCPU can
 * use the new mapping.
 */
int rmp_hv_swap_frame(gpa_t gpa);
/* (Swaps are host operations made one at a time: the machine's exit lock.
 * Readers of the swap table need no lock.) */
/* The spare frame mapped at gpa's page, or -1 for its home frame. */
int rmp_hv_spare_of(gpa_t gpa);
/* Swaps made so far, and the GPA of swap s. */
unsigned rmp_hv_swaps(void);
gpa_t rmp_hv_swap_gpa(unsigned s);
/* Frames assigned to gpa's page and validated (home and spares): more
 * than 1 is a GPA validated twice. */
unsigned rmp_validated_frames(gpa_t gpa);

/*
 * Guest side, with the instructions' return codes (arch/x86/insn.h,
 * reference §5.1/§5.2). size is RMP_PG_SIZE_4K or RMP_PG_SIZE_2M.
 * rmp_pvalidate: 0 (with *unchanged = CF), PVALIDATE_FAIL_INPUT,
 * PVALIDATE_FAIL_SIZEMISMATCH (a 2M request over 4K entries). A 4K request
 * inside a 2M entry is handled as KVM does on the #NPF it raises (PSMASH,
 * retry), so it succeeds.
 */
int rmp_pvalidate(gpa_t gpa, unsigned size, bool validate, bool *unchanged);
/* RMPADJUST issued at VMPL0: 0, RMPADJUST_FAIL_INPUT/_PERMISSION/_SIZEMISMATCH. */
int rmp_adjust(gpa_t gpa, unsigned size, uint64_t attrs);
/*
 * RMPADJUST issued at `caller_vmpl`: the target VMPL must be numerically
 * greater, the permissions granted a subset of the caller's own on the
 * page, and the VMSA bit is ignored below VMPL0.
 */
int rmp_adjust_from(unsigned caller_vmpl, gpa_t gpa, unsigned size, uint64_t attrs);

/* Queries: 0, or -1 when gpa is beyond the model. */
int rmp_query(gpa_t gpa, struct rmp_entry_info *out);

/*
 * Set by a model that runs VMSAs (the SNP machine): true while the VMSA page
 * at gpa is in a VMRUN on some CPU. RMPADJUST of such a page returns
 * RMPADJUST_FAIL_INUSE, as on hardware. NULL: no VMSA is ever in use.
 */
extern bool (*rmp_vmsa_in_use)(gpa_t gpa);
/*
 * RMP_PERM_* that `vmpl` has on private (C-bit) accesses to the page at gpa:
 * 0 when the page is not assigned or not validated (an access would fault),
 * RMP_PERM_ALL for VMPL0 on a validated page. Shared accesses are not
 * checked by the RMP at all.
 */
unsigned rmp_vmpl_perms(gpa_t gpa, unsigned vmpl);
/* Raw 16-bit entry (tests, accept_check); 0 beyond the model. */
uint16_t rmp_raw(gpa_t gpa);

#endif
