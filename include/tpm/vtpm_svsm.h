/*
 * The SVSM vTPM protocol (2) as the request dispatcher sees it
 * (include/csvsm/svsm_call.h): tpm/vtpm_svsm.c moves the request page
 * between guest memory and a private copy and serializes the vTPM;
 * tpm/vtpm_proto.c decodes and runs the request on that copy.
 *
 * SVSM_VTPM_QUERY: RCX = 1 << 8 (TPM_SEND_COMMAND), RDX = 0.
 * SVSM_VTPM_CMD:   RCX = gPA of the 4 KiB request/response buffer. Linux
 *   tpm_svsm.c passes a page (__get_free_page); edk2's Tpm2Svsm passes a
 *   static 4 KiB array, so, as coconut-svsm (protocols/vtpm.rs) does, the
 *   buffer need not be page-aligned: [RCX, RCX + 4096) must be guest RAM
 *   (mm/guest_mem.h) or the call fails with SVSM_ERR_INVALID_ADDRESS;
 *   RCX = 0 is SVSM_ERR_INVALID_PARAMETER (coconut). The buffer is read
 *   once, the request runs on the copy, and the whole page is written back
 *   only when RAX = SVSM_SUCCESS (also when the TPM response carries an
 *   error RC); a rejected request leaves guest memory untouched.
 * Any other call ID: SVSM_ERR_UNSUPPORTED_CALL.
 */
#ifndef TPM_VTPM_SVSM_H
#define TPM_VTPM_SVSM_H

#include "base/svsm_call.h"

/* Register with `svsm_vtpm_protocol = &vtpm_svsm_protocol` once the vTPM runs. */
extern const struct svsm_protocol vtpm_svsm_protocol;

uint64_t vtpm_svsm_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r);

/* SVSM_VTPM_CMD requests served / rejected since boot (diagnostics). */
struct vtpm_svsm_stats {
	uint64_t cmds, rejected;
};
void vtpm_svsm_stats(struct vtpm_svsm_stats *st);

#endif
