/*
 * SVSM vTPM protocol (2) glue (tpm/vtpm_svsm.c) on the real libtpms, with
 * guest memory modelled by a host memmap over an aligned_alloc'd buffer
 * (guest addresses are identity-mapped host pointers on the host build):
 * QUERY outputs, unknown calls, the protocol table, commands through a gPA
 * (aligned and not), every bad address (null, csvsm's region, straddling
 * it, outside RAM, wrapping, protected pages) leaving guest memory
 * untouched, and rejected requests not written back. Also checks the
 * image's mbedTLS hash backend (tpm/hash_mbedtls.c, compiled in here under
 * other names) against the host's OpenSSL one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* The image's hash backend under other names, next to the host's hash_openssl.c. */
#define hash_sha256 mbed_hash_sha256
#define hash_sha384 mbed_hash_sha384
#include "../../tpm/hash_mbedtls.c"
#undef hash_sha256
#undef hash_sha384
void hash_sha256(const void *data, size_t len, uint8_t out[HASH_SHA256_SIZE]);
void hash_sha384(const void *data, size_t len, uint8_t out[HASH_SHA384_SIZE]);

#include "arch/x86/pvh.h"
#include "base/secret.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"
#include "tpm/vtpm_svsm.h"

#define NPAGES 16 /* pages 0..13 guest RAM, 14..15 "csvsm" */
static uint8_t *mem;
static struct memmap mm;
static struct guest_vcpu gv = {.id = 0, .vmpl = 2};

static gpa_t pg(unsigned i)
{
	return (gpa_t)(uintptr_t)(mem + (size_t)i * 4096);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static const uint8_t get_random[12] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x7B, 0, 16};

/* Linux svsm_vtpm_cmd_request_fill() into guest memory at gpa. */
static void fill(gpa_t gpa, uint32_t cmd, uint8_t loc, uint32_t size, const void *tpm, size_t n)
{
	uint8_t *p = (uint8_t *)(uintptr_t)gpa;
	memset(p, 0xA5, VTPM_PROTO_PAGE_SIZE);
	put_le32(p, cmd);
	p[4] = loc;
	put_le32(p + 5, size);
	if (n)
		memcpy(p + 9, tpm, n);
}

static uint64_t call(uint32_t id, uint64_t rcx, struct svsm_regs *out)
{
	struct svsm_regs r = {.rax = ((uint64_t)SVSM_PROTOCOL_VTPM << 32) | id,
			      .rcx = rcx,
			      .rdx = 0x1234,
			      .r8 = 0x5678,
			      .r9 = 0x9abc};
	uint64_t rc = vtpm_svsm_protocol.call(&gv, id, &r);
	if (out)
		*out = r;
	return rc;
}

static int setup(void **state)
{
	struct hvm_memmap_table_entry e = {0};

	mem = aligned_alloc(4096, NPAGES * 4096);
	assert_non_null(mem);
	memset(mem, 0, NPAGES * 4096);
	e.addr = pg(0);
	e.size = NPAGES * 4096;
	e.type = MEMMAP_TYPE_RAM;
	assert_int_equal(memmap_build(&mm, &e, 1, pg(NPAGES - 2), pg(NPAGES)), MEMMAP_OK);
	guest_mem_init(&mm);
	vtpm_destroy();
	return vtpm_init(NULL);
}

static int teardown(void **state)
{
	vtpm_destroy();
	free(mem);
	return 0;
}

static void protocol_table(void **state)
{
	assert_int_equal(vtpm_svsm_protocol.id, SVSM_PROTOCOL_VTPM);
	assert_int_equal(vtpm_svsm_protocol.min_version, 1);
	assert_int_equal(vtpm_svsm_protocol.max_version, 1);
	assert_ptr_equal(vtpm_svsm_protocol.call, vtpm_svsm_call);
}

static void query(void **state)
{
	struct svsm_regs r;
	assert_int_equal(call(SVSM_VTPM_QUERY, 0xdead, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, 0x100); /* Linux tpm_svsm probes BIT(8), TPM_SEND_COMMAND */
	assert_int_equal(r.rdx, 0);
	assert_int_equal(r.r8, 0x5678); /* nothing else touched */
	assert_int_equal(r.r9, 0x9abc);
}

static void unknown_calls(void **state)
{
	static const uint32_t ids[] = {2, 3, 0x100, 0x7FFFFFFF, 0xFFFFFFFF};
	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct svsm_regs r;
		fill(pg(1), VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
		assert_int_equal(call(ids[i], pg(1), &r), SVSM_ERR_UNSUPPORTED_CALL);
		assert_int_equal(r.rcx, pg(1));
		assert_int_equal(r.rdx, 0x1234);
		assert_int_equal(le32(mem + 4096), VTPM_PLAT_SEND_COMMAND); /* page untouched */
	}
}

static void check_random_response(const uint8_t *p)
{
	assert_int_equal(le32(p), 10 + 2 + 16);
	assert_int_equal(be32(p + 4 + 2), 10 + 2 + 16);
	assert_int_equal(be32(p + 4 + 6), TPM_RC_SUCCESS);
	assert_int_equal(p[4 + 10] << 8 | p[4 + 11], 16);
}

static void cmd_aligned_and_unaligned(void **state)
{
	struct vtpm_svsm_stats s0, s1;
	vtpm_svsm_stats(&s0);
	fill(pg(2), VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(2), NULL), SVSM_SUCCESS);
	check_random_response(mem + 2 * 4096);

	/* edk2 Tpm2Svsm passes a static 4 KiB array: not page-aligned (coconut accepts it). */
	gpa_t odd = pg(4) + 0x123;
	fill(odd, VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
	assert_int_equal(call(SVSM_VTPM_CMD, odd, NULL), SVSM_SUCCESS);
	check_random_response((const uint8_t *)(uintptr_t)odd);
	/* The buffer that ends exactly where csvsm's region starts is still the guest's. */
	gpa_t last = pg(NPAGES - 2) - VTPM_PROTO_PAGE_SIZE;
	fill(last, VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
	assert_int_equal(call(SVSM_VTPM_CMD, last, NULL), SVSM_SUCCESS);
	check_random_response((const uint8_t *)(uintptr_t)last);
	vtpm_svsm_stats(&s1);
	assert_int_equal(s1.cmds - s0.cmds, 3);
}

static void tpm_error_is_success(void **state)
{
	/* TPM2_Startup(CLEAR) again: csvsm already sent it, so TPM_RC_INITIALIZE in the response.
	 */
	static const uint8_t startup[12] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x44, 0, 0};
	fill(pg(3), VTPM_PLAT_SEND_COMMAND, 0, 12, startup, 12);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(3), NULL), SVSM_SUCCESS);
	assert_int_equal(le32(mem + 3 * 4096), 10);
	assert_int_equal(be32(mem + 3 * 4096 + 4 + 6), TPM_RC_INITIALIZE);
}

/* Fills every guest page with a pattern; true if no guest byte changed since. */
static void pattern(void)
{
	for (size_t i = 0; i < (NPAGES - 2) * 4096; i++)
		mem[i] = (uint8_t)(i * 13 + 7);
}
static bool pattern_intact(void)
{
	for (size_t i = 0; i < (NPAGES - 2) * 4096; i++)
		if (mem[i] != (uint8_t)(i * 13 + 7))
			return false;
	return true;
}

static void bad_addresses(void **state)
{
	struct vtpm_svsm_stats s0, s1;
	vtpm_svsm_stats(&s0);
	pattern();
	/* coconut: a null buffer is a bad parameter. */
	assert_int_equal(call(SVSM_VTPM_CMD, 0, NULL), SVSM_ERR_INVALID_PARAMETER);
	/* csvsm's own region, and a buffer straddling into it by one byte. */
	assert_int_equal(call(SVSM_VTPM_CMD, pg(NPAGES - 2), NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(NPAGES - 2) - VTPM_PROTO_PAGE_SIZE + 1, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	/* Not RAM at all: before the map, after it, and a range that wraps around 2^64. */
	assert_int_equal(call(SVSM_VTPM_CMD, pg(0) - 4096, NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(NPAGES), NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(call(SVSM_VTPM_CMD, 0xFFFFFFFFFFFFF000ULL, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(call(SVSM_VTPM_CMD, 0xFFFFFFFFFFFFFFFFULL, NULL),
			 SVSM_ERR_INVALID_ADDRESS);
	/* A page csvsm protects (a VMSA, a calling area in use), hit by an unaligned buffer. */
	assert_int_equal(guest_mem_protect(pg(6)), 0);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(6), NULL), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(5) + 8, NULL), SVSM_ERR_INVALID_ADDRESS);
	guest_mem_unprotect(pg(6));
	assert_true(pattern_intact());
	vtpm_svsm_stats(&s1);
	assert_int_equal(s1.rejected - s0.rejected, 9);
	assert_int_equal(s1.cmds, s0.cmds);
}

static void rejected_request_not_written_back(void **state)
{
	static const struct {
		uint32_t cmd;
		uint8_t loc;
		uint32_t size;
		uint64_t rc;
	} cases[] = {
	    {VTPM_PLAT_SEND_COMMAND, 1, 12, SVSM_ERR_INVALID_PARAMETER},
	    {VTPM_PLAT_SEND_COMMAND, 0, 4088, SVSM_ERR_INVALID_PARAMETER},
	    {VTPM_PLAT_SEND_COMMAND, 0, 0xFFFFFFFF, SVSM_ERR_INVALID_PARAMETER},
	    {VTPM_PLAT_POWER_OFF, 0, 0, SVSM_ERR_UNSUPPORTED_CALL},
	    {99, 0, 12, SVSM_ERR_INVALID_PARAMETER},
	};
	static uint8_t before[VTPM_PROTO_PAGE_SIZE];
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fill(pg(7), cases[i].cmd, cases[i].loc, cases[i].size, get_random, 12);
		memcpy(before, mem + 7 * 4096, sizeof(before));
		assert_int_equal(call(SVSM_VTPM_CMD, pg(7), NULL), cases[i].rc);
		assert_memory_equal(mem + 7 * 4096, before, sizeof(before));
	}
}

static void vtpm_down_gives_tpm_failure(void **state)
{
	vtpm_power_off();
	fill(pg(8), VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
	assert_int_equal(call(SVSM_VTPM_CMD, pg(8), NULL), SVSM_SUCCESS);
	assert_int_equal(le32(mem + 8 * 4096), 10);
	assert_int_equal(be32(mem + 8 * 4096 + 4 + 6), TPM_RC_FAILURE);
	assert_int_equal(vtpm_init(NULL), 0);
}

/*
 * Hostile review of the #HV change, finding 2: a termination wipe on another
 * vCPU (a #MC through the doorbell, a panic) while this one runs a command.
 * The command runs on libtpms state the wipe may have zeroed, so its
 * response must not reach the guest. Here the wipe is in place when the
 * check after the command looks; last in the list (the wipe zeroes the
 * registered secrets).
 */
static void no_reply_after_wipe(void **state)
{
	static uint8_t before[VTPM_PROTO_PAGE_SIZE];
	struct vtpm_svsm_stats s0, s1;
	fill(pg(9), VTPM_PLAT_SEND_COMMAND, 0, 12, get_random, 12);
	memcpy(before, mem + 9 * 4096, sizeof(before));
	vtpm_svsm_stats(&s0);
	secret_wipe_all();
	assert_true(secret_terminating());
	assert_int_not_equal(call(SVSM_VTPM_CMD, pg(9), NULL), SVSM_SUCCESS);
	assert_memory_equal(mem + 9 * 4096, before, sizeof(before));
	vtpm_svsm_stats(&s1);
	assert_int_equal(s1.rejected - s0.rejected, 1);
	assert_int_equal(s1.cmds, s0.cmds);
	secret_reset();
}

static void mbedtls_hash_matches_openssl(void **state)
{
	/* FIPS 180-2 "abc" vectors, then both backends over 1 MiB + 3 bytes of pattern. */
	static const uint8_t abc256[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea,
					   0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
					   0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c,
					   0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
	static const uint8_t abc384[48] = {
	    0xcb, 0x00, 0x75, 0x3f, 0x45, 0xa3, 0x5e, 0x8b, 0xb5, 0xa0, 0x3d, 0x69,
	    0x9a, 0xc6, 0x50, 0x07, 0x27, 0x2c, 0x32, 0xab, 0x0e, 0xde, 0xd1, 0x63,
	    0x1a, 0x8b, 0x60, 0x5a, 0x43, 0xff, 0x5b, 0xed, 0x80, 0x86, 0x07, 0x2b,
	    0xa1, 0xe7, 0xcc, 0x23, 0x58, 0xba, 0xec, 0xa1, 0x34, 0xc8, 0x25, 0xa7};
	uint8_t a[48], b[48];
	mbed_hash_sha256("abc", 3, a);
	assert_memory_equal(a, abc256, 32);
	mbed_hash_sha384("abc", 3, a);
	assert_memory_equal(a, abc384, 48);

	size_t n = (1u << 20) + 3;
	uint8_t *big = malloc(n);
	assert_non_null(big);
	for (size_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 31 + (i >> 11));
	mbed_hash_sha256(big, n, a);
	hash_sha256(big, n, b);
	assert_memory_equal(a, b, 32);
	mbed_hash_sha384(big, n, a);
	hash_sha384(big, n, b);
	assert_memory_equal(a, b, 48);
	mbed_hash_sha256(big, 0, a);
	hash_sha256(big, 0, b);
	assert_memory_equal(a, b, 32);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(protocol_table),
	    cmocka_unit_test(query),
	    cmocka_unit_test(unknown_calls),
	    cmocka_unit_test(cmd_aligned_and_unaligned),
	    cmocka_unit_test(tpm_error_is_success),
	    cmocka_unit_test(bad_addresses),
	    cmocka_unit_test(rejected_request_not_written_back),
	    cmocka_unit_test(vtpm_down_gives_tpm_failure),
	    cmocka_unit_test(mbedtls_hash_matches_openssl),
	    cmocka_unit_test(no_reply_after_wipe),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
