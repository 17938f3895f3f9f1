/*
 * PVH boot ABI (Xen public/arch-x86/hvm/start_info.h): what QEMU hands csvsm
 * in EBX at entry. Values the hypervisor wrote: hostile, checked by users.
 */
#ifndef CSVSM_PVH_H
#define CSVSM_PVH_H

#include "base/types.h"

#define HVM_START_MAGIC 0x336ec578u

struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;	 /* version >= 1 */
	uint32_t memmap_entries; /* version >= 1 */
	uint32_t reserved;
};
_Static_assert(sizeof(struct hvm_start_info) == 56, "Xen start_info.h: 56 bytes (v1)");

struct hvm_memmap_table_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type; /* 1 = RAM, 2 = reserved, 3 = ACPI, 4 = NVS, 5 = unusable */
	uint32_t reserved;
};
_Static_assert(sizeof(struct hvm_memmap_table_entry) == 24, "Xen start_info.h");

#endif
