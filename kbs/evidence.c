/*
 * The evidence forms csvsm-kbs takes in tee-evidence.primary_evidence
 * (docs/kbs.md "Evidence forms"), decoded completely before anything acts:
 *
 * (a) Trustee's SNP form, as guest-components' SNP attester sends it
 *     (attestation-agent/attester/src/snp/mod.rs `SnpEvidence`) and
 *     Trustee's verifier reads it (deps/verifier/src/snp/mod.rs):
 *       {"attestation_report": <virtee/sev AttestationReport, serde>,
 *        "cert_chain": [{"cert_type": "VCEK"|"VLEK"|"ASK"|"ARK"|..., "data": [bytes]}] | null}
 *     The report is rebuilt byte for byte from its fields (virtee/sev
 *     src/firmware/guest/types/snp.rs AttestationReport, its Encoder: TCB
 *     layout by generation, src/firmware/host/types/snp.rs TcbVersion),
 *     since the signature covers the bytes; a field that does not fit makes
 *     the form invalid, and a wrong rebuild can only fail the signature.
 * (b) csvsm's SVSM form: {"svsm": {"report": b64, "manifest": b64,
 *     "certs": b64 (extended-report certificate table), "quote": {"message",
 *     "signature", "pcrs", "ak-public", "activated-secret"} (b64)}}.
 */
#include <attest/certtable.h>

#include <string.h>

#include "kbs/jose.h"
#include "kbs/kbs.h"

#define SET(...) snprintf(err, n, __VA_ARGS__)

void kbs_evidence_free(struct kbs_evidence *ev)
{
	free(ev->certbuf);
	free(ev->manifest);
	free(ev->q_msg);
	free(ev->q_sig);
	free(ev->q_pcrs);
	free(ev->q_ak);
	free(ev->q_secret);
	memset(ev, 0, sizeof(*ev));
}

/* ---- (a) the serde form of virtee/sev's AttestationReport ---- */

struct wr {
	uint8_t *b;
	bool bad;
	const char *what;
};

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void u(struct wr *w, json_t *o, const char *k, size_t off, size_t n, uint64_t max)
{
	json_t *v = json_object_get(o, k);
	if (w->bad)
		return;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max) {
		w->bad = true;
		w->what = k;
		return;
	}
	put_le(w->b + off, (uint64_t)json_integer_value(v), n);
}

/* A byte array (serde: a JSON array of integers 0..255) of exactly n. */
static void bytes(struct wr *w, json_t *o, const char *k, size_t off, size_t n)
{
	json_t *v = json_object_get(o, k), *x;
	size_t i;
	if (w->bad)
		return;
	if (!json_is_array(v) || json_array_size(v) != n) {
		w->bad = true;
		w->what = k;
		return;
	}
	json_array_foreach(v, i, x)
	{
		if (!json_is_integer(x) || json_integer_value(x) < 0 ||
		    json_integer_value(x) > 255) {
			w->bad = true;
			w->what = k;
			return;
		}
		w->b[off + i] = (uint8_t)json_integer_value(x);
	}
}

/* TcbVersion {fmc: Option<u8>, bootloader, tee, snp, microcode}; to_legacy_bytes
 * (Milan, Genoa: BL, TEE, 0 x4, SNP, UCODE) or to_turin_bytes (FMC, BL, TEE,
 * SNP, 0 x3, UCODE). */
static void tcb(struct wr *w, json_t *o, const char *k, size_t off, bool turin)
{
	json_t *t = json_object_get(o, k);
	struct wr x = {w->b + off, false, k};
	if (w->bad)
		return;
	if (!json_is_object(t)) {
		w->bad = true;
		w->what = k;
		return;
	}
	u(&x, t, turin ? "bootloader" : "bootloader", turin ? 1 : 0, 1, 255);
	u(&x, t, "tee", turin ? 2 : 1, 1, 255);
	u(&x, t, "snp", turin ? 3 : 6, 1, 255);
	u(&x, t, "microcode", 7, 1, 255);
	json_t *fmc = json_object_get(t, "fmc");
	if (turin)
		u(&x, t, "fmc", 0, 1, 255);
	else if (fmc && !json_is_null(fmc))
		x.bad = true; /* no FMC byte before Turin */
	if (x.bad) {
		w->bad = true;
		w->what = k;
	}
}

static void version(struct wr *w, json_t *o, const char *k, size_t off)
{
	json_t *v = json_object_get(o, k);
	struct wr x = {w->b + off, false, k};
	if (w->bad)
		return;
	if (!json_is_object(v)) {
		w->bad = true;
		w->what = k;
		return;
	}
	/* SNP ABI: build at +0, minor +1, major +2 (report 0x1E8 / 0x1EC) */
	u(&x, v, "build", 0, 1, 255);
	u(&x, v, "minor", 1, 1, 255);
	u(&x, v, "major", 2, 1, 255);
	if (x.bad) {
		w->bad = true;
		w->what = k;
	}
}

static int snp_form(json_t *ar, uint8_t rep[SNP_REPORT_SIZE], char *err, size_t n)
{
	struct wr w = {rep, false, NULL};
	json_t *fam = json_object_get(ar, "cpuid_fam_id"),
	       *mod = json_object_get(ar, "cpuid_mod_id");

	memset(rep, 0, SNP_REPORT_SIZE);
	if (!json_is_object(ar) || !json_is_integer(fam) || !json_is_integer(mod)) {
		/* Trustee needs version 3 (the CPUID fields) to tell the generation too */
		SET("attestation_report: an object with cpuid_fam_id and cpuid_mod_id (version >= "
		    "3)");
		return -1;
	}
	bool turin =
	    snp_report_product_from_cpuid((uint8_t)json_integer_value(fam),
					  (uint8_t)json_integer_value(mod)) == SNP_PRODUCT_TURIN;
	u(&w, ar, "version", 0x000, 4, UINT32_MAX);
	u(&w, ar, "guest_svn", 0x004, 4, UINT32_MAX);
	u(&w, ar, "policy", 0x008, 8,
	  UINT64_MAX >> 1); /* GuestPolicy(u64) serialises as a number */
	bytes(&w, ar, "family_id", 0x010, 16);
	bytes(&w, ar, "image_id", 0x020, 16);
	u(&w, ar, "vmpl", 0x030, 4, UINT32_MAX);
	u(&w, ar, "sig_algo", 0x034, 4, UINT32_MAX);
	tcb(&w, ar, "current_tcb", 0x038, turin);
	u(&w, ar, "plat_info", 0x040, 8, UINT64_MAX >> 1);
	u(&w, ar, "key_info", 0x048, 4, UINT32_MAX);
	bytes(&w, ar, "report_data", 0x050, 64);
	bytes(&w, ar, "measurement", 0x090, 48);
	bytes(&w, ar, "host_data", 0x0C0, 32);
	bytes(&w, ar, "id_key_digest", 0x0E0, 48);
	bytes(&w, ar, "author_key_digest", 0x110, 48);
	bytes(&w, ar, "report_id", 0x140, 32);
	bytes(&w, ar, "report_id_ma", 0x160, 32);
	tcb(&w, ar, "reported_tcb", 0x180, turin);
	u(&w, ar, "cpuid_fam_id", 0x188, 1, 255);
	u(&w, ar, "cpuid_mod_id", 0x189, 1, 255);
	u(&w, ar, "cpuid_step", 0x18A, 1, 255);
	bytes(&w, ar, "chip_id", 0x1A0, 64);
	tcb(&w, ar, "committed_tcb", 0x1E0, turin);
	version(&w, ar, "current", 0x1E8);
	version(&w, ar, "committed", 0x1EC);
	tcb(&w, ar, "launch_tcb", 0x1F0, turin);
	json_t *lm = json_object_get(ar, "launch_mit_vector"),
	       *cm = json_object_get(ar, "current_mit_vector");
	if (lm && !json_is_null(lm))
		u(&w, ar, "launch_mit_vector", 0x1F8, 8, UINT64_MAX >> 1);
	if (cm && !json_is_null(cm))
		u(&w, ar, "current_mit_vector", 0x200, 8, UINT64_MAX >> 1);
	json_t *sig = json_object_get(ar, "signature");
	if (!w.bad && !json_is_object(sig)) {
		w.bad = true;
		w.what = "signature";
	}
	bytes(&w, sig, "r", 0x2A0, 72);
	bytes(&w, sig, "s", 0x2E8, 72);
	if (w.bad) {
		SET("attestation_report.%s: missing or out of range", w.what ? w.what : "?");
		return -1;
	}
	return 0;
}

static int cert_type(const char *s)
{
	return !strcmp(s, "VCEK")   ? CERTTABLE_VCEK
	       : !strcmp(s, "VLEK") ? CERTTABLE_VLEK
	       : !strcmp(s, "ASK")  ? CERTTABLE_ASK
	       : !strcmp(s, "ARK")  ? CERTTABLE_ARK
				    : -1;
}

static int snp_chain_form(json_t *cc, struct kbs_evidence *ev, char *err, size_t n)
{
	size_t i, total = 0, off = 0;
	json_t *e;

	if (!cc || json_is_null(cc))
		return 0; /* no chain in the evidence: the offline cache must have it */
	if (!json_is_array(cc) || json_array_size(cc) > 8) {
		SET("cert_chain: a list of at most 8 entries, or null");
		return -1;
	}
	json_array_foreach(cc, i, e)
	{
		json_t *d = json_object_get(e, "data");
		if (!json_is_object(e) || !json_is_array(d) || json_array_size(d) == 0 ||
		    json_array_size(d) > KBS_EVIDENCE_CERTS) {
			SET("cert_chain[%zu]: {\"cert_type\", \"data\": [bytes]}", i);
			return -1;
		}
		total += json_array_size(d);
	}
	if (total > KBS_EVIDENCE_CERTS || !(ev->certbuf = malloc(total))) {
		SET("cert_chain: more than %u bytes", KBS_EVIDENCE_CERTS);
		return -1;
	}
	json_array_foreach(cc, i, e)
	{
		json_t *t = json_object_get(e, "cert_type"), *d = json_object_get(e, "data");
		struct wr w = {ev->certbuf + off, false, NULL};
		int type;
		if (json_is_object(t)) /* CertType::OTHER(uuid): not a certificate csvsm-kbs uses */
			type = -1;
		else if (!json_is_string(t) || ((type = cert_type(json_string_value(t))) < 0 &&
						strcmp(json_string_value(t), "CRL") &&
						strcmp(json_string_value(t), "Empty"))) {
			SET("cert_chain[%zu].cert_type: VCEK, VLEK, ASK, ARK, CRL or OTHER", i);
			return -1;
		}
		bytes(&w, e, "data", 0, json_array_size(d));
		if (w.bad) {
			SET("cert_chain[%zu].data: bytes 0..255", i);
			return -1;
		}
		if (type >= 0) {
			ev->certs[ev->n_certs].type = type;
			ev->certs[ev->n_certs].der = ev->certbuf + off;
			ev->certs[ev->n_certs].len = json_array_size(d);
			ev->n_certs++;
		}
		off += json_array_size(d);
	}
	return 0;
}

/* ---- (b) csvsm's SVSM form ---- */

static uint8_t *b64_field(json_t *o, const char *k, size_t min, size_t max, size_t *len, char *err,
			  size_t n)
{
	json_t *v = json_object_get(o, k);
	uint8_t *b;
	if (!json_is_string(v) || json_string_length(v) > 4 * (max / 3 + 2) ||
	    !(b = b64_decode(json_string_value(v), len))) {
		SET("svsm.%s: base64 (RFC 4648 §4, padded) of at most %zu bytes", k, max);
		return NULL;
	}
	if (*len < min || *len > max) {
		SET("svsm.%s: %zu bytes, expected %zu..%zu", k, *len, min, max);
		free(b);
		return NULL;
	}
	return b;
}

static int svsm_form(json_t *s, struct kbs_evidence *ev, char *err, size_t n)
{
	size_t l;
	const char *k;
	json_t *v;

	json_object_foreach(s, k, v) if (strcmp(k, "report") && strcmp(k, "manifest") &&
					 strcmp(k, "certs") && strcmp(k, "quote"))
	{
		SET("svsm: unknown field '%s' (report, manifest, certs, quote)", k);
		return -1;
	}
	uint8_t *r = b64_field(s, "report", SNP_REPORT_SIZE, SNP_REPORT_SIZE, &l, err, n);
	if (!r)
		return -1;
	memcpy(ev->report, r, SNP_REPORT_SIZE);
	free(r);
	if (!(ev->manifest =
		  b64_field(s, "manifest", 24, KBS_MANIFEST_MAX, &ev->manifest_len, err, n)))
		return -1;
	if (json_object_get(s, "certs")) {
		struct certtable_entry e[8];
		size_t cnt, cl;
		if (!(ev->certbuf = b64_field(s, "certs", 24, KBS_EVIDENCE_CERTS, &cl, err, n)))
			return -1;
		int rc = certtable_parse(ev->certbuf, cl, e, 8, &cnt);
		if (rc) {
			SET("svsm.certs: certificate table: %s", certtable_strerror(rc));
			return -1;
		}
		for (size_t i = 0; i < cnt; i++)
			if (e[i].kind != CERTTABLE_OTHER) {
				ev->certs[ev->n_certs].type = e[i].kind;
				ev->certs[ev->n_certs].der = e[i].data;
				ev->certs[ev->n_certs].len = e[i].length;
				ev->n_certs++;
			}
	}
	json_t *q = json_object_get(s, "quote");
	if (q) {
		json_t *sec = json_object_get(q, "activated-secret");
		if (!json_is_object(q) || json_object_size(q) != 4u + (sec != NULL)) {
			SET("svsm.quote: {\"message\", \"signature\", \"pcrs\", \"ak-public\", "
			    "\"activated-secret\"}");
			return -1;
		}
		if (sec && !(ev->q_secret = b64_field(q, "activated-secret", 32, 32,
						      &ev->q_secret_len, err, n)))
			return -1;
		if (!(ev->q_msg = b64_field(q, "message", 1, 4096, &ev->q_msg_len, err, n)) ||
		    !(ev->q_sig = b64_field(q, "signature", 1, 1024, &ev->q_sig_len, err, n)) ||
		    !(ev->q_pcrs = b64_field(q, "pcrs", 1, 16384, &ev->q_pcrs_len, err, n)) ||
		    !(ev->q_ak = b64_field(q, "ak-public", 1, 2048, &ev->q_ak_len, err, n)))
			return -1;
		ev->have_quote = true;
	}
	return 0;
}

int kbs_evidence_decode(json_t *primary, struct kbs_evidence *ev, char *err, size_t n)
{
	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(primary)) {
		SET("tee-evidence: the primary evidence must be an object");
		return -1;
	}
	json_t *svsm = json_object_get(primary, "svsm");
	json_t *ar = json_object_get(primary, "attestation_report");
	if (svsm && !ar && json_object_size(primary) == 1 && json_is_object(svsm)) {
		ev->kind = KBS_EV_SVSM;
		if (svsm_form(svsm, ev, err, n) == 0)
			return 0;
	} else if (ar && !svsm && json_object_size(primary) <= 2) {
		ev->kind = KBS_EV_SNP;
		json_t *cc = json_object_get(primary, "cert_chain");
		if (json_object_size(primary) == 2 && !cc)
			SET("SNP evidence: attestation_report and cert_chain only");
		else if (snp_form(ar, ev->report, err, n) == 0 &&
			 snp_chain_form(cc, ev, err, n) == 0)
			return 0;
	} else if (json_object_get(primary, "snp-report")) {
		/* COCONUT-SVSM aproxy's form (tools/aproxy/src/backend/kbs.rs KbsEvidence):
		 * refused, docs/kbs.md "Evidence forms" says why */
		SET("tee-evidence: COCONUT aproxy's {\"snp-report\"} form binds SHA-512(challenge "
		    "|| "
		    "x || y) with no manifest; csvsm-kbs takes Trustee's SNP form or csvsm's "
		    "{\"svsm\"} form");
	} else {
		SET("tee-evidence: expected Trustee's SNP form {\"attestation_report\", "
		    "\"cert_chain\"} or csvsm's {\"svsm\": {...}}");
	}
	kbs_evidence_free(ev);
	return -1;
}
