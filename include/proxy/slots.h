/*
 * csvsm-proxy's state file (proxy/slots.c): the host keeps csvsm's sealed
 * vTPM state in one file of two slots, so that a crash in the middle of a
 * write leaves the last good state readable (docs/vtpm.md "Persistence").
 *
 *   slot i at offset i * SLOTS_SLOT_SIZE:
 *     0x00  8  magic "CSVPSLT1"
 *     0x08  8  generation (1, 2, ...; the newer slot has the larger)
 *     0x10  4  data length (<= SLOTS_DATA_MAX)
 *     0x14  4  reserved (0)
 *     0x18 32  SHA-256 of bytes 0x00..0x17 and the data
 *     0x38  8  reserved (0)
 *     0x40  n  data (one sealed state, include/tpm/vtpm_seal.h)
 *
 * A write goes to the slot that does not hold the newest intact state:
 * data and header with pwrite, then fdatasync, and only then is the write
 * confirmed to csvsm. A crash before the fdatasync returns leaves that slot
 * torn (its hash fails) or as it was; the other slot, untouched, still
 * holds the newest state csvsm was told is kept. The file is created at its
 * full size and fsync'd with its directory before the first write.
 *
 * The host is not trusted by csvsm: this only keeps a benign host from
 * losing what it was given. The hash is no defence against the host.
 */
#ifndef PROXY_SLOTS_H
#define PROXY_SLOTS_H

#include "base/types.h"
#include "tpm/vtpm_seal.h"

#define SLOTS_MAGIC	"CSVPSLT1"
#define SLOTS_HDR	64u
#define SLOTS_DATA_MAX	VTPM_SEALED_MAX
#define SLOTS_SLOT_SIZE (((SLOTS_HDR + SLOTS_DATA_MAX) + 4095u) & ~4095u)
#define SLOTS_FILE_SIZE (2u * SLOTS_SLOT_SIZE)

struct slot_info {
	bool intact;
	uint64_t generation;
	uint32_t len;
};

/* What a read found: both slots, and which holds the newest intact state (-1: none). */
struct slots_view {
	struct slot_info slot[2];
	int newest;
	bool written; /* a slot has ever been written (its magic is there), intact or not */
};

/* Checks one slot's bytes (header + data as read from the file). Pure. */
struct slot_info slots_check(const uint8_t *slot, size_t len);
/* Builds the header for `data` as generation `gen` (hdr is SLOTS_HDR bytes). Pure. */
void slots_header(uint8_t hdr[SLOTS_HDR], uint64_t gen, const uint8_t *data, uint32_t len);
/* Which slot a write goes to and with which generation, given the view. Pure. */
int slots_target(const struct slots_view *v, uint64_t *gen);

/* Opens (creating at full size, fsync'd with its directory) the state file: fd or -1. */
int slots_open(const char *path);
/* Reads both slots; the newest intact one's data to out (cap >= SLOTS_DATA_MAX). 0 or -1 (I/O). */
int slots_read(int fd, struct slots_view *v, uint8_t *out, size_t cap, uint32_t *len);
/*
 * Writes data as the next generation and fdatasyncs. tear_after >= 0 (tests
 * only): write that many bytes of the data (0: half of it) into the slot,
 * not its header, and return -2 without syncing, as a crash would leave it.
 * 0, -1 (I/O) or -2.
 */
int slots_write(int fd, const uint8_t *data, uint32_t len, long tear_after, uint64_t *gen);

#endif
