/*
 * TCG PC Client crypto-agile event log (TCG PC Client Platform Firmware
 * Profile; layouts in shared/reference/snp-svsm-interfaces.md §9, from edk2
 * UefiTcgPlatform.h and Linux include/linux/tpm_eventlog.h), built into a
 * fixed buffer the caller owns. The first record is the Spec ID event in the
 * SHA-1 legacy format (EV_NO_ACTION, PCR 0, digest all zero) naming the two
 * banks csvsm allocates, SHA-256 and SHA-384; every further record is a
 * TCG_PCR_EVENT2 with both digests. All fields are little-endian.
 *
 * event_log_replay() recomputes the PCR values a log describes; it parses
 * the log as untrusted input (bounds- and overflow-checked).
 */
#ifndef TPM_EVENT_LOG_H
#define TPM_EVENT_LOG_H

#include "base/types.h"
#include "tpm/hash.h"

/* TCG algorithm IDs (TCG Algorithm Registry; reference §9). */
#define TPM_ALG_SHA1   0x0004
#define TPM_ALG_SHA256 0x000B
#define TPM_ALG_SHA384 0x000C
#define TPM_ALG_SHA512 0x000D

/* Event types (reference §9). */
#define EV_POST_CODE		       0x00000001u
#define EV_NO_ACTION		       0x00000003u
#define EV_SEPARATOR		       0x00000004u
#define EV_EFI_PLATFORM_FIRMWARE_BLOB  0x80000008u
#define EV_EFI_PLATFORM_FIRMWARE_BLOB2 0x8000000Au

#define EVENT_LOG_NUM_PCRS 24

/* Sizes of the fixed parts (reference §9). */
#define EVENT_LOG_SPEC_ID_SIG "Spec ID Event03" /* 16 bytes with the NUL */
#define EVENT_LOG_SPEC_ID_EVENT_SIZE                                                               \
	(16 + 4 + 4 + 4 + 2 * 4 + 1) /* 37: two algorithms, no vendor info */
#define EVENT_LOG_SPEC_ID_RECORD_SIZE (4 + 4 + 20 + 4 + EVENT_LOG_SPEC_ID_EVENT_SIZE) /* 69 */
/* TCG_PCR_EVENT2 with SHA-256 + SHA-384: PCR, type, count, 2 x {alg, digest}, event size. */
#define EVENT_LOG_EVENT2_HDR_SIZE                                                                  \
	(4 + 4 + 4 + (2 + HASH_SHA256_SIZE) + (2 + HASH_SHA384_SIZE) + 4) /* 100 */

struct event_log {
	uint8_t *buf;
	size_t cap;
	size_t len;
};

struct event_log_digests {
	uint8_t sha256[HASH_SHA256_SIZE];
	uint8_t sha384[HASH_SHA384_SIZE];
};

/* PCR values a log yields when replayed from all-zero PCRs (PCR 0-23). */
struct event_log_pcrs {
	uint8_t sha256[EVENT_LOG_NUM_PCRS][HASH_SHA256_SIZE];
	uint8_t sha384[EVENT_LOG_NUM_PCRS][HASH_SHA384_SIZE];
	unsigned events; /* TCG_PCR_EVENT2 records replayed (EV_NO_ACTION excluded) */
};

/* Starts a log in buf (cap bytes) with the Spec ID event. -1 if cap is too small. */
int event_log_init(struct event_log *log, void *buf, size_t cap);

/* Bytes a TCG_PCR_EVENT2 record with event_len bytes of event data takes. */
size_t event_log_record_size(uint32_t event_len);
/* True if a record with event_len bytes of event data still fits. */
bool event_log_has_room(const struct event_log *log, uint32_t event_len);

/* Appends one TCG_PCR_EVENT2 record; -1 (log unchanged) if it does not fit or pcr >= 24. */
int event_log_append(struct event_log *log, uint32_t pcr, uint32_t type,
		     const struct event_log_digests *d, const void *event, uint32_t event_len);

/*
 * Event data of EV_EFI_PLATFORM_FIRMWARE_BLOB2: {u8 desc size, desc, u64
 * base, u64 length}. desc is stored without a NUL. Returns the size written,
 * 0 if it does not fit in cap or desc is longer than 255 bytes.
 */
size_t event_log_blob2_data(uint8_t *out, size_t cap, const char *desc, uint64_t base,
			    uint64_t length);

/*
 * Replays a whole log: checks the Spec ID event, then extends each
 * TCG_PCR_EVENT2's SHA-256 and SHA-384 digests into PCR[i] (EV_NO_ACTION
 * records are skipped, as the TPM never sees them). Digests of other
 * algorithms named in the Spec ID table are skipped by their size.
 * Returns 0, or -1 on any malformed record (out is then unspecified).
 */
int event_log_replay(const void *buf, size_t len, struct event_log_pcrs *out);

#endif
