/*
 * Guest memory map: validation of the PVH memory map (Xen
 * public/arch-x86/hvm/start_info.h, struct hvm_memmap_table_entry), carving of
 * csvsm's own region, the RAM ranges pre-acceptance works on, the guest's
 * filtered E820 view (include/mm/memmap.h).
 *
 * The map is written by the hypervisor: each entry is copied once, and only
 * the copy is checked and used. A map that is inconsistent, or that claims
 * csvsm's memory is anything but RAM, is refused with an error code; the
 * caller prints memmap_strerror() and terminates.
 */
#include "base/console.h"
#include "base/string.h"
#include "mm/cmdline.h"
#include "mm/memmap.h"

#define MEMMAP_MAX_ADDR (1ULL << 52) /* 52-bit guest-physical address space */

static gpa_t entry_end(const struct hvm_memmap_table_entry *e)
{
	return e->addr + e->size;
}

static int refuse(struct memmap *mm, int err, int index)
{
	mm->bad_index = index;
	mm->nr_ram = 0;
	return err;
}

/* Do reserved entries cover [at, the end of at's page)? */
static bool tail_reserved(const struct memmap *mm, gpa_t at)
{
	gpa_t page_end = ALIGN_UP(at, PAGE_SIZE);

	for (unsigned i = 0; i < mm->nr_entries && at < page_end; i++) {
		const struct hvm_memmap_table_entry *e = &mm->entries[i];
		if (e->type == MEMMAP_TYPE_RESERVED && e->addr <= at && entry_end(e) > at)
			at = entry_end(e);
	}
	return at >= page_end;
}

/* Add [start, end) to mm->ram, merging with an adjacent previous range. */
static void add_ram(struct memmap *mm, gpa_t start, gpa_t end)
{
	if (start >= end)
		return;
	if (mm->nr_ram && mm->ram[mm->nr_ram - 1].end == start) {
		mm->ram[mm->nr_ram - 1].end = end;
		return;
	}
	if (mm->nr_ram == MEMMAP_MAX_RANGES)
		panic("memmap: RAM range table overflow"); /* bounded by entries + 1 */
	mm->ram[mm->nr_ram].start = start;
	mm->ram[mm->nr_ram].end = end;
	mm->nr_ram++;
}

/*
 * RAM as a PC guest can use it: less the legacy VGA/option-ROM/BIOS window
 * [640 KiB, 1 MiB), which QEMU's e820 counts as RAM (hw/i386/pc.c
 * pc_memory_init: one E820_RAM entry from 0 to the below-4G size, which is
 * also QEMU's IGVM memory map, target/i386/sev.c cgs_get_mem_map_entry for
 * an SNP guest) but which is VGA MMIO, SMRAM and PAM-shadowed ROM on q35,
 * not guest_memfd memory: a to-private page-state change there fails and
 * stops the VM (accel/kvm/kvm-all.c kvm_convert_memory; only a to-shared
 * one of MMIO is accepted, and does nothing). OVMF never uses it as
 * system memory (OvmfPkg/Library/PlatformInitLib/MemDetect.c: RAM below
 * 1 MiB is [0, 640 KiB)), so csvsm neither pre-accepts nor hands it out.
 */
static void add_ram_pc(struct memmap *mm, gpa_t start, gpa_t end)
{
	if (start < MEMMAP_LEGACY_END && end > MEMMAP_LEGACY_START) {
		gpa_t ls = MAX(start, MEMMAP_LEGACY_START), le = MIN(end, MEMMAP_LEGACY_END);
		struct mem_range *lo = &mm->legacy_left_out;
		if (lo->start >= lo->end)
			*lo = (struct mem_range){ls, le};
		else
			*lo = (struct mem_range){MIN(lo->start, ls), MAX(lo->end, le)};
		add_ram(mm, start, MIN(end, MEMMAP_LEGACY_START));
		add_ram(mm, MAX(start, MEMMAP_LEGACY_END), end);
		return;
	}
	add_ram(mm, start, end);
}

int memmap_build(struct memmap *mm, const struct hvm_memmap_table_entry *e, unsigned n,
		 gpa_t csvsm_start, gpa_t csvsm_end)
{
	uint8_t orig[MEMMAP_MAX_ENTRIES];

	if (!mm)
		return MEMMAP_ERR_ARG;
	memset(mm, 0, sizeof(*mm));
	mm->bad_index = -1;
	if ((n && !e) || csvsm_start >= csvsm_end || !IS_ALIGNED(csvsm_start, PAGE_SIZE) ||
	    !IS_ALIGNED(csvsm_end, PAGE_SIZE))
		return refuse(mm, MEMMAP_ERR_ARG, -1);
	if (n > MEMMAP_MAX_ENTRIES)
		return refuse(mm, MEMMAP_ERR_TOO_MANY, MEMMAP_MAX_ENTRIES);
	mm->csvsm_start = csvsm_start;
	mm->csvsm_end = csvsm_end;

	/* Copy once, check the copy, insertion-sort it by address. */
	for (unsigned i = 0; i < n; i++) {
		struct hvm_memmap_table_entry c;
		gpa_t end;

		memcpy(&c, &e[i], sizeof(c));
		if (c.size == 0)
			return refuse(mm, MEMMAP_ERR_ZERO_SIZE, (int)i);
		if (ADD_OVERFLOW(c.addr, c.size, &end) || end > MEMMAP_MAX_ADDR)
			return refuse(mm, MEMMAP_ERR_WRAP, (int)i);
		if (c.type == MEMMAP_TYPE_RAM && !IS_ALIGNED(c.addr, PAGE_SIZE))
			return refuse(mm, MEMMAP_ERR_UNALIGNED, (int)i);
		unsigned j = i;
		while (j > 0 && mm->entries[j - 1].addr > c.addr) {
			mm->entries[j] = mm->entries[j - 1];
			orig[j] = orig[j - 1];
			j--;
		}
		mm->entries[j] = c;
		orig[j] = (uint8_t)i;
	}
	mm->nr_entries = n;

	/*
	 * A RAM entry may not overlap anything: the map would then say the same
	 * memory is two things. Overlaps among non-RAM entries do not change
	 * what csvsm accepts or hands out, so they are passed through.
	 */
	for (unsigned i = 0; i < n; i++) {
		const struct hvm_memmap_table_entry *a = &mm->entries[i];
		for (unsigned j = i + 1; j < n && mm->entries[j].addr < entry_end(a); j++) {
			if (a->type == MEMMAP_TYPE_RAM || mm->entries[j].type == MEMMAP_TYPE_RAM)
				return refuse(mm, MEMMAP_ERR_OVERLAP, orig[j]);
		}
	}

	/* csvsm's region must be RAM, all of it in one entry. */
	int home = -1;
	for (unsigned i = 0; i < n; i++) {
		const struct hvm_memmap_table_entry *a = &mm->entries[i];
		if (a->type == MEMMAP_TYPE_RAM && a->addr <= csvsm_start &&
		    csvsm_end <= entry_end(a))
			home = (int)i;
	}
	if (home < 0)
		return refuse(mm, MEMMAP_ERR_CSVSM, -1);

	for (unsigned i = 0; i < n; i++) {
		const struct hvm_memmap_table_entry *a = &mm->entries[i];
		if (a->type != MEMMAP_TYPE_RAM)
			continue;
		/*
		 * Only whole pages are accepted. QEMU's low RAM entry ends at
		 * 0x9fc00 and a reserved entry (the EBDA) covers the rest of
		 * that page; the page is RAM all the same, and an SVSM-aware
		 * OVMF validates [0, 0xa0000). A partial last page counts as
		 * RAM only when reserved entries cover the rest of it.
		 */
		gpa_t end = ALIGN_DOWN(entry_end(a), PAGE_SIZE);
		if (end != entry_end(a) && tail_reserved(mm, entry_end(a)))
			end += PAGE_SIZE;
		if (ALIGN_UP(entry_end(a), PAGE_SIZE) > mm->max_gpa)
			mm->max_gpa = ALIGN_UP(entry_end(a), PAGE_SIZE);
		if ((int)i == home) {
			add_ram_pc(mm, a->addr, csvsm_start);
			add_ram_pc(mm, csvsm_end, end);
		} else {
			add_ram_pc(mm, a->addr, end);
		}
	}
	if (!mm->nr_ram)
		return refuse(mm, MEMMAP_ERR_NO_RAM, -1);
	return MEMMAP_OK;
}

const char *memmap_strerror(int err)
{
	switch (err) {
	case MEMMAP_OK:
		return "ok";
	case MEMMAP_ERR_TOO_MANY:
		return "too many memory map entries";
	case MEMMAP_ERR_ZERO_SIZE:
		return "memory map entry of size zero";
	case MEMMAP_ERR_WRAP:
		return "memory map entry wraps around or exceeds 2^52";
	case MEMMAP_ERR_UNALIGNED:
		return "RAM entry not 4K aligned";
	case MEMMAP_ERR_OVERLAP:
		return "overlapping memory map entries";
	case MEMMAP_ERR_CSVSM:
		return "csvsm's region is not inside one RAM entry";
	case MEMMAP_ERR_NO_RAM:
		return "no RAM outside csvsm";
	case MEMMAP_ERR_SYNTAX:
		return "malformed memory map (the host's IGVM memory-map parameter area)";
	case MEMMAP_ERR_ARG:
		return "bad arguments";
	default:
		return "unknown memory map error";
	}
}

uint64_t memmap_ram_bytes(const struct memmap *mm)
{
	uint64_t total = 0;

	for (unsigned i = 0; i < mm->nr_ram; i++)
		total += mm->ram[i].end - mm->ram[i].start;
	return total;
}

bool memmap_is_guest_ram(const struct memmap *mm, gpa_t gpa, uint64_t size)
{
	gpa_t end;

	if (ADD_OVERFLOW(gpa, size, &end))
		return false;
	for (unsigned i = 0; i < mm->nr_ram; i++)
		if (mm->ram[i].start <= gpa && end <= mm->ram[i].end)
			return true;
	return false;
}

static int put(struct hvm_memmap_table_entry *out, unsigned max, unsigned *k, gpa_t start,
	       gpa_t end, uint32_t type)
{
	if (start >= end)
		return 0;
	if (*k == max)
		return -1;
	out[*k].addr = start;
	out[*k].size = end - start;
	out[*k].type = type;
	out[*k].reserved = 0;
	(*k)++;
	return 0;
}

int memmap_guest_e820(const struct memmap *mm, struct hvm_memmap_table_entry *out, unsigned max)
{
	unsigned k = 0;

	for (unsigned i = 0; i < mm->nr_entries; i++) {
		const struct hvm_memmap_table_entry *a = &mm->entries[i];
		gpa_t end = entry_end(a);
		int rc;
		if (a->type == MEMMAP_TYPE_RAM && a->addr <= mm->csvsm_start &&
		    mm->csvsm_end <= end) {
			rc = put(out, max, &k, a->addr, mm->csvsm_start, MEMMAP_TYPE_RAM);
			rc |=
			    put(out, max, &k, mm->csvsm_start, mm->csvsm_end, MEMMAP_TYPE_RESERVED);
			rc |= put(out, max, &k, mm->csvsm_end, end, MEMMAP_TYPE_RAM);
		} else {
			rc = put(out, max, &k, a->addr, end, a->type);
		}
		if (rc)
			return -1;
	}
	return (int)k;
}

void memmap_print(const struct memmap *mm)
{
	for (unsigned i = 0; i < mm->nr_ram; i++)
		con_printf(MEMMAP_LINE_RAM, (unsigned long long)mm->ram[i].start,
			   (unsigned long long)mm->ram[i].end);
	con_printf("csvsm: memmap: csvsm start=0x%llx end=0x%llx\n",
		   (unsigned long long)mm->csvsm_start, (unsigned long long)mm->csvsm_end);
}

int mem_ranges_subtract(const struct mem_range *in, unsigned n, const struct mem_range *holes,
			unsigned nh, struct mem_range *out, unsigned max)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		gpa_t cur = in[i].start, end = in[i].end;
		while (cur < end) {
			/* the first hole that covers or follows cur inside [cur, end) */
			gpa_t hs = end, he = end;
			for (unsigned j = 0; j < nh; j++) {
				if (holes[j].end <= cur || holes[j].start >= end ||
				    holes[j].start >= holes[j].end)
					continue;
				gpa_t s = MAX(holes[j].start, cur);
				if (s < hs || (s == hs && holes[j].end > he))
					hs = s, he = MIN(holes[j].end, end);
			}
			if (hs > cur) {
				if (k == max)
					return -1;
				out[k++] = (struct mem_range){cur, hs};
			}
			cur = he > hs ? he : end;
		}
	}
	return (int)k;
}
