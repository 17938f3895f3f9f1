/*
 * SNP guest request client (attest/guest_req.c) against the simulated PSP
 * (tests/snpm/model/psp.c): message layout and crypto of reference §6.1 byte for
 * byte, the GHCB encoding, the round trip, and the sequence-number rules
 * (replay refused, a tampered response wipes VMPCK0 and refuses the rest,
 * BUSY resends the same message, INVALID_LEN on the extended request), and
 * the termination wipe (base/secret.c): nothing sealed or sent after it, no
 * response handed to the guest.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <ucontext.h>
#include <cmocka.h>
#include <dlfcn.h>

#include <mbedtls/ecdsa.h>
#include <mbedtls/gcm.h>
#include <mbedtls/sha512.h>

#include "attest/certtable.h"
#include "attest/guest_req.h"
#include "attest/report.h"
#include "tests/snpm/model/psp.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "snp/ghcb.h"

/* ---- test platform: the GHCB call goes to the sim PSP, with hooks ---- */

enum hook {
	HOOK_NONE,
	HOOK_TAMPER_TAG,
	HOOK_TAMPER_SEQNO,
	HOOK_BUSY_ONCE,
	HOOK_HV_ERROR,
	HOOK_CAPTURE,
	HOOK_WATCH_DATA,
	HOOK_WIPE_IN_SEAL, /* csvsm's seal: wipe right after the encryption */
	HOOK_WIPE_FORGE,   /* the host: wipe, then answer sealed with the wiped key */
	HOOK_WIPE_BUSY,	   /* the host: wipe, then answer BUSY */
};
static enum hook hook;
static unsigned calls;
static struct snp_guest_msg captured[4];
static unsigned ncaptured;

static struct ghcb ghcb_page;
static struct snp_guest_msg req_page __aligned(4096), resp_page __aligned(4096);
static uint8_t data_pages[4 * 4096] __aligned(4096);
static uint8_t vmpck0[32];

static void watch_data_pages(void);

static bool in_host;	     /* inside the host (the PSP model seals and opens too) */
static unsigned csvsm_seals; /* AES-GCM encryptions by csvsm (guest_req_msg_seal) */

/*
 * Every AES-GCM encryption of this executable goes through here (it
 * interposes on libmbedcrypto's): those outside the host hook are csvsm's
 * seals, counted; HOOK_WIPE_IN_SEAL wipes right after one, the window
 * between sealing a request and copying it to the shared page.
 */
int mbedtls_gcm_crypt_and_tag(mbedtls_gcm_context *ctx, int mode, size_t length,
			      const unsigned char *iv, size_t iv_len, const unsigned char *add,
			      size_t add_len, const unsigned char *input, unsigned char *output,
			      size_t tag_len, unsigned char *tag)
{
	static int (*real)(mbedtls_gcm_context *, int, size_t, const unsigned char *, size_t,
			   const unsigned char *, size_t, const unsigned char *, unsigned char *,
			   size_t, unsigned char *);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "mbedtls_gcm_crypt_and_tag");
	assert_non_null(real);
	int rc = real(ctx, mode, length, iv, iv_len, add, add_len, input, output, tag_len, tag);
	if (!in_host && mode == MBEDTLS_GCM_ENCRYPT) {
		csvsm_seals++;
		if (hook == HOOK_WIPE_IN_SEAL) {
			hook = HOOK_NONE;
			secret_wipe_all();
		}
	}
	return rc;
}

/* A host that saw the wipe forges the PSP's answer with the key csvsm now
 * holds, all zeros (issue 15 item 3). */
static void forge_rsp(const struct snp_guest_msg *req)
{
	static const uint8_t zero_key[32];
	static struct snp_report_rsp rr;
	static struct snp_key_rsp kr;
	static struct snp_guest_msg m;
	bool key = req->hdr.msg_type == SNP_MSG_KEY_REQ;

	memset(&rr, 0, sizeof(rr));
	rr.status = SNP_FW_STATUS_OK;
	rr.report_size = SNP_REPORT_BYTES;
	memset(rr.report, 0xF0, sizeof(rr.report));
	memset(&kr, 0, sizeof(kr));
	kr.status = SNP_FW_STATUS_OK;
	memset(kr.key, 0xF0, sizeof(kr.key));
	assert_int_equal(guest_req_msg_seal(&m, zero_key, req->hdr.msg_seqno + 1,
					    (uint8_t)(req->hdr.msg_type + 1), 0,
					    key ? (const void *)&kr : (const void *)&rr,
					    key ? sizeof(kr) : sizeof(rr)),
			 GUEST_REQ_OK);
	memcpy(&resp_page, &m, sizeof(m));
}

static void test_ghcb_call(struct percpu *cpu, struct ghcb *g)
{
	calls++;
	if (ncaptured < 4)
		memcpy(&captured[ncaptured++], &req_page, sizeof(req_page));
	in_host = true;
	if (hook == HOOK_WIPE_FORGE || hook == HOOK_WIPE_BUSY) {
		secret_wipe_all(); /* another vCPU panics while this one waits for the PSP */
		g->sw_exit_info_1 = 0;
		g->sw_exit_info_2 = 0;
		if (hook == HOOK_WIPE_FORGE)
			forge_rsp(&req_page);
		else
			g->sw_exit_info_2 = (uint64_t)SNP_GUEST_VMM_ERR_BUSY << 32;
		hook = HOOK_NONE;
		in_host = false;
		return;
	}
	if (hook == HOOK_BUSY_ONCE) {
		hook = HOOK_NONE;
		g->sw_exit_info_1 = 0;
		g->sw_exit_info_2 = (uint64_t)SNP_GUEST_VMM_ERR_BUSY << 32;
		in_host = false;
		return;
	}
	if (hook == HOOK_HV_ERROR) {
		g->sw_exit_info_1 = GHCB_RESULT_ERROR;
		g->sw_exit_info_2 = GHCB_ERR_INVALID_INPUT;
		in_host = false;
		return;
	}
	psp_model_ghcb_exit(cpu, g);
	in_host = false;
	if (hook == HOOK_TAMPER_TAG)
		resp_page.hdr.authtag[3] ^= 1;
	if (hook == HOOK_TAMPER_SEQNO)
		resp_page.hdr.msg_seqno += 2;
	if (hook == HOOK_WATCH_DATA)
		watch_data_pages();
}

/*
 * Every read of the shared data pages seen, with the instruction that made
 * it (issue 8 item 8): the pages are PROT_NONE; a fault records the access,
 * opens the region for exactly one instruction (the trap flag) and the trap
 * closes it again. csvsm must touch them only through its one copy (a call
 * of libc's copy routine, outside this executable), never parse them in
 * place with its own code (certtable_parse is linked into this executable).
 *
 * What is counted does not depend on the host CPU (issue 15 item 0): which
 * bytes of a page a copy instruction faults on (or whether one instruction
 * reads a whole vector, a cache line or one rep-movs iteration) is glibc's
 * choice per CPU (ERMS, AVX2, AVX-512, ...), so the test counts pages, not
 * bytes, and counts the memcpy calls whose source lies in the shared pages
 * through memcpy below: this executable's memcpy interposes on libc's for
 * the code linked into it (csvsm's guest_req.o among it) and hands each copy
 * to libc's memmove, which runs outside this executable's text.
 */
extern char __executable_start[], etext[];
static unsigned page_reads[sizeof(data_pages) / 4096];
static unsigned reads_by_csvsm_code;
static unsigned data_copies;		      /* memcpy calls reading the shared pages */
static size_t data_copied_lo, data_copied_hi; /* what they covered */
static volatile bool watching;

/* Through a volatile pointer: with restrict arguments the compiler would
 * turn memmove back into memcpy, a tail call into this function itself. */
static void *(*volatile libc_memmove)(void *, const void *, size_t) = memmove;

void *memcpy(void *restrict dst, const void *restrict src, size_t n)
{
	const uint8_t *s = src;
	if (watching && n && s < data_pages + sizeof(data_pages) && s + n > data_pages) {
		size_t lo = s < data_pages ? 0 : (size_t)(s - data_pages);
		size_t hi = MIN(sizeof(data_pages), (size_t)(s + n - data_pages));
		if (!data_copies++ || lo < data_copied_lo)
			data_copied_lo = lo;
		if (hi > data_copied_hi)
			data_copied_hi = hi;
	}
	return libc_memmove(dst, src, n);
}

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint8_t *a = si->si_addr;
	if (!watching || a < data_pages || a >= data_pages + sizeof(data_pages))
		abort();
	page_reads[(size_t)(a - data_pages) / 4096]++;
	char *rip = (char *)uc->uc_mcontext.gregs[REG_RIP];
	if (rip >= __executable_start && rip < etext)
		reads_by_csvsm_code++;
	mprotect(data_pages, sizeof(data_pages), PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100; /* TF: trap after this instruction */
}

static void on_trap(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	mprotect(data_pages, sizeof(data_pages), watching ? PROT_NONE : PROT_READ | PROT_WRITE);
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100ULL;
}

static void watch_data_pages(void)
{
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};
	sigaction(SIGSEGV, &sa, NULL);
	sa.sa_sigaction = on_trap;
	sigaction(SIGTRAP, &sa, NULL);
	memset(page_reads, 0, sizeof(page_reads));
	reads_by_csvsm_code = data_copies = 0;
	data_copied_lo = data_copied_hi = 0;
	watching = true;
	mprotect(data_pages, sizeof(data_pages), PROT_NONE);
}

static void unwatch_data_pages(void)
{
	watching = false;
	mprotect(data_pages, sizeof(data_pages), PROT_READ | PROT_WRITE);
	signal(SIGSEGV, SIG_DFL);
	signal(SIGTRAP, SIG_DFL);
}

static const struct platform_ops test_ops = {.name = "guest-req-test", .ghcb_call = test_ghcb_call};
const struct platform_ops *platform = &test_ops;

static int rng(void *ctx, unsigned char *buf, size_t len)
{
	return getrandom(buf, len, 0) == (ssize_t)len ? 0 : -1;
}

static uint8_t cert_blob[3][300];

static void make_keys(struct psp_model_keys *k, mbedtls_ecdsa_context *pub)
{
	static uint8_t table[4096];
	const void *data[3] = {cert_blob[0], cert_blob[1], cert_blob[2]};
	uint32_t lens[3] = {300, 200, 100};
	uint8_t g[3][16];

	memset(k, 0, sizeof(*k));
	mbedtls_ecdsa_init(pub);
	assert_int_equal(mbedtls_ecdsa_genkey(pub, MBEDTLS_ECP_DP_SECP384R1, rng, NULL), 0);
	assert_int_equal(mbedtls_mpi_write_binary(&pub->d, k->vcek_d, 48), 0);
	k->reported_tcb = 0xD115000000000004ull;
	k->cpuid_fam = 0x19;
	k->cpuid_mod = 0x01;
	k->cpuid_step = 0x01;
	memset(k->chip_id, 0xC5, sizeof(k->chip_id));
	memcpy(g[0], certtable_guid_vcek, 16);
	memcpy(g[1], certtable_guid_ask, 16);
	memcpy(g[2], certtable_guid_ark, 16);
	for (int i = 0; i < 3; i++)
		memset(cert_blob[i], 0x30 + i, sizeof(cert_blob[i]));
	k->cert_table_len =
	    certtable_build(table, sizeof(table), (const uint8_t(*)[16])g, data, lens, 3);
	assert_true(k->cert_table_len > 0);
	k->cert_table = table;
}

static mbedtls_ecdsa_context vcek_pub;
static const uint8_t measurement[48] = {1, 2, 3, 4, 5, 6, 7, 8};

static int setup(void **state)
{
	struct psp_model_keys k;

	percpus[0].ghcb = &ghcb_page;
	percpus[0].ghcb_gpa = (gpa_t)(uintptr_t)&ghcb_page;
	hook = HOOK_NONE;
	calls = ncaptured = csvsm_seals = 0;
	assert_int_equal(rng(NULL, vmpck0, sizeof(vmpck0)), 0);
	make_keys(&k, &vcek_pub);
	assert_int_equal(
	    psp_model_init(vmpck0, &k, measurement, PSP_MODEL_DEFAULT_POLICY, rng, NULL), 0);
	psp_model_set_shared_pages((gpa_t)(uintptr_t)&req_page, (gpa_t)(uintptr_t)&resp_page,
				   (gpa_t)(uintptr_t)data_pages, 4);
	assert_int_equal(guest_req_init(vmpck0, &req_page, (gpa_t)(uintptr_t)&req_page, &resp_page,
					(gpa_t)(uintptr_t)&resp_page, data_pages,
					(gpa_t)(uintptr_t)data_pages, 4),
			 GUEST_REQ_OK);
	return 0;
}

static int teardown(void **state)
{
	mbedtls_ecdsa_free(&vcek_pub);
	psp_model_reset();
	guest_req_disable();
	secret_reset(); /* a wipe test must not close the channel of every later one */
	return 0;
}

/* ---- pure functions ---- */

static void seal_layout_and_crypto(void **state)
{
	static struct snp_guest_msg m;
	uint8_t key[32], pt[0x60], back[0x60], iv[12] = {0}, ct[0x60], tag[16];
	mbedtls_gcm_context gcm;
	size_t len = 0;

	for (int i = 0; i < 32; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < 0x60; i++)
		pt[i] = (uint8_t)(0xA0 ^ i);
	assert_int_equal(guest_req_msg_seal(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 0,
					    pt, sizeof(pt)),
			 0);
	const uint8_t *h = (const uint8_t *)&m;
	/* §6.1 header bytes */
	assert_int_equal(h[0x20], 0x08);
	assert_int_equal(h[0x27], 0x01);
	assert_int_equal(h[0x30], 1);	 /* algo AES-256-GCM */
	assert_int_equal(h[0x31], 1);	 /* hdr_version */
	assert_int_equal(h[0x32], 0x60); /* hdr_sz */
	assert_int_equal(h[0x33], 0);
	assert_int_equal(h[0x34], SNP_MSG_REPORT_REQ);
	assert_int_equal(h[0x35], 1);	 /* msg_version */
	assert_int_equal(h[0x36], 0x60); /* msg_sz */
	assert_int_equal(h[0x3C], 0);	 /* msg_vmpck */
	for (int i = 16; i < 32; i++)
		assert_int_equal(h[i], 0); /* authtag[16..31] unused */
	/* Independent GCM: IV = seqno LE || 0000, AAD = 0x30..0x5F. */
	for (int i = 0; i < 8; i++)
		iv[i] = (uint8_t)(0x0102030405060708ull >> (8 * i));
	mbedtls_gcm_init(&gcm);
	assert_int_equal(mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, 256), 0);
	assert_int_equal(mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, sizeof(pt), iv, 12,
						   h + 0x30, 48, pt, ct, 16, tag),
			 0);
	mbedtls_gcm_free(&gcm);
	assert_memory_equal(ct, m.payload, sizeof(ct));
	assert_memory_equal(tag, m.hdr.authtag, 16);

	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 0,
					    back, sizeof(back), &len),
			 0);
	assert_int_equal(len, sizeof(pt));
	assert_memory_equal(back, pt, sizeof(pt));
	/* Wrong seqno / type / vmpck / AAD byte / small buffer: refused. */
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060709ull, SNP_MSG_REPORT_REQ, 0,
					    back, sizeof(back), &len),
			 GUEST_REQ_ERR_MSG);
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_KEY_REQ, 0,
					    back, sizeof(back), &len),
			 GUEST_REQ_ERR_MSG);
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 1,
					    back, sizeof(back), &len),
			 GUEST_REQ_ERR_MSG);
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 0,
					    back, sizeof(back) - 1, &len),
			 GUEST_REQ_ERR_MSG);
	m.hdr.rsvd3[0] ^= 1; /* in the AAD */
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 0,
					    back, sizeof(back), &len),
			 GUEST_REQ_ERR_MSG);
	m.hdr.rsvd3[0] ^= 1;
	m.hdr.msg_sz = SNP_MSG_PAYLOAD_MAX; /* msg_sz + 16 > buffer */
	assert_int_equal(guest_req_msg_open(&m, key, 0x0102030405060708ull, SNP_MSG_REPORT_REQ, 0,
					    back, 0x10000, &len),
			 GUEST_REQ_ERR_MSG);
	/* seqno 0 is never used */
	assert_int_equal(guest_req_msg_seal(&m, key, 0, SNP_MSG_REPORT_REQ, 0, pt, sizeof(pt)),
			 GUEST_REQ_ERR_INVAL);
}

static void ghcb_encoding(void **state)
{
	static struct ghcb g;
	uint32_t vmm, fw;
	uint64_t np;

	guest_req_ghcb_fill(&g, false, 0x1000, 0x2000, 0, 0);
	assert_int_equal(g.sw_exit_code, 0x80000011ull);
	assert_int_equal(g.sw_exit_info_1, 0x1000);
	assert_int_equal(g.sw_exit_info_2, 0x2000);
	assert_false(GHCB_VALID(&g, rax));
	guest_req_ghcb_fill(&g, true, 0x1000, 0x2000, 0x5000, 3);
	assert_int_equal(g.sw_exit_code, 0x80000012ull);
	assert_int_equal(g.rax, 0x5000);
	assert_int_equal(g.rbx, 3);
	assert_true(GHCB_VALID(&g, rax) && GHCB_VALID(&g, rbx));

	g.sw_exit_info_1 = 0;
	g.sw_exit_info_2 = 0;
	assert_int_equal(guest_req_ghcb_check(&g, true, &vmm, &fw, &np), 0);
	g.sw_exit_info_2 = 1ull << 32;
	g.rbx = 7;
	assert_int_equal(guest_req_ghcb_check(&g, true, &vmm, &fw, &np), GUEST_REQ_ERR_FW);
	assert_int_equal(vmm, SNP_GUEST_VMM_ERR_INVALID_LEN);
	assert_int_equal(fw, 0);
	assert_int_equal(np, 7);
	g.sw_exit_info_2 = 0x16;
	assert_int_equal(guest_req_ghcb_check(&g, false, &vmm, &fw, &np), GUEST_REQ_ERR_FW);
	assert_int_equal(fw, 0x16);
	g.sw_exit_info_1 = 5; /* not 0/1/2 */
	assert_int_equal(guest_req_ghcb_check(&g, false, &vmm, &fw, &np), GUEST_REQ_ERR_HV);
}

/* ---- round trips ---- */

static void verify_sig(const uint8_t report[SNP_REPORT_BYTES])
{
	uint8_t hash[64], rbe[48], sbe[48];
	mbedtls_mpi r, s;
	const struct snp_report_raw *rr = (const void *)report;

	for (int i = 0; i < 48; i++) {
		rbe[i] = rr->sig_r[47 - i];
		sbe[i] = rr->sig_s[47 - i];
	}
	for (int i = 48; i < 72; i++)
		assert_true(rr->sig_r[i] == 0 && rr->sig_s[i] == 0);
	mbedtls_mpi_init(&r);
	mbedtls_mpi_init(&s);
	assert_int_equal(mbedtls_mpi_read_binary(&r, rbe, 48), 0);
	assert_int_equal(mbedtls_mpi_read_binary(&s, sbe, 48), 0);
	assert_int_equal(mbedtls_sha512_ret(report, SNP_REPORT_SIGNED_LEN, hash, 1), 0);
	assert_int_equal(mbedtls_ecdsa_verify(&vcek_pub.grp, hash, 48, &vcek_pub.Q, &r, &s), 0);
	mbedtls_mpi_free(&r);
	mbedtls_mpi_free(&s);
}

static void report_round_trip(void **state)
{
	uint8_t ud[64], report[SNP_REPORT_BYTES];
	struct snp_report parsed;

	for (int i = 0; i < 64; i++)
		ud[i] = (uint8_t)(0x40 + i);
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL), 0);
	assert_int_equal(guest_req_last_seqno(), 2);
	assert_int_equal(snp_report_parse(report, sizeof(report), &parsed), SNP_REPORT_OK);
	assert_int_equal(parsed.raw.version, 3);
	assert_int_equal(parsed.raw.vmpl, 0);
	assert_int_equal(parsed.raw.policy, 0x30000);
	assert_int_equal(parsed.raw.signature_algo, 1);
	assert_memory_equal(parsed.raw.report_data, ud, 64);
	assert_memory_equal(parsed.raw.measurement, measurement, 48);
	assert_int_equal(parsed.product, SNP_PRODUCT_MILAN);
	verify_sig(report);
	/* The request that left csvsm was ciphertext with seqno 1. */
	assert_int_equal(captured[0].hdr.msg_seqno, 1);
	assert_int_equal(captured[0].hdr.msg_type, SNP_MSG_REPORT_REQ);
	assert_int_equal(captured[0].hdr.msg_sz, 0x60);
	assert_null(memmem(captured[0].payload, 0x60, ud, 16));

	/* The second one uses seqno 3; the report differs only in REPORT_DATA and signature. */
	ud[0] ^= 0xFF;
	assert_int_equal(guest_req_report(&percpus[0], ud, 1, report, NULL, 0, NULL), 0);
	assert_int_equal(guest_req_last_seqno(), 4);
	assert_int_equal(captured[1].hdr.msg_seqno, 3);
	assert_int_equal(((struct snp_report_raw *)report)->vmpl, 1);
	verify_sig(report);
	assert_int_equal(psp_model_served(), 2);
}

static void replayed_request_refused(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES];
	uint32_t fw;

	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL), 0);
	/* The hypervisor replays the captured message: the PSP refuses the old seqno. */
	fw = psp_model_handle(&captured[0], &resp_page);
	assert_int_not_equal(fw, 0);
	assert_int_equal(psp_model_refused(), 1);
	/* And the channel still works: sequence not disturbed. */
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL), 0);
	assert_int_equal(guest_req_last_seqno(), 4);
}

static void tampered_response_wipes_key(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES];

	hook = HOOK_TAMPER_TAG;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL),
			 GUEST_REQ_ERR_MSG);
	assert_false(guest_req_enabled());
	hook = HOOK_NONE;
	calls = 0;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL),
			 GUEST_REQ_ERR_DISABLED);
	assert_int_equal(calls, 0); /* nothing left csvsm */
}

static void wrong_response_seqno_wipes_key(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES];

	hook = HOOK_TAMPER_SEQNO;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL),
			 GUEST_REQ_ERR_MSG);
	assert_false(guest_req_enabled());
}

static void hv_error_wipes_key(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES];

	hook = HOOK_HV_ERROR;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL),
			 GUEST_REQ_ERR_HV);
	assert_false(guest_req_enabled());
}

static void busy_resends_same_message(void **state)
{
	uint8_t ud[64] = {7}, report[SNP_REPORT_BYTES];

	hook = HOOK_BUSY_ONCE;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL), 0);
	assert_int_equal(calls, 2);
	assert_memory_equal(&captured[0], &captured[1], sizeof(captured[0]));
	assert_int_equal(guest_req_last_seqno(), 2);
	assert_true(guest_req_enabled());
}

static void extended_request_certs(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES], certs[8192];
	struct certtable_entry e[8];
	size_t len = 0, n = 0;

	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, certs, sizeof(certs), &len),
			 0);
	assert_int_equal(len, 4 * 24 + 600);
	assert_int_equal(certtable_parse(certs, len, e, 8, &n), 0);
	assert_int_equal(n, 3);
	assert_non_null(certtable_find(e, n, CERTTABLE_VCEK));
	assert_memory_equal(certtable_find(e, n, CERTTABLE_VCEK)->data, cert_blob[0], 300);
	verify_sig(report);

	/* Caller's buffer too small: the size needed, the report still valid. */
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, certs, 100, &len),
			 GUEST_REQ_ERR_CERTS_LEN);
	assert_int_equal(len, 4 * 24 + 600);
	assert_true(guest_req_enabled());
	assert_int_equal(guest_req_last_seqno(), 4);
}

/*
 * The certificate table comes back in pages the hypervisor can rewrite at
 * any time: csvsm reads them once and sizes and returns only its private
 * copy, also when the caller's buffer is too small for the table.
 */
static void extended_request_reads_host_data_once(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES], certs[8192];
	size_t len = 0, cap[] = {sizeof(certs), 100};

	for (unsigned c = 0; c < 2; c++) {
		hook = HOOK_WATCH_DATA;
		int rc = guest_req_report(&percpus[0], ud, 0, report, certs, cap[c], &len);
		unwatch_data_pages();
		hook = HOOK_NONE;
		assert_int_equal(rc, c == 0 ? 0 : GUEST_REQ_ERR_CERTS_LEN);
		assert_int_equal(len, 4 * 24 + 600);
		/* One copy of the whole data area ... */
		assert_int_equal(data_copies, 1);
		assert_int_equal(data_copied_lo, 0);
		assert_int_equal(data_copied_hi, sizeof(data_pages));
		/* ... that really read every page (the faults show the watch ran) ... */
		for (size_t p = 0; p < sizeof(page_reads) / sizeof(page_reads[0]); p++)
			assert_true(page_reads[p] > 0);
		assert_int_equal(reads_by_csvsm_code, 0); /* ... and never parsed in place */
	}
}

static void extended_request_invalid_len(void **state)
{
	uint8_t ud[64] = {0}, report[SNP_REPORT_BYTES], certs[8192];
	size_t len = 0;

	/* csvsm offers 0 data pages to a host whose table needs 1: INVALID_LEN. */
	assert_int_equal(guest_req_init(vmpck0, &req_page, (gpa_t)(uintptr_t)&req_page, &resp_page,
					(gpa_t)(uintptr_t)&resp_page, data_pages,
					(gpa_t)(uintptr_t)data_pages, 1),
			 0);
	struct psp_model_keys k;
	mbedtls_ecdsa_context pub2;
	static uint8_t big[8192];
	make_keys(&k, &pub2);
	/* a table of 5000 bytes needs 2 pages */
	memcpy(big, k.cert_table, k.cert_table_len);
	k.cert_table = big;
	k.cert_table_len = 5000;
	assert_int_equal(
	    psp_model_init(vmpck0, &k, measurement, PSP_MODEL_DEFAULT_POLICY, rng, NULL), 0);
	psp_model_set_shared_pages((gpa_t)(uintptr_t)&req_page, (gpa_t)(uintptr_t)&resp_page,
				   (gpa_t)(uintptr_t)data_pages, 4);
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, certs, sizeof(certs), &len),
			 GUEST_REQ_ERR_CERTS_LEN);
	assert_int_equal(len, 2 * 4096);
	/* The same message went again as a plain request; the sequence stayed in step. */
	assert_int_equal(calls, 2);
	assert_int_equal(captured[1].hdr.msg_seqno, 1);
	assert_memory_equal(&captured[0], &captured[1], sizeof(captured[0]));
	assert_int_equal(guest_req_last_seqno(), 2);
	assert_true(guest_req_enabled());
	mbedtls_ecdsa_free(&pub2);
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, report, NULL, 0, NULL), 0);
}

static void key_request(void **state)
{
	struct snp_key_req kr = {.guest_field_select = SNP_GFS_MEASUREMENT | SNP_GFS_POLICY};
	uint8_t k1[32], k2[32];

	assert_int_equal(guest_req_key(&percpus[0], &kr, k1), 0);
	assert_int_equal(guest_req_key(&percpus[0], &kr, k2), 0);
	assert_memory_equal(k1, k2, 32);
	assert_int_equal(guest_req_last_seqno(), 4);
	kr.vmpl = 1;
	assert_int_equal(guest_req_key(&percpus[0], &kr, k2), 0);
	assert_memory_not_equal(k1, k2, 32);
	kr.rsvd = 1; /* firmware status INVALID_PARAM: refused but the channel stays */
	assert_int_equal(guest_req_key(&percpus[0], &kr, k2), GUEST_REQ_ERR_STATUS);
	assert_true(guest_req_enabled());
}

static void init_checks(void **state)
{
	static const uint8_t zero[32];
	assert_int_equal(guest_req_init(zero, &req_page, (gpa_t)(uintptr_t)&req_page, &resp_page,
					(gpa_t)(uintptr_t)&resp_page, NULL, 0, 0),
			 GUEST_REQ_ERR_INVAL);
	assert_false(guest_req_enabled());
	assert_int_equal(guest_req_init(vmpck0, &req_page, 0x1001, &resp_page,
					(gpa_t)(uintptr_t)&resp_page, NULL, 0, 0),
			 GUEST_REQ_ERR_INVAL);
}

/* ---- the termination wipe (issue 15 item 3) ---- */

static bool all_bytes(const void *p, size_t n, uint8_t v)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		if (b[i] != v)
			return false;
	return true;
}

/* What the guest and the host can see of one request: the guest's buffers
 * and the shared request page start as patterns. */
static uint8_t wipe_report[SNP_REPORT_BYTES], wipe_key[SNP_DERIVED_KEY_LEN];

static void wipe_patterns(void)
{
	memset(wipe_report, 0xA5, sizeof(wipe_report));
	memset(wipe_key, 0xA5, sizeof(wipe_key));
	memset(&req_page, 0x5A, sizeof(req_page));
}

/* After the wipe: every kind of request refused, nothing sealed or sent. */
static void wipe_refuses_the_rest(unsigned seals, unsigned sent)
{
	struct snp_key_req kr = {.guest_field_select = SNP_GFS_MEASUREMENT};
	uint8_t ud[64] = {3}, certs[8192];
	size_t len = 0;

	assert_true(secret_terminating());
	assert_false(guest_req_enabled());
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, wipe_report, NULL, 0, NULL),
			 GUEST_REQ_ERR_DISABLED);
	assert_int_equal(
	    guest_req_report(&percpus[0], ud, 0, wipe_report, certs, sizeof(certs), &len),
	    GUEST_REQ_ERR_DISABLED);
	assert_int_equal(guest_req_key(&percpus[0], &kr, wipe_key), GUEST_REQ_ERR_DISABLED);
	assert_int_equal(csvsm_seals, seals);
	assert_int_equal(calls, sent);
	assert_true(all_bytes(wipe_report, sizeof(wipe_report), 0xA5));
	assert_true(all_bytes(wipe_key, sizeof(wipe_key), 0xA5));
}

static void wipe_before_request_sends_nothing(void **state)
{
	wipe_patterns();
	secret_wipe_all();
	wipe_refuses_the_rest(0, 0);
	assert_true(all_bytes(&req_page, sizeof(req_page), 0x5A)); /* nothing reached the host */
	assert_int_equal(psp_model_served(), 0);
}

/* The wipe lands after the request was sealed, before it left: it stays. */
static void wipe_after_seal_sends_nothing(void **state)
{
	uint8_t ud[64] = {1};

	wipe_patterns();
	hook = HOOK_WIPE_IN_SEAL;
	assert_int_equal(guest_req_report(&percpus[0], ud, 0, wipe_report, NULL, 0, NULL),
			 GUEST_REQ_ERR_DISABLED);
	assert_int_equal(hook, HOOK_NONE); /* the wipe did happen inside the seal */
	assert_int_equal(calls, 0);
	assert_true(all_bytes(&req_page, sizeof(req_page), 0x5A));
	wipe_refuses_the_rest(1, 0);
}

/* The wipe lands while the host holds the request; the host answers with a
 * response sealed under the wiped (zero) key: the guest gets no report. */
static void wipe_during_send_forged_report_refused(void **state)
{
	uint8_t ud[64] = {2};

	wipe_patterns();
	hook = HOOK_WIPE_FORGE;
	assert_int_not_equal(guest_req_report(&percpus[0], ud, 0, wipe_report, NULL, 0, NULL),
			     GUEST_REQ_OK);
	assert_int_equal(hook, HOOK_NONE);
	assert_int_equal(calls, 1);
	assert_true(all_bytes(wipe_report, sizeof(wipe_report), 0xA5));
	wipe_refuses_the_rest(1, 1);
}

static void wipe_during_send_forged_key_refused(void **state)
{
	struct snp_key_req kr = {.guest_field_select = SNP_GFS_MEASUREMENT};

	wipe_patterns();
	hook = HOOK_WIPE_FORGE;
	assert_int_not_equal(guest_req_key(&percpus[0], &kr, wipe_key), GUEST_REQ_OK);
	assert_int_equal(hook, HOOK_NONE);
	assert_int_equal(calls, 1);
	assert_true(all_bytes(wipe_key, sizeof(wipe_key), 0xA5));
	wipe_refuses_the_rest(1, 1);
}

/* The host answers BUSY after the wipe: the request is not sent again. */
static void wipe_during_busy_sends_nothing_more(void **state)
{
	uint8_t ud[64] = {4};

	wipe_patterns();
	hook = HOOK_WIPE_BUSY;
	assert_int_not_equal(guest_req_report(&percpus[0], ud, 0, wipe_report, NULL, 0, NULL),
			     GUEST_REQ_OK);
	assert_int_equal(hook, HOOK_NONE);
	assert_int_equal(calls, 1);
	assert_true(all_bytes(wipe_report, sizeof(wipe_report), 0xA5));
	wipe_refuses_the_rest(1, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(seal_layout_and_crypto),
	    cmocka_unit_test(ghcb_encoding),
	    cmocka_unit_test_setup_teardown(report_round_trip, setup, teardown),
	    cmocka_unit_test_setup_teardown(replayed_request_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(tampered_response_wipes_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(wrong_response_seqno_wipes_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(hv_error_wipes_key, setup, teardown),
	    cmocka_unit_test_setup_teardown(busy_resends_same_message, setup, teardown),
	    cmocka_unit_test_setup_teardown(extended_request_certs, setup, teardown),
	    cmocka_unit_test_setup_teardown(extended_request_reads_host_data_once, setup, teardown),
	    cmocka_unit_test_setup_teardown(extended_request_invalid_len, setup, teardown),
	    cmocka_unit_test_setup_teardown(key_request, setup, teardown),
	    cmocka_unit_test_setup_teardown(init_checks, setup, teardown),
	    cmocka_unit_test_setup_teardown(wipe_before_request_sends_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(wipe_after_seal_sends_nothing, setup, teardown),
	    cmocka_unit_test_setup_teardown(wipe_during_send_forged_report_refused, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(wipe_during_send_forged_key_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(wipe_during_busy_sends_nothing_more, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
