/*
 * SVSM request entry: the calling-area handshake of reference §1.1 and the
 * dispatch by protocol number. Called by the platform's guest loop (sim:
 * the VMGEXIT exit handler; snp: after the VMPL switch back to VMPL0).
 */
#include "csvsm/svsm_call.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"

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
	/* C-execloop: an exit is an SVSM call only if the CA says so. */
	if (guest_read(gv->caa, &pending, 1) != 0 || pending == 0)
		return false;
	const uint8_t zero = 0;
	if (guest_write(gv->caa, &zero, 1) != 0)
		return false;

	const struct svsm_protocol *p = svsm_find_protocol((uint32_t)(r->rax >> 32));
	uint32_t call_id = (uint32_t)r->rax;
	r->rax = p ? p->call(gv, call_id, r) : SVSM_ERR_UNSUPPORTED_PROTOCOL;
	gv->calls++;
	return true;
}
