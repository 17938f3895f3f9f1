/*
 * Test evidence from csvsm's attestation code and the PSP model
 * (tests/kbs/evgen.h). Guest memory is a malloc'd range behind a memmap,
 * identity-mapped as in the image, exactly as tests/unit/test_attest_proto.c
 * sets it up; the PSP model answers the guest requests with the test VCEK.
 */
#include "tests/kbs/evgen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <mbedtls/sha512.h>

#include "attest/attest_proto.h"
#include "attest/guest_req.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "snp/ghcb.h"
#include "snp/svsm.h"
#include "tests/snpm/model/psp.h"

#define NPAGES 16
static uint8_t *mem;
static struct memmap mm;
static struct ghcb ghcb_page;
static struct snp_guest_msg req_page __attribute__((aligned(4096)));
static struct snp_guest_msg resp_page __attribute__((aligned(4096)));
static uint8_t data_pages[8 * 4096] __attribute__((aligned(4096)));
static uint8_t blob[PSP_MODEL_CERTS_MAX + 4096];
static struct psp_model_keys keys;

static void ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	psp_model_ghcb_exit(cpu, g);
}
static const struct platform_ops ops = {.name = "kbs-evgen", .ghcb_call = ghcb_call};
const struct platform_ops *platform = &ops;

static int rng(void *ctx, unsigned char *buf, size_t len)
{
	(void)ctx;
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static gpa_t pg(unsigned i)
{
	return (gpa_t)(uintptr_t)(mem + (size_t)i * 4096);
}

int evgen_init(const char *dir)
{
	char p[4096];
	struct hvm_memmap_table_entry e = {0};
	snprintf(p, sizeof(p), "%s/psp-keys.bin", dir);
	FILE *f = fopen(p, "rb");
	size_t n = f ? fread(blob, 1, sizeof(blob), f) : 0;
	if (f)
		fclose(f);
	if (!n || psp_model_keys_parse(blob, n, &keys))
		return -1;
	mem = aligned_alloc(4096, NPAGES * 4096);
	if (!mem)
		return -1;
	memset(mem, 0, NPAGES * 4096);
	e.addr = pg(0);
	e.size = NPAGES * 4096;
	e.type = MEMMAP_TYPE_RAM;
	if (memmap_build(&mm, &e, 1, pg(NPAGES - 2), pg(NPAGES)) != MEMMAP_OK)
		return -1;
	guest_mem_init(&mm);
	percpus[0].ghcb = &ghcb_page;
	return 0;
}

/* A fresh PSP and VMPCK0 for these launch parameters. */
static int launch(const struct evgen_opts *o)
{
	uint8_t vmpck[32];
	if (rng(NULL, vmpck, 32) ||
	    psp_model_init(vmpck, &keys, o->measurement,
			   o->policy ? o->policy : PSP_MODEL_DEFAULT_POLICY, rng, NULL))
		return -1;
	psp_model_set_shared_pages((gpa_t)(uintptr_t)&req_page, (gpa_t)(uintptr_t)&resp_page,
				   (gpa_t)(uintptr_t)data_pages, 8);
	guest_req_disable();
	if (guest_req_init(vmpck, &req_page, (gpa_t)(uintptr_t)&req_page, &resp_page,
			   (gpa_t)(uintptr_t)&resp_page, data_pages, (gpa_t)(uintptr_t)data_pages,
			   8))
		return -1;
	attest_set_services(o->ek, o->ek_len, NULL, 0);
	return 0;
}

int evgen_snp(const struct evgen_opts *o, const uint8_t data[64], struct evgen_out *out)
{
	memset(out, 0, sizeof(*out));
	if (launch(o))
		return -1;
	int rc = guest_req_report(&percpus[0], data, o->vmpl, out->report, out->certs,
				  sizeof(out->certs), &out->certs_len);
	return rc ? -1 : 0;
}

int evgen_svsm(const struct evgen_opts *o, const uint8_t nonce[64], struct evgen_out *out)
{
	memset(out, 0, sizeof(*out));
	if (launch(o))
		return -1;
	if (o->vmpl) {
		/* A guest at VMPL o->vmpl forging the SVSM binding with its own report */
		uint8_t rd[64];
		mbedtls_sha512_context c;
		out->manifest_len = manifest_build(out->manifest, sizeof(out->manifest));
		mbedtls_sha512_init(&c);
		mbedtls_sha512_starts_ret(&c, 0);
		mbedtls_sha512_update_ret(&c, nonce, 64);
		mbedtls_sha512_update_ret(&c, out->manifest, out->manifest_len);
		mbedtls_sha512_finish_ret(&c, rd);
		mbedtls_sha512_free(&c);
		return guest_req_report(&percpus[0], rd, o->vmpl, out->report, out->certs,
					sizeof(out->certs), &out->certs_len)
			   ? -1
			   : 0;
	}
	/* SVSM_ATTEST_SERVICES as a guest calls it (SVSM spec 58019 §7; Linux svsm.c) */
	struct attest_services_op *op = (struct attest_services_op *)(mem + 4096 + 8);
	uint8_t *nb = mem + 2 * 4096 + 100;
	memset(op, 0, sizeof(*op));
	memcpy(nb, nonce, 64);
	op->report_gpa = pg(3);
	op->report_size = 4096;
	op->nonce_gpa = (gpa_t)(uintptr_t)nb;
	op->nonce_size = 64;
	op->manifest_gpa = pg(4);
	op->manifest_size = 2 * 4096;
	op->certs_gpa = pg(6);
	op->certs_size = 6 * 4096;
	struct svsm_regs r = {.rcx = (gpa_t)(uintptr_t)op};
	uint64_t rc = attest_protocol_call(NULL, SVSM_ATTEST_SERVICES, &r);
	if (rc != SVSM_SUCCESS || r.r8 != 1184 || r.rcx > sizeof(out->manifest) ||
	    r.rdx > sizeof(out->certs))
		return -1;
	memcpy(out->report, mem + 3 * 4096, 1184);
	out->manifest_len = r.rcx;
	memcpy(out->manifest, mem + 4 * 4096, r.rcx);
	out->certs_len = r.rdx;
	memcpy(out->certs, mem + 6 * 4096, r.rdx);
	return 0;
}
