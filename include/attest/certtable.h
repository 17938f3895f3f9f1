/*
 * SNP extended-request certificate table (AMD 56860 / GHCB 56421
 * SNP_EXTENDED_GUEST_REQUEST; snp-svsm-interfaces.md §6.5). The same bytes
 * are Linux configfs-tsm's `auxblob`.
 *
 * Layout: entries of 24 bytes {GUID[16], offset u32 LE, length u32 LE},
 * ended by an all-zero entry; offsets are relative to the table start. The
 * GUIDs are in RFC-4122 (big-endian) byte order, unlike the SVSM manifest
 * GUIDs. The table comes from the hypervisor, so the parser checks every
 * offset and length against the buffer with overflow-safe arithmetic,
 * requires the terminator inside the buffer, refuses certificate data that
 * overlaps the entry array and duplicate GUIDs, and allocates nothing.
 */
#ifndef ATTEST_CERTTABLE_H
#define ATTEST_CERTTABLE_H

#include <base/types.h>

#define CERTTABLE_ENTRY_SIZE  24u
#define CERTTABLE_GUID_LEN    16u
#define CERTTABLE_MAX_ENTRIES 64u

struct certtable_entry_raw {
	uint8_t guid[CERTTABLE_GUID_LEN];
	uint32_t offset;
	uint32_t length;
} __packed;
_Static_assert(sizeof(struct certtable_entry_raw) == CERTTABLE_ENTRY_SIZE,
	       "SNP ABI 56860 certificate table entry is 24 bytes");
_Static_assert(offsetof(struct certtable_entry_raw, offset) == 16,
	       "SNP ABI 56860 certificate table entry offset at 16");

enum certtable_kind {
	CERTTABLE_OTHER = 0,
	CERTTABLE_VCEK,
	CERTTABLE_VLEK,
	CERTTABLE_ASK, /* ASK, or ASVK in a VLEK table */
	CERTTABLE_ARK,
};

/* One decoded entry; data points into the caller's buffer. */
struct certtable_entry {
	uint8_t guid[CERTTABLE_GUID_LEN];
	enum certtable_kind kind;
	uint32_t offset, length;
	const uint8_t *data;
};

enum certtable_err {
	CERTTABLE_OK = 0,
	CERTTABLE_ERR_INVAL = -1,      /* NULL argument */
	CERTTABLE_ERR_NO_END = -2,     /* no all-zero entry inside the buffer */
	CERTTABLE_ERR_BOUNDS = -3,     /* offset/length outside the buffer */
	CERTTABLE_ERR_OVERLAP = -4,    /* data overlaps the entry array */
	CERTTABLE_ERR_EMPTY_CERT = -5, /* zero length, or zero GUID with data */
	CERTTABLE_ERR_DUPLICATE = -6,  /* the same GUID twice */
	CERTTABLE_ERR_TOO_MANY = -7,   /* more entries than the caller's array */
};

/* RFC-4122 byte order (§6.5, go-sev-guest abi.go). */
extern const uint8_t certtable_guid_vcek[CERTTABLE_GUID_LEN];
extern const uint8_t certtable_guid_vlek[CERTTABLE_GUID_LEN];
extern const uint8_t certtable_guid_ask[CERTTABLE_GUID_LEN];
extern const uint8_t certtable_guid_ark[CERTTABLE_GUID_LEN];

/*
 * Parse the table in buf[0..len). On success *count entries (terminator
 * excluded) are in out[0..max). Entries point into buf; buf must outlive
 * them and must not change (the caller owns a private copy).
 */
int certtable_parse(const void *buf, size_t len, struct certtable_entry *out, size_t max,
		    size_t *count);

/* The entry of a kind, or NULL. */
const struct certtable_entry *certtable_find(const struct certtable_entry *e, size_t count,
					     enum certtable_kind kind);

enum certtable_kind certtable_guid_kind(const uint8_t guid[CERTTABLE_GUID_LEN]);

/*
 * Build a table (for the SNP machine's PSP model and for tests): n entries
 * whose data are copied after the entry array. Returns bytes written, or 0
 * when it does not fit in cap.
 */
size_t certtable_build(void *buf, size_t cap, const uint8_t (*guids)[CERTTABLE_GUID_LEN],
		       const void *const *data, const uint32_t *lens, size_t n);

const char *certtable_strerror(int err);

#endif
