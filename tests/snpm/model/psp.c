/*
 * The PSP model (psp.h). What the SNP firmware does for SNP_GUEST_REQUEST
 * (AMD 56860 §7.1 MSG_REPORT_REQ, §7.2 MSG_KEY_REQ) and what KVM does
 * around it for the extended request (arch/x86/kvm/svm/sev.c
 * snp_handle_ext_guest_req), reduced to what csvsm needs in the SNP machine
 * and the unit tests. Reports are real: version 3, layout of include/attest/report.h,
 * signed ECDSA P-384/SHA-384 by the test VCEK whose chain
 * tests/tools/gen-test-chain.sh makes, so csvsm-verify checks them as it
 * would check hardware reports.
 *
 * The request page is read once into a private copy. Like the PSP, it keeps
 * its own sequence counter and answers only the next message in sequence.
 */
#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>
#include <mbedtls/sha512.h>

#include "attest/guest_req.h"
#include "attest/report.h"
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "base/secret.h"
#include "base/string.h"
#include "snp/ghcb.h"

/* Firmware version the PSP model reports (CURRENT/COMMITTED_{MAJOR,MINOR,BUILD}). */
#define PSP_MODEL_FW_MAJOR 1
#define PSP_MODEL_FW_MINOR 55
#define PSP_MODEL_FW_BUILD 0

static struct {
	bool ready;
	/* VMPCK0..3 of the secrets page; an all-zero key is not installed. */
	uint8_t vmpck[4][SNP_VMPCK_LEN];
	uint64_t next_seqno[4]; /* per key: the sequence number the next request must carry */
	struct psp_model_keys keys;
	uint8_t certs[PSP_MODEL_CERTS_MAX];
	uint8_t measurement[48];
	uint64_t policy;
	uint8_t report_id[32];
	uint8_t derive_secret[48]; /* root of MSG_KEY_REQ derivation */
	psp_model_rng_fn rng;
	void *rng_ctx;
	gpa_t req_gpa, resp_gpa, data_gpa;
	uint64_t data_npages;
	uint64_t served, refused;
} psp;

static struct snp_guest_msg req_copy, resp_msg;

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}
static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

int psp_model_keys_parse(const void *blob, size_t len, struct psp_model_keys *out)
{
	const uint8_t *b = blob;
	uint32_t total, clen;

	if (!b || !out || len < PSP_MODEL_KEYS_HDR_SIZE || memcmp(b, PSP_MODEL_KEYS_MAGIC, 8) ||
	    le32(b + 8) != PSP_MODEL_KEYS_VERSION)
		return -1;
	total = le32(b + 0x0C);
	clen = le32(b + 0x90);
	if (total > len || total < PSP_MODEL_KEYS_HDR_SIZE ||
	    clen > total - PSP_MODEL_KEYS_HDR_SIZE || clen > PSP_MODEL_CERTS_MAX)
		return -1;
	memset(out, 0, sizeof(*out));
	out->reported_tcb = le64(b + 0x10);
	out->cpuid_fam = b[0x18];
	out->cpuid_mod = b[0x19];
	out->cpuid_step = b[0x1A];
	memcpy(out->chip_id, b + 0x20, 64);
	memcpy(out->vcek_d, b + 0x60, 48);
	out->cert_table = clen ? b + PSP_MODEL_KEYS_HDR_SIZE : NULL;
	out->cert_table_len = clen;
	return 0;
}

void psp_model_reset(void)
{
	memzero_explicit(&psp, sizeof(psp));
}

static int load_vcek(mbedtls_ecp_group *grp, mbedtls_mpi *d)
{
	mbedtls_ecp_group_init(grp);
	mbedtls_mpi_init(d);
	if (mbedtls_ecp_group_load(grp, MBEDTLS_ECP_DP_SECP384R1) ||
	    mbedtls_mpi_read_binary(d, psp.keys.vcek_d, sizeof(psp.keys.vcek_d)) ||
	    mbedtls_ecp_check_privkey(grp, d))
		return -1;
	return 0;
}

static void free_vcek(mbedtls_ecp_group *grp, mbedtls_mpi *d)
{
	mbedtls_mpi_free(d);
	mbedtls_ecp_group_free(grp);
}

int psp_model_init(const uint8_t vmpck0[32], const struct psp_model_keys *keys,
		   const uint8_t measurement[48], uint64_t policy, psp_model_rng_fn rng,
		   void *rng_ctx)
{
	static const char label[] = "csvsm sim-psp key-derivation root v1";
	mbedtls_ecp_group grp;
	mbedtls_mpi d;
	int rc;

	psp_model_reset();
	if (!vmpck0 || !keys || !measurement || !rng ||
	    keys->cert_table_len > PSP_MODEL_CERTS_MAX ||
	    (keys->cert_table_len && !keys->cert_table))
		return -1;
	/* The PSP's own state: wiped on every termination path (base/secret.c). */
	secret_register(&psp, sizeof(psp));
	memcpy(psp.vmpck[0], vmpck0, SNP_VMPCK_LEN);
	psp.keys = *keys;
	if (keys->cert_table_len)
		memcpy(psp.certs, keys->cert_table, keys->cert_table_len);
	psp.keys.cert_table = keys->cert_table_len ? psp.certs : NULL;
	memcpy(psp.measurement, measurement, 48);
	psp.policy = policy;
	psp.rng = rng;
	psp.rng_ctx = rng_ctx;
	for (unsigned i = 0; i < 4; i++)
		psp.next_seqno[i] = 1;
	rc = load_vcek(&grp, &d);
	free_vcek(&grp, &d);
	if (rc || rng(rng_ctx, psp.report_id, sizeof(psp.report_id)) ||
	    mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA384), psp.keys.vcek_d,
			    sizeof(psp.keys.vcek_d), (const uint8_t *)label, sizeof(label) - 1,
			    psp.derive_secret)) {
		psp_model_reset();
		return -1;
	}
	psp.ready = true;
	return 0;
}

int psp_model_set_vmpck(unsigned id, const uint8_t key[SNP_VMPCK_LEN])
{
	static const uint8_t zero[SNP_VMPCK_LEN];
	/* Once per launch, as on hardware: a second install would restart the
	 * key's message counter and reuse AES-GCM nonces. */
	if (!psp.ready || id == 0 || id > 3 || !key || memcmp(psp.vmpck[id], zero, SNP_VMPCK_LEN))
		return -1;
	memcpy(psp.vmpck[id], key, SNP_VMPCK_LEN);
	psp.next_seqno[id] = 1;
	return 0;
}

void psp_model_set_shared_pages(gpa_t req_gpa, gpa_t resp_gpa, gpa_t data_gpa, uint64_t npages)
{
	psp.req_gpa = req_gpa;
	psp.resp_gpa = resp_gpa;
	psp.data_gpa = npages ? data_gpa : 0;
	psp.data_npages = npages;
}

void psp_model_certs(const uint8_t **table, size_t *len)
{
	*table = psp.ready && psp.keys.cert_table_len ? psp.certs : NULL;
	*len = psp.ready ? psp.keys.cert_table_len : 0;
}

uint64_t psp_model_served(void)
{
	return psp.served;
}
uint64_t psp_model_refused(void)
{
	return psp.refused;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= p[i];
	return acc == 0;
}

/* 56860 §7.3 ATTESTATION_REPORT, signed over 0x000-0x29F. */
static uint32_t make_report(const struct snp_report_req *req, struct snp_report_rsp *rsp)
{
	struct snp_report_raw r;
	uint8_t hash[64]; /* SHA-384 uses the first 48 */
	mbedtls_ecp_group grp;
	mbedtls_mpi d, sr, ss;
	int rc;

	memset(rsp, 0, sizeof(*rsp));
	if (req->vmpl > 3 || (req->key_sel & ~3u) || !all_zero(req->rsvd, sizeof(req->rsvd)) ||
	    (req->key_sel & 3u) == 3u)
		return rsp->status = SNP_FW_STATUS_INVALID_PARAM;
	if ((req->key_sel & 3u) == 2u) /* VLEK: none installed */
		return rsp->status = SNP_FW_STATUS_INVALID_KEY;

	memset(&r, 0, sizeof(r));
	r.version = 3;
	r.guest_svn = 0;
	r.policy = psp.policy;
	r.vmpl = req->vmpl;
	r.signature_algo = SNP_SIG_ALGO_ECDSA_P384_SHA384;
	r.current_tcb = psp.keys.reported_tcb;
	r.platform_info = 0;
	r.signer_info = SNP_SIGNING_KEY_VCEK << SNP_SIGNER_SIGNING_KEY_SHIFT;
	memcpy(r.report_data, req->user_data, sizeof(r.report_data));
	memcpy(r.measurement, psp.measurement, sizeof(r.measurement));
	memcpy(r.report_id, psp.report_id, sizeof(r.report_id));
	r.reported_tcb = psp.keys.reported_tcb;
	r.cpuid_fam_id = psp.keys.cpuid_fam;
	r.cpuid_mod_id = psp.keys.cpuid_mod;
	r.cpuid_step = psp.keys.cpuid_step;
	memcpy(r.chip_id, psp.keys.chip_id, sizeof(r.chip_id));
	r.committed_tcb = psp.keys.reported_tcb;
	r.current_build = r.committed_build = PSP_MODEL_FW_BUILD;
	r.current_minor = r.committed_minor = PSP_MODEL_FW_MINOR;
	r.current_major = r.committed_major = PSP_MODEL_FW_MAJOR;
	r.launch_tcb = psp.keys.reported_tcb;

	mbedtls_mpi_init(&sr);
	mbedtls_mpi_init(&ss);
	rc = load_vcek(&grp, &d);
	if (!rc)
		rc = mbedtls_sha512_ret((const uint8_t *)&r, SNP_REPORT_SIGNED_LEN, hash, 1);
	if (!rc)
		rc = mbedtls_ecdsa_sign(&grp, &sr, &ss, &d, hash, 48, psp.rng, psp.rng_ctx);
	if (!rc)
		rc = mbedtls_mpi_write_binary_le(&sr, r.sig_r, sizeof(r.sig_r));
	if (!rc)
		rc = mbedtls_mpi_write_binary_le(&ss, r.sig_s, sizeof(r.sig_s));
	mbedtls_mpi_free(&sr);
	mbedtls_mpi_free(&ss);
	free_vcek(&grp, &d);
	if (rc)
		return rsp->status = SNP_FW_STATUS_INVALID_PARAM;
	rsp->status = SNP_FW_STATUS_OK;
	rsp->report_size = SNP_REPORT_BYTES;
	memcpy(rsp->report, &r, sizeof(r));
	return 0;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * A TCB_VERSION the request may mix in: none of its SVNs above the committed
 * TCB's (56860 §7.2 MSG_KEY_REQ, TCB_VERSION: "must not exceed
 * CommittedTcb"). The eight bytes are compared one by one (Milan layout:
 * BL 0, TEE 1, reserved 2-5, SNP 6, microcode 7), so a reserved byte set in
 * the request but not in the committed TCB is refused too.
 */
static bool tcb_not_above(uint64_t req, uint64_t committed)
{
	for (int i = 0; i < 8; i++)
		if (((req >> (8 * i)) & 0xFF) > ((committed >> (8 * i)) & 0xFF))
			return false;
	return true;
}

/*
 * MSG_KEY_REQ (SEV-SNP firmware ABI 56860 §7.2; Linux snp_derived_key_req):
 * key = HMAC-SHA-384(root, label || root_key_select || field select || vmpl
 * || each selected field)[0..31], the root derived from the VCEK's private
 * key (the chip). What the hardware mixes is modelled: the VMPL always (so
 * a guest VMPL never gets VMPL 0's key: it may only ask for its own or a
 * less privileged one, psp_model_handle), and whichever of GUEST_POLICY,
 * IMAGE_ID, FAMILY_ID, MEASUREMENT, GUEST_SVN and TCB_VERSION the field
 * select names: another measurement or policy gives another key only when
 * its bit is set, as on hardware. Not modelled: the real KDF (AMD's is
 * unpublished; only "different inputs, different key" can be relied on),
 * the VMRK and VLEK roots, LAUNCH_MIT_VECTOR (message version 2).
 */
static void make_key(const struct snp_key_req *req, struct snp_key_rsp *rsp)
{
	static const char label[] = "csvsm sim-psp derived key v1";
	uint8_t ctx[sizeof(label) - 1 + 4 + 8 + 4 + 8 + 16 + 16 + 48 + 4 + 8];
	uint8_t out[48];
	size_t n = 0;
	uint64_t gfs = req->guest_field_select;

	memset(rsp, 0, sizeof(*rsp));
	if ((req->root_key_select & SNP_KEY_REQ_RSVD_MASK) || req->rsvd || req->vmpl > 3 ||
	    (gfs & SNP_GFS_RSVD_MASK) ||
	    ((req->root_key_select & SNP_KEY_SEL_MASK) >> SNP_KEY_SEL_SHIFT) == 3 ||
	    req->guest_svn > 0 /* the launch's GUEST_SVN is 0 */ ||
	    ((gfs & SNP_GFS_TCB_VERSION) &&
	     !tcb_not_above(req->tcb_version, psp.keys.reported_tcb /* = committed */))) {
		rsp->status = SNP_FW_STATUS_INVALID_PARAM;
		return;
	}
	if ((req->root_key_select & SNP_KEY_ROOT_VMRK) ||
	    ((req->root_key_select & SNP_KEY_SEL_MASK) >> SNP_KEY_SEL_SHIFT) == 2) {
		rsp->status = SNP_FW_STATUS_INVALID_KEY; /* no VMRK, no VLEK */
		return;
	}
	memcpy(ctx, label, sizeof(label) - 1);
	n = sizeof(label) - 1;
	put32(ctx + n, req->root_key_select);
	n += 4;
	put64(ctx + n, gfs);
	n += 8;
	put32(ctx + n, req->vmpl);
	n += 4;
	if (gfs & SNP_GFS_POLICY) {
		put64(ctx + n, psp.policy);
		n += 8;
	}
	if (gfs & SNP_GFS_IMAGE_ID) {
		memset(ctx + n, 0, 16); /* IMAGE_ID: no ID block on sim */
		n += 16;
	}
	if (gfs & SNP_GFS_FAMILY_ID) {
		memset(ctx + n, 0, 16);
		n += 16;
	}
	if (gfs & SNP_GFS_MEASUREMENT) {
		memcpy(ctx + n, psp.measurement, 48);
		n += 48;
	}
	if (gfs & SNP_GFS_GUEST_SVN) {
		put32(ctx + n, req->guest_svn);
		n += 4;
	}
	if (gfs & SNP_GFS_TCB_VERSION) {
		put64(ctx + n, req->tcb_version);
		n += 8;
	}
	if (mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA384), psp.derive_secret,
			    sizeof(psp.derive_secret), ctx, n, out)) {
		rsp->status = SNP_FW_STATUS_INVALID_PARAM;
		return;
	}
	memcpy(rsp->key, out, SNP_DERIVED_KEY_LEN);
	memzero_explicit(out, sizeof(out));
	memzero_explicit(ctx, sizeof(ctx));
	rsp->status = SNP_FW_STATUS_OK;
}

uint32_t psp_model_handle(const void *req_page, void *resp_page)
{
	static union {
		struct snp_report_req report;
		struct snp_key_req key;
		uint8_t raw[SNP_MSG_PAYLOAD_MAX];
	} in;
	static union {
		struct snp_report_rsp report;
		struct snp_key_rsp key;
	} out;
	size_t len = 0, out_len;
	uint8_t type, key;
	uint64_t seqno;

	if (!psp.ready || !req_page || !resp_page)
		goto refuse;
	memcpy(&req_copy, req_page, sizeof(req_copy));
	type = req_copy.hdr.msg_type;
	/* The header names the key (VMPCK0..3, by the VMPL that owns it); an
	 * unset (all-zero) key serves nothing (56860 §7, SNP_GUEST_REQUEST). */
	key = req_copy.hdr.msg_vmpck;
	if (key > 3 || all_zero(psp.vmpck[key], SNP_VMPCK_LEN))
		goto refuse;
	seqno = psp.next_seqno[key];
	/* Only the next message in sequence for that key, of a type we serve. */
	if (req_copy.hdr.msg_seqno != seqno ||
	    (type != SNP_MSG_REPORT_REQ && type != SNP_MSG_KEY_REQ) ||
	    guest_req_msg_open(&req_copy, psp.vmpck[key], seqno, type, key, in.raw, sizeof(in.raw),
			       &len) != GUEST_REQ_OK)
		goto refuse;
	if (type == SNP_MSG_REPORT_REQ) {
		if (len != sizeof(in.report))
			goto refuse_wipe;
		/* A VMPL may ask for its own VMPL or a less privileged one only. */
		if (in.report.vmpl < key)
			memset(&out.report, 0, sizeof(out.report)),
			    out.report.status = SNP_FW_STATUS_INVALID_PARAM;
		else
			make_report(&in.report, &out.report);
		out_len = sizeof(out.report);
	} else {
		if (len != sizeof(in.key))
			goto refuse_wipe;
		if (in.key.vmpl < key)
			memset(&out.key, 0, sizeof(out.key)),
			    out.key.status = SNP_FW_STATUS_INVALID_PARAM;
		else
			make_key(&in.key, &out.key);
		out_len = sizeof(out.key);
	}
	if (guest_req_msg_seal(&resp_msg, psp.vmpck[key], seqno + 1, (uint8_t)(type + 1), key, &out,
			       out_len) != GUEST_REQ_OK)
		goto refuse_wipe;
	memcpy(resp_page, &resp_msg, sizeof(resp_msg));
	psp.next_seqno[key] = seqno + 2;
	psp.served++;
	memzero_explicit(&in, sizeof(in));
	memzero_explicit(&out, sizeof(out));
	return 0;
refuse_wipe:
	memzero_explicit(&in, sizeof(in));
	memzero_explicit(&out, sizeof(out));
refuse:
	psp.refused++;
	return SNP_FW_STATUS_INVALID_PARAM;
}

static void set_result(struct ghcb *g, uint64_t info1, uint64_t info2)
{
	__atomic_store_n(&g->sw_exit_info_1, info1, __ATOMIC_RELAXED);
	__atomic_store_n(&g->sw_exit_info_2, info2, __ATOMIC_RELAXED);
}

void psp_model_ghcb_exit(struct percpu *cpu, struct ghcb *g)
{
	uint64_t code = __atomic_load_n(&g->sw_exit_code, __ATOMIC_RELAXED);
	bool ext = code == SVM_VMGEXIT_EXT_GUEST_REQUEST;
	gpa_t req, resp, data = 0;
	uint64_t npages = 0;

	if (!GHCB_VALID(g, sw_exit_info_1) || !GHCB_VALID(g, sw_exit_info_2) ||
	    (ext && (!GHCB_VALID(g, rax) || !GHCB_VALID(g, rbx)))) {
		set_result(g, GHCB_RESULT_ERROR, GHCB_ERR_MISSING_INPUT);
		return;
	}
	req = __atomic_load_n(&g->sw_exit_info_1, __ATOMIC_RELAXED);
	resp = __atomic_load_n(&g->sw_exit_info_2, __ATOMIC_RELAXED);
	if (ext) {
		data = __atomic_load_n(&g->rax, __ATOMIC_RELAXED);
		npages = __atomic_load_n(&g->rbx, __ATOMIC_RELAXED);
	}
	/*
	 * A host only touches pages the guest shared with it. The sim PSP has
	 * no RMP to ask, so it serves only the pages csvsm registered.
	 */
	if (!psp.req_gpa || req != psp.req_gpa || resp != psp.resp_gpa ||
	    (ext && npages && (data != psp.data_gpa || npages > psp.data_npages))) {
		set_result(g, GHCB_RESULT_ERROR, GHCB_ERR_INVALID_INPUT);
		return;
	}
	if (ext) {
		uint64_t need = (psp.keys.cert_table_len + PAGE_SIZE - 1) / PAGE_SIZE;
		if (npages < need) {
			/* KVM: INVALID_LEN, RBX = pages needed, the PSP is not called. */
			__atomic_store_n(&g->rbx, need, __ATOMIC_RELAXED);
			set_result(g, GHCB_RESULT_OK,
				   (uint64_t)SNP_GUEST_VMM_ERR_INVALID_LEN
				       << SNP_GUEST_VMM_ERR_SHIFT);
			return;
		}
		if (npages) {
			uint8_t *p = (uint8_t *)(uintptr_t)data;
			memset(p, 0, npages * PAGE_SIZE);
			memcpy(p, psp.certs, psp.keys.cert_table_len);
		}
	}
	set_result(g, GHCB_RESULT_OK,
		   psp_model_handle((const void *)(uintptr_t)req, (void *)(uintptr_t)resp));
	(void)cpu;
}
