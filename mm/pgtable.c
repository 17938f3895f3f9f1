/*
 * csvsm's page tables: boot.S identity-maps the first 4 GiB with 2 MiB
 * pages; pgtable_identity_map_to() extends the same map to the top of guest
 * memory so csvsm can reach any guest page (the sim platform's guest view is
 * separate: nested page tables). Tables come from the page pool.
 */
#include "arch/x86/insn.h"
#include "csvsm/console.h"
#include "mm/pgtable.h"
#include "mm/pool.h"

#define PTE_P	      0x1ULL
#define PTE_RW	      0x2ULL
#define PTE_US	      0x4ULL
#define PTE_PS	      0x80ULL
#define PTE_ADDR_MASK 0x000FFFFFFFFFF000ULL

extern uint64_t boot_pml4[512];

void pgtable_identity_map_to(uint64_t top)
{
	uint64_t *pml4 = boot_pml4;
	if (top > (512ULL << 30) * 512)
		panic("identity map: top 0x%llx beyond 4-level paging", (unsigned long long)top);
	for (uint64_t va = 4ULL << 30; va < top; va += PAGE_SIZE_2M) {
		unsigned i4 = (va >> 39) & 511, i3 = (va >> 30) & 511, i2 = (va >> 21) & 511;
		if (!(pml4[i4] & PTE_P))
			pml4[i4] = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE) | PTE_P |
				   PTE_RW | PTE_US;
		uint64_t *pdpt = (uint64_t *)(uintptr_t)(pml4[i4] & PTE_ADDR_MASK);
		if (!(pdpt[i3] & PTE_P))
			pdpt[i3] = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE) | PTE_P |
				   PTE_RW | PTE_US;
		uint64_t *pd = (uint64_t *)(uintptr_t)(pdpt[i3] & PTE_ADDR_MASK);
		pd[i2] = va | PTE_P | PTE_RW | PTE_US | PTE_PS;
	}
	write_cr3(read_cr3()); /* flush */
}
