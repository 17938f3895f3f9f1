/*
 * csvsm's vTPM: libtpms (TPM 2.0) inside the module.
 *
 * Life cycle (one TPM per process; libtpms is a singleton):
 *   vtpm_set_state()   optional, before vtpm_init: restore a saved TPM
 *   vtpm_init()        power on; manufactures a new TPM (fresh random seeds)
 *                      when no NV data and no state is present; makes sure
 *                      the PCR banks are exactly SHA-256 + SHA-384; sends
 *                      TPM2_Startup(CLEAR) itself unless opt->no_startup
 *   vtpm_process()     one TPM command from the guest (or a host client)
 *   vtpm_measure()     csvsm's own measurements (PCR extend + event log)
 *   vtpm_ek_public()   TPMT_PUBLIC of the TCG default RSA EK (template L-1)
 *   vtpm_get_state()   TPMLIB_GetState(PERMANENT): seeds included, plaintext
 *   vtpm_power_off()   TPMLIB_Terminate; NV kept, vtpm_init resumes from it
 *   vtpm_destroy()     power off and wipe NV (next vtpm_init manufactures)
 *
 * NV storage is in memory: libtpms's nvram_loaddata returns exactly what
 * nvram_storedata last stored under that name, TPM_RETRY only when nothing
 * was stored (shared/reference/glibc-abi-notes.md §3.1: anything else wipes
 * the freshly manufactured NV and leaves all-zero seeds, silently).
 */
#ifndef TPM_VTPM_H
#define TPM_VTPM_H

#include "base/types.h"
#include "tpm/event_log.h"

/* TPM 2.0 constants used by the callers and the tests (TPM 2.0 Part 2). */
#define TPM_ST_NO_SESSIONS 0x8001
#define TPM_ST_SESSIONS	   0x8002
#define TPM_RC_SUCCESS	   0x000
#define TPM_RC_FAILURE	   0x101
#define TPM_RC_INITIALIZE  0x100
#define TPM_CC_STARTUP	   0x00000144
#define TPM_SU_CLEAR	   0x0000

/*
 * libtpms I/O buffer, so the largest command and response the TPM accepts
 * and produces (TPM_PT_MAX_COMMAND_SIZE / _RESPONSE_SIZE): 4087, the most
 * a TPM_SEND_COMMAND request page carries (4096 - 9, reference §3). Every
 * response then fits the response page (<= 4092) and the TPM advertises
 * limits the SVSM transport can honour.
 */
#define VTPM_BUFFER_SIZE 4087
/* Upper bound of the EK's marshalled TPMT_PUBLIC (RSA-2048: 314 bytes). */
#define VTPM_EK_PUBLIC_MAX 512
#define VTPM_MAX_BANKS	   8

struct vtpm_options {
	/*
	 * false (csvsm): the module sends TPM2_Startup(CLEAR) before the guest
	 * runs, so the guest's own Startup gets TPM_RC_INITIALIZE (Linux's
	 * tpm_svsm driver accepts that). true (csvsm-tpm): the TPM is left
	 * "just powered on" and the client sends Startup.
	 */
	bool no_startup;
};

int vtpm_init(const struct vtpm_options *opt);
void vtpm_power_off(void);
void vtpm_destroy(void);
bool vtpm_running(void);

/*
 * Runs one TPM command. *rsplen is the capacity of rsp on entry and the
 * response size on return. rsp may overlap cmd (the command is consumed
 * before the response is copied). Returns 0, or -1 if the TPM is not
 * running or the response does not fit (rsp is then untouched). A TPM
 * error is a successful call: the RC is inside the response.
 */
int vtpm_process(const uint8_t *cmd, size_t len, uint8_t *rsp, size_t *rsplen);

/*
 * Measures data: SHA-256 and SHA-384 of data are extended into `pcr` in
 * every allocated bank (exactly those two, see vtpm_init) and appended to
 * log (if not NULL) as one TCG_PCR_EVENT2 of the given type and event
 * data. Checks the log has room before extending, so the PCRs and the log
 * cannot disagree. Returns 0 or -1 (then nothing was extended/logged, or
 * the TPM refused the extend: treat as fatal).
 */
int vtpm_measure(struct event_log *log, uint32_t pcr, uint32_t event_type, const void *data,
		 size_t len, const void *event, uint32_t event_len);
/* EV_EFI_PLATFORM_FIRMWARE_BLOB2 {desc, base, length} of a firmware image, into PCR 0. */
int vtpm_measure_firmware(struct event_log *log, const char *desc, uint64_t base, const void *image,
			  size_t len);

/* Reads one PCR of one bank (TPM2_PCR_Read). Returns the digest size or -1. */
int vtpm_pcr_read(uint32_t pcr, uint16_t alg, uint8_t *digest, size_t cap);
/* The allocated banks (hash algorithm IDs), as read back from the TPM at init. */
unsigned vtpm_banks(uint16_t *algs, unsigned max);

/*
 * The EK's marshalled TPMT_PUBLIC (big-endian TPM wire format, no TPM2B
 * size prefix), for the attestation service manifest. Created on the first
 * call with TPM2_CreatePrimary(TPM_RH_ENDORSEMENT, TCG template L-1) and
 * flushed; kept until the TPM is destroyed or restored. Needs a started TPM
 * and the default (empty) endorsement auth: call it at boot, before the
 * guest runs. Returns 0 or -1.
 */
int vtpm_ek_public(const uint8_t **pub, size_t *len);

/* What an EK certificate says of the TPM (TPM2_GetCapability TPM_PROPERTIES,
 * TPM 2.0 Part 2 §6.13 TPM_PT_*): for csvsm-kbs's certificate. */
struct vtpm_info {
	uint32_t manufacturer; /* TPM_PT_MANUFACTURER */
	uint32_t firmware;     /* TPM_PT_FIRMWARE_VERSION_1 */
	uint32_t level;	       /* TPM_PT_LEVEL */
	uint32_t revision;     /* TPM_PT_REVISION (the specification's, x100) */
	char model[17];	       /* TPM_PT_VENDOR_STRING_1..4, printable, trimmed */
};
int vtpm_info(struct vtpm_info *out);

/*
 * The RSA-2048 EK certificate at NV index 0x01C00002 (TCG EK Credential
 * Profile §2.2.1.4, Low Range), defined under the platform hierarchy with
 * the attributes swtpm_setup gives it (src/swtpm_setup/swtpm.c
 * swtpm_tpm2_write_ek_cert_nvram: PLATFORMCREATE | AUTHREAD | OWNERREAD |
 * PPREAD | PPWRITE | NO_DA | WRITEDEFINE), written, then write-locked.
 * Before the guest runs (platform auth still empty). 0 or -1.
 */
#define VTPM_EK_CERT_INDEX 0x01C00002u
#define VTPM_EK_CERT_MAX   2048u
int vtpm_ek_cert_store(const uint8_t *der, size_t len);
/* Reads it back (owner authorization, empty at boot): 0, -1 if none. */
int vtpm_ek_cert_read(uint8_t *buf, size_t cap, size_t *len);
/*
 * TPM2_HierarchyControl(TPM_RH_PLATFORM, enable TPM_RH_PLATFORM, NO): the
 * guest gets no use of the platform hierarchy csvsm manufactured under
 * (empty platform auth). phEnableNV stays SET, so platform-created indices
 * (the EK certificate) stay readable. Startup(CLEAR) sets phEnable again,
 * and only csvsm starts the TPM. 0 or -1.
 */
int vtpm_platform_disable(void);

/*
 * TPMLIB_GetState(PERMANENT) copied into buf. Returns 0, or -1 if it fails
 * or does not fit (*len then holds the size needed when known).
 */
int vtpm_get_state(uint8_t *buf, size_t cap, size_t *len);
/* Restores a TPM from a vtpm_get_state() blob; only while powered off. */
int vtpm_set_state(const uint8_t *buf, size_t len);

/*
 * libtpms NV callbacks, exported for the unit tests. Return TPM_SUCCESS (0)
 * or TPM_RETRY (nothing stored under that name) / TPM_FAIL.
 */
uint32_t vtpm_nv_load(unsigned char **data, uint32_t *length, uint32_t tpm_number,
		      const char *name);
uint32_t vtpm_nv_store(const unsigned char *data, uint32_t length, uint32_t tpm_number,
		       const char *name);
uint32_t vtpm_nv_delete(uint32_t tpm_number, const char *name, unsigned char must_exist);

/*
 * The permanent state as libtpms last stored it (nvram_storedata of
 * "permall": the blob TPMLIB_GetState(TPMLIB_STATE_PERMANENT) returns), for
 * persistence; -1 when none was stored. vtpm_nv_dirty_take: whether it was
 * stored since the last call.
 */
int vtpm_nv_permall(const uint8_t **data, size_t *len);
bool vtpm_nv_dirty_take(void);

#endif
