/*
 * Unit tests of the guest page-table walk (mm/guest_walk.c) that csvsm uses
 * for accesses it performs for the guest (string I/O): translation in
 * 4-level, PAE and 32-bit paging with large pages, and every protection
 * check the CPU would make (issue 8 item 5: U/S, R/W with CR0.WP, NX, SMEP,
 * SMAP), a refused page-table page (a VMSA the guest may not read), the
 * C-bit, and non-canonical addresses.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "mm/guest_walk.h"

#define NPAGES 16
#define P      1ULL
#define RW     2ULL
#define US     4ULL
#define PS     0x80ULL
#define NX     (1ULL << 63)
#define CBIT   (1ULL << 51)

/* Guest memory: NPAGES pages at gPA 0x10000 + 0x1000*i; page `blocked` is not readable. */
static uint64_t mem[NPAGES][512];
static gpa_t blocked = ~0ULL;

static gpa_t pg(unsigned i)
{
	return 0x10000 + 0x1000ULL * i;
}

static int read_pte(void *arg, gpa_t gpa, unsigned size, uint64_t *val)
{
	if (gpa < 0x10000 || gpa + size > pg(NPAGES) || (gpa & ~0xFFFULL) == blocked)
		return -1;
	uint8_t *b = (uint8_t *)mem + (gpa - 0x10000);
	*val = 0;
	memcpy(val, b, size);
	return 0;
}

static struct gw_cpu cpu64(void)
{
	return (struct gw_cpu){.cr0 = (1ULL << 31) | (1ULL << 16) | 1, /* PG WP PE */
			       .cr3 = pg(0),
			       .cr4 = 1ULL << 5,
			       .efer = (1ULL << 10) | (1ULL << 11), /* LMA NXE */
			       .read_pte = read_pte};
}

/* la 0x7F0000201234: PML4[0xFE] -> pg1, PDPT[0] -> pg2, PD[1] -> pg3, PT[1] -> 0x5555000 */
#define LA 0x7F0000201234ULL
static void build4(uint64_t leaf_flags, uint64_t upper_flags)
{
	memset(mem, 0, sizeof(mem));
	blocked = ~0ULL;
	mem[0][0xFE] = pg(1) | upper_flags;
	mem[1][0] = pg(2) | upper_flags;
	mem[2][1] = pg(3) | upper_flags;
	mem[3][1] = 0x5555000 | leaf_flags;
}

static enum gw_result walk(const struct gw_cpu *c, uint64_t la, enum gw_access a, gpa_t *pa,
			   uint32_t *err)
{
	return guest_walk(c, la, a, pa, err);
}

static void test_translate(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	build4(P | RW | US, P | RW | US);
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x5555234);
	/* 2M page at the PD level; PAT bit 12 is not part of the address. */
	mem[2][1] = 0x40000000 | P | RW | PS | (1ULL << 12);
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x40001234);
	/* 1G page at the PDPT level. */
	mem[1][0] = 0x80000000ULL | P | RW | PS;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x80201234);
	/* The C-bit is stripped from table and leaf addresses (issue 9). */
	build4(P | RW | CBIT, P | RW | CBIT);
	c.cr3 |= CBIT;
	c.cbit_mask = CBIT;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x5555234);
	/* Paging off: the address is physical (32 bits). */
	c.cr0 = 1;
	assert_int_equal(walk(&c, 0x1234567890ULL, GW_WRITE, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x34567890);
}

static void test_not_present(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	build4(0, P | RW);
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_W);
	build4(P | RW, P | RW);
	mem[2][1] = 0;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, 0);
	c.efer &= ~(1ULL << 11); /* NX set while NXE=0: reserved bit */
	build4(P | RW | NX, P | RW);
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_P | GW_PF_RSVD);
}

static void test_write_protect(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	/* Read-only leaf, supervisor write, CR0.WP=1: #PF(P|W). */
	build4(P | US, P | RW | US);
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_P | GW_PF_W);
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	/* CR0.WP=0: a supervisor write to a read-only page succeeds. */
	c.cr0 &= ~(1ULL << 16);
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_OK);
	/* ... but never from CPL 3. */
	c.cpl = 3;
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_P | GW_PF_W | GW_PF_U);
	/* R/W clear at an upper level counts the same. */
	c = cpu64();
	build4(P | RW, P);
	assert_int_equal(walk(&c, LA, GW_WRITE, &pa, &err), GW_PAGE_FAULT);
}

static void test_user(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	/* A supervisor page (U/S clear at one level) from CPL 3. */
	build4(P | RW | US, P | RW);
	c.cpl = 3;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_P | GW_PF_U);
	/* SMAP: supervisor data access to a user page, unless RFLAGS.AC. */
	c = cpu64();
	c.cr4 |= 1ULL << 21;
	build4(P | RW | US, P | RW | US);
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_PAGE_FAULT);
	c.rflags = 1ULL << 18;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	/* SMEP: supervisor fetch from a user page. */
	c = cpu64();
	c.cr4 |= 1ULL << 20;
	assert_int_equal(walk(&c, LA, GW_FETCH, &pa, &err), GW_PAGE_FAULT);
	assert_true(err & GW_PF_ID);
}

static void test_nx(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	build4(P | RW | NX, P | RW);
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(walk(&c, LA, GW_FETCH, &pa, &err), GW_PAGE_FAULT);
	assert_int_equal(err, GW_PF_P | GW_PF_ID);
}

static void test_blocked_table(void **state)
{
	struct gw_cpu c = cpu64();
	gpa_t pa;
	uint32_t err;
	build4(P | RW, P | RW);
	blocked = pg(3); /* the page table is a page the guest may not read */
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_BLOCKED);
	blocked = pg(0); /* the PML4 */
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_BLOCKED);
	/* A table pointer outside readable memory. */
	build4(P | RW, P | RW);
	mem[1][0] = 0xFFFFF000 | P | RW;
	assert_int_equal(walk(&c, LA, GW_READ, &pa, &err), GW_BLOCKED);
	/* Non-canonical: #GP, not a walk. */
	assert_int_equal(walk(&c, 0x0000800000000000ULL, GW_READ, &pa, &err), GW_BLOCKED);
}

static void test_pae_and_legacy(void **state)
{
	gpa_t pa;
	uint32_t err;
	/* PAE: PDPT at cr3 (32-byte aligned), PD, PT; la 0x40201234 */
	struct gw_cpu c = {
	    .cr0 = (1ULL << 31) | 1, .cr3 = pg(0) + 0x20, .cr4 = 1ULL << 5, .read_pte = read_pte};
	memset(mem, 0, sizeof(mem));
	blocked = ~0ULL;
	mem[0][4 + 1] = pg(1) | P; /* PDPT entry 1 at cr3+8 */
	mem[1][1] = pg(2) | P | RW | US;
	mem[2][1] = 0x123000 | P | US; /* read-only */
	assert_int_equal(guest_walk(&c, 0x40201234, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x123234);
	assert_int_equal(guest_walk(&c, 0x40201234, GW_WRITE, &pa, &err), GW_OK); /* WP=0 */
	c.cr0 |= 1ULL << 16;
	assert_int_equal(guest_walk(&c, 0x40201234, GW_WRITE, &pa, &err), GW_PAGE_FAULT);
	/* 32-bit paging with a 4M page (CR4.PSE). */
	struct gw_cpu l = {
	    .cr0 = (1ULL << 31) | 1, .cr3 = pg(4), .cr4 = 1ULL << 4, .read_pte = read_pte};
	uint32_t *pd = (uint32_t *)mem[4];
	pd[0x101] = 0x00C00000 | P | RW | PS;
	assert_int_equal(guest_walk(&l, 0x40512345, GW_WRITE, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x00D12345);
	/* 32-bit paging with a page table. */
	pd[0x101] = (uint32_t)pg(5) | P | RW;
	((uint32_t *)mem[5])[0x112] = 0x00777000 | P;
	assert_int_equal(guest_walk(&l, 0x40512345, GW_READ, &pa, &err), GW_OK);
	assert_int_equal(pa, 0x00777345);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_translate),
	    cmocka_unit_test(test_not_present),
	    cmocka_unit_test(test_write_protect),
	    cmocka_unit_test(test_user),
	    cmocka_unit_test(test_nx),
	    cmocka_unit_test(test_blocked_table),
	    cmocka_unit_test(test_pae_and_legacy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
