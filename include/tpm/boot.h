/*
 * Boot phase "vtpm" (DESIGN.md steps 3-4), tpm/boot.c: start the vTPM,
 * measure the guest firmware into PCR 0 before it runs, record the event
 * log, create the EK, then register the SVSM vTPM protocol (2).
 *
 * Called by src/guest.c after OVMF is loaded and before it is launched.
 * Needs the glibc-ABI layer ready: libc_heap_init() and the libraries'
 * _init / .init_array constructors run (src/main.c).
 */
#ifndef TPM_BOOT_H
#define TPM_BOOT_H

#include "base/types.h"

/*
 * The vTPM's persistence, as the measured launch image configures it
 * (include/csvsm/igvm_boot.h struct csvsm_igvm_vtpm, copied by the top
 * layer). mode 0 (ephemeral): the rest is unused.
 */
struct tpm_boot_persist {
	uint32_t mode; /* 0 ephemeral, 1 sealed, 2 kbs */
	uint16_t port; /* the host channel's 16550 */
	bool mix_tcb;  /* bind the sealed key to tcb_version too */
	uint64_t tcb_version;
	uint8_t instance[16];
	uint8_t broker_key[32]; /* kbs: RFC 7638 thumbprint of csvsm-kbs's signing key */
};

/*
 * fw/fw_len: csvsm's copy of the firmware image, exactly the bytes the guest
 * will see at fw_gpa (EV_EFI_PLATFORM_FIRMWARE_BLOB2 {"OVMF", fw_gpa,
 * fw_len}). Prints the dashboard lines, with how deep the vTPM's start-up
 * went into [stack, stack + stack_bytes), the stack it runs on (NULL: not
 * measured). persist: the mode; in sealed and kbs mode the VMPCK0 channel
 * (attest/guest_req.c) must be up, since the state key comes through it.
 * Returns 0, or -1 when the vTPM could not be started, its state could not
 * be had (the refusal names the step, docs/vtpm.md "Persistence") or the
 * measurement failed: the guest must not run then. The caller registers
 * the vTPM protocol (vtpm_svsm_protocol) once it returned 0.
 */
int tpm_boot(const uint8_t *fw, size_t fw_len, uint64_t fw_gpa, uint64_t *stack, size_t stack_bytes,
	     const struct tpm_boot_persist *persist);

/* The TCG crypto-agile event log of csvsm's measurements; NULL before tpm_boot. */
const uint8_t *tpm_event_log(size_t *len);
/* The EK's marshalled TPMT_PUBLIC (TCG template L-1, RSA-2048); -1 before tpm_boot. */
int tpm_ek_public(const uint8_t **pub, size_t *len);

#endif
