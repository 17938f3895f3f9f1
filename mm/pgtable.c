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
#define PTE_NX	      (1ULL << 63) /* with EFER.NXE (src/boot.S); APM vol. 2 §5.6 */
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

/*
 * W^X for csvsm's own view (third review's note: every page, the guest's
 * included, was mapped executable): every leaf of csvsm's tables outside
 * [x_start, x_end) gets NX, so that a jump into guest-controlled memory,
 * the page pool, a stack or csvsm's data faults (#PF, which ends the VM)
 * instead of running it. [x_start, x_end) is the image's first PT_LOAD,
 * flagged R+X in linker.ld (text, .init, rodata); a 2 MiB leaf across its
 * edge is split so the rest of that 2 MiB (data, bss) is NX too. Upper
 * levels keep NX clear (NX is the OR of all levels, APM vol. 2 §5.6.1).
 * Called once on the BSP before the APs start (they load the same CR3).
 */
static void nx_leaf(uint64_t *e, uint64_t start, uint64_t size, uint64_t x_start, uint64_t x_end)
{
	if (start + size <= x_start || start >= x_end)
		*e |= PTE_NX;
}

void pgtable_restrict_exec(vaddr_t x_start, vaddr_t x_end)
{
	uint64_t mask = ~pgtable_cbit & PTE_ADDR_MASK;
	uint64_t *pml4 = root();
	/* The 2 MiB leaves across either edge become 4K tables first (pte_of). */
	if (x_start & (PAGE_SIZE_2M - 1))
		(void)pte_of(x_start);
	if (x_end & (PAGE_SIZE_2M - 1))
		(void)pte_of(x_end);
	for (unsigned i4 = 0; i4 < 512; i4++) {
		if (!(pml4[i4] & PTE_P))
			continue;
		uint64_t *pdpt = (uint64_t *)(uintptr_t)(pml4[i4] & mask);
		for (unsigned i3 = 0; i3 < 512; i3++) {
			uint64_t va3 = ((uint64_t)i4 << 39) | ((uint64_t)i3 << 30);
			if (!(pdpt[i3] & PTE_P))
				continue;
			if (pdpt[i3] & PTE_PS) {
				nx_leaf(&pdpt[i3], va3, 1ULL << 30, x_start, x_end);
				continue;
			}
			uint64_t *pd = (uint64_t *)(uintptr_t)(pdpt[i3] & mask);
			for (unsigned i2 = 0; i2 < 512; i2++) {
				uint64_t va2 = va3 | ((uint64_t)i2 << 21);
				if (!(pd[i2] & PTE_P))
					continue;
				if (pd[i2] & PTE_PS) {
					nx_leaf(&pd[i2], va2, PAGE_SIZE_2M, x_start, x_end);
					continue;
				}
				uint64_t *pt = (uint64_t *)(uintptr_t)(pd[i2] & mask);
				for (unsigned i1 = 0; i1 < 512; i1++)
					if (pt[i1] & PTE_P)
						nx_leaf(&pt[i1], va2 | ((uint64_t)i1 << 12), PAGE_SIZE, x_start,
							x_end);
			}
		}
	}
	write_cr3(read_cr3()); /* flush */
}
