/*
 * libFuzzer target for the attestation protocol request decoder and its
 * action path (attest/attest_proto.c): the input is a call ID byte, an
 * Attest (Single) Service operation and a nonce, written into host "guest
 * memory" behind a memmap. GPA fields whose top bit is clear are folded
 * into the guest range so that the fuzzer reaches the deeper checks; the
 * others stay wild. A request that passes every check goes all the way to
 * the simulated PSP (a real signed report).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "attest/attest_proto.h"
#include "attest/guest_req.h"
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"

#define NPAGES 16
static uint8_t mem[NPAGES * 4096] __attribute__((aligned(4096)));
static struct memmap mm;
static struct ghcb ghcb_page;
static struct snp_guest_msg req_page __attribute__((aligned(4096))),
    resp_page __attribute__((aligned(4096)));
static uint8_t data_pages[2 * 4096] __attribute__((aligned(4096)));

static void fuzz_ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	psp_model_ghcb_exit(cpu, g);
}
static const struct platform_ops fuzz_ops = {.name = "fuzz", .ghcb_call = fuzz_ghcb_call};
const struct platform_ops *platform = &fuzz_ops;

static int rng(void *ctx, unsigned char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) /* deterministic: reproducible runs */
		buf[i] = (uint8_t)(i * 131 + 7 + (uintptr_t)ctx);
	return 0;
}

static uint8_t vmpck[32] = {1, 2, 3};
static const uint8_t ek[300] = {0, 1, 0, 0xB};
static const uint8_t evlog[500] = {3};

static void init_once(void)
{
	static int done;
	struct hvm_memmap_table_entry e = {.addr = (uintptr_t)mem, .size = sizeof(mem), .type = 1};
	struct psp_model_keys k = {.reported_tcb = 0xD115000000000004ull,
				   .cpuid_fam = 0x19,
				   .cpuid_mod = 1,
				   .cpuid_step = 1};

	if (done)
		return;
	done = 1;
	/* A fixed valid P-384 scalar (small: fine for a test key). */
	k.vcek_d[47] = 0x2A;
	if (memmap_build(&mm, &e, 1, (uintptr_t)mem + (NPAGES - 2) * 4096,
			 (uintptr_t)mem + NPAGES * 4096) != MEMMAP_OK)
		abort();
	guest_mem_init(&mm);
	percpus[0].ghcb = &ghcb_page;
	uint8_t m[48] = {0};
	if (psp_model_init(vmpck, &k, m, PSP_MODEL_DEFAULT_POLICY, rng, NULL))
		abort();
	attest_set_services(ek, sizeof(ek), evlog, sizeof(evlog));
}

static uint64_t fold(uint64_t v)
{
	if (v >> 63)
		return v << 1; /* wild */
	return (uintptr_t)mem + (v % (sizeof(mem) + 8192));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct attest_single_op op;
	struct svsm_regs r;

	init_once();
	/* A fresh channel each run so the PSP's sequence and ours stay in step. */
	uint8_t m[48] = {0};
	struct psp_model_keys k = {.reported_tcb = 1, .cpuid_fam = 0x19, .cpuid_mod = 1};
	k.vcek_d[47] = 0x2A;
	if (psp_model_init(vmpck, &k, m, PSP_MODEL_DEFAULT_POLICY, rng, NULL) ||
	    guest_req_init(vmpck, &req_page, (uintptr_t)&req_page, &resp_page,
			   (uintptr_t)&resp_page, data_pages, (uintptr_t)data_pages, 2))
		abort();
	psp_model_set_shared_pages((uintptr_t)&req_page, (uintptr_t)&resp_page,
				   (uintptr_t)data_pages, 2);
	if (size < 1 + 8)
		return 0;
	uint32_t call_id = data[0] & 3;
	uint64_t off;
	memcpy(&off, data + 1, 8);
	data += 9;
	size -= 9;
	memset(&op, 0, sizeof(op));
	memcpy(&op, data, size < sizeof(op) ? size : sizeof(op));
	op.base.report_gpa = fold(op.base.report_gpa);
	op.base.nonce_gpa = fold(op.base.nonce_gpa);
	op.base.manifest_gpa = fold(op.base.manifest_gpa);
	op.base.certs_gpa = fold(op.base.certs_gpa);
	memset(mem, 0, sizeof(mem));
	/* The operation somewhere in guest memory (or outside it). */
	gpa_t gpa = fold(off);
	if (gpa >= (uintptr_t)mem && gpa - (uintptr_t)mem <= sizeof(mem) - sizeof(op))
		memcpy((void *)(uintptr_t)gpa, &op, sizeof(op));
	/* Remaining bytes: nonce material at the start of page 1. */
	if (size > sizeof(op))
		memcpy(mem + 4096, data + sizeof(op),
		       size - sizeof(op) < 4096 ? size - sizeof(op) : 4096);
	r = (struct svsm_regs){.rcx = gpa};
	uint64_t rc = attest_protocol_call(NULL, call_id, &r);
	if (getenv("FUZZ_ATTEST_DEBUG"))
		fprintf(stderr, "call %u rc 0x%llx enabled %d refused %llu served %llu\n", call_id,
			(unsigned long long)rc, guest_req_enabled(),
			(unsigned long long)psp_model_refused(),
			(unsigned long long)psp_model_served());
	if (rc != SVSM_SUCCESS && rc != SVSM_ERR_INVALID_PARAMETER &&
	    rc != SVSM_ERR_INVALID_ADDRESS && rc != SVSM_ERR_UNSUPPORTED_PROTOCOL &&
	    rc != SVSM_ERR_UNSUPPORTED_CALL)
		__builtin_trap(); /* INVALID_REQUEST/BUSY mean the PSP channel broke: a bug here */
	if (rc == SVSM_SUCCESS && r.r8 != ATTEST_REPORT_SIZE)
		abort();
	return 0;
}
