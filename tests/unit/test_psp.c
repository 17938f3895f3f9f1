/*
 * The simulated PSP (tests/snpm/model/psp.c) on its own: keys-blob parsing, the
 * report it signs (verified with the test VCEK certificate from
 * tests/tools/gen-test-chain.sh when build/test-chain/psp-keys.bin exists,
 * else with a key generated here), report-request checks, key derivation
 * (same launch -> same key, other measurement -> other key), sequence
 * enforcement, and the hypervisor side (registered pages, INVALID_LEN);
 * then per VMPCK: MSG_VMPCK picks the key, each key counts its own sequence,
 * a key answers only for its own VMPL or a less privileged one, and wrong,
 * absent or out-of-range keys are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <cmocka.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/gcm.h>
#include <mbedtls/sha512.h>
#include <mbedtls/x509_crt.h>

#include "attest/certtable.h"
#include "attest/guest_req.h"
#include "attest/report.h"
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "snp/ghcb.h"

/* guest_req.o (linked for the message functions) calls through it; unused here. */
const struct platform_ops *platform;

static int rng(void *ctx, unsigned char *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static uint8_t blob[64 * 1024];
static size_t blob_len;
static struct psp_model_keys keys;
static mbedtls_ecp_group grp;
static mbedtls_ecp_point Q;
static bool from_chain;
static uint8_t vmpck[32];
static uint64_t seq;
static struct snp_guest_msg req, resp;
static const uint8_t meas_a[48] = {0xAA, 1, 2, 3};
static const uint8_t meas_b[48] = {0xBB, 1, 2, 3};

/* The VCEK public key: from the chain's certificate, or derived from a fresh key. */
static int group_setup(void **state)
{
	const char *path = getenv("CSVSM_TEST_CHAIN");
	char file[512];
	FILE *f;

	mbedtls_ecp_group_init(&grp);
	mbedtls_ecp_point_init(&Q);
	snprintf(file, sizeof(file), "%s/psp-keys.bin", path ? path : "build/test-chain");
	f = fopen(file, "rb");
	if (f) {
		blob_len = fread(blob, 1, sizeof(blob), f);
		fclose(f);
		assert_int_equal(psp_model_keys_parse(blob, blob_len, &keys), 0);
		struct certtable_entry e[8];
		size_t n = 0;
		assert_int_equal(certtable_parse(keys.cert_table, keys.cert_table_len, e, 8, &n),
				 0);
		const struct certtable_entry *v = certtable_find(e, n, CERTTABLE_VCEK);
		assert_non_null(v);
		mbedtls_x509_crt crt;
		mbedtls_x509_crt_init(&crt);
		assert_int_equal(mbedtls_x509_crt_parse_der(&crt, v->data, v->length), 0);
		assert_true(mbedtls_pk_get_type(&crt.pk) == MBEDTLS_PK_ECKEY);
		mbedtls_ecp_keypair *kp = mbedtls_pk_ec(crt.pk);
		assert_int_equal(mbedtls_ecp_group_copy(&grp, &kp->grp), 0);
		assert_int_equal(mbedtls_ecp_copy(&Q, &kp->Q), 0);
		mbedtls_x509_crt_free(&crt);
		from_chain = true;
		print_message("using the test chain in %s\n", file);
	} else {
		mbedtls_ecdsa_context k;
		mbedtls_ecdsa_init(&k);
		assert_int_equal(mbedtls_ecdsa_genkey(&k, MBEDTLS_ECP_DP_SECP384R1, rng, NULL), 0);
		memset(&keys, 0, sizeof(keys));
		assert_int_equal(mbedtls_mpi_write_binary(&k.d, keys.vcek_d, 48), 0);
		keys.reported_tcb = 0xD115000000000004ull;
		keys.cpuid_fam = 0x19;
		keys.cpuid_mod = 1;
		keys.cpuid_step = 1;
		memset(keys.chip_id, 0x5A, 64);
		assert_int_equal(mbedtls_ecp_group_copy(&grp, &k.grp), 0);
		assert_int_equal(mbedtls_ecp_copy(&Q, &k.Q), 0);
		mbedtls_ecdsa_free(&k);
		print_message("no %s: using a generated P-384 key\n", file);
	}
	return 0;
}

static int group_teardown(void **state)
{
	mbedtls_ecp_point_free(&Q);
	mbedtls_ecp_group_free(&grp);
	return 0;
}

static int setup_meas(const uint8_t *m)
{
	assert_int_equal(rng(NULL, vmpck, sizeof(vmpck)), 0);
	seq = 0;
	return psp_model_init(vmpck, &keys, m, PSP_MODEL_DEFAULT_POLICY, rng, NULL);
}

static int setup(void **state)
{
	return setup_meas(meas_a);
}

static int teardown(void **state)
{
	psp_model_reset();
	return 0;
}

/* Send one request straight to the PSP; returns fw error, fills out. */
static uint32_t call(uint8_t type, const void *p, size_t n, void *out, size_t cap, size_t *len)
{
	uint32_t fw;

	assert_int_equal(guest_req_msg_seal(&req, vmpck, seq + 1, type, 0, p, n), 0);
	fw = psp_model_handle(&req, &resp);
	if (fw)
		return fw;
	assert_int_equal(
	    guest_req_msg_open(&resp, vmpck, seq + 2, (uint8_t)(type + 1), 0, out, cap, len), 0);
	seq += 2;
	return 0;
}

static void report_verifies(void **state)
{
	struct snp_report_req rq = {.vmpl = 0};
	static struct snp_report_rsp rs;
	struct snp_report rep;
	uint8_t hash[64], rbe[48], sbe[48];
	mbedtls_mpi r, s;
	size_t len;

	memset(rq.user_data, 0x77, 64);
	assert_int_equal(call(SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(len, 0x4C0);
	assert_int_equal(rs.status, 0);
	assert_int_equal(rs.report_size, 0x4A0);
	assert_int_equal(snp_report_parse(rs.report, 0x4A0, &rep), SNP_REPORT_OK);
	assert_int_equal(rep.raw.version, 3);
	assert_int_equal(rep.raw.policy, 0x30000);
	assert_int_equal(rep.raw.reported_tcb, keys.reported_tcb);
	assert_int_equal(rep.raw.current_tcb, keys.reported_tcb);
	assert_memory_equal(rep.raw.chip_id, keys.chip_id, 64);
	assert_memory_equal(rep.raw.measurement, meas_a, 48);
	assert_int_equal(rep.product, SNP_PRODUCT_MILAN);
	for (int i = 0; i < 48; i++) {
		rbe[i] = rep.raw.sig_r[47 - i];
		sbe[i] = rep.raw.sig_s[47 - i];
	}
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	assert_int_equal(mbedtls_mpi_read_binary(&r, rbe, 48), 0);
	assert_int_equal(mbedtls_mpi_read_binary(&s, sbe, 48), 0);
	assert_int_equal(mbedtls_sha512_ret(rs.report, 0x2A0, hash, 1), 0);
	assert_int_equal(mbedtls_ecdsa_verify(&grp, hash, 48, &Q, &r, &s), 0);
	/* One flipped bit in the signed area breaks it. */
	rs.report[0x90] ^= 1;
	assert_int_equal(mbedtls_sha512_ret(rs.report, 0x2A0, hash, 1), 0);
	assert_int_not_equal(mbedtls_ecdsa_verify(&grp, hash, 48, &Q, &r, &s), 0);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
}

static void report_request_checks(void **state)
{
	struct snp_report_req rq = {.vmpl = 4};
	static struct snp_report_rsp rs;
	size_t len;

	assert_int_equal(call(SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
	rq.vmpl = 0;
	rq.key_sel = 2; /* VLEK: none */
	assert_int_equal(call(SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_KEY);
	rq.key_sel = 1; /* VCEK explicitly */
	assert_int_equal(call(SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, 0);
	rq.rsvd[5] = 1;
	assert_int_equal(call(SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
	/* Wrong payload size: refused at the firmware level. */
	assert_int_not_equal(call(SNP_MSG_REPORT_REQ, &rq, 0x20, &rs, sizeof(rs), &len), 0);
}

static void sequence_enforced(void **state)
{
	struct snp_report_req rq = {0};

	/* seqno 3 before 1 */
	assert_int_equal(guest_req_msg_seal(&req, vmpck, 3, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq)),
			 0);
	assert_int_not_equal(psp_model_handle(&req, &resp), 0);
	/* wrong key */
	uint8_t other[32];
	memcpy(other, vmpck, 32);
	other[0] ^= 1;
	assert_int_equal(guest_req_msg_seal(&req, other, 1, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq)),
			 0);
	assert_int_not_equal(psp_model_handle(&req, &resp), 0);
	/* unknown type */
	assert_int_equal(guest_req_msg_seal(&req, vmpck, 1, 17, 0, &rq, sizeof(rq)), 0);
	assert_int_not_equal(psp_model_handle(&req, &resp), 0);
	/* VMPCK1 */
	assert_int_equal(guest_req_msg_seal(&req, vmpck, 1, SNP_MSG_REPORT_REQ, 1, &rq, sizeof(rq)),
			 0);
	assert_int_not_equal(psp_model_handle(&req, &resp), 0);
	assert_int_equal(psp_model_refused(), 4);
	/* seqno 1 still accepted, then 1 again refused */
	assert_int_equal(guest_req_msg_seal(&req, vmpck, 1, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq)),
			 0);
	assert_int_equal(psp_model_handle(&req, &resp), 0);
	assert_int_not_equal(psp_model_handle(&req, &resp), 0);
}

static void derive(const struct snp_key_req *kr, uint8_t key[32])
{
	struct snp_key_rsp rs;
	size_t len;
	assert_int_equal(call(SNP_MSG_KEY_REQ, kr, sizeof(*kr), &rs, sizeof(rs), &len), 0);
	assert_int_equal(len, sizeof(rs));
	assert_int_equal(rs.status, 0);
	memcpy(key, rs.key, 32);
}

static void key_derivation(void **state)
{
	struct snp_key_req kr = {.guest_field_select = SNP_GFS_MEASUREMENT | SNP_GFS_POLICY};
	struct snp_key_req kr_nomeas = {.guest_field_select = SNP_GFS_POLICY};
	uint8_t a1[32], a2[32], b1[32], a_nm[32], b_nm[32], zero[32] = {0};

	derive(&kr, a1);
	derive(&kr_nomeas, a_nm);
	/* The same launch again (new boot: new VMPCK, same measurement). */
	assert_int_equal(setup_meas(meas_a), 0);
	derive(&kr, a2);
	assert_memory_equal(a1, a2, 32);
	assert_memory_not_equal(a1, zero, 32);
	/* Another measurement: another key when it is selected, the same when not. */
	assert_int_equal(setup_meas(meas_b), 0);
	derive(&kr, b1);
	derive(&kr_nomeas, b_nm);
	assert_memory_not_equal(a1, b1, 32);
	assert_memory_equal(a_nm, b_nm, 32);
	assert_memory_not_equal(a1, a_nm, 32);
	/* Bad requests: status, no key. */
	struct snp_key_rsp rs;
	size_t len;
	struct snp_key_req bad = {.guest_field_select = 1ull << 40};
	assert_int_equal(call(SNP_MSG_KEY_REQ, &bad, sizeof(bad), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
	assert_memory_equal(rs.key, zero, 32);
	bad = (struct snp_key_req){.root_key_select = SNP_KEY_ROOT_VMRK};
	assert_int_equal(call(SNP_MSG_KEY_REQ, &bad, sizeof(bad), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_KEY);
	/* TCB_VERSION: any TCB not above the committed one, each SVN mixed in. */
	uint64_t tcb = keys.reported_tcb, lower = tcb;
	for (int i = 0; i < 8 && lower == tcb; i++)
		if ((tcb >> (8 * i)) & 0xFF)
			lower = tcb - (1ull << (8 * i));
	assert_int_not_equal(lower, tcb);
	struct snp_key_req kt = {.guest_field_select = SNP_GFS_TCB_VERSION, .tcb_version = tcb};
	uint8_t t_cur[32], t_low[32];
	derive(&kt, t_cur);
	kt.tcb_version = lower;
	derive(&kt, t_low);
	assert_memory_not_equal(t_cur, t_low, 32);
	for (int i = 0; i < 8; i++) {
		if (((tcb >> (8 * i)) & 0xFF) == 0xFF)
			continue;
		bad = (struct snp_key_req){.guest_field_select = SNP_GFS_TCB_VERSION,
					   .tcb_version = tcb + (1ull << (8 * i))};
		assert_int_equal(call(SNP_MSG_KEY_REQ, &bad, sizeof(bad), &rs, sizeof(rs), &len),
				 0);
		assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
	}
	/* Another guest policy: another key when the policy is selected. */
	uint8_t p1[32], p2[32];
	assert_int_equal(setup_meas(meas_a), 0);
	derive(&kr, p1);
	seq = 0;
	assert_int_equal(psp_model_init(vmpck, &keys, meas_a,
					PSP_MODEL_DEFAULT_POLICY & ~(1ull << 16), rng, NULL),
			 0);
	derive(&kr, p2);
	assert_memory_not_equal(p1, p2, 32);
}

static void keys_blob_parse(void **state)
{
	uint8_t b[0x98 + 8];
	struct psp_model_keys k;

	memset(b, 0, sizeof(b));
	memcpy(b, "CSVSMPSK", 8);
	b[8] = 1;
	b[0x0C] = sizeof(b);
	b[0x90] = 8;
	assert_int_equal(psp_model_keys_parse(b, sizeof(b), &k), 0);
	assert_int_equal(k.cert_table_len, 8);
	b[0x90] = 9; /* table longer than the blob */
	assert_int_equal(psp_model_keys_parse(b, sizeof(b), &k), -1);
	b[0x90] = 8;
	assert_int_equal(psp_model_keys_parse(b, sizeof(b) - 1, &k), -1); /* total > len */
	b[8] = 2;
	assert_int_equal(psp_model_keys_parse(b, sizeof(b), &k), -1);
	b[8] = 1;
	b[0] = 'X';
	assert_int_equal(psp_model_keys_parse(b, sizeof(b), &k), -1);
	/* A scalar of zero is not a P-384 private key. */
	memset(&k, 0, sizeof(k));
	assert_int_equal(psp_model_init(vmpck, &k, meas_a, PSP_MODEL_DEFAULT_POLICY, rng, NULL),
			 -1);
}

static void hypervisor_side(void **state)
{
	static struct ghcb g;
	static struct snp_guest_msg rq_page __aligned(4096), rs_page __aligned(4096);
	static uint8_t data[4 * 4096] __aligned(4096);
	struct snp_report_req rq = {0};

	psp_model_set_shared_pages((gpa_t)(uintptr_t)&rq_page, (gpa_t)(uintptr_t)&rs_page,
				   (gpa_t)(uintptr_t)data, 4);
	assert_int_equal(
	    guest_req_msg_seal(&rq_page, vmpck, 1, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq)), 0);
	/* Not the registered pages: refused. */
	guest_req_ghcb_fill(&g, false, (gpa_t)(uintptr_t)&rs_page, (gpa_t)(uintptr_t)&rq_page, 0,
			    0);
	psp_model_ghcb_exit(&percpus[0], &g);
	assert_int_equal(g.sw_exit_info_1, GHCB_RESULT_ERROR);
	/* Extended with too few pages (only when there is a table). */
	if (keys.cert_table_len) {
		guest_req_ghcb_fill(&g, true, (gpa_t)(uintptr_t)&rq_page,
				    (gpa_t)(uintptr_t)&rs_page, (gpa_t)(uintptr_t)data, 0);
		psp_model_ghcb_exit(&percpus[0], &g);
		assert_int_equal(g.sw_exit_info_1, 0);
		assert_int_equal(g.sw_exit_info_2, 1ull << 32);
		assert_int_equal(g.rbx, (keys.cert_table_len + 4095) / 4096);
	}
	guest_req_ghcb_fill(&g, true, (gpa_t)(uintptr_t)&rq_page, (gpa_t)(uintptr_t)&rs_page,
			    (gpa_t)(uintptr_t)data, 4);
	psp_model_ghcb_exit(&percpus[0], &g);
	assert_int_equal(g.sw_exit_info_1, 0);
	assert_int_equal(g.sw_exit_info_2, 0);
	if (keys.cert_table_len)
		assert_memory_equal(data, keys.cert_table, keys.cert_table_len);
	/* Missing RAX/RBX on an extended request. */
	ghcb_prepare(&g, SVM_VMGEXIT_EXT_GUEST_REQUEST, (gpa_t)(uintptr_t)&rq_page,
		     (gpa_t)(uintptr_t)&rs_page);
	psp_model_ghcb_exit(&percpus[0], &g);
	assert_int_equal(g.sw_exit_info_1, GHCB_RESULT_ERROR);
	assert_int_equal(g.sw_exit_info_2, GHCB_ERR_MISSING_INPUT);
}

/*
 * Per-VMPCK behaviour (56860 §7, SNP_GUEST_REQUEST): the header's MSG_VMPCK
 * names the key of the message, each key has its own sequence numbers, and
 * a request under VMPCKn may ask for VMPL n or a less privileged one only
 * (MSG_REPORT_REQ and MSG_KEY_REQ: "VMPL must be >= the current VMPL").
 */

/* VMPCK0..3 ([0] is the one psp_model_init got) and each key's last sequence number. */
static uint8_t vmpcks[4][32];
static uint64_t seqs[4];

static int setup_vmpcks(void **state)
{
	if (setup(state))
		return -1;
	memcpy(vmpcks[0], vmpck, 32);
	memset(seqs, 0, sizeof(seqs));
	for (unsigned id = 1; id < 4; id++) {
		assert_int_equal(rng(NULL, vmpcks[id], 32), 0);
		assert_int_equal(psp_model_set_vmpck(id, vmpcks[id]), 0);
	}
	return 0;
}

/* call() under VMPCK<id>: the answer must come back under that key, request seqno + 1. */
static uint32_t call_on(uint8_t id, uint8_t type, const void *p, size_t n, void *out, size_t cap,
			size_t *len)
{
	uint32_t fw;

	assert_int_equal(guest_req_msg_seal(&req, vmpcks[id], seqs[id] + 1, type, id, p, n), 0);
	fw = psp_model_handle(&req, &resp);
	if (fw)
		return fw;
	assert_int_equal(resp.hdr.msg_vmpck, id);
	assert_int_equal(resp.hdr.msg_seqno, seqs[id] + 2);
	assert_int_equal(guest_req_msg_open(&resp, vmpcks[id], seqs[id] + 2, (uint8_t)(type + 1),
					    id, out, cap, len),
			 0);
	seqs[id] += 2;
	return 0;
}

/* A refused request leaves the response page as it was. */
static void resp_poison(void)
{
	memset(&resp, 0xE5, sizeof(resp));
}
static bool resp_untouched(void)
{
	const uint8_t *p = (const uint8_t *)&resp;
	for (size_t i = 0; i < sizeof(resp); i++)
		if (p[i] != 0xE5)
			return false;
	return true;
}

/* Send a sealed request that the PSP must refuse, and check it refused it. */
static void refused(const struct snp_guest_msg *m)
{
	uint64_t served = psp_model_served(), before = psp_model_refused();

	resp_poison();
	assert_int_equal(psp_model_handle(m, &resp), SNP_FW_STATUS_INVALID_PARAM);
	assert_int_equal(psp_model_refused(), before + 1);
	assert_int_equal(psp_model_served(), served);
	assert_true(resp_untouched());
}

static void vmpck_selects_key(void **state)
{
	static struct snp_report_rsp rs;
	struct snp_report rep;
	size_t len;

	for (uint8_t id = 0; id < 4; id++) {
		struct snp_report_req rq = {.vmpl = id};
		memset(rq.user_data, 0x40 + id, sizeof(rq.user_data));
		assert_int_equal(
		    call_on(id, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
		assert_int_equal(len, sizeof(rs));
		assert_int_equal(rs.status, SNP_FW_STATUS_OK);
		assert_int_equal(rs.report_size, SNP_REPORT_BYTES);
		assert_int_equal(snp_report_parse(rs.report, SNP_REPORT_BYTES, &rep),
				 SNP_REPORT_OK);
		assert_int_equal(rep.raw.vmpl, id);
		assert_memory_equal(rep.raw.report_data, rq.user_data, 64);
		/* Sealed under VMPCK<id>, not VMPCK0. */
		if (id) {
			uint8_t tmp[sizeof(rs)];
			assert_int_not_equal(guest_req_msg_open(&resp, vmpcks[0], seqs[id],
								SNP_MSG_REPORT_RSP, id, tmp,
								sizeof(tmp), &len),
					     GUEST_REQ_OK);
		}
	}
	assert_int_equal(psp_model_served(), 4);
	assert_int_equal(psp_model_refused(), 0);
}

static void vmpck_sequence_per_key(void **state)
{
	static struct snp_guest_msg first;
	static struct snp_report_rsp rs;
	struct snp_report_req rq = {.vmpl = 3};
	size_t len;

	/* VMPCK1 twice: its next request is 5, the others' still 1. */
	assert_int_equal(call_on(1, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	memcpy(&first, &req, sizeof(first));
	assert_int_equal(call_on(1, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(seqs[1], 4);
	/* VMPCK2 does not follow VMPCK1's count. */
	assert_int_equal(
	    guest_req_msg_seal(&req, vmpcks[2], 5, SNP_MSG_REPORT_REQ, 2, &rq, sizeof(rq)), 0);
	refused(&req);
	assert_int_equal(
	    guest_req_msg_seal(&req, vmpcks[2], 3, SNP_MSG_REPORT_REQ, 2, &rq, sizeof(rq)), 0);
	refused(&req);
	/* VMPCK1's first message again: a replay. */
	refused(&first);
	/* Each of the others starts at 1; VMPCK1 goes on at 5. */
	for (uint8_t id = 0; id < 4; id++) {
		assert_int_equal(
		    call_on(id, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
		assert_int_equal(req.hdr.msg_seqno, id == 1 ? 5 : 1);
		assert_int_equal(rs.status, SNP_FW_STATUS_OK);
	}
	assert_int_equal(psp_model_served(), 6);
	assert_int_equal(psp_model_refused(), 3);
}

static void vmpck_report_vmpl_floor(void **state)
{
	static const uint8_t zero[SNP_REPORT_BYTES];
	static struct snp_report_rsp rs;
	struct snp_report rep;
	size_t len;

	for (uint8_t id = 0; id < 4; id++) {
		for (uint32_t v = 0; v < 4; v++) {
			struct snp_report_req rq = {.vmpl = v};
			assert_int_equal(
			    call_on(id, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len),
			    0);
			assert_int_equal(len, sizeof(rs));
			if (v < id) {
				/* Answered (the sequence moves on), with a status and no report. */
				assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
				assert_int_equal(rs.report_size, 0);
				assert_memory_equal(rs.report, zero, sizeof(zero));
			} else {
				assert_int_equal(rs.status, SNP_FW_STATUS_OK);
				assert_int_equal(rs.report_size, SNP_REPORT_BYTES);
				assert_int_equal(
				    snp_report_parse(rs.report, SNP_REPORT_BYTES, &rep),
				    SNP_REPORT_OK);
				assert_int_equal(rep.raw.vmpl, v);
			}
		}
	}
	/* VMPL 4 does not exist, whatever the key. */
	struct snp_report_req rq = {.vmpl = 4};
	assert_int_equal(call_on(3, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
	assert_int_equal(psp_model_served(), 17);
	assert_int_equal(psp_model_refused(), 0);
}

static void vmpck_key_vmpl_floor(void **state)
{
	struct snp_key_rsp rs;
	uint8_t got[4][4][32], zero[32] = {0};
	size_t len;

	for (uint8_t id = 0; id < 4; id++) {
		for (uint32_t v = 0; v < 4; v++) {
			struct snp_key_req kr = {
			    .guest_field_select = SNP_GFS_MEASUREMENT | SNP_GFS_POLICY, .vmpl = v};
			assert_int_equal(
			    call_on(id, SNP_MSG_KEY_REQ, &kr, sizeof(kr), &rs, sizeof(rs), &len),
			    0);
			assert_int_equal(len, sizeof(rs));
			if (v < id) {
				assert_int_equal(rs.status, SNP_FW_STATUS_INVALID_PARAM);
				assert_memory_equal(rs.key, zero, 32);
			} else {
				assert_int_equal(rs.status, SNP_FW_STATUS_OK);
				assert_memory_not_equal(rs.key, zero, 32);
				memcpy(got[id][v], rs.key, 32);
			}
		}
	}
	/* The requested VMPL is mixed in; the key that carried the request is not. */
	for (uint32_t v = 0; v < 4; v++) {
		for (uint8_t id = 1; id <= v; id++)
			assert_memory_equal(got[id][v], got[0][v], 32);
		if (v)
			assert_memory_not_equal(got[0][v], got[0][v - 1], 32);
	}
}

static void vmpck_wrong_key_refused(void **state)
{
	static const struct {
		uint8_t sealed_with, claimed;
	} cases[] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {1, 0}};
	static struct snp_report_rsp rs;
	struct snp_report_req rq = {.vmpl = 3};
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(guest_req_msg_seal(&req, vmpcks[cases[i].sealed_with], 1,
						    SNP_MSG_REPORT_REQ, cases[i].claimed, &rq,
						    sizeof(rq)),
				 0);
		refused(&req);
	}
	/* Nothing was consumed: every key still takes sequence number 1. */
	for (uint8_t id = 0; id < 4; id++) {
		assert_int_equal(
		    call_on(id, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
		assert_int_equal(req.hdr.msg_seqno, 1);
		assert_int_equal(rs.status, SNP_FW_STATUS_OK);
	}
}

static void vmpck_not_installed_refused(void **state)
{
	static struct snp_report_rsp rs;
	struct snp_report_req rq = {.vmpl = 3};
	uint8_t zero[32] = {0}, k2[32], k[32];
	size_t len;

	/* Only VMPCK0 (from psp_model_init) and VMPCK2. */
	memcpy(vmpcks[0], vmpck, 32);
	memset(seqs, 0, sizeof(seqs));
	assert_int_equal(rng(NULL, k2, 32), 0);
	assert_int_equal(psp_model_set_vmpck(2, k2), 0);
	memcpy(vmpcks[2], k2, 32);
	/* An absent key is not the all-zero key, nor VMPCK0. */
	for (uint8_t id = 1; id < 4; id += 2) {
		assert_int_equal(
		    guest_req_msg_seal(&req, zero, 1, SNP_MSG_REPORT_REQ, id, &rq, sizeof(rq)), 0);
		refused(&req);
		assert_int_equal(
		    guest_req_msg_seal(&req, vmpck, 1, SNP_MSG_REPORT_REQ, id, &rq, sizeof(rq)), 0);
		refused(&req);
	}
	assert_int_equal(call_on(2, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_OK);
	/* Only ids 1..3 can be installed; VMPCK0 stays the one from psp_model_init. */
	assert_int_equal(rng(NULL, k, 32), 0);
	assert_int_equal(psp_model_set_vmpck(0, k), -1);
	assert_int_equal(psp_model_set_vmpck(4, k), -1);
	assert_int_equal(psp_model_set_vmpck(1, NULL), -1);
	/* An installed key is never replaced (its counter would restart: nonce reuse). */
	assert_int_equal(psp_model_set_vmpck(2, k), -1);
	assert_int_equal(psp_model_set_vmpck(2, k2), -1);
	assert_int_equal(guest_req_msg_seal(&req, k, 1, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq)), 0);
	refused(&req);
	assert_int_equal(call_on(0, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
	assert_int_equal(rs.status, SNP_FW_STATUS_OK);
	/* A new launch forgets VMPCK1..3. */
	assert_int_equal(setup_meas(meas_a), 0);
	assert_int_equal(guest_req_msg_seal(&req, k2, 1, SNP_MSG_REPORT_REQ, 2, &rq, sizeof(rq)),
			 0);
	refused(&req);
	/* No keys can be installed before psp_model_init. */
	psp_model_reset();
	assert_int_equal(psp_model_set_vmpck(1, k), -1);
}

/*
 * A message guest_req_msg_seal will not build (it refuses vmpck > 3): the
 * header says MSG_VMPCK = id and the tag is right under key, so only the
 * id itself can be the reason for a refusal.
 */
static void seal_claiming(struct snp_guest_msg *m, const uint8_t key[32], uint64_t seqno,
			  uint8_t type, uint8_t id, const void *p, size_t n)
{
	mbedtls_gcm_context gcm;
	uint8_t iv[SNP_MSG_IV_LEN] = {0};

	assert_int_equal(guest_req_msg_seal(m, key, seqno, type, 0, p, n), 0);
	m->hdr.msg_vmpck = id;
	for (unsigned i = 0; i < 8; i++)
		iv[i] = (uint8_t)(seqno >> (8 * i));
	mbedtls_gcm_init(&gcm);
	assert_int_equal(mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, SNP_VMPCK_LEN * 8),
			 0);
	assert_int_equal(mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, n, iv, sizeof(iv),
						   (const uint8_t *)&m->hdr + SNP_MSG_AAD_OFF,
						   SNP_MSG_AAD_LEN, p, m->payload, SNP_MSG_TAG_LEN,
						   m->hdr.authtag),
			 0);
	mbedtls_gcm_free(&gcm);
}

static void vmpck_id_out_of_range(void **state)
{
	static const uint8_t bad[] = {4, 5, 7, 0x80, 0xFF};
	static struct snp_report_rsp rs;
	struct snp_report_req rq = {.vmpl = 3};
	size_t len;

	assert_int_equal(
	    guest_req_msg_seal(&req, vmpcks[0], 1, SNP_MSG_REPORT_REQ, 4, &rq, sizeof(rq)),
	    GUEST_REQ_ERR_INVAL);
	for (size_t i = 0; i < sizeof(bad); i++) {
		/* Under VMPCK0 and under the key the id would alias modulo 4. */
		seal_claiming(&req, vmpcks[0], 1, SNP_MSG_REPORT_REQ, bad[i], &rq, sizeof(rq));
		refused(&req);
		seal_claiming(&req, vmpcks[bad[i] & 3], 1, SNP_MSG_REPORT_REQ, bad[i], &rq,
			      sizeof(rq));
		refused(&req);
	}
	/* The same construction with a valid id is served, and nothing was consumed. */
	seal_claiming(&req, vmpcks[0], 1, SNP_MSG_REPORT_REQ, 0, &rq, sizeof(rq));
	resp_poison();
	assert_int_equal(psp_model_handle(&req, &resp), 0);
	assert_int_equal(
	    guest_req_msg_open(&resp, vmpcks[0], 2, SNP_MSG_REPORT_RSP, 0, &rs, sizeof(rs), &len),
	    0);
	assert_int_equal(rs.status, SNP_FW_STATUS_OK);
	for (uint8_t id = 1; id < 4; id++) {
		assert_int_equal(
		    call_on(id, SNP_MSG_REPORT_REQ, &rq, sizeof(rq), &rs, sizeof(rs), &len), 0);
		assert_int_equal(req.hdr.msg_seqno, 1);
	}
	assert_int_equal(psp_model_refused(), 2 * sizeof(bad));
	assert_int_equal(psp_model_served(), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(report_verifies, setup, teardown),
	    cmocka_unit_test_setup_teardown(report_request_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(sequence_enforced, setup, teardown),
	    cmocka_unit_test_setup_teardown(key_derivation, setup, teardown),
	    cmocka_unit_test_setup_teardown(keys_blob_parse, setup, teardown),
	    cmocka_unit_test_setup_teardown(hypervisor_side, setup, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_selects_key, setup_vmpcks, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_sequence_per_key, setup_vmpcks, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_report_vmpl_floor, setup_vmpcks, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_key_vmpl_floor, setup_vmpcks, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_wrong_key_refused, setup_vmpcks, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_not_installed_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(vmpck_id_out_of_range, setup_vmpcks, teardown),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
