/*
 * SVSM vTPM protocol (2) glue between the request dispatcher and the vTPM;
 * see include/tpm/vtpm_svsm.h. Copy once, check, act (STYLE.md 5, 6): the
 * guest's buffer is read into a csvsm page exactly once, vtpm_proto_cmd()
 * decodes and runs it on that copy, and the copy goes back to the guest
 * only on success.
 *
 * libtpms, the glibc-ABI layer and the page copy are single instances:
 * every call that reaches them holds vtpm_lock, so requests from several
 * vCPUs are served one after the other.
 */
#include "arch/x86/insn.h"
#include "base/secret.h"
#include "base/string.h"
#include "mm/guest_mem.h"
#include "tpm/vtpm_proto.h"
#include "tpm/vtpm_svsm.h"

static uint32_t vtpm_lock;
static uint8_t page_copy[VTPM_PROTO_PAGE_SIZE] __aligned(4096);
static struct vtpm_svsm_stats stats;

static void lock(void)
{
	while (__atomic_exchange_n(&vtpm_lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&vtpm_lock, __ATOMIC_RELAXED))
			cpu_relax();
}

static void unlock(void)
{
	__atomic_store_n(&vtpm_lock, 0, __ATOMIC_RELEASE);
}

static uint64_t vtpm_cmd(gpa_t gpa)
{
	uint64_t rc;

	lock();
	if (secret_terminating()) {
		/* A wipe while this vCPU waited for the lock: libtpms' state may be gone. */
		rc = SVSM_ERR_INVALID_REQUEST;
	} else if (gpa == 0) {
		/* coconut-svsm: a null buffer is a bad parameter, not an address to check. */
		rc = SVSM_ERR_INVALID_PARAMETER;
	} else if (guest_read(gpa, page_copy, sizeof(page_copy)) != 0) {
		rc = SVSM_ERR_INVALID_ADDRESS;
	} else {
		rc = vtpm_proto_cmd(page_copy, sizeof(page_copy));
		/* A termination wipe on another vCPU (a #MC, a panic) may have
		 * zeroed libtpms' state under the command: its response is not
		 * the TPM's, and nothing leaves csvsm after a wipe (hostile
		 * review, finding 2; attest/guest_req.c checks the same). */
		if (secret_terminating())
			rc = SVSM_ERR_INVALID_REQUEST;
		/* Same range as the read, checked again by guest_write: cannot fail now. */
		if (rc == SVSM_SUCCESS && guest_write(gpa, page_copy, sizeof(page_copy)) != 0)
			rc = SVSM_ERR_INVALID_ADDRESS;
		/* The copy held the guest's command and the TPM's response: do not keep it. */
		memzero_explicit(page_copy, sizeof(page_copy));
	}
	if (rc == SVSM_SUCCESS)
		stats.cmds++;
	else
		stats.rejected++;
	unlock();
	return rc;
}

uint64_t vtpm_svsm_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r)
{
	switch (call_id) {
	case SVSM_VTPM_QUERY:
		return vtpm_proto_query(&r->rcx, &r->rdx);
	case SVSM_VTPM_CMD:
		return vtpm_cmd(r->rcx);
	default:
		return SVSM_ERR_UNSUPPORTED_CALL;
	}
}

void vtpm_svsm_stats(struct vtpm_svsm_stats *st)
{
	lock();
	*st = stats;
	unlock();
}

const struct svsm_protocol vtpm_svsm_protocol = {
    .id = SVSM_PROTOCOL_VTPM, .min_version = 1, .max_version = 1, .call = vtpm_svsm_call};
