/*
 * Appraisal against an owner's policy (include/attest/policy.h): the policy
 * file's parser and appraise(), shared by csvsm-kbs and csvsm-verify
 * --policy. The cryptographic and report checks are attest/snp_verify.c's
 * (snp_verify_run, snp_verify_quote); this file adds the policy fields that
 * function has no option for, with go-sev-guest's semantics
 * (go-sev-guest validate/validate.go, `Options` filled from check.proto
 * `Policy` by validate.PolicyToOptions), and csvsm's SVSM evidence: the
 * services manifest (attest/manifest.c), its vTPM EK, and the TPM quote's
 * PCR values against references.
 */
#include <attest/attest_proto.h>
#include <base/hex.h>
#include <attest/policy.h>
#include <attest/tpm_cred.h>
#include <attest/tpm_wire.h>

#include <errno.h>
#include <jansson.h>
#include <mbedtls/md.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define TPM_ALG_SHA256 0x000bu
#define TPM_ALG_SHA384 0x000cu

static void setd(char *d, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setd(char *d, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, n, fmt, ap);
	va_end(ap);
}

/* ---- policy file ---- */

/* Exactly n bytes of hex (an optional 0x). */
static bool hex_exact(const char *s, uint8_t *out, size_t n)
{
	if (!strncmp(s, "0x", 2))
		s += 2;
	if (strlen(s) != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

struct pctx {
	char *err;
	size_t n;
	bool bad;
};

static void perr(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void perr(struct pctx *c, const char *fmt, ...)
{
	va_list ap;
	if (c->bad)
		return;
	c->bad = true;
	va_start(ap, fmt);
	vsnprintf(c->err, c->n, fmt, ap);
	va_end(ap);
}

static bool get_hex(struct pctx *c, json_t *v, const char *key, uint8_t *out, size_t n)
{
	if (!json_is_string(v) || !hex_exact(json_string_value(v), out, n)) {
		perr(c, "%s: expected %zu bytes of hex", key, n);
		return false;
	}
	return true;
}

/* A non-negative integer: a JSON integer, or a string in C notation (0x...). */
static bool get_u64(struct pctx *c, json_t *v, const char *key, uint64_t max, uint64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
	} else if (json_is_string(v) && *json_string_value(v)) {
		char *end;
		const char *s = json_string_value(v);
		if (*s == '-') {
			perr(c, "%s: negative", key);
			return false;
		}
		*out = strtoull(s, &end, 0);
		if (*end) {
			perr(c, "%s: not a number", key);
			return false;
		}
	} else {
		perr(c, "%s: expected a non-negative integer", key);
		return false;
	}
	if (*out > max) {
		perr(c, "%s: larger than %llu", key, (unsigned long long)max);
		return false;
	}
	return true;
}

static bool get_bool(struct pctx *c, json_t *v, const char *key, bool *out)
{
	if (!json_is_boolean(v)) {
		perr(c, "%s: expected true or false", key);
		return false;
	}
	*out = json_is_true(v);
	return true;
}

bool appraisal_tcb_set(struct snp_tcb *t, const char *name, uint8_t v)
{
	if (!strcmp(name, "bl"))
		t->bl = v;
	else if (!strcmp(name, "tee"))
		t->tee = v;
	else if (!strcmp(name, "snp"))
		t->snp = v;
	else if (!strcmp(name, "ucode"))
		t->ucode = v;
	else if (!strcmp(name, "fmc"))
		t->fmc = v, t->has_fmc = true;
	else
		return false;
	return true;
}

int appraisal_tcb_parse(const char *s, struct snp_tcb *t, char *err, size_t n)
{
	char buf[128], *save = NULL;

	memset(t, 0, sizeof(*t));
	if (strlen(s) >= sizeof(buf)) {
		setd(err, n, "expected NAME=N,... (bl, tee, snp, ucode, fmc), not %zu characters",
		     strlen(s));
		return -1;
	}
	strcpy(buf, s);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '='), *end;
		unsigned long v;
		if (!eq) {
			setd(err, n, "expected NAME=N, got '%s'", tok);
			return -1;
		}
		*eq = 0;
		errno = 0;
		v = strtoul(eq + 1, &end, 0);
		if (errno || *end || !eq[1] || eq[1] == '-' || v > 255) {
			setd(err, n, "%s value must be 0..255", tok);
			return -1;
		}
		if (!appraisal_tcb_set(t, tok, (uint8_t)v)) {
			setd(err, n, "unknown component '%s' (bl, tee, snp, ucode, fmc)", tok);
			return -1;
		}
	}
	return 0;
}

/* A TCB: an object {bl, tee, snp, ucode[, fmc]} or the raw TCB_VERSION. */
static void get_tcb(struct pctx *c, json_t *v, const char *key, bool *is_raw, uint64_t *raw,
		    struct snp_tcb *t)
{
	memset(t, 0, sizeof(*t));
	if (!json_is_object(v)) {
		*is_raw = true;
		get_u64(c, v, key, UINT64_MAX, raw);
		return;
	}
	const char *k;
	json_t *x;
	*is_raw = false;
	json_object_foreach(v, k, x)
	{
		uint64_t u = 0;
		if (!get_u64(c, x, key, 255, &u))
			return;
		if (!appraisal_tcb_set(t, k, (uint8_t)u))
			perr(c, "%s: unknown component '%s' (bl, tee, snp, ucode, fmc)", key, k);
	}
}

/* A list of SHA-384 digests, or of keys to hash with SHA-384 (hex). */
static void get_key_hashes(struct pctx *c, json_t *v, const char *key, bool hash_them,
			   uint8_t (*out)[48], size_t *n)
{
	size_t i;
	json_t *x;
	if (!json_is_array(v)) {
		perr(c, "%s: expected a list", key);
		return;
	}
	json_array_foreach(v, i, x)
	{
		if (*n >= APPRAISAL_MAX_KEYS) {
			perr(c, "%s: more than %d entries", key, APPRAISAL_MAX_KEYS);
			return;
		}
		if (!hash_them) {
			get_hex(c, x, key, out[(*n)++], 48);
			continue;
		}
		/* go-sev-guest: trusted_*_keys are the keys' bytes (SEV public
		 * key format, 0x403 bytes); the report carries SHA-384 of them. */
		const char *s = json_is_string(x) ? json_string_value(x) : "";
		size_t l = strlen(s) / 2;
		uint8_t *buf = l ? malloc(l) : NULL;
		if (!buf || l > 4096 || !hex_exact(s, buf, l)) {
			perr(c, "%s: expected hex key bytes (at most 4096)", key);
			free(buf);
			return;
		}
		mbedtls_sha512_ret(buf, l, out[(*n)++], 1);
		free(buf);
	}
}

static enum snp_product product_by_name(const char *s)
{
	if (!strcasecmp(s, "milan"))
		return SNP_PRODUCT_MILAN;
	if (!strcasecmp(s, "genoa") || !strcasecmp(s, "siena"))
		return SNP_PRODUCT_GENOA;
	if (!strcasecmp(s, "turin"))
		return SNP_PRODUCT_TURIN;
	return SNP_PRODUCT_UNKNOWN;
}

static void parse_snp(struct pctx *c, json_t *o, struct appraisal_policy *p)
{
	const char *k;
	json_t *v;
	uint64_t u;

	json_object_foreach(o, k, v)
	{
		if (c->bad)
			return;
		if (!strcmp(k, "minimum_guest_svn")) {
			if (get_u64(c, v, k, UINT32_MAX, &u))
				p->minimum_guest_svn = (uint32_t)u;
		} else if (!strcmp(k, "policy")) {
			p->have_policy = get_u64(c, v, k, UINT64_MAX, &p->policy);
		} else if (!strcmp(k, "family_id")) {
			p->have_family_id = get_hex(c, v, k, p->family_id, 16);
		} else if (!strcmp(k, "image_id")) {
			p->have_image_id = get_hex(c, v, k, p->image_id, 16);
		} else if (!strcmp(k, "vmpl")) {
			if ((p->have_vmpl = get_u64(c, v, k, 3, &u)))
				p->vmpl = (uint32_t)u;
		} else if (!strcmp(k, "minimum_tcb")) {
			p->have_min_tcb = true;
			get_tcb(c, v, k, &p->min_tcb_is_raw, &p->min_tcb_raw, &p->min_tcb);
		} else if (!strcmp(k, "minimum_launch_tcb")) {
			p->have_min_launch_tcb = true;
			get_tcb(c, v, k, &p->min_launch_tcb_is_raw, &p->min_launch_tcb_raw,
				&p->min_launch_tcb);
		} else if (!strcmp(k, "platform_info")) {
			p->have_platform_info = get_u64(c, v, k, UINT64_MAX, &p->platform_info);
		} else if (!strcmp(k, "require_author_key")) {
			get_bool(c, v, k, &p->require_author_key);
		} else if (!strcmp(k, "report_data")) {
			p->have_report_data = get_hex(c, v, k, p->report_data, 64);
		} else if (!strcmp(k, "measurement")) {
			/* one, or a list of accepted launch images */
			if (json_is_string(v)) {
				if (get_hex(c, v, k, p->meas[0], 48))
					p->n_meas = 1;
			} else if (json_is_array(v) && json_array_size(v) > 0 &&
				   json_array_size(v) <= APPRAISAL_MAX_MEAS) {
				size_t i;
				json_t *x;
				json_array_foreach(v, i, x) get_hex(c, x, k, p->meas[i], 48);
				p->n_meas = json_array_size(v);
			} else {
				perr(c, "measurement: 48 bytes of hex, or a list of 1..%d",
				     APPRAISAL_MAX_MEAS);
			}
		} else if (!strcmp(k, "host_data")) {
			p->have_host_data = get_hex(c, v, k, p->host_data, 32);
		} else if (!strcmp(k, "report_id")) {
			p->have_report_id = get_hex(c, v, k, p->report_id, 32);
		} else if (!strcmp(k, "report_id_ma")) {
			p->have_report_id_ma = get_hex(c, v, k, p->report_id_ma, 32);
		} else if (!strcmp(k, "chip_id")) {
			p->have_chip_id = get_hex(c, v, k, p->chip_id, 64);
		} else if (!strcmp(k, "minimum_build")) {
			if (get_u64(c, v, k, 255, &u))
				p->minimum_build = (uint32_t)u;
		} else if (!strcmp(k, "minimum_version")) {
			unsigned maj, min;
			char extra;
			if (!json_is_string(v) ||
			    sscanf(json_string_value(v), "%u.%u%c", &maj, &min, &extra) != 2 ||
			    maj > 255 || min > 255) {
				perr(c, "minimum_version: \"major.minor\", each 0..255");
			} else {
				p->have_min_version = true;
				p->min_major = (uint8_t)maj;
				p->min_minor = (uint8_t)min;
			}
		} else if (!strcmp(k, "permit_provisional_firmware")) {
			get_bool(c, v, k, &p->permit_provisional_firmware);
		} else if (!strcmp(k, "require_id_block")) {
			get_bool(c, v, k, &p->require_id_block);
		} else if (!strcmp(k, "trusted_author_keys")) {
			get_key_hashes(c, v, k, true, p->author_hash, &p->n_author_hash);
		} else if (!strcmp(k, "trusted_author_key_hashes")) {
			get_key_hashes(c, v, k, false, p->author_hash, &p->n_author_hash);
		} else if (!strcmp(k, "trusted_id_keys")) {
			get_key_hashes(c, v, k, true, p->id_hash, &p->n_id_hash);
		} else if (!strcmp(k, "trusted_id_key_hashes")) {
			get_key_hashes(c, v, k, false, p->id_hash, &p->n_id_hash);
		} else if (!strcmp(k, "product")) {
			/* go-sev-guest SevProduct {name, machine_stepping} */
			json_t *name = json_object_get(v, "name"),
			       *st = json_object_get(v, "stepping");
			if (!json_is_object(v) || !json_is_string(name) ||
			    !(p->product = product_by_name(json_string_value(name))) ||
			    json_object_size(v) != 1u + (st != NULL))
				perr(c, "product: {\"name\": \"Milan\"|\"Genoa\"|\"Turin\"[, "
					"\"stepping\": N]}");
			else if (st &&
				 (p->have_stepping = get_u64(c, st, "product.stepping", 255, &u)))
				p->stepping = (uint8_t)u;
		} else {
			perr(c, "snp: unknown field '%s' (docs/kbs.md \"Policy reference\")", k);
		}
	}
	if (!c->bad && p->require_id_block && !p->n_id_hash)
		perr(c, "require_id_block needs trusted_id_keys or trusted_id_key_hashes");
	if (!c->bad && p->require_author_key && !p->n_author_hash)
		perr(c, "require_author_key needs trusted_author_keys or "
			"trusted_author_key_hashes");
}

static void add_pcr(struct pctx *c, struct appraisal_policy *p, uint16_t alg, unsigned idx,
		    const uint8_t *val)
{
	size_t dl = alg == TPM_ALG_SHA256 ? 32 : 48;
	for (size_t i = 0; i < p->n_pcrs; i++)
		if (p->pcrs[i].alg == alg && p->pcrs[i].index == idx) {
			perr(c, "svsm: PCR %u of that bank given twice (pcrs and ovmf?)", idx);
			return;
		}
	if (p->n_pcrs >= APPRAISAL_MAX_PCRS) {
		perr(c, "svsm: more than %d reference PCR values", APPRAISAL_MAX_PCRS);
		return;
	}
	p->pcrs[p->n_pcrs].alg = alg;
	p->pcrs[p->n_pcrs].index = (uint8_t)idx;
	memcpy(p->pcrs[p->n_pcrs].value, val, dl);
	p->n_pcrs++;
}

static uint16_t bank_alg(const char *s)
{
	return !strcmp(s, "sha256") ? TPM_ALG_SHA256 : !strcmp(s, "sha384") ? TPM_ALG_SHA384 : 0;
}

static void parse_svsm(struct pctx *c, json_t *o, struct appraisal_policy *p)
{
	const char *k, *bk, *ik;
	json_t *v, *bv, *iv;

	p->require_svsm = true;
	json_object_foreach(o, k, v)
	{
		if (c->bad)
			return;
		if (!strcmp(k, "require_vtpm_ek")) {
			get_bool(c, v, k, &p->require_vtpm_ek);
		} else if (!strcmp(k, "require_quote")) {
			get_bool(c, v, k, &p->require_quote);
		} else if (!strcmp(k, "pcrs")) {
			/* {"sha256": {"0": "hex", ...}, "sha384": {...}} */
			if (!json_is_object(v)) {
				perr(c, "svsm.pcrs: expected {\"sha256\": {\"0\": \"hex\"}, ...}");
				return;
			}
			json_object_foreach(v, bk, bv)
			{
				uint16_t alg = bank_alg(bk);
				if (!alg || !json_is_object(bv)) {
					perr(c, "svsm.pcrs: banks are sha256 and sha384");
					return;
				}
				json_object_foreach(bv, ik, iv)
				{
					char *end;
					unsigned long idx = strtoul(ik, &end, 10);
					uint8_t val[48];
					if (*end || !*ik || idx > 23) {
						perr(c, "svsm.pcrs.%s: PCR index 0..23", bk);
						return;
					}
					if (get_hex(c, iv, "svsm.pcrs value", val,
						    alg == TPM_ALG_SHA256 ? 32 : 48))
						add_pcr(c, p, alg, (unsigned)idx, val);
				}
			}
		} else if (!strcmp(k, "ovmf")) {
			/*
			 * The OVMF image's digest (csvsm-measure / tests/linux/
			 * mkinitramfs.sh): csvsm extends it into PCR0 of each bank
			 * as the only event, so PCR0 = H(0^n || H(OVMF))
			 * (docs/vtpm.md "PCR0").
			 */
			if (!json_is_object(v)) {
				perr(c, "svsm.ovmf: expected {\"sha256\": \"hex\", \"sha384\": "
					"\"hex\"}");
				return;
			}
			json_object_foreach(v, bk, bv)
			{
				uint16_t alg = bank_alg(bk);
				size_t dl = alg == TPM_ALG_SHA256 ? 32 : 48;
				uint8_t buf[96] = {0}, pcr[64];
				if (!alg) {
					perr(c, "svsm.ovmf: banks are sha256 and sha384");
					return;
				}
				if (!get_hex(c, bv, "svsm.ovmf digest", buf + dl, dl))
					return;
				if (alg == TPM_ALG_SHA256)
					mbedtls_sha256_ret(buf, 2 * dl, pcr, 0);
				else
					mbedtls_sha512_ret(buf, 2 * dl, pcr, 1);
				add_pcr(c, p, alg, 0, pcr);
			}
		} else {
			perr(c, "svsm: unknown field '%s'", k);
		}
	}
	if (!c->bad && p->n_pcrs && !p->require_quote)
		perr(c, "svsm: reference PCR values need \"require_quote\": true");
}

int appraisal_policy_parse(const char *text, size_t len, struct appraisal_policy *p, char *err,
			   size_t n)
{
	struct pctx c = {err, n, false};
	json_error_t je;
	json_t *root, *v;
	const char *k;
	uint8_t h[32];

	memset(p, 0, sizeof(*p));
	p->permit_provisional_firmware = true; /* go-sev-guest's default (false = stricter) */
	if (len > APPRAISAL_POLICY_MAX) {
		setd(err, n, "policy larger than %u bytes", APPRAISAL_POLICY_MAX);
		return -1;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		setd(err, n, "policy JSON, line %d: %s", je.line, je.text);
		return -1;
	}
	if (!json_is_object(root))
		perr(&c, "policy: expected a JSON object");
	json_object_foreach(root, k, v)
	{
		if (c.bad)
			break;
		if (!strcmp(k, "version")) {
			if (!json_is_integer(v) || json_integer_value(v) != 1)
				perr(&c, "version: this verifier reads version 1");
		} else if (!strcmp(k, "snp")) {
			if (json_is_object(v))
				parse_snp(&c, v, p);
			else
				perr(&c, "snp: expected an object");
		} else if (!strcmp(k, "svsm")) {
			if (json_is_object(v))
				parse_svsm(&c, v, p);
			else
				perr(&c, "svsm: expected an object");
		} else if (!strcmp(k, "instance_identity")) {
			const char *s = json_is_string(v) ? json_string_value(v) : "";
			if (!strcmp(s, "report_id"))
				p->instance = INSTANCE_FROM_REPORT_ID;
			else if (!strcmp(s, "host_data"))
				p->instance = INSTANCE_FROM_HOST_DATA;
			else if (!strcmp(s, "vtpm_ek"))
				p->instance = INSTANCE_FROM_VTPM_EK;
			else
				perr(&c, "instance_identity: report_id, host_data or vtpm_ek");
		} else if (strcmp(k, "comment")) {
			perr(&c,
			     "unknown field '%s' (version, snp, svsm, instance_identity, comment)",
			     k);
		}
	}
	json_decref(root);
	if (!c.bad && p->instance == INSTANCE_FROM_VTPM_EK && !p->require_vtpm_ek)
		perr(&c, "instance_identity vtpm_ek needs svsm.require_vtpm_ek");
	if (c.bad)
		return -1;
	mbedtls_sha256_ret((const uint8_t *)text, len, h, 0);
	int k2 = snprintf(p->id, sizeof(p->id), "sha256:");
	for (int i = 0; i < 32; i++)
		k2 += snprintf(p->id + k2, sizeof(p->id) - (size_t)k2, "%02x", h[i]);
	return 0;
}

int appraisal_policy_load(const char *path, struct appraisal_policy *p, char *err, size_t n)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t len;
	int rc;

	if (!f) {
		setd(err, n, "%s: cannot open", path);
		return -1;
	}
	buf = malloc(APPRAISAL_POLICY_MAX + 1);
	len = buf ? fread(buf, 1, APPRAISAL_POLICY_MAX + 1, f) : 0;
	fclose(f);
	if (!buf || len > APPRAISAL_POLICY_MAX) {
		free(buf);
		setd(err, n, "%s: larger than %u bytes", path, APPRAISAL_POLICY_MAX);
		return -1;
	}
	rc = appraisal_policy_parse(buf, len, p, err, n);
	free(buf);
	return rc;
}

/* ---- appraisal ---- */

static const char *const claim_names[EAR_NCLAIMS] = {
    "instance-identity", "configuration",  "executables",    "file-system",
    "hardware",		 "runtime-opaque", "storage-opaque", "sourced-data",
};

const char *ear_claim_name(enum ear_claim c)
{
	return c < EAR_NCLAIMS ? claim_names[c] : "?";
}

const char *ear_status_name(enum ear_status s)
{
	return s == EAR_STATUS_AFFIRMING	 ? "affirming"
	       : s == EAR_STATUS_WARNING	 ? "warning"
	       : s == EAR_STATUS_CONTRAINDICATED ? "contraindicated"
						 : "none";
}

int ear_status_parse(const char *s)
{
	for (int i = EAR_STATUS_NONE; i <= EAR_STATUS_CONTRAINDICATED; i++)
		if (!strcmp(s, ear_status_name((enum ear_status)i)))
			return i;
	return -1;
}

/* snp_verify_run's check names -> the claim each speaks to. */
static enum ear_claim claim_of(const char *name)
{
	static const struct {
		const char *name;
		enum ear_claim claim;
	} map[] = {
	    {"parse", EAR_HARDWARE},	      {"signature", EAR_HARDWARE},
	    {"chain", EAR_HARDWARE},	      {"tcb", EAR_HARDWARE},
	    {"chip_id", EAR_HARDWARE},	      {"policy.min_tcb", EAR_HARDWARE},
	    {"measurement", EAR_EXECUTABLES}, {"report_data", EAR_INSTANCE_IDENTITY},
	    {"quote", EAR_INSTANCE_IDENTITY},
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].name, name))
			return map[i].claim;
	return EAR_CONFIGURATION; /* policy.* */
}

/*
 * The next check's slot. When the array is full the check goes to a scratch
 * slot that is never read and the result is marked: finish() then makes it
 * contraindicated (before, the last slot was reused, so a later passing
 * check could overwrite an earlier failing one: the front end's checks
 * (freshness, credential, CRL) come last).
 */
static struct appraisal_check *add(struct appraisal_result *r, const char *name,
				   enum ear_claim claim)
{
	static __thread struct appraisal_check scratch;
	struct appraisal_check *c = &scratch;
	if (r->n < APPRAISAL_MAX_CHECKS)
		c = &r->checks[r->n++];
	else
		r->overflow = true;
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->claim = claim;
	c->state = SNP_CHECK_FAIL;
	return c;
}

static void vcheck(struct appraisal_result *r, const char *name, enum ear_claim claim, bool pass,
		   const char *fmt, va_list ap)
{
	struct appraisal_check *c = add(r, name, claim);
	c->state = pass ? SNP_CHECK_PASS : SNP_CHECK_FAIL;
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
}

static void check(struct appraisal_result *r, const char *name, enum ear_claim claim, bool pass,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void check(struct appraisal_result *r, const char *name, enum ear_claim claim, bool pass,
		  const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vcheck(r, name, claim, pass, fmt, ap);
	va_end(ap);
}

/* The vector from the checks (ar4si §2.3.3), then the status (EAR §3.2). */
static void finish(struct appraisal_result *r)
{
	bool seen[EAR_NCLAIMS] = {0};

	memset(r->tv, 0, sizeof(r->tv));
	memset(r->reason, 0, sizeof(r->reason));
	for (size_t i = 0; i < r->n; i++) {
		const struct appraisal_check *c = &r->checks[i];
		if (c->state == SNP_CHECK_SKIP)
			continue;
		if (c->state == SNP_CHECK_FAIL && r->tv[c->claim] != AR4SI_CONTRAINDICATED) {
			r->tv[c->claim] = AR4SI_CONTRAINDICATED;
			setd(r->reason[c->claim], SNP_DETAIL_LEN, "%s: %s", c->name, c->detail);
		} else if (c->state == SNP_CHECK_PASS && !seen[c->claim]) {
			if (r->tv[c->claim] == AR4SI_NONE)
				r->tv[c->claim] = AR4SI_AFFIRMING;
		}
		seen[c->claim] = true;
	}
	if (r->overflow) {
		r->tv[EAR_CONFIGURATION] = AR4SI_CONTRAINDICATED;
		setd(r->reason[EAR_CONFIGURATION], SNP_DETAIL_LEN,
		     "appraisal: more than %d checks, the rest not recorded", APPRAISAL_MAX_CHECKS);
	}
	/* No reference for the launch image: executables not recognised. */
	if (r->no_measurement_reference && r->tv[EAR_EXECUTABLES] == AR4SI_NONE) {
		r->tv[EAR_EXECUTABLES] = AR4SI_UNRECOGNIZED_EXEC;
		setd(r->reason[EAR_EXECUTABLES], SNP_DETAIL_LEN,
		     "no reference MEASUREMENT in the policy: launch image not recognised");
	}
	/* SEV-SNP encrypts the guest's memory once the hardware is genuine. */
	r->tv[EAR_RUNTIME_OPAQUE] = r->tv[EAR_HARDWARE] == AR4SI_AFFIRMING ? AR4SI_AFFIRMING : 0;
	for (int c = 0; c < EAR_NCLAIMS; c++)
		if (!r->reason[c][0] && r->tv[c] == AR4SI_AFFIRMING)
			setd(r->reason[c], SNP_DETAIL_LEN, "every check of this claim passed");
	r->status = EAR_STATUS_NONE;
	for (int c = 0; c < EAR_NCLAIMS; c++) {
		enum ear_status s = r->tv[c] >= 96   ? EAR_STATUS_CONTRAINDICATED
				    : r->tv[c] >= 32 ? EAR_STATUS_WARNING
				    : r->tv[c] >= 2  ? EAR_STATUS_AFFIRMING
						     : EAR_STATUS_NONE;
		if (s > r->status)
			r->status = s;
	}
}

void appraisal_add_check(struct appraisal_result *r, const char *name, enum ear_claim claim,
			 bool pass, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vcheck(r, name, claim, pass, fmt, ap);
	va_end(ap);
	finish(r);
}

static bool all_zero(const uint8_t *b, size_t n)
{
	uint8_t acc = 0;
	for (size_t i = 0; i < n; i++)
		acc |= b[i];
	return !acc;
}

static void hexs(char *out, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
}

/* The guest POLICY against the policy's maximum (go-sev-guest validatePolicy). */
static void check_guest_policy(const struct appraisal_policy *p, const struct snp_report *rep,
			       struct appraisal_result *r)
{
	struct snp_policy want;
	const struct snp_policy *got = &rep->policy;
	snp_policy_decode(p->policy, &want);

	bool abi = got->abi_major > want.abi_major ||
		   (got->abi_major == want.abi_major && got->abi_minor >= want.abi_minor);
	check(r, "policy.abi", EAR_CONFIGURATION, abi, "guest ABI %u.%u, minimum %u.%u",
	      got->abi_major, got->abi_minor, want.abi_major, want.abi_minor);
	/* Bits that permit something: allowed only if the maximum has them. */
	static const struct {
		uint64_t bit;
		const char *name;
		bool permits; /* true: report may set it only if policy does; false: required */
	} bits[] = {
	    {SNP_POLICY_SMT, "policy.smt", true},
	    {SNP_POLICY_CXL_ALLOW, "policy.cxl_allow", true},
	    {SNP_POLICY_SINGLE_SOCKET, "policy.single_socket", false},
	    {SNP_POLICY_MEM_AES_256_XTS, "policy.mem_aes_256_xts", false},
	    {SNP_POLICY_RAPL_DIS, "policy.rapl_dis", false},
	    {SNP_POLICY_CIPHERTEXT_HIDING, "policy.ciphertext_hiding", false},
	    {SNP_POLICY_PAGE_SWAP_DISABLE, "policy.page_swap_disable", false},
	};
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++) {
		bool in_rep = rep->raw.policy & bits[i].bit, in_pol = p->policy & bits[i].bit;
		if (bits[i].permits)
			check(r, bits[i].name, EAR_CONFIGURATION, !in_rep || in_pol,
			      "%s by the guest policy, %s by the owner's", in_rep ? "set" : "clear",
			      in_pol ? "allowed" : "not allowed");
		else
			check(r, bits[i].name, EAR_CONFIGURATION, in_rep || !in_pol,
			      "%s by the guest policy, %s by the owner's", in_rep ? "set" : "clear",
			      in_pol ? "required" : "not required");
	}
}

static bool tcb_from_policy(bool is_raw, uint64_t raw, const struct snp_tcb *obj,
			    enum snp_product prod, struct snp_tcb *out)
{
	if (is_raw)
		snp_tcb_decode(raw, prod, out);
	else
		*out = *obj;
	return true;
}

/*
 * PCR values out of tpm2-tools' serialized PCR file (layout in
 * attest/snp_verify.c snp_verify_quote, which has already checked it
 * against the quote): the value of (alg, index), or NULL.
 */
static const uint8_t *pcr_value(const uint8_t *f, size_t flen, uint16_t alg, unsigned idx,
				size_t *dl)
{
	struct tpm_rd rd = {f, flen, 0, false};
	uint16_t hash[16] = {0};
	uint8_t size[16] = {0}, bits[16][4] = {{0}};
	size_t nsel = tpm_rd_le(&rd, 4), bank, pos = 0, target = SIZE_MAX;

	if (nsel > 16)
		return NULL;
	for (size_t i = 0; i < 16; i++) {
		hash[i] = (uint16_t)tpm_rd_le(&rd, 2);
		size[i] = (uint8_t)tpm_rd_le(&rd, 1);
		for (size_t j = 0; j < 4; j++)
			bits[i][j] = (uint8_t)tpm_rd_le(&rd, 1);
		tpm_rd_le(&rd, 1);
	}
	size_t nlists = tpm_rd_le(&rd, 4);
	if (rd.bad || nlists > 64)
		return NULL;
	/* position of the value: banks in order, indices ascending */
	for (bank = 0; bank < nsel && target == SIZE_MAX; bank++)
		for (unsigned i = 0; i < 8u * size[bank] && i < 32; i++)
			if (bits[bank][i / 8] & (1u << (i % 8))) {
				if (hash[bank] == alg && i == idx) {
					target = pos;
					break;
				}
				pos++;
			}
	if (target == SIZE_MAX)
		return NULL;
	for (size_t li = 0, seen = 0; li < nlists && !rd.bad; li++) {
		size_t cnt = tpm_rd_le(&rd, 4);
		for (size_t k = 0; k < 8 && !rd.bad; k++) {
			size_t sz = tpm_rd_le(&rd, 2);
			if (rd.bad || 64 > rd.len - rd.off)
				return NULL;
			if (k < cnt && seen++ == target) {
				*dl = sz;
				return rd.p + rd.off;
			}
			rd.off += 64;
		}
	}
	return NULL;
}

/* c is signed by issuer's key, with the algorithm and parameters c names. */
static bool crl_signed_by(const mbedtls_x509_crl *c, const mbedtls_x509_crt *issuer)
{
	const mbedtls_md_info_t *mi = mbedtls_md_info_from_type(c->sig_md);
	uint8_t h[MBEDTLS_MD_MAX_SIZE];
	return mi && !mbedtls_md(mi, c->tbs.p, c->tbs.len, h) &&
	       !mbedtls_pk_verify_ext(c->sig_pk, c->sig_opts, (mbedtls_pk_context *)&issuer->pk,
				      c->sig_md, h, mbedtls_md_get_size(mi), c->sig.p, c->sig.len);
}

static bool same_name(const mbedtls_x509_buf *a, const mbedtls_x509_buf *b)
{
	return a->len == b->len && !memcmp(a->p, b->p, a->len);
}

void appraisal_crl_judge(const struct snp_chain *ch, const mbedtls_x509_crl *crls,
			 struct appraisal_crl *out)
{
	bool ark_crl = false, ask_revoked = false, leaf_revoked = false;
	char cn[64], serial[64];

	memset(out, 0, sizeof(*out));
	if (!ch->have_ark || !ch->have_ask || !ch->have_leaf) {
		setd(out->detail, sizeof(out->detail),
		     "no complete chain to check against the CRL");
		return;
	}
	for (const mbedtls_x509_crl *c = crls; c && c->version; c = c->next) {
		/* the ARK's CRL: the ASK/ASVK (issued by the ARK) by serial */
		if (same_name(&c->issuer_raw, &ch->ark.subject_raw)) {
			if (!crl_signed_by(c, &ch->ark)) {
				setd(out->detail, sizeof(out->detail),
				     "a CRL names this chain's ARK as issuer but the ARK did not "
				     "sign it");
				return;
			}
			ark_crl = true;
			ask_revoked |= mbedtls_x509_crt_is_revoked(&ch->ask, c) != 0;
		}
		/* the ASK's CRL: the VCEK/VLEK (issued by the ASK/ASVK) by serial */
		if (same_name(&c->issuer_raw, &ch->ask.subject_raw)) {
			if (!crl_signed_by(c, &ch->ask)) {
				setd(out->detail, sizeof(out->detail),
				     "a CRL names this chain's ASK/ASVK as issuer but it did not "
				     "sign it");
				return;
			}
			leaf_revoked |= mbedtls_x509_crt_is_revoked(&ch->leaf, c) != 0;
		}
	}
	snp_cert_cn(&ch->ark, cn, sizeof(cn));
	if (mbedtls_x509_serial_gets(serial, sizeof(serial),
				     ask_revoked ? &ch->ask.serial : &ch->leaf.serial) < 0)
		strcpy(serial, "?");
	if (!ark_crl)
		setd(out->detail, sizeof(out->detail),
		     "none of the configured CRLs is issued and signed by this chain's ARK (%s)",
		     cn);
	else if (ask_revoked)
		setd(out->detail, sizeof(out->detail),
		     "revoked: the ASK/ASVK (serial %s) is on the CRL of %s", serial, cn);
	else if (leaf_revoked)
		setd(out->detail, sizeof(out->detail),
		     "revoked: the VCEK/VLEK (serial %s) is on its ASK/ASVK's CRL", serial);
	else {
		out->ok = true;
		setd(out->detail, sizeof(out->detail),
		     "neither the ASK/ASVK (on %s's CRL) nor the VCEK/VLEK is revoked", cn);
	}
}

void appraise(const struct appraisal_policy *p, const struct appraisal_input *in,
	      struct appraisal_result *r)
{
	struct snp_verify_opts o;
	struct snp_verify_result v;
	struct snp_report *rep = &r->report;
	int perr;
	char hx[129];

	memset(r, 0, sizeof(*r));
	memset(&o, 0, sizeof(o));
	r->no_measurement_reference = p->n_meas == 0;
	o.at = in->at;
	for (size_t i = 0; i < in->n_trusted_ark && i < SNP_MAX_TRUSTED_ARKS; i++)
		memcpy(o.trusted_ark[o.n_trusted_ark++], in->trusted_ark[i], SNP_FP_LEN);
	o.allow_debug = p->have_policy && (p->policy & SNP_POLICY_DEBUG);
	o.allow_migrate_ma = p->have_policy && (p->policy & SNP_POLICY_MIGRATE_MA);
	o.vmpl = p->have_vmpl ? p->vmpl : 0; /* csvsm's and Trustee's evidence: VMPL 0 */
	if (in->have_report_data) {
		o.have_report_data = true;
		memcpy(o.report_data, in->report_data, 64);
	} else if (p->have_report_data) {
		o.have_report_data = true;
		memcpy(o.report_data, p->report_data, 64);
	}
	if (p->n_meas == 1) {
		o.have_measurement = true;
		memcpy(o.measurement, p->meas[0], 48);
	}
	o.quote = in->quote;

	if (snp_report_decode(in->report, in->report_len, rep)) {
		check(r, "parse", EAR_HARDWARE, false, "report is %zu bytes, not 1184",
		      in->report_len);
		finish(r);
		return;
	}
	r->report_decoded = true;
	perr = snp_report_check(rep);
	if (p->have_min_tcb) {
		enum snp_product prod = snp_verify_product(in->chain, rep, SNP_PRODUCT_UNKNOWN);
		o.have_min_tcb = true;
		tcb_from_policy(p->min_tcb_is_raw, p->min_tcb_raw, &p->min_tcb, prod, &o.min_tcb);
	}
	if (in->cache && in->cache->chain == in->chain)
		snp_verify_run_cached(rep, perr, in->cache, &o, &v);
	else
		snp_verify_run(rep, perr, in->chain, &o, &v);
	r->product = v.product;
	for (size_t i = 0; i < v.n; i++) {
		struct appraisal_check *c = add(r, v.checks[i].name, claim_of(v.checks[i].name));
		c->state = v.checks[i].state;
		memcpy(c->detail, v.checks[i].detail, sizeof(c->detail));
		/* snp_verify_run names csvsm-verify's options; here the policy decides */
		if (c->state == SNP_CHECK_FAIL && !strcmp(c->name, "policy.debug"))
			setd(c->detail, sizeof(c->detail),
			     "guest POLICY allows DEBUG (bit 19); the owner's snp.policy does not");
		else if (c->state == SNP_CHECK_FAIL && !strcmp(c->name, "policy.migrate_ma"))
			setd(
			    c->detail, sizeof(c->detail),
			    "guest POLICY allows a migration agent (MIGRATE_MA, bit 18), which can "
			    "export the guest's state; the owner's snp.policy does not");
	}
	for (size_t i = 0; i < r->n && o.have_report_data && !in->have_report_data; i++)
		if (!strcmp(r->checks[i].name, "report_data"))
			r->checks[i].claim = EAR_CONFIGURATION; /* a value the policy pins */

	/* Several accepted launch images: one must match. */
	if (p->n_meas > 1) {
		bool ok = false;
		for (size_t i = 0; i < p->n_meas; i++)
			ok |= !memcmp(rep->raw.measurement, p->meas[i], 48);
		hexs(hx, rep->raw.measurement, 48);
		check(r, "measurement", EAR_EXECUTABLES, ok, "MEASUREMENT %s %s", hx,
		      ok ? "is one of the policy's" : "is none of the policy's");
	}

	/* go-sev-guest Policy fields snp_verify_run has no option for. */
	check(r, "policy.guest_svn", EAR_CONFIGURATION, rep->raw.guest_svn >= p->minimum_guest_svn,
	      "GUEST_SVN %u, minimum %u", rep->raw.guest_svn, p->minimum_guest_svn);
	if (p->have_policy)
		check_guest_policy(p, rep, r);
	if (p->have_min_launch_tcb) {
		struct snp_tcb t, m;
		snp_tcb_decode(rep->raw.launch_tcb, r->product, &t);
		tcb_from_policy(p->min_launch_tcb_is_raw, p->min_launch_tcb_raw, &p->min_launch_tcb,
				r->product, &m);
		m.has_fmc = m.has_fmc && t.has_fmc;
		check(r, "policy.min_launch_tcb", EAR_HARDWARE, snp_tcb_at_least(&t, &m),
		      "LAUNCH_TCB bl=%u tee=%u snp=%u ucode=%u, minimum bl=%u tee=%u snp=%u "
		      "ucode=%u",
		      t.bl, t.tee, t.snp, t.ucode, m.bl, m.tee, m.snp, m.ucode);
	}
	if (p->have_platform_info)
		check(r, "policy.platform_info", EAR_CONFIGURATION,
		      !(rep->raw.platform_info & ~p->platform_info),
		      "PLATFORM_INFO 0x%llx, bits allowed 0x%llx",
		      (unsigned long long)rep->raw.platform_info,
		      (unsigned long long)p->platform_info);
	if (p->require_author_key || p->n_author_hash) {
		bool ok = !p->require_author_key || rep->signer.author_key_en;
		bool listed = !rep->signer.author_key_en;
		for (size_t i = 0; i < p->n_author_hash; i++)
			listed |= !memcmp(rep->raw.author_key_digest, p->author_hash[i], 48);
		check(r, "policy.author_key", EAR_CONFIGURATION, ok && listed,
		      "AUTHOR_KEY_EN %u, author key %s", rep->signer.author_key_en,
		      listed ? "trusted (or none)" : "not among the trusted");
	}
	if (p->require_id_block || p->n_id_hash) {
		bool present = !all_zero(rep->raw.id_key_digest, 48), listed = false;
		for (size_t i = 0; i < p->n_id_hash; i++)
			listed |= !memcmp(rep->raw.id_key_digest, p->id_hash[i], 48);
		check(r, "policy.id_block", EAR_CONFIGURATION,
		      listed || (!present && !p->require_id_block), "ID key digest %s",
		      !present ? "absent"
		      : listed ? "trusted"
			       : "not trusted");
	}
	/* The fields the policy pins to one value (go-sev-guest: equal if set). */
	const struct {
		bool have;
		const char *name, *label;
		enum ear_claim claim;
		const uint8_t *got, *want;
		size_t len;
	} pinned[] = {
	    {p->have_family_id, "policy.family_id", "FAMILY_ID", EAR_CONFIGURATION,
	     rep->raw.family_id, p->family_id, 16},
	    {p->have_image_id, "policy.image_id", "IMAGE_ID", EAR_CONFIGURATION, rep->raw.image_id,
	     p->image_id, 16},
	    {p->have_host_data, "policy.host_data", "HOST_DATA", EAR_CONFIGURATION,
	     rep->raw.host_data, p->host_data, 32},
	    {p->have_report_id, "policy.report_id", "REPORT_ID", EAR_CONFIGURATION,
	     rep->raw.report_id, p->report_id, 32},
	    {p->have_report_id_ma, "policy.report_id_ma", "REPORT_ID_MA", EAR_CONFIGURATION,
	     rep->raw.report_id_ma, p->report_id_ma, 32},
	    {p->have_chip_id, "policy.chip_id", "CHIP_ID (the pinned chip)", EAR_HARDWARE,
	     rep->raw.chip_id, p->chip_id, 64},
	};
	for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++)
		if (pinned[i].have) {
			bool eq = !memcmp(pinned[i].got, pinned[i].want, pinned[i].len);
			check(r, pinned[i].name, pinned[i].claim, eq, "%s %s", pinned[i].label,
			      eq ? "matches" : "differs");
		}
	if (p->minimum_build)
		check(r, "policy.minimum_build", EAR_HARDWARE,
		      rep->raw.current_build >= p->minimum_build, "firmware build %u, minimum %u",
		      rep->raw.current_build, p->minimum_build);
	if (p->have_min_version) {
		bool ok = rep->raw.current_major > p->min_major ||
			  (rep->raw.current_major == p->min_major &&
			   rep->raw.current_minor >= p->min_minor);
		check(r, "policy.minimum_version", EAR_HARDWARE, ok,
		      "firmware %u.%u, minimum %u.%u", rep->raw.current_major,
		      rep->raw.current_minor, p->min_major, p->min_minor);
	}
	if (!p->permit_provisional_firmware) {
		/* go-sev-guest: committed == current TCB and version */
		bool ok = rep->raw.committed_tcb == rep->raw.current_tcb &&
			  rep->raw.committed_build == rep->raw.current_build &&
			  rep->raw.committed_minor == rep->raw.current_minor &&
			  rep->raw.committed_major == rep->raw.current_major;
		check(r, "policy.provisional_firmware", EAR_HARDWARE, ok,
		      ok ? "committed firmware is the current one"
			 : "provisional firmware: committed TCB or version differs from the "
			   "current one");
	}
	if (p->product)
		check(r, "policy.product", EAR_HARDWARE,
		      r->product == p->product &&
			  (!p->have_stepping || rep->raw.cpuid_step == p->stepping),
		      "product %s stepping %u, policy %s", snp_product_name(r->product),
		      rep->raw.cpuid_step, snp_product_name(p->product));

	if (in->crl)
		check(r, "chain.crl", EAR_HARDWARE, in->crl->ok, "%s", in->crl->detail);

	/* csvsm's SVSM evidence: the manifest REPORT_DATA binds, its EK, the quote. */
	if (p->require_svsm)
		check(r, "svsm.manifest", EAR_INSTANCE_IDENTITY, in->manifest != NULL,
		      in->manifest
			  ? "services manifest bound by REPORT_DATA = SHA-512(nonce || "
			    "manifest)"
			  : "the policy requires csvsm's SVSM evidence (a services manifest)");
	if (in->manifest && (p->require_vtpm_ek || p->instance == INSTANCE_FROM_VTPM_EK)) {
		struct appraisal_check *c = add(r, "svsm.vtpm_ek", EAR_INSTANCE_IDENTITY);
		struct tpm_public pub;
		if (svsm_manifest_find(in->manifest, in->manifest_len, attest_guid_vtpm, &r->ek,
				       &r->ek_len, c->detail, sizeof(c->detail)) &&
		    tpm_public_parse(r->ek, r->ek_len, false, &pub, c->detail, sizeof(c->detail)) &&
		    tpm_ek_check(&pub, c->detail, sizeof(c->detail))) {
			c->state = SNP_CHECK_PASS;
			setd(c->detail, sizeof(c->detail),
			     "the manifest carries an RSA-2048 vTPM EK");
		} else {
			r->ek = NULL;
			r->ek_len = 0;
		}
	}
	if (p->require_quote && !in->quote)
		check(r, "quote", EAR_INSTANCE_IDENTITY, false,
		      "the policy requires a TPM quote; the evidence has none");
	if (in->quote) {
		bool quote_ok = r->checks[0].state != SNP_CHECK_FAIL;
		for (size_t i = 0; i < r->n; i++)
			if (!strcmp(r->checks[i].name, "quote"))
				quote_ok = r->checks[i].state == SNP_CHECK_PASS;
		for (size_t i = 0; i < p->n_pcrs; i++) {
			const struct appraisal_pcr *rp = &p->pcrs[i];
			size_t dl = 0, want = rp->alg == TPM_ALG_SHA256 ? 32 : 48;
			const uint8_t *val = quote_ok
						 ? pcr_value(in->quote->pcrs, in->quote->pcrs_len,
							     rp->alg, rp->index, &dl)
						 : NULL;
			bool ok = val && dl == want && !memcmp(val, rp->value, want);
			if (val && dl == want)
				hexs(hx, val, want);
			check(r, "quote.pcrs", EAR_EXECUTABLES, ok, "PCR%u %s: %s", rp->index,
			      rp->alg == TPM_ALG_SHA256 ? "sha256" : "sha384",
			      !quote_ok ? "the quote did not verify"
			      : !val	? "not in the quote"
			      : ok	? "equals the reference"
					: "differs from the reference");
			if (val && !ok)
				setd(r->checks[r->n - 1].detail, SNP_DETAIL_LEN,
				     "PCR%u %s %.96s differs from the reference", rp->index,
				     rp->alg == TPM_ALG_SHA256 ? "sha256" : "sha384", hx);
		}
	}
	finish(r);
}

/* ---- output ---- */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

void appraisal_print_json(FILE *f, const struct appraisal_result *r)
{
	fprintf(f, "{\n  \"ear.status\": \"%s\",\n  \"ear.trustworthiness-vector\": {",
		ear_status_name(r->status));
	for (int c = 0; c < EAR_NCLAIMS; c++)
		fprintf(f, "%s\"%s\": %d", c ? ", " : "", claim_names[c], r->tv[c]);
	fprintf(f, "},\n  \"reasons\": {");
	for (int c = 0, first = 1; c < EAR_NCLAIMS; c++) {
		if (!r->reason[c][0])
			continue;
		fprintf(f, "%s\n    \"%s\": ", first ? "" : ",", claim_names[c]);
		json_str(f, r->reason[c]);
		first = 0;
	}
	fprintf(f, "\n  },\n  \"checks\": [\n");
	for (size_t i = 0; i < r->n; i++) {
		const struct appraisal_check *c = &r->checks[i];
		fprintf(f, "    {\"name\": ");
		json_str(f, c->name);
		fprintf(f, ", \"claim\": \"%s\", \"ok\": %s, \"skipped\": %s, \"detail\": ",
			claim_names[c->claim], c->state != SNP_CHECK_FAIL ? "true" : "false",
			c->state == SNP_CHECK_SKIP ? "true" : "false");
		json_str(f, c->detail);
		fprintf(f, "}%s\n", i + 1 < r->n ? "," : "");
	}
	fprintf(f, "  ]\n}\n");
}

void appraisal_print_human(FILE *f, const struct appraisal_result *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct appraisal_check *c = &r->checks[i];
		fprintf(f, "  [%s] %-26s %-17s %s\n",
			c->state == SNP_CHECK_PASS   ? "PASS"
			: c->state == SNP_CHECK_SKIP ? "SKIP"
						     : "FAIL",
			c->name, claim_names[c->claim], c->detail);
	}
	for (int c = 0; c < EAR_NCLAIMS; c++)
		if (r->tv[c])
			fprintf(f, "  %-17s %3d  %s\n", claim_names[c], r->tv[c], r->reason[c]);
	fprintf(f, "EAR status: %s\n", ear_status_name(r->status));
}
