/*
 * SNP guest request client (attest/guest_req.c): csvsm's messages to the PSP
 * under VMPCK0 (AMD pub. 56860 §7 "guest messages"; snp-svsm-interfaces.md
 * §6). A message is one 4 KiB page: a 0x60-byte header and the AES-256-GCM
 * ciphertext of the payload. IV = msg_seqno (u64 LE) || 4 zero bytes; AAD =
 * header bytes 0x30..0x5F; the 16-byte tag sits in authtag[0..15].
 *
 * Sequence numbers: request = last + 1 (never 0), response = request + 1,
 * then last += 2 (Linux sev-guest.c, coconut greq/driver.rs). An IV must
 * never be used twice under one key, so after any failure once a message has
 * left csvsm, VMPCK0 is wiped and every later request is refused. The only
 * exceptions are the hypervisor's BUSY and INVALID_LEN answers, after which
 * the same sealed message is resent unchanged.
 *
 * The seal/open and GHCB fill/check functions are pure and also used by the
 * PSP model (tests/snpm/model/psp.c), so both run in host unit tests.
 */
#ifndef ATTEST_GUEST_REQ_H
#define ATTEST_GUEST_REQ_H

#include "base/types.h"

struct ghcb;
struct percpu;

#define SNP_MSG_PAGE_SIZE    4096u
#define SNP_MSG_HDR_SIZE     0x60u
#define SNP_MSG_PAYLOAD_MAX  (SNP_MSG_PAGE_SIZE - SNP_MSG_HDR_SIZE)
#define SNP_MSG_AAD_OFF	     0x30u
#define SNP_MSG_AAD_LEN	     48u
#define SNP_MSG_TAG_LEN	     16u
#define SNP_MSG_IV_LEN	     12u
#define SNP_AEAD_AES_256_GCM 1u
#define SNP_MSG_HDR_VERSION  1u
#define SNP_MSG_VERSION	     1u
#define SNP_VMPCK_LEN	     32u

/* msg_type values (§6.1; Linux sev.h snp_msg_type). */
#define SNP_MSG_KEY_REQ	   3u
#define SNP_MSG_KEY_RSP	   4u
#define SNP_MSG_REPORT_REQ 5u
#define SNP_MSG_REPORT_RSP 6u

/* sw_exit_info_2 of a guest request: VMM error << 32 | firmware error (§4.3). */
#define SNP_GUEST_VMM_ERR_SHIFT	      32
#define SNP_GUEST_VMM_ERR_INVALID_LEN 1u
#define SNP_GUEST_VMM_ERR_BUSY	      2u

/* Firmware status words (§6.2). */
#define SNP_FW_STATUS_OK	    0u
#define SNP_FW_STATUS_INVALID_PARAM 0x16u
#define SNP_FW_STATUS_INVALID_KEY   0x27u

struct snp_guest_msg_hdr {
	uint8_t authtag[32]; /* 0x00: tag in bytes 0..15 */
	uint64_t msg_seqno;  /* 0x20 */
	uint8_t rsvd1[8];    /* 0x28 */
	uint8_t algo;	     /* 0x30 */
	uint8_t hdr_version; /* 0x31 */
	uint16_t hdr_sz;     /* 0x32 */
	uint8_t msg_type;    /* 0x34 */
	uint8_t msg_version; /* 0x35 */
	uint16_t msg_sz;     /* 0x36 */
	uint32_t rsvd2;	     /* 0x38 */
	uint8_t msg_vmpck;   /* 0x3C */
	uint8_t rsvd3[35];   /* 0x3D */
} __packed;
_Static_assert(sizeof(struct snp_guest_msg_hdr) == SNP_MSG_HDR_SIZE,
	       "SNP ABI 56860 message header: 0x60");
_Static_assert(offsetof(struct snp_guest_msg_hdr, msg_seqno) == 0x20,
	       "SNP ABI 56860 message header");
_Static_assert(offsetof(struct snp_guest_msg_hdr, algo) == 0x30, "SNP ABI 56860 message header");
_Static_assert(offsetof(struct snp_guest_msg_hdr, hdr_sz) == 0x32, "SNP ABI 56860 message header");
_Static_assert(offsetof(struct snp_guest_msg_hdr, msg_type) == 0x34,
	       "SNP ABI 56860 message header");
_Static_assert(offsetof(struct snp_guest_msg_hdr, msg_sz) == 0x36, "SNP ABI 56860 message header");
_Static_assert(offsetof(struct snp_guest_msg_hdr, msg_vmpck) == 0x3C,
	       "SNP ABI 56860 message header");

struct snp_guest_msg {
	struct snp_guest_msg_hdr hdr;
	uint8_t payload[SNP_MSG_PAYLOAD_MAX];
} __packed;
_Static_assert(sizeof(struct snp_guest_msg) == SNP_MSG_PAGE_SIZE,
	       "SNP ABI 56860 message: one page");

/* MSG_REPORT_REQ (§6.2). */
struct snp_report_req {
	uint8_t user_data[64]; /* 0x00 */
	uint32_t vmpl;	       /* 0x40 */
	uint32_t key_sel;      /* 0x44: [1:0] */
	uint8_t rsvd[24];      /* 0x48 */
} __packed;
_Static_assert(sizeof(struct snp_report_req) == 0x60, "SNP ABI 56860 MSG_REPORT_REQ: 0x60");

#define SNP_REPORT_BYTES 0x4A0u
struct snp_report_rsp {
	uint32_t status;		  /* 0x00 */
	uint32_t report_size;		  /* 0x04 */
	uint8_t rsvd[24];		  /* 0x08 */
	uint8_t report[SNP_REPORT_BYTES]; /* 0x20 */
} __packed;
_Static_assert(sizeof(struct snp_report_rsp) == 0x4C0, "SNP ABI 56860 MSG_REPORT_RSP: 0x4C0");

/* MSG_KEY_REQ (§6.3; Linux snp_derived_key_req, 0x20 bytes). */
#define SNP_KEY_ROOT_VMRK     (1u << 0)
#define SNP_KEY_SEL_SHIFT     1
#define SNP_KEY_SEL_MASK      (3u << 1)
#define SNP_KEY_REQ_RSVD_MASK (~7u)
#define SNP_GFS_POLICY	      (1ull << 0)
#define SNP_GFS_IMAGE_ID      (1ull << 1)
#define SNP_GFS_FAMILY_ID     (1ull << 2)
#define SNP_GFS_MEASUREMENT   (1ull << 3)
#define SNP_GFS_GUEST_SVN     (1ull << 4)
#define SNP_GFS_TCB_VERSION   (1ull << 5)
#define SNP_GFS_RSVD_MASK     (~0x3Full)
struct snp_key_req {
	uint32_t root_key_select;    /* 0x00 */
	uint32_t rsvd;		     /* 0x04 */
	uint64_t guest_field_select; /* 0x08 */
	uint32_t vmpl;		     /* 0x10 */
	uint32_t guest_svn;	     /* 0x14 */
	uint64_t tcb_version;	     /* 0x18 */
} __packed;
_Static_assert(sizeof(struct snp_key_req) == 0x20, "SNP ABI 56860 MSG_KEY_REQ: 0x20");

#define SNP_DERIVED_KEY_LEN 32u
struct snp_key_rsp {
	uint32_t status;		  /* 0x00 */
	uint8_t rsvd[28];		  /* 0x04 */
	uint8_t key[SNP_DERIVED_KEY_LEN]; /* 0x20 */
} __packed;
_Static_assert(sizeof(struct snp_key_rsp) == 0x40, "SNP ABI 56860 MSG_KEY_RSP: 0x40");

enum guest_req_err {
	GUEST_REQ_OK = 0,
	GUEST_REQ_ERR_INVAL = -1,     /* bad argument (caller bug) */
	GUEST_REQ_ERR_DISABLED = -2,  /* VMPCK0 wiped or never set: no more requests */
	GUEST_REQ_ERR_BUSY = -3,      /* another vCPU is using the channel: retry */
	GUEST_REQ_ERR_HV = -4,	      /* hypervisor broke the protocol (key wiped) */
	GUEST_REQ_ERR_FW = -5,	      /* firmware error in sw_exit_info_2 (key wiped) */
	GUEST_REQ_ERR_MSG = -6,	      /* response header/tag check failed (key wiped) */
	GUEST_REQ_ERR_STATUS = -7,    /* response decrypted, status != 0 */
	GUEST_REQ_ERR_CERTS_LEN = -8, /* report OK, certificate buffer too small */
};

/* ---- pure message functions (host-testable, shared with the PSP model) ---- */

/* Build the header and encrypt payload[0..len) into *m under key with seqno. */
int guest_req_msg_seal(struct snp_guest_msg *m, const uint8_t key[SNP_VMPCK_LEN], uint64_t seqno,
		       uint8_t type, uint8_t vmpck, const void *payload, size_t len);
/*
 * Check the header of *m (a private copy) against what is expected and
 * decrypt into out[0..cap); *len = plaintext length. `cap` is the caller's
 * buffer: msg_sz + 16 must fit in the page and msg_sz in cap. Returns 0 or
 * GUEST_REQ_ERR_MSG.
 */
int guest_req_msg_open(const struct snp_guest_msg *m, const uint8_t key[SNP_VMPCK_LEN],
		       uint64_t seqno, uint8_t type, uint8_t vmpck, void *out, size_t cap,
		       size_t *len);

/* GHCB for GUEST_REQUEST (ext = false) or EXT_GUEST_REQUEST (RAX = data GPA, RBX = npages). */
void guest_req_ghcb_fill(struct ghcb *g, bool ext, gpa_t req_gpa, gpa_t resp_gpa, gpa_t data_gpa,
			 uint64_t npages);
/*
 * Classify the hypervisor's answer: returns 0 when the exit succeeded with
 * info_2 == 0, else GUEST_REQ_ERR_HV (malformed / error exit) or
 * GUEST_REQ_ERR_FW (info_2 != 0; *vmm_err, *fw_err, and for an extended
 * request with INVALID_LEN *npages = RBX are set).
 */
int guest_req_ghcb_check(const struct ghcb *g, bool ext, uint32_t *vmm_err, uint32_t *fw_err,
			 uint64_t *npages);

/* ---- the channel ---- */

/*
 * Take VMPCK0 (copied; the caller wipes its copy when it no longer needs it)
 * and the pages shared with the hypervisor: one request page, one response
 * page, and `data_npages` contiguous pages for the extended request's
 * certificate table (data may be NULL / 0: no extended requests). On SNP the
 * lead makes these pages shared (PSC) before calling; csvsm never puts
 * plaintext in them.
 */
/* Most data pages for the extended request csvsm copies back from the hypervisor. */
#define GUEST_REQ_DATA_MAX_PAGES 16

int guest_req_init(const uint8_t vmpck0[SNP_VMPCK_LEN], void *req_page, gpa_t req_gpa,
		   void *resp_page, gpa_t resp_gpa, void *data, gpa_t data_gpa,
		   uint32_t data_npages);
/* Wipe VMPCK0 and refuse all later requests. */
void guest_req_disable(void);
bool guest_req_enabled(void);
/* The last sequence number used (for tests and diagnostics). */
uint64_t guest_req_last_seqno(void);

/*
 * MSG_REPORT_REQ at VMPL `vmpl` with key_sel 0 and user_data; the raw
 * 0x4A0-byte report goes to report[]. When certs != NULL an extended request
 * is sent and the certificate table is copied to certs[0..certs_cap),
 * *certs_len = its size (GUEST_REQ_ERR_CERTS_LEN with *certs_len = the size
 * needed when certs_cap or the data pages are too small; the report is still
 * valid then). Sends through platform->ghcb_call(cpu, cpu->ghcb).
 */
int guest_req_report(struct percpu *cpu, const uint8_t user_data[64], uint32_t vmpl,
		     uint8_t report[SNP_REPORT_BYTES], void *certs, size_t certs_cap,
		     size_t *certs_len);
/* MSG_KEY_REQ: the derived key in key[]. */
int guest_req_key(struct percpu *cpu, const struct snp_key_req *req,
		  uint8_t key[SNP_DERIVED_KEY_LEN]);

const char *guest_req_strerror(int err);

#endif
