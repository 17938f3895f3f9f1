/*
 * SVSM attestation protocol (1): SVSM_ATTEST_SERVICES (0) and
 * SVSM_ATTEST_SINGLE_SERVICE (1), reference §2 (AMD 58019 §7; coconut
 * kernel/src/protocols/attest.rs; Linux arch/x86/coco/sev/svsm.c
 * snp_issue_svsm_attest_req and configfs-tsm, which retry with the sizes
 * returned in RCX/RDX/R8 after INVALID_PARAMETER).
 *
 * Decode, then act: attest_decode() reads the operation and the nonce once
 * into csvsm memory and checks every field and every guest range before
 * anything is requested from the PSP. The report is requested by csvsm
 * itself at VMPL0 with REPORT_DATA = SHA-512(nonce || manifest), so the
 * verifier can bind the manifest (vTPM EK, boot event log) to the report.
 */
#include <mbedtls/sha512.h>

#include "attest/attest_proto.h"
#include "attest/guest_req.h"
#include "base/percpu.h"
#include "base/string.h"
#include "mm/guest_mem.h"
#include "snp/svsm.h"

const struct svsm_protocol attest_svsm_protocol = {
    .id = SVSM_PROTOCOL_ATTEST,
    .min_version = 1,
    .max_version = 1,
    .call = attest_protocol_call,
};

static uint8_t manifest_buf[ATTEST_MANIFEST_MAX];
static uint8_t certs_buf[ATTEST_CERTS_MAX];
static uint8_t report_buf[ATTEST_REPORT_SIZE];
/* Size of the certificate table as last seen (0 = not known yet). */
static size_t certs_known;
static int attest_lock;

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= b[i];
	return acc == 0;
}

static bool crosses_page(gpa_t gpa, uint64_t len)
{
	gpa_t last;
	if (len == 0 || ADD_OVERFLOW(gpa, len - 1, &last))
		return true;
	return ALIGN_DOWN(gpa, PAGE_SIZE) != ALIGN_DOWN(last, PAGE_SIZE);
}

static bool range_ok(gpa_t gpa, uint32_t size)
{
	return size == 0 || guest_mem_check(gpa, size) == 0;
}

uint64_t attest_decode(gpa_t gpa, bool single, struct attest_single_op *op,
		       uint8_t nonce[ATTEST_NONCE_LEN])
{
	size_t size = single ? sizeof(struct attest_single_op) : sizeof(struct attest_services_op);
	const struct attest_services_op *b = &op->base;

	memset(op, 0, sizeof(*op));
	/* 8-byte aligned, inside one page (AMD reference SVSM). */
	if (!IS_ALIGNED(gpa, 8) || crosses_page(gpa, size))
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_read(gpa, op, size))
		return SVSM_ERR_INVALID_ADDRESS;
	/* Reserved fields must be zero (u16 nonce size + 6: also Linux's u32 + 4). */
	if (b->rsvd_0c || !all_zero(b->rsvd_1a, sizeof(b->rsvd_1a)) || b->rsvd_2c || b->rsvd_3c ||
	    (single && op->rsvd_54))
		return SVSM_ERR_INVALID_PARAMETER;
	if (!IS_ALIGNED(b->report_gpa, PAGE_SIZE) || !IS_ALIGNED(b->manifest_gpa, PAGE_SIZE) ||
	    (b->certs_size && !IS_ALIGNED(b->certs_gpa, PAGE_SIZE)))
		return SVSM_ERR_INVALID_PARAMETER;
	/* Exactly 64 bytes, as Linux sends and coconut requires (reference §10.2). */
	if (b->nonce_size != ATTEST_NONCE_LEN || crosses_page(b->nonce_gpa, ATTEST_NONCE_LEN))
		return SVSM_ERR_INVALID_PARAMETER;
	if (guest_read(b->nonce_gpa, nonce, ATTEST_NONCE_LEN))
		return SVSM_ERR_INVALID_ADDRESS;
	if (!range_ok(b->report_gpa, b->report_size) ||
	    !range_ok(b->manifest_gpa, b->manifest_size) || !range_ok(b->certs_gpa, b->certs_size))
		return SVSM_ERR_INVALID_ADDRESS;
	return SVSM_SUCCESS;
}

static int report_data(const uint8_t nonce[ATTEST_NONCE_LEN], const uint8_t *m, size_t mlen,
		       uint8_t out[64])
{
	mbedtls_sha512_context c;
	int rc;

	mbedtls_sha512_init(&c);
	rc = mbedtls_sha512_starts_ret(&c, 0);
	if (!rc)
		rc = mbedtls_sha512_update_ret(&c, nonce, ATTEST_NONCE_LEN);
	if (!rc)
		rc = mbedtls_sha512_update_ret(&c, m, mlen);
	if (!rc)
		rc = mbedtls_sha512_finish_ret(&c, out);
	mbedtls_sha512_free(&c);
	return rc;
}

static uint64_t map_greq(int rc)
{
	switch (rc) {
	case GUEST_REQ_ERR_BUSY:
		return SVSM_ERR_BUSY;
	case GUEST_REQ_ERR_INVAL:
		return SVSM_ERR_INVALID_PARAMETER;
	default: /* PSP channel unusable or refused: nothing the guest can fix */
		return SVSM_ERR_INVALID_REQUEST;
	}
}

static uint64_t attest_act(const struct attest_single_op *op, bool single,
			   const uint8_t nonce[ATTEST_NONCE_LEN], struct svsm_regs *r)
{
	const struct attest_services_op *b = &op->base;
	const uint8_t *m;
	size_t mlen = 0, clen = 0;
	uint8_t rd[64];
	int rc;

	if (single) {
		if (manifest_service(op->guid, &m, &mlen) || op->manifest_version != 0)
			return SVSM_ERR_UNSUPPORTED_PROTOCOL;
	} else {
		mlen = manifest_build(manifest_buf, sizeof(manifest_buf));
		if (!mlen)
			return SVSM_ERR_INVALID_REQUEST;
		m = manifest_buf;
	}
	r->rcx = mlen;
	r->rdx = b->certs_size ? certs_known : 0;
	r->r8 = ATTEST_REPORT_SIZE;
	if (b->report_size < ATTEST_REPORT_SIZE || b->manifest_size < mlen ||
	    (b->certs_size && certs_known && b->certs_size < certs_known))
		return SVSM_ERR_INVALID_PARAMETER;

	if (report_data(nonce, m, mlen, rd))
		return SVSM_ERR_INVALID_REQUEST;
	rc = guest_req_report(this_cpu(), rd, 0, report_buf, b->certs_size ? certs_buf : NULL,
			      MIN((size_t)b->certs_size, sizeof(certs_buf)), &clen);
	if (rc == GUEST_REQ_ERR_CERTS_LEN) {
		certs_known = clen;
		r->rdx = clen;
		return SVSM_ERR_INVALID_PARAMETER;
	}
	if (rc)
		return map_greq(rc);
	if (b->certs_size) {
		certs_known = clen;
		r->rdx = clen;
	}
	if (guest_write(b->report_gpa, report_buf, ATTEST_REPORT_SIZE) ||
	    guest_write(b->manifest_gpa, m, mlen) ||
	    (b->certs_size && clen && guest_write(b->certs_gpa, certs_buf, clen)))
		return SVSM_ERR_INVALID_ADDRESS;
	return SVSM_SUCCESS;
}

uint64_t attest_protocol_call(struct guest_vcpu *gv, uint32_t call_id, struct svsm_regs *r)
{
	struct attest_single_op op;
	uint8_t nonce[ATTEST_NONCE_LEN];
	bool single = call_id == SVSM_ATTEST_SINGLE_SERVICE;
	gpa_t gpa = r->rcx;
	uint64_t rc;

	if (call_id != SVSM_ATTEST_SERVICES && call_id != SVSM_ATTEST_SINGLE_SERVICE)
		return SVSM_ERR_UNSUPPORTED_CALL;
	/* Sizes go back also on error (coconut 925844fd): the guest retries with them. */
	r->r8 = ATTEST_REPORT_SIZE;
	r->rcx = single ? 0 : manifest_size(); /* a single service is known once decoded */
	r->rdx = __atomic_load_n(&certs_known, __ATOMIC_RELAXED);
	rc = attest_decode(gpa, single, &op, nonce);
	if (rc != SVSM_SUCCESS)
		return rc;
	if (__atomic_exchange_n(&attest_lock, 1, __ATOMIC_ACQUIRE))
		return SVSM_ERR_BUSY;
	rc = attest_act(&op, single, nonce, r);
	memzero_explicit(report_buf, sizeof(report_buf));
	__atomic_store_n(&attest_lock, 0, __ATOMIC_RELEASE);
	return rc;
}
