/*
 * TCG crypto-agile event log writer and replayer; see include/tpm/event_log.h.
 * Layouts: TCG PC Client PFP spec, TCG_PCR_EVENT / TCG_EfiSpecIDEventStruct /
 * TCG_PCR_EVENT2 (shared/reference/snp-svsm-interfaces.md §9).
 */
#include "base/string.h"
#include "tpm/event_log.h"

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

int event_log_init(struct event_log *log, void *buf, size_t cap)
{
	uint8_t *p = buf;

	log->buf = buf;
	log->cap = cap;
	log->len = 0;
	if (cap < EVENT_LOG_SPEC_ID_RECORD_SIZE)
		return -1;
	memset(p, 0, EVENT_LOG_SPEC_ID_RECORD_SIZE);
	/* TCG_PCR_EVENT: PCRIndex 0, EV_NO_ACTION, SHA-1 digest all zero. */
	put_le32(p + 0, 0);
	put_le32(p + 4, EV_NO_ACTION);
	put_le32(p + 28, EVENT_LOG_SPEC_ID_EVENT_SIZE);
	/* TCG_EfiSpecIDEventStruct */
	uint8_t *e = p + 32;
	memcpy(e, EVENT_LOG_SPEC_ID_SIG, sizeof(EVENT_LOG_SPEC_ID_SIG)); /* 16 incl. NUL */
	put_le32(e + 16, 0);						 /* platformClass: client */
	e[20] = 0;							 /* specVersionMinor */
	e[21] = 2;							 /* specVersionMajor */
	e[22] = 0;							 /* specErrata */
	e[23] = 2;							 /* uintnSize: UINT64 */
	put_le32(e + 24, 2);						 /* numberOfAlgorithms */
	put_le16(e + 28, TPM_ALG_SHA256);
	put_le16(e + 30, HASH_SHA256_SIZE);
	put_le16(e + 32, TPM_ALG_SHA384);
	put_le16(e + 34, HASH_SHA384_SIZE);
	e[36] = 0; /* vendorInfoSize */
	log->len = EVENT_LOG_SPEC_ID_RECORD_SIZE;
	return 0;
}

size_t event_log_record_size(uint32_t event_len)
{
	return EVENT_LOG_EVENT2_HDR_SIZE + (size_t)event_len;
}

bool event_log_has_room(const struct event_log *log, uint32_t event_len)
{
	size_t end;

	if (ADD_OVERFLOW(log->len, event_log_record_size(event_len), &end))
		return false;
	return end <= log->cap;
}

int event_log_append(struct event_log *log, uint32_t pcr, uint32_t type,
		     const struct event_log_digests *d, const void *event, uint32_t event_len)
{
	if (pcr >= EVENT_LOG_NUM_PCRS || !event_log_has_room(log, event_len))
		return -1;
	uint8_t *p = log->buf + log->len;
	put_le32(p, pcr);
	put_le32(p + 4, type);
	put_le32(p + 8, 2); /* TPML_DIGEST_VALUES.count */
	p += 12;
	put_le16(p, TPM_ALG_SHA256);
	memcpy(p + 2, d->sha256, HASH_SHA256_SIZE);
	p += 2 + HASH_SHA256_SIZE;
	put_le16(p, TPM_ALG_SHA384);
	memcpy(p + 2, d->sha384, HASH_SHA384_SIZE);
	p += 2 + HASH_SHA384_SIZE;
	put_le32(p, event_len);
	if (event_len)
		memcpy(p + 4, event, event_len);
	log->len += event_log_record_size(event_len);
	return 0;
}

size_t event_log_blob2_data(uint8_t *out, size_t cap, const char *desc, uint64_t base,
			    uint64_t length)
{
	/* BlobDescriptionSize counts the terminating NUL, as edk2 fills it
	 * (SecurityPkg Tcg2Pei MeasureFvImage: BlobDescriptionSize =
	 * sizeof (BlobDescription), a NUL-terminated CHAR8 array) and as
	 * tpm2_eventlog prints it (without the NUL, "OVMF" showed as "OVM"). */
	size_t dlen = strlen(desc) + 1;
	size_t need = 1 + dlen + 8 + 8;

	if (dlen > 255 || need > cap)
		return 0;
	out[0] = (uint8_t)dlen;
	memcpy(out + 1, desc, dlen);
	put_le64(out + 1 + dlen, base);
	put_le64(out + 1 + dlen + 8, length);
	return need;
}

/* Bounded reader over an untrusted log. */
struct rd {
	const uint8_t *p;
	size_t left;
};

static const uint8_t *rd_take(struct rd *r, size_t n)
{
	if (n > r->left)
		return NULL;
	const uint8_t *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}

#define MAX_ALGS 8

int event_log_replay(const void *buf, size_t len, struct event_log_pcrs *out)
{
	struct rd r = {buf, len};
	const uint8_t *p;
	uint16_t alg_id[MAX_ALGS], alg_size[MAX_ALGS];
	uint32_t nalg;

	memset(out, 0, sizeof(*out));

	/* Spec ID event: TCG_PCR_EVENT, PCR 0, EV_NO_ACTION, zero SHA-1 digest. */
	if (!(p = rd_take(&r, 32)))
		return -1;
	if (get_le32(p) != 0 || get_le32(p + 4) != EV_NO_ACTION)
		return -1;
	for (int i = 8; i < 28; i++)
		if (p[i])
			return -1;
	uint32_t ev_size = get_le32(p + 28);
	const uint8_t *e = rd_take(&r, ev_size);
	if (!e || ev_size < 16 + 4 + 4 + 4 + 1)
		return -1;
	if (memcmp(e, EVENT_LOG_SPEC_ID_SIG, sizeof(EVENT_LOG_SPEC_ID_SIG)) != 0 || e[21] != 2 ||
	    e[23] != 2)
		return -1;
	nalg = get_le32(e + 24);
	if (nalg == 0 || nalg > MAX_ALGS || 28 + 4 * (size_t)nalg + 1 > ev_size)
		return -1;
	for (uint32_t i = 0; i < nalg; i++) {
		alg_id[i] = get_le16(e + 28 + 4 * i);
		alg_size[i] = get_le16(e + 30 + 4 * i);
		if ((alg_id[i] == TPM_ALG_SHA256 && alg_size[i] != HASH_SHA256_SIZE) ||
		    (alg_id[i] == TPM_ALG_SHA384 && alg_size[i] != HASH_SHA384_SIZE) ||
		    alg_size[i] > 64)
			return -1;
	}
	size_t vendor = e[28 + 4 * nalg];
	if (28 + 4 * (size_t)nalg + 1 + vendor != ev_size)
		return -1;

	/* TCG_PCR_EVENT2 records. */
	while (r.left) {
		uint8_t tmp[2 * HASH_SHA384_SIZE];
		if (!(p = rd_take(&r, 12)))
			return -1;
		uint32_t pcr = get_le32(p), type = get_le32(p + 4), count = get_le32(p + 8);
		if (pcr >= EVENT_LOG_NUM_PCRS || count > MAX_ALGS)
			return -1;
		for (uint32_t i = 0; i < count; i++) {
			if (!(p = rd_take(&r, 2)))
				return -1;
			uint16_t id = get_le16(p);
			uint32_t k;
			for (k = 0; k < nalg && alg_id[k] != id; k++)
				;
			if (k == nalg)
				return -1; /* digest of an algorithm the Spec ID event does not name
					    */
			const uint8_t *dg = rd_take(&r, alg_size[k]);
			if (!dg)
				return -1;
			if (type == EV_NO_ACTION)
				continue;
			/* PCR extend: new = H(old || digest) */
			if (id == TPM_ALG_SHA256) {
				memcpy(tmp, out->sha256[pcr], HASH_SHA256_SIZE);
				memcpy(tmp + HASH_SHA256_SIZE, dg, HASH_SHA256_SIZE);
				hash_sha256(tmp, 2 * HASH_SHA256_SIZE, out->sha256[pcr]);
			} else if (id == TPM_ALG_SHA384) {
				memcpy(tmp, out->sha384[pcr], HASH_SHA384_SIZE);
				memcpy(tmp + HASH_SHA384_SIZE, dg, HASH_SHA384_SIZE);
				hash_sha384(tmp, 2 * HASH_SHA384_SIZE, out->sha384[pcr]);
			}
		}
		if (!(p = rd_take(&r, 4)))
			return -1;
		if (!rd_take(&r, get_le32(p)))
			return -1;
		if (type != EV_NO_ACTION)
			out->events++;
	}
	return 0;
}
