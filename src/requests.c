/*
 * SVSM request entry: the calling-area handshake of reference §1.1 and the
 * dispatch by protocol number. Called by the platform's guest loop after
 * the VMPL switch back to VMPL0 (src/guest_snp.c).
 */
#include "base/svsm_call.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"

#include "base/console.h"
#include "base/platform.h"
#include "base/secret.h"

struct svsm_stats svsm_stats;

const struct svsm_protocol *svsm_attest_protocol;
const struct svsm_protocol *svsm_vtpm_protocol;

static const struct svsm_protocol core_protocol = {
    .id = SVSM_PROTOCOL_CORE, .min_version = 1, .max_version = 1, .call = core_protocol_call};

const struct svsm_protocol *svsm_find_protocol(uint32_t id)
{
	switch (id) {
	case SVSM_PROTOCOL_CORE:
		return &core_protocol;
	case SVSM_PROTOCOL_ATTEST:
		return svsm_attest_protocol;
	case SVSM_PROTOCOL_VTPM:
		return svsm_vtpm_protocol;
	default:
		return NULL;
	}
}

bool svsm_request(struct guest_vcpu *gv, struct svsm_regs *r)
{
	uint8_t pending;
	/* After a termination wipe on any vCPU: no service at all. */
	if (secret_terminating())
		return false;
	/* C-execloop: an exit is an SVSM call only if the CA says so. */
	if (guest_read(gv->caa, &pending, 1) != 0 || pending == 0)
		return false;
	const uint8_t zero = 0;
	if (guest_write(gv->caa, &zero, 1) != 0)
		return false;

	const struct svsm_protocol *p = svsm_find_protocol((uint32_t)(r->rax >> 32));
	uint32_t call_id = (uint32_t)r->rax;
	uint64_t proto = r->rax >> 32;
	if (proto < 3 && call_id < SVSM_STATS_CALLS)
		STAT_INC(svsm_stats.calls[proto][call_id]);
	else
		STAT_INC(svsm_stats.other);
	/* The attestation and vTPM protocols run the crypto and TPM libraries,
	 * on memory a terminating vCPU wipes: in a section of the secret
	 * registry, which that wipe waits for (base/secret.c). */
	bool lib = p && proto != SVSM_PROTOCOL_CORE;
	if (lib && !secret_enter())
		return false;
	if (lib && platform && platform->fpu_enter)
		platform->fpu_enter();
	r->rax = p ? p->call(gv, call_id, r) : SVSM_ERR_UNSUPPORTED_PROTOCOL;
	if (lib)
		secret_leave();
	/* A wipe on another vCPU during the call: its results (registers,
	 * anything computed from wiped state) stay in csvsm. */
	if (secret_terminating())
		return false;
	gv->calls++;
	return true;
}

/* Call names of reference §1.3-§1.5 and §2/§3, for the power-off numbers. */
static const char *const call_names[3][SVSM_STATS_CALLS] = {
    {"REMAP_CA", "PVALIDATE", "CREATE_VCPU", "DELETE_VCPU", "DEPOSIT_MEM", "WITHDRAW_MEM",
     "QUERY_PROTOCOL", "CONFIGURE_VTOM"},
    {"ATTEST_SERVICES", "ATTEST_SINGLE_SERVICE", "2", "3", "4", "5", "6", "7"},
    {"VTPM_QUERY", "VTPM_CMD", "2", "3", "4", "5", "6", "7"},
};
static const char *const proto_names[3] = {"core", "attest", "vtpm"};

void svsm_stats_print(void)
{
	uint64_t total = svsm_stats.other;
	for (unsigned p = 0; p < 3; p++)
		for (unsigned c = 0; c < SVSM_STATS_CALLS; c++)
			total += svsm_stats.calls[p][c];
	con_printf("csvsm: svsm-calls: total=%llu", (unsigned long long)total);
	for (unsigned p = 0; p < 3; p++)
		for (unsigned c = 0; c < SVSM_STATS_CALLS; c++)
			if (svsm_stats.calls[p][c])
				con_printf(" %s.%s=%llu", proto_names[p], call_names[p][c],
					   (unsigned long long)svsm_stats.calls[p][c]);
	con_printf(" other=%llu\n", (unsigned long long)svsm_stats.other);
	const struct pvalidate_stats *v = &pval_stats;
	con_printf("csvsm: pvalidate-entries: preaccepted_4k=%llu preaccepted_2m=%llu "
		   "validate_4k=%llu validate_2m=%llu rescind_4k=%llu rescind_2m=%llu "
		   "over_4k=%llu/%llu failed=%llu incomplete_calls=%llu\n",
		   (unsigned long long)v->preaccepted[0], (unsigned long long)v->preaccepted[1],
		   (unsigned long long)v->validated[0], (unsigned long long)v->validated[1],
		   (unsigned long long)v->rescinded[0], (unsigned long long)v->rescinded[1],
		   (unsigned long long)v->preaccepted_over_4k,
		   (unsigned long long)v->rescinded_over_4k, (unsigned long long)v->failed,
		   (unsigned long long)v->incomplete);
}
