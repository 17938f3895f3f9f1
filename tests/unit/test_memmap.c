/*
 * Unit tests of the memory map (mm/memmap.c) and command-line helpers
 * (mm/cmdline.c): QEMU q35 -m 4G maps with csvsm carved out, the guest's
 * filtered view and every refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "mm/cmdline.h"
#include "mm/memmap.h"

#define CS_START 0x4000000ULL
#define CS_END	 0x6000000ULL

/* What QEMU 7.2 q35 -m 4G hands a PVH kernel (RAM split at 2G below 4G). */
static const struct hvm_memmap_table_entry q35[] = {
    {0x0, 0x9fc00, 1, 0},	  {0x9fc00, 0x400, 2, 0},	   {0xf0000, 0x10000, 2, 0},
    {0x100000, 0x7ff00000, 1, 0}, {0xb0000000, 0x10000000, 2, 0},  {0xfed1c000, 0x4000, 2, 0},
    {0xfeffc000, 0x4000, 2, 0},	  {0x100000000, 0x80000000, 1, 0},
};

static struct memmap mm;

static void test_q35_good(void **state)
{
	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.nr_ram, 4);
	assert_int_equal(mm.ram[0].start, 0);
	/* the EBDA entry covers the rest of the last page: it is RAM */
	assert_int_equal(mm.ram[0].end, 0xa0000);
	assert_int_equal(mm.ram[1].start, 0x100000);
	assert_int_equal(mm.ram[1].end, CS_START);
	assert_int_equal(mm.ram[2].start, CS_END);
	assert_int_equal(mm.ram[2].end, 0x80000000);
	assert_int_equal(mm.ram[3].start, 0x100000000);
	assert_int_equal(mm.ram[3].end, 0x180000000);
	assert_int_equal(mm.max_gpa, 0x180000000);
	assert_int_equal(mm.bad_index, -1);
	assert_int_equal(memmap_ram_bytes(&mm),
			 0xa0000 + (CS_START - 0x100000) + (0x80000000 - CS_END) + 0x80000000);
	assert_true(memmap_is_guest_ram(&mm, 0x100000, 0x1000));
	assert_false(memmap_is_guest_ram(&mm, CS_START, 0x1000));
	assert_false(memmap_is_guest_ram(&mm, CS_START - 0x1000, 0x2000));
	assert_false(memmap_is_guest_ram(&mm, 0xb0000000, 0x1000));
	assert_false(memmap_is_guest_ram(&mm, ~0ULL - 5, 0x1000));
	assert_string_equal(memmap_strerror(MEMMAP_OK), "ok");
}

/* What QEMU gives an IGVM guest (its e820 table, KVM's reserved identity
 * map first, in QEMU's order): the legacy window is not RAM (issue 16 item 2). */
static void test_qemu_igvm_map(void **state)
{
	static const struct hvm_memmap_table_entry qemu[] = {
	    {0xfeffc000, 0x4000, 2, 0}, {0x0, 0x80000000, 1, 0}, {0x100000000, 0x80000000, 1, 0}};
	assert_int_equal(memmap_build(&mm, qemu, ARRAY_SIZE(qemu), CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.nr_ram, 4);
	assert_int_equal(mm.ram[0].start, 0);
	assert_int_equal(mm.ram[0].end, MEMMAP_LEGACY_START);
	assert_int_equal(mm.ram[1].start, MEMMAP_LEGACY_END);
	assert_int_equal(mm.ram[1].end, CS_START);
	assert_false(memmap_is_guest_ram(&mm, 0xA0000, 0x1000));
	assert_false(memmap_is_guest_ram(&mm, 0xFF000, 0x1000));
	assert_true(memmap_is_guest_ram(&mm, 0x9F000, 0x1000));
	/* what was left out, for the dashboard */
	assert_int_equal(mm.legacy_left_out.start, MEMMAP_LEGACY_START);
	assert_int_equal(mm.legacy_left_out.end, MEMMAP_LEGACY_END);
	/* an entry inside the window, or one that only starts in it */
	static const struct hvm_memmap_table_entry in[] = {{0xC0000, 0x10000, 1, 0},
							   {0xF0000, 0x7ff10000, 1, 0}};
	assert_int_equal(memmap_build(&mm, in, ARRAY_SIZE(in), CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.nr_ram, 2);
	assert_int_equal(mm.ram[0].start, MEMMAP_LEGACY_END);
	assert_int_equal(mm.legacy_left_out.start, 0xC0000);
	assert_int_equal(mm.legacy_left_out.end, MEMMAP_LEGACY_END);
}

static void test_unsorted_and_carve_edges(void **state)
{
	/* reversed input; csvsm at the very start of a RAM entry */
	struct hvm_memmap_table_entry e[] = {
	    {0x100000000, 0x80000000, 1, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	    {0x0, 0x9fc00, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, e, 3, 0x100000, 0x200000), MEMMAP_OK);
	assert_int_equal(mm.entries[0].addr, 0);
	assert_int_equal(mm.entries[2].addr, 0x100000000);
	assert_int_equal(mm.nr_ram, 3);
	assert_int_equal(mm.ram[1].start, 0x200000);
	/* csvsm is the whole entry: the entry disappears from ram[] */
	assert_int_equal(memmap_build(&mm, e, 3, 0x100000000, 0x180000000), MEMMAP_OK);
	assert_int_equal(mm.nr_ram, 2);
	assert_int_equal(mm.ram[1].end, 0x80000000);
	assert_int_equal(mm.max_gpa, 0x180000000);
	/* adjacent RAM entries are merged into one range */
	struct hvm_memmap_table_entry adj[] = {
	    {0x200000, 0x200000, 1, 0},
	    {0x400000, 0x200000, 1, 0},
	    {0x10000000, 0x100000, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, adj, 3, 0x10000000, 0x10100000), MEMMAP_OK);
	assert_int_equal(mm.nr_ram, 1);
	assert_int_equal(mm.ram[0].start, 0x200000);
	assert_int_equal(mm.ram[0].end, 0x600000);
}

/* A partial last page is RAM only when reserved entries cover the rest. */
static void test_partial_last_page(void **state)
{
	struct hvm_memmap_table_entry bare[] = {
	    {0x0, 0x9fc00, 1, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, bare, 2, CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.ram[0].end, 0x9f000);

	/* two reserved entries together cover the tail */
	struct hvm_memmap_table_entry split[] = {
	    {0x0, 0x9fc00, 1, 0},
	    {0x9fc00, 0x200, 2, 0},
	    {0x9fe00, 0x200, 2, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, split, 4, CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.ram[0].end, 0xa0000);

	/* a gap in the cover, or a cover of another type: whole pages only */
	struct hvm_memmap_table_entry gap[] = {
	    {0x0, 0x9fc00, 1, 0},
	    {0x9fc00, 0x200, 2, 0},
	    {0x9fe10, 0x1f0, 2, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, gap, 4, CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.ram[0].end, 0x9f000);
	struct hvm_memmap_table_entry acpi[] = {
	    {0x0, 0x9fc00, 1, 0},
	    {0x9fc00, 0x400, 3, 0},
	    {0x100000, 0x7ff00000, 1, 0},
	};
	assert_int_equal(memmap_build(&mm, acpi, 3, CS_START, CS_END), MEMMAP_OK);
	assert_int_equal(mm.ram[0].end, 0x9f000);
}

/* RAM less the ranges an SNP launch validated (src/snp_boot.c pre-acceptance list). */
static void test_subtract(void **state)
{
	const struct mem_range ram[] = {
	    {0x0, 0xa0000}, {0x100000, 0x80000000}, {0x100000000, 0x180000000}};
	/* unsorted, overlapping, touching, outside RAM, empty, covering a whole range */
	const struct mem_range holes[] = {{0x809000, 0x80a000},	    {0x800000, 0x809000},
					  {0x80d000, 0x810000},	    {0x80e000, 0x820000},
					  {0xfc000000, 0xfe000000}, {0x5000, 0x5000},
					  {0x0, 0xa0000},	    {0x7ffff000, 0x80001000}};
	struct mem_range out[8];
	int n = mem_ranges_subtract(ram, 3, holes, ARRAY_SIZE(holes), out, 8);
	assert_int_equal(n, 4);
	assert_int_equal(out[0].start, 0x100000);
	assert_int_equal(out[0].end, 0x800000);
	assert_int_equal(out[1].start, 0x80a000);
	assert_int_equal(out[1].end, 0x80d000);
	assert_int_equal(out[2].start, 0x820000);
	assert_int_equal(out[2].end, 0x7ffff000);
	assert_int_equal(out[3].start, 0x100000000);
	assert_int_equal(out[3].end, 0x180000000);
	/* no holes: the input; too small an output: -1 */
	assert_int_equal(mem_ranges_subtract(ram, 3, holes, 0, out, 8), 3);
	assert_int_equal(out[1].end, 0x80000000);
	assert_int_equal(mem_ranges_subtract(ram, 3, holes, ARRAY_SIZE(holes), out, 3), -1);
}

static void test_guest_e820(void **state)
{
	struct hvm_memmap_table_entry out[16];

	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_START, CS_END), MEMMAP_OK);
	int n = memmap_guest_e820(&mm, out, 16);
	assert_int_equal(n, 10);
	assert_int_equal(out[0].size, 0x9fc00); /* passed through untrimmed */
	assert_int_equal(out[3].addr, 0x100000);
	assert_int_equal(out[3].size, CS_START - 0x100000);
	assert_int_equal(out[3].type, 1);
	assert_int_equal(out[4].addr, CS_START);
	assert_int_equal(out[4].size, CS_END - CS_START);
	assert_int_equal(out[4].type, MEMMAP_TYPE_RESERVED);
	assert_int_equal(out[5].addr, CS_END);
	assert_int_equal(out[5].size, 0x80000000 - CS_END);
	assert_int_equal(out[5].type, 1);
	assert_int_equal(out[9].addr, 0x100000000);
	for (int i = 1; i < n; i++)
		assert_true(out[i - 1].addr + out[i - 1].size <= out[i].addr);
	assert_int_equal(memmap_guest_e820(&mm, out, 9), -1);
}

static void expect_refusal(const struct hvm_memmap_table_entry *e, unsigned n, int err, int idx)
{
	assert_int_equal(memmap_build(&mm, e, n, CS_START, CS_END), err);
	assert_int_equal(mm.bad_index, idx);
	assert_int_equal(mm.nr_ram, 0);
	assert_true(strlen(memmap_strerror(err)) > 5);
}

static void test_refusals(void **state)
{
	struct hvm_memmap_table_entry e[MEMMAP_MAX_ENTRIES + 1];

	/* RAM overlapping RAM, and RAM overlapping a reserved entry */
	struct hvm_memmap_table_entry ov1[] = {{0x0, 0x80000000, 1, 0},
					       {0x7ff00000, 0x200000, 1, 0}};
	expect_refusal(ov1, 2, MEMMAP_ERR_OVERLAP, 1);
	struct hvm_memmap_table_entry ov2[] = {{0x0, 0x80000000, 1, 0}, {0x5000000, 0x1000, 2, 0}};
	expect_refusal(ov2, 2, MEMMAP_ERR_OVERLAP, 1);
	/* overlapping non-RAM entries change nothing csvsm accepts: allowed */
	struct hvm_memmap_table_entry ov3[] = {
	    {0x0, 0x80000000, 1, 0}, {0xb0000000, 0x1000000, 2, 0}, {0xb0800000, 0x1000000, 4, 0}};
	assert_int_equal(memmap_build(&mm, ov3, 3, CS_START, CS_END), MEMMAP_OK);
	/* RAM not 4K aligned */
	struct hvm_memmap_table_entry un[] = {{0x0, 0x80000000, 1, 0},
					      {0x100000800, 0x1000000, 1, 0}};
	expect_refusal(un, 2, MEMMAP_ERR_UNALIGNED, 1);
	/* the map claims csvsm's memory is reserved */
	struct hvm_memmap_table_entry cov[] = {
	    {0x0, CS_START, 1, 0}, {CS_START, 0x4000000, 2, 0}, {0x8000000, 0x8000000, 1, 0}};
	expect_refusal(cov, 3, MEMMAP_ERR_CSVSM, -1);
	/* ... or does not mention it, or splits it over two RAM entries */
	struct hvm_memmap_table_entry none[] = {{0x100000000, 0x80000000, 1, 0}};
	expect_refusal(none, 1, MEMMAP_ERR_CSVSM, -1);
	struct hvm_memmap_table_entry split[] = {{0x0, 0x5000000, 1, 0},
						 {0x5000000, 0x5000000, 1, 0}};
	expect_refusal(split, 2, MEMMAP_ERR_CSVSM, -1);
	/* RAM ending inside csvsm (partial page does not count) */
	struct hvm_memmap_table_entry part[] = {{0x0, CS_END - 1, 1, 0}};
	expect_refusal(part, 1, MEMMAP_ERR_CSVSM, -1);
	/* too many */
	for (unsigned i = 0; i <= MEMMAP_MAX_ENTRIES; i++)
		e[i] =
		    (struct hvm_memmap_table_entry){0x100000000ULL + i * 0x200000ULL, 0x1000, 2, 0};
	e[0] = (struct hvm_memmap_table_entry){0, 0x80000000, 1, 0};
	expect_refusal(e, MEMMAP_MAX_ENTRIES + 1, MEMMAP_ERR_TOO_MANY, MEMMAP_MAX_ENTRIES);
	assert_int_equal(memmap_build(&mm, e, MEMMAP_MAX_ENTRIES, CS_START, CS_END), MEMMAP_OK);
	/* zero size, any type */
	struct hvm_memmap_table_entry z[] = {{0x0, 0x80000000, 1, 0}, {0xc0000000, 0, 2, 0}};
	expect_refusal(z, 2, MEMMAP_ERR_ZERO_SIZE, 1);
	/* wraparound, and beyond 2^52 */
	struct hvm_memmap_table_entry w[] = {{0x0, 0x80000000, 1, 0},
					     {0xfffffffffffff000ULL, 0x2000, 1, 0}};
	expect_refusal(w, 2, MEMMAP_ERR_WRAP, 1);
	struct hvm_memmap_table_entry big[] = {{0x0, 0x80000000, 1, 0}, {1ULL << 52, 0x1000, 2, 0}};
	expect_refusal(big, 2, MEMMAP_ERR_WRAP, 1);
	/* only csvsm's RAM */
	struct hvm_memmap_table_entry only[] = {{CS_START, CS_END - CS_START, 1, 0}};
	expect_refusal(only, 1, MEMMAP_ERR_NO_RAM, -1);
	/* caller bugs */
	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_END, CS_START), MEMMAP_ERR_ARG);
	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_START + 1, CS_END),
			 MEMMAP_ERR_ARG);
	assert_int_equal(memmap_build(&mm, NULL, 3, CS_START, CS_END), MEMMAP_ERR_ARG);
	assert_int_equal(memmap_build(&mm, q35, 0, CS_START, CS_END), MEMMAP_ERR_CSVSM);
}

static void test_cmdline_get(void **state)
{
	const char *v;
	size_t n;
	const char *cl = "console=ttyS0 csvsm.x=1 csvsm.xy=2\tcsvsm.x=3 csvsm.z=";

	assert_true(cmdline_get(cl, strlen(cl), "csvsm.x", &v, &n));
	assert_int_equal(n, 1);
	assert_memory_equal(v, "3", 1); /* the last one wins */
	assert_true(cmdline_get(cl, strlen(cl), "csvsm.xy", &v, &n));
	assert_memory_equal(v, "2", 1);
	assert_false(cmdline_get(cl, strlen(cl), "csvsm", &v, &n));
	assert_true(cmdline_get(cl, strlen(cl), "csvsm.z", &v, &n)); /* present, empty */
	assert_int_equal(n, 0);
	/* bounded: the length cuts the second csvsm.x off */
	assert_true(cmdline_get(cl, 24, "csvsm.x", &v, &n));
	assert_memory_equal(v, "1", 1);
	assert_true(cmdline_get(cl, 22, "csvsm.x", &v, &n));
	assert_int_equal(n, 0);
	assert_false(cmdline_get(cl, 21, "csvsm.x", &v, &n));

	const char *h = "0x1fG", *end = h + strlen(h);
	uint64_t x;
	assert_int_equal(cmdline_parse_hex(&h, end, &x), 0);
	assert_int_equal(x, 0x1f);
	assert_int_equal(*h, 'G');
	h = "12345678123456781";
	assert_int_equal(cmdline_parse_hex(&h, h + strlen(h), &x), -1); /* 17 digits */
	h = "0x";
	assert_int_equal(cmdline_parse_hex(&h, h + 2, &x), -1);
	h = "987";
	assert_int_equal(cmdline_parse_dec(&h, h + 2, &x), 0);
	assert_int_equal(x, 98);
}

static void test_print(void **state)
{
	/* memmap_print output is what tests/tools/accept_plan.c parses */
	char line[128];
	snprintf(line, sizeof(line), MEMMAP_LINE_RAM, 0x100000ULL, 0x4000000ULL);
	assert_string_equal(line, "csvsm: memmap: ram start=0x100000 end=0x4000000\n");
	assert_int_equal(memmap_build(&mm, q35, ARRAY_SIZE(q35), CS_START, CS_END), MEMMAP_OK);
	memmap_print(&mm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_q35_good),
	    cmocka_unit_test(test_qemu_igvm_map),
	    cmocka_unit_test(test_unsorted_and_carve_edges),
	    cmocka_unit_test(test_partial_last_page),
	    cmocka_unit_test(test_subtract),
	    cmocka_unit_test(test_guest_e820),
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_cmdline_get),
	    cmocka_unit_test(test_print),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
