/*
 * libtpms integration: callbacks with in-memory NV, manufacture and power
 * cycles, PCR bank allocation, measurements, the EK, state save/restore.
 * See include/tpm/vtpm.h for the life cycle and the reasons.
 *
 * Core (image + host). <libtpms/tpm_library.h> pulls <sys/types.h> and
 * <netinet/in.h>: the image build puts tpm/shim (stand-ins for both) on the
 * include path for this file only (tpm/build.mk). Nothing else here needs
 * libc beyond malloc/free, which must be the same allocator libtpms uses
 * (it frees what nvram_loaddata returns): glibc's on the host, the
 * glibc-ABI layer's (base/libc) in the image.
 */
#include <libtpms/tpm_library.h>
#include <libtpms/tpm_error.h>
#include <libtpms/tpm_nvfilename.h>

#include "base/console.h"
#include "base/string.h"
#include "tpm/hash.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_persist.h"

/* The allocator libtpms links against (glibc's on the host, the glibc-ABI layer's in the image). */
void *malloc(size_t n);
void free(void *p);
/* libcrypto: 1 when the DRBG is seeded from a real entropy source. */
int RAND_status(void);

/* TPM 2.0 Part 2 constants used to build commands. */
#define TPM_CC_SHUTDOWN		 0x00000145
#define TPM_CC_PCR_ALLOCATE	 0x0000012B
#define TPM_CC_PCR_EXTEND	 0x00000182
#define TPM_CC_PCR_READ		 0x0000017E
#define TPM_CC_CREATE_PRIMARY	 0x00000131
#define TPM_CC_FLUSH_CONTEXT	 0x00000165
#define TPM_CC_GET_CAPABILITY	 0x0000017A
#define TPM_CAP_PCRS		 0x00000005
#define TPM_CAP_TPM_PROPERTIES	 0x00000006
#define TPM_CC_NV_DEFINE_SPACE	 0x0000012A
#define TPM_CC_NV_WRITE		 0x00000137
#define TPM_CC_NV_WRITE_LOCK	 0x00000138
#define TPM_CC_NV_READ		 0x0000014E
#define TPM_CC_NV_READ_PUBLIC	 0x00000169
#define TPM_CC_HIERARCHY_CONTROL 0x00000121
#define TPM_RH_OWNER		 0x40000001
#define TPM_RH_ENDORSEMENT	 0x4000000B
#define TPM_RH_PLATFORM		 0x4000000C
#define TPM_RS_PW		 0x40000009
#define TPM_HDR_SIZE		 10
#define PCR_SELECT_BYTES	 3 /* 24 PCRs */

/* The banks csvsm wants (DESIGN.md: PCR0 in SHA-256 and SHA-384). */
static const uint16_t wanted_banks[] = {TPM_ALG_SHA256, TPM_ALG_SHA384};

/* NV names libtpms uses (tpm_nvfilename.h). */
static const char *const nv_names[] = {TPM_PERMANENT_ALL_NAME, TPM_VOLATILESTATE_NAME,
				       TPM_SAVESTATE_NAME};
#define NV_SLOTS ARRAY_SIZE(nv_names)

static struct {
	bool lib_ready; /* ChooseTPMVersion + RegisterCallbacks done */
	bool running;	/* between MainInit and Terminate */
	bool state_set; /* SetState given: next MainInit restores, not manufactures */
	struct vtpm_options opt;
	/* Response buffer: owned by libtpms (it reallocates it), reused across commands. */
	unsigned char *rsp;
	uint32_t rsp_cap;
	uint16_t banks[VTPM_MAX_BANKS];
	unsigned nbanks;
	bool ek_valid;
	uint8_t ek_pub[VTPM_EK_PUBLIC_MAX];
	size_t ek_len;
	/* In-memory NV: copies in the library arena (the blob is libtpms data, up to ~200 KB). */
	unsigned char *nv_data[NV_SLOTS];
	uint32_t nv_len[NV_SLOTS];
	bool permall_dirty; /* the permanent state was stored since the last look */
} vt;

/* ---- big-endian wire helpers (TPM 2.0 Part 1 §18: marshalled big-endian) ---- */

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static uint32_t get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* Empty password session for one authorized handle: TPMS_AUTH_COMMAND with TPM_RS_PW. */
static uint8_t *put_pw_session(uint8_t *p)
{
	p = put32(p, 9); /* authorizationSize */
	p = put32(p, TPM_RS_PW);
	p = put16(p, 0);    /* nonce */
	*p++ = 0;	    /* sessionAttributes */
	return put16(p, 0); /* hmac */
}

static void finish_cmd(uint8_t *cmd, uint8_t *end)
{
	put32(cmd + 2, (uint32_t)(end - cmd));
}

/* ---- NV callbacks ---- */

static int nv_slot(const char *name)
{
	for (unsigned i = 0; i < NV_SLOTS; i++)
		if (strcmp(name, nv_names[i]) == 0)
			return (int)i;
	return -1;
}

static void nv_clear(unsigned i)
{
	if (vt.nv_data[i]) {
		memzero_explicit(vt.nv_data[i], vt.nv_len[i]); /* may hold the TPM seeds */
		free(vt.nv_data[i]);
	}
	vt.nv_data[i] = NULL;
	vt.nv_len[i] = 0;
}

uint32_t vtpm_nv_load(unsigned char **data, uint32_t *length, uint32_t tpm_number, const char *name)
{
	int i = nv_slot(name);

	*data = NULL;
	*length = 0;
	if (i < 0 || !vt.nv_data[i])
		return TPM_RETRY; /* nothing stored: the only case that may say "no state" */
	/* libtpms frees this buffer, so it must come from the library's malloc. */
	unsigned char *copy = malloc(vt.nv_len[i] ? vt.nv_len[i] : 1);
	if (!copy)
		return TPM_FAIL;
	memcpy(copy, vt.nv_data[i], vt.nv_len[i]);
	*data = copy;
	*length = vt.nv_len[i];
	return TPM_SUCCESS;
}

uint32_t vtpm_nv_store(const unsigned char *data, uint32_t length, uint32_t tpm_number,
		       const char *name)
{
	int i = nv_slot(name);

	if (i < 0)
		return TPM_FAIL;
	unsigned char *copy = malloc(length ? length : 1);
	if (!copy)
		return TPM_FAIL; /* the old copy stays: still what was last stored successfully */
	memcpy(copy, data, length);
	nv_clear((unsigned)i);
	vt.nv_data[i] = copy;
	vt.nv_len[i] = length;
	if (i == 0) /* permall: what persistence writes through (vtpm_persist.h) */
		vt.permall_dirty = true;
	return TPM_SUCCESS;
}

bool vtpm_nv_dirty_take(void)
{
	bool d = vt.permall_dirty;
	vt.permall_dirty = false;
	return d;
}

int vtpm_nv_permall(const uint8_t **data, size_t *len)
{
	if (!vt.nv_data[0])
		return -1;
	*data = vt.nv_data[0];
	*len = vt.nv_len[0];
	return 0;
}

uint32_t vtpm_nv_delete(uint32_t tpm_number, const char *name, unsigned char must_exist)
{
	int i = nv_slot(name);

	if (i < 0 || !vt.nv_data[i])
		return must_exist ? TPM_FAIL : TPM_SUCCESS;
	nv_clear((unsigned)i);
	return TPM_SUCCESS;
}

static TPM_RESULT nv_init(void)
{
	return TPM_SUCCESS;
}
static TPM_RESULT io_init(void)
{
	return TPM_SUCCESS;
}

static TPM_RESULT io_getlocality(TPM_MODIFIER_INDICATOR *loc, uint32_t tpm_number)
{
	*loc = 0; /* SVSM vTPM protocol: locality 0 only (reference §3) */
	return TPM_SUCCESS;
}

static TPM_RESULT io_getphysicalpresence(TPM_BOOL *pp, uint32_t tpm_number)
{
	*pp = 0;
	return TPM_SUCCESS;
}

static struct libtpms_callbacks callbacks = {
    .sizeOfStruct = sizeof(struct libtpms_callbacks),
    .tpm_nvram_init = nv_init,
    .tpm_nvram_loaddata = vtpm_nv_load,
    .tpm_nvram_storedata = vtpm_nv_store,
    .tpm_nvram_deletename = vtpm_nv_delete,
    .tpm_io_init = io_init,
    .tpm_io_getlocality = io_getlocality,
    .tpm_io_getphysicalpresence = io_getphysicalpresence,
};

static int lib_setup(void)
{
	uint32_t mn, mx;

	if (!vt.lib_ready) {
		if (TPMLIB_ChooseTPMVersion(TPMLIB_TPM_VERSION_2) != TPM_SUCCESS ||
		    TPMLIB_RegisterCallbacks(&callbacks) != TPM_SUCCESS)
			return -1;
		vt.lib_ready = true;
	}
	/* Keep every command and response within one SVSM vTPM page (reference §3). */
	if (TPMLIB_SetBufferSize(VTPM_BUFFER_SIZE, &mn, &mx) != VTPM_BUFFER_SIZE)
		return -1;
	return 0;
}

/* ---- commands csvsm sends itself ---- */

/* Runs a command csvsm built; returns the TPM RC, or -1 if nothing came back. */
static int64_t run(uint8_t *cmd, const uint8_t **rsp, uint32_t *rsplen)
{
	uint32_t len = 0;

	if (!vt.running)
		return -1;
	if (TPMLIB_Process(&vt.rsp, &len, &vt.rsp_cap, cmd, get32(cmd + 2)) != TPM_SUCCESS ||
	    len < TPM_HDR_SIZE || get32(vt.rsp + 2) != len)
		return -1;
	if (rsp)
		*rsp = vt.rsp;
	if (rsplen)
		*rsplen = len;
	return get32(vt.rsp + 6);
}

static int64_t su_cmd(uint32_t cc)
{
	uint8_t c[12], *p = c;

	p = put16(p, TPM_ST_NO_SESSIONS);
	p = put32(p, 0);
	p = put32(p, cc);
	p = put16(p, TPM_SU_CLEAR);
	finish_cmd(c, p);
	return run(c, NULL, NULL);
}

/* TPM2_GetCapability(cap, property, count) built in c[22]; the TPM RC. */
static int64_t get_capability(uint8_t c[22], uint32_t cap, uint32_t prop, uint32_t count,
			      const uint8_t **r, uint32_t *rl)
{
	uint8_t *p = c;
	p = put16(p, TPM_ST_NO_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_GET_CAPABILITY);
	p = put32(p, cap);
	p = put32(p, prop);
	p = put32(p, count);
	finish_cmd(c, p);
	return run(c, r, rl);
}

/* Reads TPM_CAP_PCRS into vt.banks (only banks with at least one PCR selected). */
static int read_banks(uint16_t *all, unsigned *nall)
{
	uint8_t c[22];
	const uint8_t *r;
	uint32_t rl;

	if (get_capability(c, TPM_CAP_PCRS, 0, 1, &r, &rl) != TPM_RC_SUCCESS ||
	    rl < TPM_HDR_SIZE + 1 + 4 + 4)
		return -1;
	/* moreData u8, capability u32, TPML_PCR_SELECTION {count, {hash, sizeofSelect, select}} */
	if (get32(r + 11) != TPM_CAP_PCRS)
		return -1;
	uint32_t count = get32(r + 15), off = 19;
	vt.nbanks = 0;
	*nall = 0;
	for (uint32_t i = 0; i < count; i++) {
		if (off + 3 > rl)
			return -1;
		uint16_t alg = get16(r + off);
		uint8_t n = r[off + 2];
		if (off + 3 + n > rl || *nall == VTPM_MAX_BANKS)
			return -1;
		bool any = false;
		for (unsigned k = 0; k < n; k++)
			any |= r[off + 3 + k] != 0;
		all[(*nall)++] = alg;
		if (any)
			vt.banks[vt.nbanks++] = alg;
		off += 3 + n;
	}
	return 0;
}

static bool is_wanted(uint16_t alg)
{
	for (unsigned i = 0; i < ARRAY_SIZE(wanted_banks); i++)
		if (wanted_banks[i] == alg)
			return true;
	return false;
}

static bool banks_ok(void)
{
	if (vt.nbanks != ARRAY_SIZE(wanted_banks))
		return false;
	for (unsigned i = 0; i < vt.nbanks; i++)
		if (!is_wanted(vt.banks[i]))
			return false;
	return true;
}

/*
 * TPM2_PCR_Allocate(TPM_RH_PLATFORM, empty auth after manufacture): all 24
 * PCRs in the wanted banks, none in every other implemented bank (libtpms
 * keeps banks that are not listed, so list them all). Takes effect at the
 * next TPM reset.
 */
static int allocate_banks(const uint16_t *all, unsigned nall)
{
	uint8_t c[64], *p = c;
	const uint8_t *r;
	uint32_t rl;

	p = put16(p, TPM_ST_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_PCR_ALLOCATE);
	p = put32(p, TPM_RH_PLATFORM);
	p = put_pw_session(p);
	p = put32(p, nall);
	for (unsigned i = 0; i < nall; i++) {
		uint8_t sel = is_wanted(all[i]) ? 0xFF : 0x00;
		p = put16(p, all[i]);
		*p++ = PCR_SELECT_BYTES;
		for (unsigned k = 0; k < PCR_SELECT_BYTES; k++)
			*p++ = sel;
	}
	finish_cmd(c, p);
	/* response: header, parameterSize u32, allocationSuccess u8, ... */
	if (run(c, &r, &rl) != TPM_RC_SUCCESS || rl < TPM_HDR_SIZE + 5 || r[14] != 1)
		return -1;
	return 0;
}

static int main_init(void)
{
	if (lib_setup())
		return -1;
	/*
	 * Entropy is checked before libtpms can manufacture: without it, OpenSSL's
	 * RAND fails and libtpms silently falls back to rand() for the seeds
	 * (glibc-abi-notes.md §3.2). Weak EK seeds cannot be fixed later: fatal.
	 */
	if (RAND_status() != 1)
		panic("vtpm: no entropy source (RAND_status), refusing to manufacture TPM seeds");
	if (TPMLIB_MainInit() != TPM_SUCCESS)
		return -1;
	vt.running = true;
	vt.state_set = false;
	return 0;
}

int vtpm_init(const struct vtpm_options *opt)
{
	uint16_t all[VTPM_MAX_BANKS];
	unsigned nall;

	if (vt.running)
		return -1;
	vt.opt = opt ? *opt : (struct vtpm_options){0};
	if (main_init() || su_cmd(TPM_CC_STARTUP) != TPM_RC_SUCCESS || read_banks(all, &nall))
		goto fail;
	if (!banks_ok()) {
		/*
		 * A freshly manufactured libtpms has SHA-1 + SHA-256. Allocate exactly
		 * the banks csvsm measures into and reset: every active bank must be
		 * extended by csvsm, or the guest could write a PCR0 history of its
		 * choosing into a bank nobody measured.
		 */
		if (allocate_banks(all, nall) || su_cmd(TPM_CC_SHUTDOWN) != TPM_RC_SUCCESS)
			goto fail;
		TPMLIB_Terminate();
		vt.running = false;
		if (main_init() || su_cmd(TPM_CC_STARTUP) != TPM_RC_SUCCESS ||
		    read_banks(all, &nall) || !banks_ok())
			goto fail;
	}
	if (vt.opt.no_startup) {
		/* Back to "just powered on": an orderly shutdown, then _TPM_Init again. */
		if (su_cmd(TPM_CC_SHUTDOWN) != TPM_RC_SUCCESS)
			goto fail;
		TPMLIB_Terminate();
		vt.running = false;
		if (main_init())
			goto fail;
	}
	return 0;
fail:
	vtpm_power_off();
	return -1;
}

void vtpm_power_off(void)
{
	if (vt.running)
		TPMLIB_Terminate();
	vt.running = false;
	if (vt.rsp) {
		memzero_explicit(vt.rsp, vt.rsp_cap);
		free(vt.rsp);
	}
	vt.rsp = NULL;
	vt.rsp_cap = 0;
}

void vtpm_destroy(void)
{
	vtpm_power_off();
	for (unsigned i = 0; i < NV_SLOTS; i++)
		nv_clear(i);
	vt.permall_dirty = false;
	vt.ek_valid = false;
	vt.ek_len = 0;
	vt.nbanks = 0;
	memzero_explicit(vt.ek_pub, sizeof(vt.ek_pub));
}

bool vtpm_running(void)
{
	return vt.running;
}

int vtpm_process(const uint8_t *cmd, size_t len, uint8_t *rsp, size_t *rsplen)
{
	uint32_t n = 0;

	if (!vt.running || len > VTPM_BUFFER_SIZE || vtpm_persist_failed())
		return -1;
	/* kbs: the lease renewed first when due; a VM whose lease another took
	 * answers nothing more (docs/vtpm.md "Persistence": lease renewal) */
	if (vtpm_persist_renew())
		return -1;
	/* TPMLIB_Process only reads the command (its parameter is not const-qualified). */
	if (TPMLIB_Process(&vt.rsp, &n, &vt.rsp_cap, (unsigned char *)cmd, (uint32_t)len) !=
	    TPM_SUCCESS)
		return -1;
	/*
	 * Write-through: a command that changed the permanent state is answered
	 * only once the host confirmed the sealed state (docs/vtpm.md
	 * "Persistence"); if it cannot, the guest gets a failure, never a
	 * response the next boot would contradict.
	 */
	if (vtpm_nv_dirty_take() && vtpm_persist_commit())
		return -1;
	if (n > *rsplen)
		return -1;
	memmove(rsp, vt.rsp, n);
	*rsplen = n;
	return 0;
}

/* ---- measurements ---- */

int vtpm_measure(struct event_log *log, uint32_t pcr, uint32_t event_type, const void *data,
		 size_t len, const void *event, uint32_t event_len)
{
	struct event_log_digests d;
	uint8_t c[TPM_HDR_SIZE + 4 + 13 + 4 + VTPM_MAX_BANKS * (2 + HASH_SHA384_SIZE)], *p = c;

	if (pcr >= EVENT_LOG_NUM_PCRS || (log && !event_log_has_room(log, event_len)) ||
	    !banks_ok())
		return -1;
	hash_sha256(data, len, d.sha256);
	hash_sha384(data, len, d.sha384);

	p = put16(p, TPM_ST_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_PCR_EXTEND);
	p = put32(p, pcr);
	p = put_pw_session(p);
	p = put32(p, vt.nbanks); /* TPML_DIGEST_VALUES: every allocated bank */
	for (unsigned i = 0; i < vt.nbanks; i++) {
		p = put16(p, vt.banks[i]);
		if (vt.banks[i] == TPM_ALG_SHA256) {
			memcpy(p, d.sha256, HASH_SHA256_SIZE);
			p += HASH_SHA256_SIZE;
		} else {
			memcpy(p, d.sha384, HASH_SHA384_SIZE);
			p += HASH_SHA384_SIZE;
		}
	}
	finish_cmd(c, p);
	if (run(c, NULL, NULL) != TPM_RC_SUCCESS)
		return -1;
	if (log && event_log_append(log, pcr, event_type, &d, event, event_len))
		return -1; /* cannot happen: room was checked above */
	return 0;
}

int vtpm_measure_firmware(struct event_log *log, const char *desc, uint64_t base, const void *image,
			  size_t len)
{
	uint8_t ev[1 + 255 + 16];
	size_t n = event_log_blob2_data(ev, sizeof(ev), desc, base, len);

	if (!n)
		return -1;
	return vtpm_measure(log, 0, EV_EFI_PLATFORM_FIRMWARE_BLOB2, image, len, ev, (uint32_t)n);
}

int vtpm_pcr_read(uint32_t pcr, uint16_t alg, uint8_t *digest, size_t cap)
{
	uint8_t c[20], *p = c;
	const uint8_t *r;
	uint32_t rl;

	if (pcr >= EVENT_LOG_NUM_PCRS)
		return -1;
	p = put16(p, TPM_ST_NO_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_PCR_READ);
	p = put32(p, 1);
	p = put16(p, alg);
	*p++ = PCR_SELECT_BYTES;
	for (unsigned k = 0; k < PCR_SELECT_BYTES; k++)
		*p++ = (uint8_t)(k == pcr / 8 ? 1u << (pcr % 8) : 0);
	finish_cmd(c, p);
	/* header, pcrUpdateCounter u32, TPML_PCR_SELECTION (count + 6), TPML_DIGEST {count, {size,
	 * bytes}} */
	if (run(c, &r, &rl) != TPM_RC_SUCCESS || rl < 34)
		return -1;
	if (get32(r + 14) != 1 || get32(r + 24) != 1)
		return -1;
	uint16_t n = get16(r + 28);
	if (30u + n > rl || n > cap)
		return -1;
	memcpy(digest, r + 30, n);
	return n;
}

unsigned vtpm_banks(uint16_t *algs, unsigned max)
{
	unsigned n = MIN(max, vt.nbanks);
	for (unsigned i = 0; i < n; i++)
		algs[i] = vt.banks[i];
	return vt.nbanks;
}

/* ---- EK ---- */

/* TCG EK Credential Profile, template L-1 (RSA-2048), reference §2; coconut ek_templates.rs. */
static const uint8_t ek_policy_a_sha256[32] = {
    0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8, 0x1a, 0x90, 0xcc, 0x8d, 0x46, 0xa5, 0xd7, 0x24,
    0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52, 0x0b, 0x64, 0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa,
};

int vtpm_ek_public(const uint8_t **pub, size_t *len)
{
	uint8_t c[TPM_HDR_SIZE + 4 + 13 + 6 + 2 + 320 + 6], *p = c, *pubstart;
	const uint8_t *r;
	uint32_t rl;

	if (vt.ek_valid)
		goto out;
	p = put16(p, TPM_ST_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_CREATE_PRIMARY);
	p = put32(p, TPM_RH_ENDORSEMENT);
	p = put_pw_session(p);
	p = put16(p, 4); /* TPM2B_SENSITIVE_CREATE: empty userAuth, empty data */
	p = put16(p, 0);
	p = put16(p, 0);
	pubstart = p;
	p = put16(p, 0);      /* TPM2B_PUBLIC size, filled below */
	p = put16(p, 0x0001); /* type TPM_ALG_RSA */
	p = put16(p, 0x000B); /* nameAlg SHA-256 */
	p = put32(
	    p,
	    0x000300B2); /* fixedTPM|fixedParent|sensitiveDataOrigin|adminWithPolicy|restricted|decrypt
			  */
	p = put16(p, sizeof(ek_policy_a_sha256));
	memcpy(p, ek_policy_a_sha256, sizeof(ek_policy_a_sha256));
	p += sizeof(ek_policy_a_sha256);
	p = put16(p, 0x0006); /* symmetric AES */
	p = put16(p, 128);
	p = put16(p, 0x0043); /* CFB */
	p = put16(p, 0x0010); /* scheme TPM_ALG_NULL */
	p = put16(p, 2048);
	p = put32(p, 0);   /* exponent: default 65537 */
	p = put16(p, 256); /* unique: 256 zero bytes */
	memset(p, 0, 256);
	p += 256;
	put16(pubstart, (uint16_t)(p - pubstart - 2));
	p = put16(p, 0); /* outsideInfo */
	p = put32(p, 0); /* creationPCR: empty TPML_PCR_SELECTION */
	finish_cmd(c, p);

	/* response: header, objectHandle u32, parameterSize u32, TPM2B_PUBLIC (size @18,
	 * TPMT_PUBLIC @20) */
	if (run(c, &r, &rl) != TPM_RC_SUCCESS || rl < 20)
		return -1;
	uint32_t handle = get32(r + 10);
	uint16_t n = get16(r + 18);
	int ok = (20u + n <= rl && n <= sizeof(vt.ek_pub));
	if (ok) {
		memcpy(vt.ek_pub, r + 20, n);
		vt.ek_len = n;
	}
	/* FlushContext: the EK must not hold one of the guest's transient slots. */
	p = c;
	p = put16(p, TPM_ST_NO_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_FLUSH_CONTEXT);
	p = put32(p, handle);
	finish_cmd(c, p);
	if (run(c, NULL, NULL) != TPM_RC_SUCCESS || !ok)
		return -1;
	vt.ek_valid = true;
out:
	*pub = vt.ek_pub;
	*len = vt.ek_len;
	return 0;
}

/* ---- state ---- */

int vtpm_get_state(uint8_t *buf, size_t cap, size_t *len)
{
	unsigned char *blob = NULL;
	uint32_t n = 0;

	*len = 0;
	if (lib_setup() || TPMLIB_GetState(TPMLIB_STATE_PERMANENT, &blob, &n) != TPM_SUCCESS ||
	    !blob)
		return -1;
	*len = n;
	int rc = -1;
	if (n <= cap) {
		memcpy(buf, blob, n);
		rc = 0;
	}
	memzero_explicit(blob, n); /* seeds */
	free(blob);
	return rc;
}

int vtpm_set_state(const uint8_t *buf, size_t len)
{
	if (vt.running || len > UINT32_MAX)
		return -1;
	vtpm_destroy();
	if (lib_setup() ||
	    TPMLIB_SetState(TPMLIB_STATE_PERMANENT, buf, (uint32_t)len) != TPM_SUCCESS)
		return -1;
	vt.state_set = true;
	return 0;
}

/* ---- what an EK certificate says of the TPM ---- */

int vtpm_info(struct vtpm_info *out)
{
	uint8_t c[22];
	const uint8_t *r;
	uint32_t rl;

	memset(out, 0, sizeof(*out));
	/* TPM_PT_FIXED + 0 .. + 11: LEVEL 0x101, REVISION 0x102, MANUFACTURER 0x105,
	 * VENDOR_STRING_1..4 0x106..0x109, FIRMWARE_VERSION_1 0x10B (Part 2 §6.13) */
	/* header, moreData u8, capability u32, count u32, {property u32, value u32}... */
	if (get_capability(c, TPM_CAP_TPM_PROPERTIES, 0x100, 12, &r, &rl) != TPM_RC_SUCCESS ||
	    rl < 19)
		return -1;
	uint32_t n = get32(r + 15);
	if (n > 12 || 19 + 8 * n > rl)
		return -1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t prop = get32(r + 19 + 8 * i), v = get32(r + 23 + 8 * i);
		if (prop == 0x101)
			out->level = v;
		else if (prop == 0x102)
			out->revision = v;
		else if (prop == 0x105)
			out->manufacturer = v;
		else if (prop == 0x10B)
			out->firmware = v;
		else if (prop >= 0x106 && prop <= 0x109)
			for (int k = 0; k < 4; k++)
				out->model[4 * (prop - 0x106) + (uint32_t)k] =
				    (char)(v >> (24 - 8 * k));
	}
	/* printable, trailing NULs and spaces trimmed */
	size_t l = 0;
	for (size_t i = 0; i < 16; i++) {
		char ch = out->model[i];
		out->model[i] = ch >= 0x20 && ch < 0x7f ? ch : ' ';
		if (out->model[i] != ' ')
			l = i + 1;
	}
	out->model[l] = 0;
	if (!l)
		memcpy(out->model, "csvsm", 6);
	return 0;
}

/* ---- the EK certificate in NV, the platform hierarchy ---- */

/* A command authorized by `auth` with an empty password session: handle(s) first. */
static uint8_t *auth_cmd(uint8_t *c, uint32_t cc, uint32_t auth, const uint32_t *more, int nmore)
{
	uint8_t *p = c;
	p = put16(p, TPM_ST_SESSIONS);
	p = put32(p, 0);
	p = put32(p, cc);
	p = put32(p, auth);
	for (int i = 0; i < nmore; i++)
		p = put32(p, more[i]);
	return put_pw_session(p);
}

int vtpm_ek_cert_store(const uint8_t *der, size_t len)
{
	/* TPMA_NV: PPWRITE 1 | WRITEDEFINE 0x2000 | PPREAD 0x10000 | OWNERREAD 0x20000 |
	 * AUTHREAD 0x40000 | NO_DA 0x2000000 | PLATFORMCREATE 0x40000000 (Part 2 §13.4) */
	const uint32_t attrs =
	    0x40000000u | 0x40000u | 0x20000u | 0x10000u | 0x1u | 0x2000000u | 0x2000u;
	const uint32_t idx[1] = {VTPM_EK_CERT_INDEX};
	static uint8_t c[TPM_HDR_SIZE + 8 + 13 + 2 + 1024 + 2];
	uint8_t *p;

	if (!len || len > VTPM_EK_CERT_MAX)
		return -1;
	p = auth_cmd(c, TPM_CC_NV_DEFINE_SPACE, TPM_RH_PLATFORM, NULL, 0);
	p = put16(p, 0);  /* auth */
	p = put16(p, 14); /* TPM2B_NV_PUBLIC */
	p = put32(p, VTPM_EK_CERT_INDEX);
	p = put16(p, 0x000B); /* nameAlg SHA-256 */
	p = put32(p, attrs);
	p = put16(p, 0); /* authPolicy */
	p = put16(p, (uint16_t)len);
	finish_cmd(c, p);
	if (run(c, NULL, NULL) != TPM_RC_SUCCESS)
		return -1;
	/* NV_Write takes at most MAX_NV_BUFFER_SIZE (1024 in libtpms) at a time */
	for (size_t off = 0; off < len; off += 1024) {
		size_t n = MIN(len - off, 1024);
		const uint32_t h[1] = {VTPM_EK_CERT_INDEX};
		p = auth_cmd(c, TPM_CC_NV_WRITE, TPM_RH_PLATFORM, h, 1);
		p = put16(p, (uint16_t)n);
		memcpy(p, der + off, n);
		p += n;
		p = put16(p, (uint16_t)off);
		finish_cmd(c, p);
		if (run(c, NULL, NULL) != TPM_RC_SUCCESS)
			return -1;
	}
	p = auth_cmd(c, TPM_CC_NV_WRITE_LOCK, TPM_RH_PLATFORM, idx, 1);
	finish_cmd(c, p);
	return run(c, NULL, NULL) == TPM_RC_SUCCESS ? 0 : -1;
}

int vtpm_ek_cert_read(uint8_t *buf, size_t cap, size_t *len)
{
	uint8_t c[40], *p = c;
	const uint8_t *r;
	uint32_t rl;
	const uint32_t idx[1] = {VTPM_EK_CERT_INDEX};

	*len = 0;
	p = put16(p, TPM_ST_NO_SESSIONS);
	p = put32(p, 0);
	p = put32(p, TPM_CC_NV_READ_PUBLIC);
	p = put32(p, VTPM_EK_CERT_INDEX);
	finish_cmd(c, p);
	/* header, TPM2B_NV_PUBLIC {size u16 @10, index, nameAlg, attrs, policy (u16 + n),
	 * dataSize u16} */
	if (run(c, &r, &rl) != TPM_RC_SUCCESS || rl < 12)
		return -1;
	uint16_t pl = get16(r + 10);
	if (pl < 14 || 12u + pl > rl)
		return -1;
	uint16_t pol = get16(r + 22);
	if (24u + pol + 2 > 12u + pl)
		return -1;
	size_t size = get16(r + 24 + pol);
	if (size > cap)
		return -1;
	for (size_t off = 0; off < size; off += 1024) {
		size_t n = MIN(size - off, 1024);
		p = auth_cmd(c, TPM_CC_NV_READ, TPM_RH_OWNER, idx, 1);
		p = put16(p, (uint16_t)n);
		p = put16(p, (uint16_t)off);
		finish_cmd(c, p);
		/* header, parameterSize u32, TPM2B_MAX_NV_BUFFER {size @14, data @16} */
		if (run(c, &r, &rl) != TPM_RC_SUCCESS || rl < 16 || get16(r + 14) != n ||
		    16 + n > rl)
			return -1;
		memcpy(buf + off, r + 16, n);
	}
	*len = size;
	return 0;
}

int vtpm_platform_disable(void)
{
	uint8_t c[40], *p;
	p = auth_cmd(c, TPM_CC_HIERARCHY_CONTROL, TPM_RH_PLATFORM, NULL, 0);
	p = put32(p, TPM_RH_PLATFORM); /* enable: phEnable */
	*p++ = 0;		       /* state: NO */
	finish_cmd(c, p);
	return run(c, NULL, NULL) == TPM_RC_SUCCESS ? 0 : -1;
}
