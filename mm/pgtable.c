/*
 * csvsm's page tables: the entry identity-maps the first 4 GiB with 2 MiB
 * pages (with the C-bit on SNP); pgtable_identity_map_to() extends the same
 * map to the top of guest memory so csvsm can reach any guest page. Tables
 * come from the page pool.
 */
#include "arch/x86/insn.h"
#include "base/console.h"
#include "mm/pgtable.h"
#include "mm/pool.h"

#define PTE_P	      0x1ULL
#define PTE_RW	      0x2ULL
#define PTE_US	      0x4ULL
#define PTE_PS	      0x80ULL
#define PTE_ADDR_MASK 0x000FFFFFFFFFF000ULL

/* The C-bit of every private mapping, set by the snp boot path (0 before). */
uint64_t pgtable_cbit;

/* The page tables in use: CR3's root (identity-mapped, C-bit masked off). */
static uint64_t *root(void)
{
	return (uint64_t *)(uintptr_t)(read_cr3() & PTE_ADDR_MASK & ~pgtable_cbit);
}

void pgtable_identity_map_to(uint64_t top)
{
	uint64_t *pml4 = root();
	if (top > (512ULL << 30) * 512)
		panic("identity map: top 0x%llx beyond 4-level paging", (unsigned long long)top);
	for (uint64_t va = 4ULL << 30; va < top; va += PAGE_SIZE_2M) {
		unsigned i4 = (va >> 39) & 511, i3 = (va >> 30) & 511, i2 = (va >> 21) & 511;
		if (!(pml4[i4] & PTE_P))
			pml4[i4] = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE) | PTE_P |
				   PTE_RW | PTE_US | pgtable_cbit;
		uint64_t *pdpt = (uint64_t *)(uintptr_t)(pml4[i4] & PTE_ADDR_MASK & ~pgtable_cbit);
		if (!(pdpt[i3] & PTE_P))
			pdpt[i3] = (uint64_t)(uintptr_t)pool_alloc(PAGE_SIZE, PAGE_SIZE) | PTE_P |
				   PTE_RW | PTE_US | pgtable_cbit;
		uint64_t *pd = (uint64_t *)(uintptr_t)(pdpt[i3] & PTE_ADDR_MASK & ~pgtable_cbit);
		pd[i2] = va | PTE_P | PTE_RW | PTE_US | PTE_PS | pgtable_cbit;
	}
	write_cr3(read_cr3()); /* flush */
}

/*
 * Map the 4K page at `va` (identity-mapped, below the mapped top) shared
 * (C-bit clear) or private again. A 2 MiB mapping around it is split first,
 * keeping every other page as it was. The caller changes the RMP state in
 * the right order around it (shared: rescind, page-state change, then map;
 * reference §4.4). 0, or -1 for an address csvsm does not map.
 */
/* The 4K PTE of va, splitting a 2 MiB mapping around it first; NULL if unmapped. */
static uint64_t *pte_of(vaddr_t va)
{
	uint64_t mask = ~pgtable_cbit & PTE_ADDR_MASK;
	uint64_t *pml4 = root(), e;
	e = pml4[(va >> 39) & 511];
	if (!(e & PTE_P))
		return NULL;
	uint64_t *pdpt = (uint64_t *)(uintptr_t)(e & mask);
	e = pdpt[(va >> 30) & 511];
	if (!(e & PTE_P) || (e & PTE_PS))
		return NULL;
	uint64_t *pd = (uint64_t *)(uintptr_t)(e & mask);
	uint64_t *pde = &pd[(va >> 21) & 511];
	if (!(*pde & PTE_P))
		return NULL;
	if (*pde & PTE_PS) {
		uint64_t base = *pde & mask & ~(PAGE_SIZE_2M - 1), flags = *pde & ~mask & ~PTE_PS;
		uint64_t *pt = pool_alloc(PAGE_SIZE, PAGE_SIZE);
		for (unsigned i = 0; i < 512; i++)
			pt[i] = (base + i * PAGE_SIZE) | flags;
		*pde = (uint64_t)(uintptr_t)pt | PTE_P | PTE_RW | PTE_US | pgtable_cbit;
		write_cr3(read_cr3());
	}
	uint64_t *pt = (uint64_t *)(uintptr_t)(*pde & mask);
	return &pt[(va >> 12) & 511];
}

int pgtable_set_shared(vaddr_t va, bool shared)
{
	if (!pgtable_cbit)
		return 0; /* no C-bit (host programs): nothing to change */
	uint64_t *pte = pte_of(va);
	if (!pte)
		return -1;
	*pte = shared ? (*pte & ~pgtable_cbit) : (*pte | pgtable_cbit);
	invlpg(va);
	return 0;
}

int pgtable_set_guard(vaddr_t va)
{
	uint64_t *pte = pte_of(va);
	if (!pte)
		return -1;
	*pte &= ~PTE_P;
	invlpg(va);
	return 0;
}
