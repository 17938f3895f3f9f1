/*
 * Page-state change through the GHCB (SVM_VMGEXIT_PSC, AMD pub. 56421
 * §4.1.6; reference §4.4): ghcb_psc(), declared in include/snp/ghcb.h.
 *
 * The descriptor lives in the GHCB shared buffer, i.e. in memory the
 * hypervisor writes while it processes it. After every round trip the fields
 * it may have changed are read once into locals and checked as Linux's
 * vmgexit_psc does (arch/x86/coco/sev/core.c): no error, reserved still 0,
 * end_entry unchanged, cur_entry never moving backwards nor past the end.
 * A hypervisor that keeps returning without progress is cut off after
 * GHCB_PSC_MAX_STALLS round trips instead of being waited on forever.
 */
#include "base/percpu.h"
#include "base/platform.h"
#include "snp/ghcb.h"

#define GHCB_PSC_MAX_STALLS 8

#define READ_ONCE(x)	 __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/*
 * (Re)write the request fields before each round trip: the hypervisor may
 * have clobbered them. ghcb_prepare (base/ghcb.c) clears the GHCB up to the
 * shared buffer, sets protocol_version = 2, ghcb_usage = 0, sw_exit_code and
 * exit_info_1/2 with their valid bits (bit = offset / 8).
 */
static void psc_request(struct percpu *cpu, struct ghcb *g)
{
	ghcb_prepare(g, SVM_VMGEXIT_PSC, 0, 0);
	GHCB_SET(g, sw_scratch, cpu->ghcb_gpa + GHCB_SHARED_BUF_OFF);
}

int ghcb_psc_ex(struct percpu *cpu, const uint64_t *entries, unsigned n, uint64_t *round_trips,
		unsigned *refused)
{
	struct ghcb *g = cpu->ghcb;
	struct psc_desc *d = (struct psc_desc *)g->shared_buffer;
	unsigned stalls = 0;

	if (n == 0)
		return 0;
	if (n > PSC_MAX_ENTRIES || !g)
		return -1;
	for (unsigned i = 0; i < n; i++)
		WRITE_ONCE(d->entries[i], entries[i]);
	WRITE_ONCE(d->cur_entry, 0);
	WRITE_ONCE(d->end_entry, (uint16_t)(n - 1));
	WRITE_ONCE(d->reserved, 0);

	uint16_t cur = 0;
	const uint16_t end = (uint16_t)(n - 1);
	while (cur <= end) {
		psc_request(cpu, g);
		platform->ghcb_call(cpu, g);
		if (round_trips)
			(*round_trips)++;

		uint64_t info1 = READ_ONCE(g->sw_exit_info_1);
		uint64_t info2 = READ_ONCE(g->sw_exit_info_2);
		uint16_t new_cur = READ_ONCE(d->cur_entry);
		uint16_t new_end = READ_ONCE(d->end_entry);
		uint32_t rsvd = READ_ONCE(d->reserved);

		/* A refusal: an error in info_2 with cur_entry at the entry
		 * that failed, the ones before it done (GHCB spec §4.1.6; KVM
		 * arch/x86/kvm/svm/sev.c snp_begin_psc sets hdr->cur_entry and
		 * completes with VMGEXIT_PSC_ERROR_*). csvsm trusts neither
		 * half: what the host calls done is PVALIDATEd, which fails on
		 * a page it did not make private. */
		if ((uint32_t)info1 == GHCB_RESULT_OK && info2 != 0 && rsvd == 0 &&
		    new_end == end && new_cur >= cur && new_cur <= end && refused) {
			*refused = new_cur;
			return 1;
		}
		if ((uint32_t)info1 != GHCB_RESULT_OK || info2 != 0 || rsvd != 0 ||
		    new_end != end || new_cur < cur || new_cur > end + 1)
			return -1;
		if (new_cur == cur) {
			if (++stalls > GHCB_PSC_MAX_STALLS)
				return -1;
		} else {
			stalls = 0;
		}
		cur = new_cur;
	}
	return 0;
}

int ghcb_psc(struct percpu *cpu, const uint64_t *entries, unsigned n, uint64_t *round_trips)
{
	return ghcb_psc_ex(cpu, entries, n, round_trips, NULL) == 0 ? 0 : -1;
}
