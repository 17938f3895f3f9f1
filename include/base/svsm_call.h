/*
 * SVSM request dispatch (src/requests.c) and the protocol handlers
 * (src/core_proto.c, attestation and vTPM later). A request arrives as the
 * guest's RAX/RCX/RDX/R8/R9 (reference §1.1); handlers return the result
 * code for RAX and may set the output registers. Handlers decode and check
 * everything first, then act (STYLE.md 6).
 */
#ifndef CSVSM_SVSM_CALL_H
#define CSVSM_SVSM_CALL_H

#include "base/types.h"

struct svsm_regs {
	uint64_t rax, rcx, rdx, r8, r9;
};

/* One guest vCPU as the SVSM protocol sees it. */
struct guest_vcpu {
	unsigned id;
	unsigned vmpl;	/* the guest VMPL it runs at */
	gpa_t caa;	/* its calling area (REMAP_CA moves it) */
	uint64_t calls; /* served requests */
	uint64_t caa_gen; /* the VMSA registration `caa` belongs to (src/vcpu.c) */
};

struct svsm_protocol {
	uint32_t id, min_version, max_version;
	uint64_t (*call)(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r);
};

/*
 * Serve one VMGEXIT that asked for VMPL0: if the vCPU's calling area has
 * call_pending set, clear it, dispatch the request in *r and write the result
 * code into r->rax. Returns false when no call was pending (not an SVSM call).
 */
bool svsm_request(struct guest_vcpu *gv, struct svsm_regs *r);

/* The core protocol (0). One PVALIDATE call validates and zeroes at most this
 * much memory, then returns SVSM_ERR_INCOMPLETE for the guest to call again. */
#define SVSM_PVALIDATE_WORK_MAX (64ULL << 20)
extern uint64_t svsm_pvalidate_work_max; /* that bound (tests lower it) */
uint64_t core_protocol_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r);
/* The protocols csvsm implements, for QUERY_PROTOCOL. */
const struct svsm_protocol *svsm_find_protocol(uint32_t id);

/* Optional protocols register here before the guest starts (NULL = not built in). */
extern const struct svsm_protocol *svsm_attest_protocol;
extern const struct svsm_protocol *svsm_vtpm_protocol;

/*
 * What the guest asked for, counted for the numbers printed at power-off
 * (svsm_stats_print): requests by protocol and call, and how each
 * PVALIDATE entry was served. Counters only; nothing depends on them.
 */
#define SVSM_STATS_CALLS 8
struct svsm_stats {
	uint64_t calls[3][SVSM_STATS_CALLS]; /* protocol 0..2, call id < 8 */
	uint64_t other;			     /* any other protocol or call id */
};
struct pvalidate_stats {
	uint64_t preaccepted[2]; /* [2M] first validations served from the record */
	uint64_t validated[2];	 /* real validations */
	uint64_t rescinded[2];
	/* 2M entries over 4K RMP entries served whole (issue 36): first
	 * validations from the record, rescinds page by page */
	uint64_t preaccepted_over_4k, rescinded_over_4k;
	uint64_t failed;     /* entries that ended a request with an error */
	uint64_t incomplete; /* calls answered INCOMPLETE (work bound reached) */
};
extern struct svsm_stats svsm_stats;
extern struct pvalidate_stats pval_stats;
#define STAT_INC(c) __atomic_fetch_add(&(c), 1, __ATOMIC_RELAXED)
void svsm_stats_print(void);

#endif
