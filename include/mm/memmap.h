/*
 * Guest memory map (mm/memmap.c): validates a memory map in PVH start_info
 * form (Xen public/arch-x86/hvm/start_info.h; csvsm converts the host's IGVM
 * memory map into it; written by the hypervisor: hostile), carves csvsm's
 * own region out of RAM, and yields the sorted RAM ranges to pre-accept plus
 * the filtered E820 view a guest gets.
 */
#ifndef MM_MEMMAP_H
#define MM_MEMMAP_H

#include "arch/x86/pvh.h"
#include "base/types.h"

#define MEMMAP_MAX_ENTRIES 128
/* RAM ranges after carving: one entry may be split in two by csvsm. */
#define MEMMAP_MAX_RANGES    (MEMMAP_MAX_ENTRIES + 2) /* + csvsm's split + the legacy window's */
#define MEMMAP_TYPE_RAM	     1
#define MEMMAP_TYPE_RESERVED 2

/* Refusal codes (negative); memmap_strerror() names them. */
enum memmap_err {
	MEMMAP_OK = 0,
	MEMMAP_ERR_TOO_MANY = -1,  /* more than MEMMAP_MAX_ENTRIES entries */
	MEMMAP_ERR_ZERO_SIZE = -2, /* an entry of size 0 */
	MEMMAP_ERR_WRAP = -3,	   /* addr + size wraps or exceeds 2^52 */
	MEMMAP_ERR_UNALIGNED = -4, /* RAM entry start not 4K aligned */
	MEMMAP_ERR_OVERLAP = -5,   /* a RAM entry overlaps another entry */
	MEMMAP_ERR_CSVSM = -6,	   /* csvsm's region not inside one RAM entry */
	MEMMAP_ERR_NO_RAM = -7,	   /* no RAM outside csvsm */
	MEMMAP_ERR_SYNTAX = -8,	   /* malformed host map (IGVM memory-map area) */
	MEMMAP_ERR_ARG = -9,	   /* bad csvsm region / NULL input (caller bug) */
};

/* The PC's legacy VGA/ROM window: never guest RAM (mm/memmap.c add_ram_pc). */
#define MEMMAP_LEGACY_START 0xA0000ULL
#define MEMMAP_LEGACY_END   0x100000ULL

struct mem_range {
	gpa_t start, end; /* [start, end), page-aligned */
};

struct memmap {
	/* the validated input, sorted by address (a copy; read once) */
	unsigned nr_entries;
	struct hvm_memmap_table_entry entries[MEMMAP_MAX_ENTRIES];
	/* RAM to pre-accept: sorted, disjoint, whole pages, csvsm carved out */
	unsigned nr_ram;
	struct mem_range ram[MEMMAP_MAX_RANGES];
	gpa_t csvsm_start, csvsm_end;
	gpa_t max_gpa; /* end of the highest RAM entry, page-aligned up */
	/* the part of [MEMMAP_LEGACY_START, MEMMAP_LEGACY_END) the host called
	 * RAM and csvsm left out (add_ram_pc), or an empty range */
	struct mem_range legacy_left_out;
	int bad_index; /* input index of the offending entry, or -1 */
};

/*
 * `in` (n sorted, disjoint ranges) less every range of `holes` (nh, any
 * order, may overlap each other or nothing): the rest, sorted, into out
 * (at most max). Returns the count, or -1 when out is too small.
 */
int mem_ranges_subtract(const struct mem_range *in, unsigned n, const struct mem_range *holes,
			unsigned nh, struct mem_range *out, unsigned max);

/*
 * Build `mm` from `n` hypervisor-provided entries at `e` (each read exactly
 * once) and csvsm's region [csvsm_start, csvsm_end) (4K aligned). RAM entry
 * ends are trimmed down to whole pages (QEMU reports RAM 0-0x9fc00).
 * Returns MEMMAP_OK or a MEMMAP_ERR_* refusal; on refusal mm->bad_index names
 * the entry.
 */
int memmap_build(struct memmap *mm, const struct hvm_memmap_table_entry *e, unsigned n,
		 gpa_t csvsm_start, gpa_t csvsm_end);
const char *memmap_strerror(int err);
/* Total bytes in mm->ram[]. */
uint64_t memmap_ram_bytes(const struct memmap *mm);
/* True when [gpa, gpa+size) lies entirely in mm->ram[] (guest-visible RAM). */
bool memmap_is_guest_ram(const struct memmap *mm, gpa_t gpa, uint64_t size);

/*
 * The guest's filtered view: the input map with csvsm's region turned into
 * MEMMAP_TYPE_RESERVED (the RAM entry holding it is split). Writes at most
 * `max` entries, sorted; returns the number written, or -1 if `max` is too small.
 */
int memmap_guest_e820(const struct memmap *mm, struct hvm_memmap_table_entry *out, unsigned max);

/*
 * Console lines for tests/tools/accept_plan.c, one per mm->ram[] range:
 *   "csvsm: memmap: ram start=0x<hex> end=0x<hex>\n"
 * then "csvsm: memmap: csvsm start=0x<hex> end=0x<hex>\n".
 */
void memmap_print(const struct memmap *mm);
#define MEMMAP_LINE_RAM "csvsm: memmap: ram start=0x%llx end=0x%llx\n"

#endif
