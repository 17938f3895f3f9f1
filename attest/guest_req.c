/*
 * SNP guest request client (include/attest/guest_req.h): csvsm's VMPCK0
 * channel to the PSP. Linux drivers/virt/coco/sev-guest/sev-guest.c
 * (enc_payload, verify_and_dec_payload, __handle_guest_request) and coconut
 * kernel/src/greq/driver.rs are the models; reference §6.1.
 *
 * The request and response pages are shared with the hypervisor: csvsm
 * seals the message privately, copies the ciphertext out, and copies the
 * response in once before checking it.
 */
#include <mbedtls/gcm.h>

#include "attest/certtable.h"
#include "attest/guest_req.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "base/string.h"
#include "snp/ghcb.h"

/* BUSY answers tolerated for one message before giving up (never wait forever). */
#define GUEST_REQ_BUSY_RETRIES 1000u

static void build_iv(uint8_t iv[SNP_MSG_IV_LEN], uint64_t seqno)
{
	for (unsigned i = 0; i < 8; i++)
		iv[i] = (uint8_t)(seqno >> (8 * i));
	iv[8] = iv[9] = iv[10] = iv[11] = 0;
}

int guest_req_msg_seal(struct snp_guest_msg *m, const uint8_t key[SNP_VMPCK_LEN], uint64_t seqno,
		       uint8_t type, uint8_t vmpck, const void *payload, size_t len)
{
	mbedtls_gcm_context gcm;
	uint8_t iv[SNP_MSG_IV_LEN];
	int rc;

	if (!m || !key || (!payload && len) || len > SNP_MSG_PAYLOAD_MAX - SNP_MSG_TAG_LEN ||
	    seqno == 0 || vmpck > 3)
		return GUEST_REQ_ERR_INVAL;
	memset(&m->hdr, 0, sizeof(m->hdr));
	m->hdr.msg_seqno = seqno;
	m->hdr.algo = SNP_AEAD_AES_256_GCM;
	m->hdr.hdr_version = SNP_MSG_HDR_VERSION;
	m->hdr.hdr_sz = SNP_MSG_HDR_SIZE;
	m->hdr.msg_type = type;
	m->hdr.msg_version = SNP_MSG_VERSION;
	m->hdr.msg_sz = (uint16_t)len;
	m->hdr.msg_vmpck = vmpck;
	build_iv(iv, seqno);

	mbedtls_gcm_init(&gcm);
	rc = mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, SNP_VMPCK_LEN * 8);
	if (!rc)
		rc = mbedtls_gcm_crypt_and_tag(&gcm, MBEDTLS_GCM_ENCRYPT, len, iv, sizeof(iv),
					       (const uint8_t *)&m->hdr + SNP_MSG_AAD_OFF,
					       SNP_MSG_AAD_LEN, payload, m->payload,
					       SNP_MSG_TAG_LEN, m->hdr.authtag);
	mbedtls_gcm_free(&gcm);
	return rc ? GUEST_REQ_ERR_INVAL : GUEST_REQ_OK;
}

int guest_req_msg_open(const struct snp_guest_msg *m, const uint8_t key[SNP_VMPCK_LEN],
		       uint64_t seqno, uint8_t type, uint8_t vmpck, void *out, size_t cap,
		       size_t *len)
{
	const struct snp_guest_msg_hdr *h = &m->hdr;
	mbedtls_gcm_context gcm;
	uint8_t iv[SNP_MSG_IV_LEN];
	int rc;

	if (!m || !key || !out || !len)
		return GUEST_REQ_ERR_INVAL;
	/* Header checks of Linux verify_and_dec_payload, plus the fixed fields. */
	if (h->msg_seqno != seqno || h->msg_type != type || h->msg_version != SNP_MSG_VERSION ||
	    h->algo != SNP_AEAD_AES_256_GCM || h->hdr_version != SNP_MSG_HDR_VERSION ||
	    h->hdr_sz != SNP_MSG_HDR_SIZE || h->msg_vmpck != vmpck)
		return GUEST_REQ_ERR_MSG;
	if ((size_t)h->msg_sz + SNP_MSG_TAG_LEN > SNP_MSG_PAYLOAD_MAX || h->msg_sz > cap)
		return GUEST_REQ_ERR_MSG;
	build_iv(iv, seqno);
	mbedtls_gcm_init(&gcm);
	rc = mbedtls_gcm_setkey(&gcm, MBEDTLS_CIPHER_ID_AES, key, SNP_VMPCK_LEN * 8);
	if (!rc)
		rc = mbedtls_gcm_auth_decrypt(&gcm, h->msg_sz, iv, sizeof(iv),
					      (const uint8_t *)h + SNP_MSG_AAD_OFF, SNP_MSG_AAD_LEN,
					      h->authtag, SNP_MSG_TAG_LEN, m->payload, out);
	mbedtls_gcm_free(&gcm);
	if (rc) {
		memzero_explicit(out, h->msg_sz);
		return GUEST_REQ_ERR_MSG;
	}
	*len = h->msg_sz;
	return GUEST_REQ_OK;
}

void guest_req_ghcb_fill(struct ghcb *g, bool ext, gpa_t req_gpa, gpa_t resp_gpa, gpa_t data_gpa,
			 uint64_t npages)
{
	ghcb_prepare(g, ext ? SVM_VMGEXIT_EXT_GUEST_REQUEST : SVM_VMGEXIT_GUEST_REQUEST, req_gpa,
		     resp_gpa);
	if (ext) {
		GHCB_SET(g, rax, data_gpa);
		GHCB_SET(g, rbx, npages);
	}
}

int guest_req_ghcb_check(const struct ghcb *g, bool ext, uint32_t *vmm_err, uint32_t *fw_err,
			 uint64_t *npages)
{
	uint64_t info2 = 0;

	*vmm_err = *fw_err = 0;
	if (npages)
		*npages = 0;
	if (ghcb_check_result(g, &info2) != GHCB_STATUS_OK)
		return GUEST_REQ_ERR_HV;
	info2 = __atomic_load_n(&g->sw_exit_info_2, __ATOMIC_RELAXED);
	if (info2 == 0)
		return GUEST_REQ_OK;
	*vmm_err = (uint32_t)(info2 >> SNP_GUEST_VMM_ERR_SHIFT);
	*fw_err = (uint32_t)info2;
	if (ext && npages && *vmm_err == SNP_GUEST_VMM_ERR_INVALID_LEN)
		*npages = __atomic_load_n(&g->rbx, __ATOMIC_RELAXED);
	return GUEST_REQ_ERR_FW;
}

/* ---- the channel ---- */

static struct {
	uint8_t vmpck0[SNP_VMPCK_LEN];
	bool enabled;
	uint64_t last_seqno;
	struct snp_guest_msg *req, *resp;
	gpa_t req_gpa, resp_gpa;
	uint8_t *data;
	gpa_t data_gpa;
	uint32_t data_npages;
} ch;
static int ch_lock;
/* Private bounces (never parse a shared page in place): the response, and
 * the hypervisor's certificate data, each copied exactly once. */
static struct snp_guest_msg resp_copy __aligned(4096);
static uint8_t data_copy[GUEST_REQ_DATA_MAX_PAGES * PAGE_SIZE] __aligned(4096);
static struct snp_guest_msg req_sealed __aligned(4096);

void guest_req_disable(void)
{
	memzero_explicit(ch.vmpck0, sizeof(ch.vmpck0));
	ch.enabled = false;
}

/* A termination wipe on any vCPU closes the channel for good (base/secret.c). */
bool guest_req_enabled(void)
{
	return ch.enabled && !secret_terminating();
}

uint64_t guest_req_last_seqno(void)
{
	return ch.last_seqno;
}

int guest_req_init(const uint8_t vmpck0[SNP_VMPCK_LEN], void *req_page, gpa_t req_gpa,
		   void *resp_page, gpa_t resp_gpa, void *data, gpa_t data_gpa,
		   uint32_t data_npages)
{
	static const uint8_t zero[SNP_VMPCK_LEN];

	guest_req_disable();
	if (!vmpck0 || !req_page || !resp_page || req_page == resp_page ||
	    !IS_ALIGNED(req_gpa, PAGE_SIZE) || !IS_ALIGNED(resp_gpa, PAGE_SIZE) ||
	    data_npages > GUEST_REQ_DATA_MAX_PAGES ||
	    (data_npages && (!data || !IS_ALIGNED(data_gpa, PAGE_SIZE))) ||
	    memcmp(vmpck0, zero, sizeof(zero)) == 0) /* a zero VMPCK is "not usable" (§1.6) */
		return GUEST_REQ_ERR_INVAL;
	memcpy(ch.vmpck0, vmpck0, SNP_VMPCK_LEN);
	secret_register(ch.vmpck0, sizeof(ch.vmpck0)); /* wiped on every termination path */
	ch.req = req_page;
	ch.resp = resp_page;
	ch.req_gpa = req_gpa;
	ch.resp_gpa = resp_gpa;
	ch.data = data_npages ? data : NULL;
	ch.data_gpa = data_npages ? data_gpa : 0;
	ch.data_npages = data_npages;
	ch.last_seqno = 0;
	ch.enabled = true;
	return GUEST_REQ_OK;
}

static bool lock_try(void)
{
	return __atomic_exchange_n(&ch_lock, 1, __ATOMIC_ACQUIRE) == 0;
}
static void lock_release(void)
{
	__atomic_store_n(&ch_lock, 0, __ATOMIC_RELEASE);
}

/* Size of a certificate table: the end of its furthest data, or -1 if malformed. */
static long certs_extent(const uint8_t *t, size_t len)
{
	struct certtable_entry e[CERTTABLE_MAX_ENTRIES];
	size_t n = 0, end;

	if (certtable_parse(t, len, e, ARRAY_SIZE(e), &n) != CERTTABLE_OK)
		return -1;
	end = (n + 1) * CERTTABLE_ENTRY_SIZE;
	for (size_t i = 0; i < n; i++)
		end = MAX(end, (size_t)e[i].offset + e[i].length);
	return (long)end;
}

/*
 * One exchange: seal, send (resending the same message on BUSY, and as a
 * plain request after INVALID_LEN on an extended one), open. Called with the
 * lock held and the channel enabled. *need_pages is set when the data pages
 * were too small.
 */
static int exchange(struct percpu *cpu, uint8_t type, const void *payload, size_t len, void *out,
		    size_t cap, size_t *out_len, bool ext, uint64_t *need_pages)
{
	uint64_t seqno;
	uint32_t vmm_err, fw_err;
	unsigned busy = 0;
	int rc;

	if (ADD_OVERFLOW(ch.last_seqno, 1, &seqno) || seqno == 0 || seqno + 1 == 0) {
		guest_req_disable(); /* sequence space exhausted: never wrap an IV */
		return GUEST_REQ_ERR_DISABLED;
	}
	if (secret_terminating())
		return GUEST_REQ_ERR_DISABLED; /* VMPCK0 may be wiped already */
	rc = guest_req_msg_seal(&req_sealed, ch.vmpck0, seqno, type, 0, payload, len);
	if (rc)
		return rc;	    /* nothing left csvsm */
	if (secret_terminating()) { /* the key went while it sealed: send nothing */
		memzero_explicit(&req_sealed, sizeof(req_sealed));
		return GUEST_REQ_ERR_DISABLED;
	}
	memcpy(ch.req, &req_sealed, sizeof(req_sealed));
	memset(ch.resp, 0, SNP_MSG_PAGE_SIZE);

	for (;;) {
		uint64_t npages = 0;
		if (secret_terminating()) { /* a wipe since the last send: send nothing more */
			memzero_explicit(ch.req, SNP_MSG_PAGE_SIZE);
			return GUEST_REQ_ERR_DISABLED;
		}
		guest_req_ghcb_fill(cpu->ghcb, ext, ch.req_gpa, ch.resp_gpa, ch.data_gpa,
				    ch.data_npages);
		platform->ghcb_call(cpu, cpu->ghcb);
		rc = guest_req_ghcb_check(cpu->ghcb, ext, &vmm_err, &fw_err, &npages);
		if (rc == GUEST_REQ_OK)
			break;
		if (rc == GUEST_REQ_ERR_FW && fw_err == 0 && vmm_err == SNP_GUEST_VMM_ERR_BUSY &&
		    ++busy < GUEST_REQ_BUSY_RETRIES)
			continue; /* the same message again: same IV, same plaintext */
		if (rc == GUEST_REQ_ERR_FW && fw_err == 0 && ext &&
		    vmm_err == SNP_GUEST_VMM_ERR_INVALID_LEN && npages > ch.data_npages) {
			/*
			 * Linux sev-guest: the host did not pass the message on; send
			 * it again as a plain request so the sequence stays in step.
			 */
			*need_pages = npages;
			ext = false;
			continue;
		}
		guest_req_disable();
		return rc;
	}
	memcpy(&resp_copy, ch.resp, sizeof(resp_copy));
	rc = guest_req_msg_open(&resp_copy, ch.vmpck0, seqno + 1, (uint8_t)(type + 1), 0, out, cap,
				out_len);
	memzero_explicit(&resp_copy, sizeof(resp_copy));
	/* A wipe during the exchange: the key may be zero, so the host could have
	 * forged this response; hand nothing on. */
	if (!rc && secret_terminating()) {
		memzero_explicit(out, cap);
		rc = GUEST_REQ_ERR_DISABLED;
	}
	if (rc) {
		guest_req_disable();
		return rc;
	}
	ch.last_seqno = seqno + 1;
	return GUEST_REQ_OK;
}

int guest_req_report(struct percpu *cpu, const uint8_t user_data[64], uint32_t vmpl,
		     uint8_t report[SNP_REPORT_BYTES], void *certs, size_t certs_cap,
		     size_t *certs_len)
{
	struct snp_report_req req;
	static struct snp_report_rsp rsp;
	uint64_t need_pages = 0;
	size_t len = 0;
	bool ext = certs != NULL;
	int rc;

	if (!cpu || !cpu->ghcb || !user_data || !report || vmpl > 3 || (ext && !certs_len))
		return GUEST_REQ_ERR_INVAL;
	if (ext && !ch.data_npages)
		return GUEST_REQ_ERR_INVAL;
	if (!lock_try())
		return GUEST_REQ_ERR_BUSY;
	if (!guest_req_enabled()) {
		lock_release();
		return GUEST_REQ_ERR_DISABLED;
	}
	memset(&req, 0, sizeof(req));
	memcpy(req.user_data, user_data, sizeof(req.user_data));
	req.vmpl = vmpl;
	req.key_sel = 0;
	rc = exchange(cpu, SNP_MSG_REPORT_REQ, &req, sizeof(req), &rsp, sizeof(rsp), &len, ext,
		      &need_pages);
	if (rc)
		goto out;
	if (len < offsetof(struct snp_report_rsp, report)) {
		rc = GUEST_REQ_ERR_MSG;
		goto out;
	}
	if (rsp.status != SNP_FW_STATUS_OK) {
		rc = GUEST_REQ_ERR_STATUS;
		goto out;
	}
	if (rsp.report_size != SNP_REPORT_BYTES || len < sizeof(rsp)) {
		rc = GUEST_REQ_ERR_MSG;
		goto out;
	}
	memcpy(report, rsp.report, SNP_REPORT_BYTES);
	if (ext) {
		if (need_pages) {
			*certs_len = (size_t)MIN(need_pages, (uint64_t)1 << 20) * PAGE_SIZE;
			rc = GUEST_REQ_ERR_CERTS_LEN;
			goto out;
		}
		/* Copy the host's data once; size and return the private copy only. */
		size_t avail = (size_t)ch.data_npages * PAGE_SIZE;
		memcpy(data_copy, ch.data, avail);
		long ext_len = certs_extent(data_copy, avail);
		if (ext_len < 0) {
			rc = GUEST_REQ_ERR_HV;
			goto out;
		}
		if ((size_t)ext_len > certs_cap) {
			*certs_len = (size_t)ext_len;
			rc = GUEST_REQ_ERR_CERTS_LEN;
			goto out;
		}
		memcpy(certs, data_copy, (size_t)ext_len);
		*certs_len = (size_t)ext_len;
	}
out:
	memzero_explicit(&rsp, sizeof(rsp));
	lock_release();
	return rc;
}

int guest_req_key(struct percpu *cpu, const struct snp_key_req *req,
		  uint8_t key[SNP_DERIVED_KEY_LEN])
{
	static struct snp_key_rsp rsp;
	uint64_t need_pages = 0;
	size_t len = 0;
	int rc;

	if (!cpu || !cpu->ghcb || !req || !key)
		return GUEST_REQ_ERR_INVAL;
	if (!lock_try())
		return GUEST_REQ_ERR_BUSY;
	if (!guest_req_enabled()) {
		lock_release();
		return GUEST_REQ_ERR_DISABLED;
	}
	rc = exchange(cpu, SNP_MSG_KEY_REQ, req, sizeof(*req), &rsp, sizeof(rsp), &len, false,
		      &need_pages);
	if (!rc && len != sizeof(rsp))
		rc = GUEST_REQ_ERR_MSG;
	else if (!rc && rsp.status != SNP_FW_STATUS_OK)
		rc = GUEST_REQ_ERR_STATUS;
	if (!rc)
		memcpy(key, rsp.key, SNP_DERIVED_KEY_LEN);
	memzero_explicit(&rsp, sizeof(rsp));
	lock_release();
	return rc;
}

const char *guest_req_strerror(int err)
{
	switch (err) {
	case GUEST_REQ_OK:
		return "ok";
	case GUEST_REQ_ERR_INVAL:
		return "invalid argument";
	case GUEST_REQ_ERR_DISABLED:
		return "VMPCK0 unusable (wiped or never set)";
	case GUEST_REQ_ERR_BUSY:
		return "guest-request channel busy";
	case GUEST_REQ_ERR_HV:
		return "hypervisor protocol error";
	case GUEST_REQ_ERR_FW:
		return "hypervisor/firmware error";
	case GUEST_REQ_ERR_MSG:
		return "response failed its checks";
	case GUEST_REQ_ERR_STATUS:
		return "firmware status not OK";
	case GUEST_REQ_ERR_CERTS_LEN:
		return "certificate buffer too small";
	}
	return "unknown error";
}
