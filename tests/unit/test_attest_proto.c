/*
 * SVSM attestation protocol (attest/attest_proto.c, attest/manifest.c) end
 * to end on the host: guest memory is a page-aligned malloc'd range behind
 * a memmap (identity-mapped, as in the image); the report comes from
 * attest/guest_req.c through a test platform whose GHCB call reaches the
 * simulated PSP. Checks the §2 operation rules, buffer-size negotiation,
 * REPORT_DATA = SHA-512(nonce || manifest), the manifest layout and the
 * certificate table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <cmocka.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/sha512.h>

#include "attest/attest_proto.h"
#include "attest/certtable.h"
#include "attest/guest_req.h"
#include "attest/report.h"
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"

#define NPAGES 64
static uint8_t *mem; /* guest RAM: pages 0..NPAGES-3; csvsm: the last two */
static struct memmap mm;

static struct ghcb ghcb_page;
static struct snp_guest_msg req_page __aligned(4096), resp_page __aligned(4096);
static uint8_t data_pages[4 * 4096] __aligned(4096);

static void test_ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	psp_model_ghcb_exit(cpu, g);
}
static const struct platform_ops test_ops = {.name = "attest-test", .ghcb_call = test_ghcb_call};
const struct platform_ops *platform = &test_ops;

static int rng(void *ctx, unsigned char *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static const uint8_t ek[] = {0x00, 0x01, 0x00, 0x0B, 0x00, 0x03, 0x00, 0xB2, 0xEE, 0xEE};
static const uint8_t evlog[] = "an event log, 31 bytes long....";
static uint8_t certs[3][2000];
static uint8_t table[8192];
static size_t table_len;

static gpa_t pg(unsigned i)
{
	return (gpa_t)(uintptr_t)(mem + (size_t)i * 4096);
}

static int setup(void **state)
{
	struct hvm_memmap_table_entry e = {0};
	struct psp_model_keys k = {0};
	uint8_t vmpck[32];
	mbedtls_ecdsa_context key;

	mem = aligned_alloc(4096, NPAGES * 4096);
	assert_non_null(mem);
	memset(mem, 0, NPAGES * 4096);
	e.addr = pg(0);
	e.size = NPAGES * 4096;
	e.type = MEMMAP_TYPE_RAM;
	assert_int_equal(memmap_build(&mm, &e, 1, pg(NPAGES - 2), pg(NPAGES)), MEMMAP_OK);
	guest_mem_init(&mm);

	mbedtls_ecdsa_init(&key);
	assert_int_equal(mbedtls_ecdsa_genkey(&key, MBEDTLS_ECP_DP_SECP384R1, rng, NULL), 0);
	assert_int_equal(mbedtls_mpi_write_binary(&key.d, k.vcek_d, 48), 0);
	mbedtls_ecdsa_free(&key);
	k.reported_tcb = 0xD115000000000004ull;
	k.cpuid_fam = 0x19;
	k.cpuid_mod = 1;
	k.cpuid_step = 1;
	uint8_t g[3][16];
	memcpy(g[0], certtable_guid_vcek, 16);
	memcpy(g[1], certtable_guid_ask, 16);
	memcpy(g[2], certtable_guid_ark, 16);
	const void *d[3] = {certs[0], certs[1], certs[2]};
	uint32_t l[3] = {2000, 2000, 2000};
	for (int i = 0; i < 3; i++)
		memset(certs[i], 0x61 + i, 2000);
	table_len = certtable_build(table, sizeof(table), (const uint8_t(*)[16])g, d, l, 3);
	assert_int_equal(table_len, 4 * 24 + 6000);
	k.cert_table = table;
	k.cert_table_len = table_len;

	assert_int_equal(rng(NULL, vmpck, 32), 0);
	uint8_t meas[48] = {9, 9, 9};
	assert_int_equal(psp_model_init(vmpck, &k, meas, PSP_MODEL_DEFAULT_POLICY, rng, NULL), 0);
	psp_model_set_shared_pages((gpa_t)(uintptr_t)&req_page, (gpa_t)(uintptr_t)&resp_page,
				   (gpa_t)(uintptr_t)data_pages, 4);
	assert_int_equal(guest_req_init(vmpck, &req_page, (gpa_t)(uintptr_t)&req_page, &resp_page,
					(gpa_t)(uintptr_t)&resp_page, data_pages,
					(gpa_t)(uintptr_t)data_pages, 4),
			 0);
	percpus[0].ghcb = &ghcb_page;
	attest_set_services(ek, sizeof(ek), evlog, sizeof(evlog) - 1);
	return 0;
}

static int teardown(void **state)
{
	guest_req_disable();
	psp_model_reset();
	attest_set_services(NULL, 0, NULL, 0);
	free(mem);
	return 0;
}

/* Operation in page 1 at offset 8 (as Linux puts it in the CA); nonce in page 2. */
static struct attest_single_op *op;
static uint8_t *nonce;

static void fill_op(bool single)
{
	op = (struct attest_single_op *)(mem + 4096 + 8);
	nonce = mem + 2 * 4096 + 100;
	memset(op, 0, sizeof(*op));
	for (int i = 0; i < 64; i++)
		nonce[i] = (uint8_t)(i * 7);
	op->base.report_gpa = pg(4);
	op->base.report_size = 4096;
	op->base.nonce_gpa = (gpa_t)(uintptr_t)nonce;
	op->base.nonce_size = 64;
	op->base.manifest_gpa = pg(6);
	op->base.manifest_size = 4096;
	op->base.certs_gpa = pg(8);
	op->base.certs_size = 2 * 4096;
	if (single) {
		memcpy(op->guid, attest_guid_vtpm, 16);
		op->manifest_version = 0;
	}
}

static uint64_t call(uint32_t id, struct svsm_regs *r)
{
	*r = (struct svsm_regs){.rcx = (gpa_t)(uintptr_t)op, .rdx = 0xdead, .r8 = 0xdead};
	return attest_protocol_call(NULL, id, r);
}

static void check_report(const uint8_t *m, size_t mlen)
{
	struct snp_report rep;
	uint8_t rd[64];
	mbedtls_sha512_context c;

	assert_int_equal(snp_report_parse(mem + 4 * 4096, 0x4A0, &rep), SNP_REPORT_OK);
	assert_int_equal(rep.raw.vmpl, 0);
	mbedtls_sha512_init(&c);
	mbedtls_sha512_starts_ret(&c, 0);
	mbedtls_sha512_update_ret(&c, nonce, 64);
	mbedtls_sha512_update_ret(&c, m, mlen);
	mbedtls_sha512_finish_ret(&c, rd);
	mbedtls_sha512_free(&c);
	assert_memory_equal(rep.raw.report_data, rd, 64);
}

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void services_ok(void **state)
{
	struct svsm_regs r;
	const uint8_t *m = mem + 6 * 4096;
	size_t mlen = 24 + 2 * 24 + sizeof(ek) + sizeof(evlog) - 1;
	struct certtable_entry e[8];
	size_t n = 0;

	fill_op(false);
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, mlen);
	assert_int_equal(r.rdx, table_len);
	assert_int_equal(r.r8, 0x4A0);
	/* manifest: GUID table of §2 */
	assert_memory_equal(m, attest_guid_manifest, 16);
	assert_int_equal(le32(m + 16), mlen);
	assert_int_equal(le32(m + 20), 2);
	assert_memory_equal(m + 24, attest_guid_vtpm, 16);
	assert_int_equal(le32(m + 40), 72);
	assert_int_equal(le32(m + 44), sizeof(ek));
	assert_memory_equal(m + 72, ek, sizeof(ek));
	assert_memory_equal(m + 48, attest_guid_csvsm_boot, 16);
	assert_int_equal(le32(m + 64), 72 + sizeof(ek));
	assert_memory_equal(m + le32(m + 64), evlog, le32(m + 68));
	check_report(m, mlen);
	/* certificates */
	assert_int_equal(certtable_parse(mem + 8 * 4096, r.rdx, e, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(certtable_find(e, n, CERTTABLE_ARK)->data, certs[2], 2000);

	/* No certificate buffer: none written, RDX 0, a plain request. */
	fill_op(false);
	op->base.certs_size = 0;
	op->base.certs_gpa = 0x123; /* ignored when the size is 0 */
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_SUCCESS);
	assert_int_equal(r.rdx, 0);
}

static void single_service(void **state)
{
	struct svsm_regs r;

	fill_op(true);
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, sizeof(ek));
	assert_memory_equal(mem + 6 * 4096, ek, sizeof(ek)); /* raw TPMT_PUBLIC */
	check_report(ek, sizeof(ek));

	fill_op(true);
	memcpy(op->guid, attest_guid_csvsm_boot, 16);
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_SUCCESS);
	assert_int_equal(r.rcx, sizeof(evlog) - 1);

	fill_op(true);
	op->guid[0] ^= 1;
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
	assert_int_equal(r.rcx, 0);
	assert_int_equal(r.r8, 0x4A0);
	fill_op(true);
	op->manifest_version = 1;
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
	/* A service not set up is not offered. */
	attest_set_services(NULL, 0, evlog, sizeof(evlog) - 1);
	fill_op(true);
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_ERR_UNSUPPORTED_PROTOCOL);
}

static void operation_checks(void **state)
{
	struct svsm_regs r;

	fill_op(false);
	r = (struct svsm_regs){.rcx = (gpa_t)(uintptr_t)op + 4};
	assert_int_equal(attest_protocol_call(NULL, 0, &r), SVSM_ERR_INVALID_PARAMETER);
	r = (struct svsm_regs){.rcx = pg(2) - 0x20}; /* crosses a page */
	assert_int_equal(attest_protocol_call(NULL, 0, &r), SVSM_ERR_INVALID_PARAMETER);
	r = (struct svsm_regs){.rcx = pg(NPAGES - 2)}; /* csvsm's memory */
	assert_int_equal(attest_protocol_call(NULL, 0, &r), SVSM_ERR_INVALID_ADDRESS);
	r = (struct svsm_regs){.rcx = 0x1000}; /* not guest RAM */
	assert_int_equal(attest_protocol_call(NULL, 0, &r), SVSM_ERR_INVALID_ADDRESS);
	assert_int_equal(attest_protocol_call(NULL, 2, &r), SVSM_ERR_UNSUPPORTED_CALL);

	/* Reserved fields, one at a time. */
	static const size_t rsvd[] = {0x0C, 0x1A, 0x1B, 0x1F, 0x2C, 0x3C, 0x54};
	for (size_t i = 0; i < sizeof(rsvd) / sizeof(rsvd[0]); i++) {
		fill_op(true);
		((uint8_t *)op)[rsvd[i]] = 1;
		assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_ERR_INVALID_PARAMETER);
	}
	/* 0x54 is not part of the 0x40-byte Services operation. */
	fill_op(false);
	((uint8_t *)op)[0x54] = 1;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_SUCCESS);

	fill_op(false);
	op->base.nonce_size = 32;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	/* sizes also on a decode error */
	assert_int_equal(r.rcx, 24 + 2 * 24 + sizeof(ek) + sizeof(evlog) - 1);
	assert_int_equal(r.r8, 0x4A0);
	fill_op(false);
	op->base.nonce_gpa = pg(3) - 32; /* crosses a page */
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	fill_op(false);
	op->base.nonce_gpa = pg(NPAGES - 2);
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_ADDRESS);
	fill_op(false);
	op->base.report_gpa += 8;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	fill_op(false);
	op->base.manifest_gpa += 0x800;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	fill_op(false);
	op->base.certs_gpa += 16;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	fill_op(false);
	op->base.manifest_gpa = pg(NPAGES - 3); /* 4 KiB fits, 8 KiB runs into csvsm */
	op->base.manifest_size = 8192;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_ADDRESS);
	fill_op(false);
	op->base.certs_gpa = pg(NPAGES - 2);
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_ADDRESS);
	/* Nothing was requested from the PSP for any of these. */
	assert_int_equal(guest_req_last_seqno(), 2);
}

static void size_negotiation(void **state)
{
	struct svsm_regs r;
	size_t mlen = 24 + 2 * 24 + sizeof(ek) + sizeof(evlog) - 1;

	fill_op(false);
	op->base.manifest_size = 16;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(r.rcx, mlen);
	assert_int_equal(r.r8, 0x4A0);
	assert_int_equal(guest_req_last_seqno(), 0); /* refused before any request */

	fill_op(false);
	op->base.report_size = 0x49F;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(r.rcx, mlen);
	assert_int_equal(r.r8, 0x4A0);

	/* One page for a 6096-byte table: the size comes back in RDX. */
	fill_op(false);
	op->base.certs_size = 4096;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(r.rdx, table_len);
	assert_int_equal(r.rcx, mlen);
	/* The guest retries with RDX rounded up, as Linux does. */
	fill_op(false);
	op->base.certs_size = 2 * 4096;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_SUCCESS);
	assert_int_equal(r.rdx, table_len);
	/* Known now: a too-small buffer is refused before the PSP is asked. */
	uint64_t before = guest_req_last_seqno();
	fill_op(false);
	op->base.certs_size = 4096;
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(r.rdx, table_len);
	assert_int_equal(guest_req_last_seqno(), before);
	/* Single service: RCX is that service's size. */
	fill_op(true);
	op->base.manifest_size = 4;
	assert_int_equal(call(SVSM_ATTEST_SINGLE_SERVICE, &r), SVSM_ERR_INVALID_PARAMETER);
	assert_int_equal(r.rcx, sizeof(ek));
}

static void psp_channel_down(void **state)
{
	struct svsm_regs r;

	guest_req_disable();
	fill_op(false);
	assert_int_equal(call(SVSM_ATTEST_SERVICES, &r), SVSM_ERR_INVALID_REQUEST);
}

static void protocol_entry(void **state)
{
	assert_int_equal(attest_svsm_protocol.id, 1);
	assert_int_equal(attest_svsm_protocol.min_version, 1);
	assert_int_equal(attest_svsm_protocol.max_version, 1);
	assert_ptr_equal(attest_svsm_protocol.call, attest_protocol_call);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(services_ok, setup, teardown),
	    cmocka_unit_test_setup_teardown(single_service, setup, teardown),
	    cmocka_unit_test_setup_teardown(operation_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(size_negotiation, setup, teardown),
	    cmocka_unit_test_setup_teardown(psp_channel_down, setup, teardown),
	    cmocka_unit_test(protocol_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
