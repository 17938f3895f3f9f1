/*
 * Host-side SEV-SNP evidence verification (see include/attest/snp_verify.h).
 *
 * mbedTLS parses the X.509 certificates; the checks themselves are done here
 * explicitly rather than through mbedtls_x509_crt_verify(), so that the
 * RSASSA-PSS parameters, the key types, the pinned root and the validity at
 * a chosen time are each enforced and reported by name. The AMD extensions
 * are not understood by mbedTLS; they are walked from crt->v3_ext with the
 * ASN.1 helpers, strictly (duplicates and trailing bytes are errors).
 */
#include <attest/snp_verify.h>
#include <attest/tpm_cred.h>
#include <attest/tpm_wire.h>

#include <mbedtls/asn1.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>
#include <mbedtls/oid.h>
#include <mbedtls/pk.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include <gmp.h>
#include <nettle/ecc-curve.h>
#include <nettle/ecc.h>
#include <nettle/ecdsa.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const uint8_t ark_fp_milan[SNP_FP_LEN] = {
    0x69, 0xd0, 0x63, 0xb4, 0x53, 0x44, 0xd2, 0x6a, 0x2e, 0x94, 0xe1, 0xf4, 0x21, 0x0d, 0xe4, 0x9e,
    0xf5, 0x55, 0x30, 0x82, 0x87, 0xd4, 0xc1, 0x74, 0x44, 0x5c, 0x95, 0x63, 0x9a, 0x54, 0x0b, 0xcd};
static const uint8_t ark_fp_genoa[SNP_FP_LEN] = {
    0x4c, 0x65, 0x98, 0xd1, 0x9c, 0x18, 0x71, 0x9c, 0x5d, 0xfd, 0x4a, 0x7d, 0x33, 0x5f, 0x67, 0x4e,
    0x5b, 0xfe, 0x1d, 0x8f, 0x80, 0x0c, 0xea, 0x2c, 0xf2, 0x70, 0xc1, 0x0d, 0x10, 0x3d, 0xb2, 0xf1};
static const uint8_t ark_fp_turin[SNP_FP_LEN] = {
    0x1f, 0x08, 0x41, 0x61, 0xa4, 0x4b, 0xb6, 0xd9, 0x37, 0x78, 0xa9, 0x04, 0x87, 0x7d, 0x48, 0x19,
    0xca, 0xfa, 0x5d, 0x05, 0xef, 0x41, 0x93, 0xb2, 0xde, 0xd9, 0xdd, 0x9c, 0x73, 0xdd, 0x3f, 0x6a};

/* 1.3.6.1.4.1.3704.1 */
static const uint8_t amd_oid_prefix[] = {0x2b, 0x06, 0x01, 0x04, 0x01, 0x9c, 0x78, 0x01};

static void setd(char *d, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setd(char *d, size_t n, const char *fmt, ...)
{
	va_list ap;
	if (!d || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(d, n, fmt, ap);
	va_end(ap);
}

const uint8_t *snp_pinned_ark_fp(enum snp_product p)
{
	switch (p) {
	case SNP_PRODUCT_MILAN:
		return ark_fp_milan;
	case SNP_PRODUCT_GENOA:
		return ark_fp_genoa;
	case SNP_PRODUCT_TURIN:
		return ark_fp_turin;
	default:
		return NULL;
	}
}

enum snp_product snp_pinned_ark_product(const uint8_t fp[SNP_FP_LEN])
{
	for (int p = SNP_PRODUCT_MILAN; p <= SNP_PRODUCT_TURIN; p++)
		if (!memcmp(fp, snp_pinned_ark_fp((enum snp_product)p), SNP_FP_LEN))
			return (enum snp_product)p;
	return SNP_PRODUCT_UNKNOWN;
}

int snp_cert_parse(mbedtls_x509_crt *crt, const uint8_t *buf, size_t len)
{
	int ret;
	if (!buf || len == 0)
		return -1;
	if (buf[0] == 0x30) {
		ret = mbedtls_x509_crt_parse_der(crt, buf, len);
	} else {
		/* PEM: mbedTLS needs a NUL-terminated buffer, length counting it. */
		uint8_t *z = malloc(len + 1);
		if (!z)
			return -1;
		memcpy(z, buf, len);
		z[len] = 0;
		ret = mbedtls_x509_crt_parse(crt, z, len + 1);
		free(z);
	}
	if (ret != 0)
		return ret < 0 ? ret : -1;
	if (crt->next != NULL) /* exactly one certificate per input */
		return -1;
	return 0;
}

void snp_cert_fingerprint(const mbedtls_x509_crt *crt, uint8_t fp[SNP_FP_LEN])
{
	mbedtls_sha256_ret(crt->raw.p, crt->raw.len, fp, 0);
}

void snp_chain_init(struct snp_chain *c)
{
	memset(c, 0, sizeof(*c));
	mbedtls_x509_crt_init(&c->ark);
	mbedtls_x509_crt_init(&c->ask);
	mbedtls_x509_crt_init(&c->leaf);
}

void snp_chain_free(struct snp_chain *c)
{
	mbedtls_x509_crt_free(&c->ark);
	mbedtls_x509_crt_free(&c->ask);
	mbedtls_x509_crt_free(&c->leaf);
	memset(c, 0, sizeof(*c));
}

void snp_cert_cn(const mbedtls_x509_crt *crt, char *buf, size_t n)
{
	if (!n)
		return;
	buf[0] = 0;
	for (const mbedtls_x509_name *nm = &crt->subject; nm; nm = nm->next) {
		if (nm->oid.p && MBEDTLS_OID_CMP(MBEDTLS_OID_AT_CN, &nm->oid) == 0) {
			size_t l = nm->val.len < n - 1 ? nm->val.len : n - 1;
			memcpy(buf, nm->val.p, l);
			buf[l] = 0;
			for (size_t i = 0; i < l; i++) /* keep output printable */
				if (buf[i] < 0x20 || buf[i] > 0x7e || buf[i] == '"' ||
				    buf[i] == '\\')
					buf[i] = '?';
			return;
		}
	}
}

static enum snp_product product_from_name(const char *s)
{
	if (!strncmp(s, "Milan", 5) && (s[5] == 0 || s[5] == '-'))
		return SNP_PRODUCT_MILAN;
	if (!strncmp(s, "Genoa", 5) && (s[5] == 0 || s[5] == '-'))
		return SNP_PRODUCT_GENOA;
	if (!strncmp(s, "Turin", 5) && (s[5] == 0 || s[5] == '-'))
		return SNP_PRODUCT_TURIN;
	return SNP_PRODUCT_UNKNOWN;
}

enum snp_product snp_cert_cn_product(const mbedtls_x509_crt *crt)
{
	char cn[64];
	snp_cert_cn(crt, cn, sizeof(cn));
	if (!strncmp(cn, "ARK-", 4))
		return product_from_name(cn + 4);
	if (!strncmp(cn, "SEV-VLEK-", 9))
		return product_from_name(cn + 9);
	if (!strncmp(cn, "SEV-", 4))
		return product_from_name(cn + 4);
	return SNP_PRODUCT_UNKNOWN;
}

bool snp_cert_is_vlek(const mbedtls_x509_crt *leaf)
{
	char cn[64];
	snp_cert_cn(leaf, cn, sizeof(cn));
	return !strcmp(cn, "SEV-VLEK");
}

static bool cert_is_asvk(const mbedtls_x509_crt *ask)
{
	char cn[64];
	snp_cert_cn(ask, cn, sizeof(cn));
	return !strncmp(cn, "SEV-VLEK-", 9);
}

bool snp_der_spl(const uint8_t *p, size_t len, uint8_t *out)
{
	/* INTEGER, minimal, non-negative, 0..255: 02 01 vv (vv < 0x80) or 02 02 00 vv (vv >= 0x80).
	 */
	if (len == 3 && p[0] == 0x02 && p[1] == 0x01 && p[2] < 0x80) {
		*out = p[2];
		return true;
	}
	if (len == 4 && p[0] == 0x02 && p[1] == 0x02 && p[2] == 0x00 && p[3] >= 0x80) {
		*out = p[3];
		return true;
	}
	return false;
}

bool snp_amd_ext_parse(const mbedtls_x509_crt *crt, struct snp_amd_ext *out, char *detail, size_t n)
{
	unsigned char *p = crt->v3_ext.p, *end;
	size_t len;
	bool seen[16] = {false};

	memset(out, 0, sizeof(*out));
	if (!p || crt->v3_ext.len == 0) {
		setd(detail, n, "certificate has no extensions");
		return false;
	}
	end = p + crt->v3_ext.len;
	if (mbedtls_asn1_get_tag(&p, end, &len, MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE) ||
	    p + len != end) {
		setd(detail, n, "malformed extensions");
		return false;
	}
	while (p < end) {
		unsigned char *ext_end, *val;
		size_t ext_len, oid_len, val_len;
		mbedtls_asn1_buf oid;
		int crit = 0;

		if (mbedtls_asn1_get_tag(&p, end, &ext_len,
					 MBEDTLS_ASN1_CONSTRUCTED | MBEDTLS_ASN1_SEQUENCE))
			goto bad;
		ext_end = p + ext_len;
		if (mbedtls_asn1_get_tag(&p, ext_end, &oid_len, MBEDTLS_ASN1_OID))
			goto bad;
		oid.p = p;
		oid.len = oid_len;
		p += oid_len;
		if (p < ext_end && *p == MBEDTLS_ASN1_BOOLEAN &&
		    mbedtls_asn1_get_bool(&p, ext_end, &crit))
			goto bad;
		if (mbedtls_asn1_get_tag(&p, ext_end, &val_len, MBEDTLS_ASN1_OCTET_STRING) ||
		    p + val_len != ext_end)
			goto bad;
		val = p;
		p = ext_end;

		if (oid.len < sizeof(amd_oid_prefix) + 1 ||
		    memcmp(oid.p, amd_oid_prefix, sizeof(amd_oid_prefix)))
			continue;
		const uint8_t *s = oid.p + sizeof(amd_oid_prefix);
		size_t sl = oid.len - sizeof(amd_oid_prefix);
		int key = -1; /* index into seen[] */
		if (sl == 1 && s[0] == 2)
			key = 0;
		else if (sl == 1 && s[0] == 4)
			key = 1;
		else if (sl == 2 && s[0] == 3 &&
			 (s[1] == 1 || s[1] == 2 || s[1] == 3 || s[1] == 8 || s[1] == 9))
			key = 2 + s[1]; /* 3..11 */
		if (key < 0)
			continue;
		if (seen[key]) {
			setd(detail, n, "duplicate AMD extension");
			return false;
		}
		seen[key] = true;
		if (key == 0) { /* productName: IA5String */
			if (val_len < 2 || val[0] != MBEDTLS_ASN1_IA5_STRING ||
			    val[1] != val_len - 2 || val_len - 2 >= sizeof(out->product_name)) {
				setd(detail, n, "malformed productName extension");
				return false;
			}
			memcpy(out->product_name, val + 2, val_len - 2);
			for (size_t i = 0; i < val_len - 2; i++)
				if (out->product_name[i] < 0x20 || out->product_name[i] > 0x7e ||
				    out->product_name[i] == '"' || out->product_name[i] == '\\')
					out->product_name[i] = '?';
		} else if (key == 1) { /* hwID: raw bytes */
			if (val_len != 64 && val_len != 8) {
				setd(detail, n, "hwID extension is %zu bytes (64, or 8 on Turin)",
				     val_len);
				return false;
			}
			memcpy(out->hwid, val, val_len);
			out->hwid_len = val_len;
			out->has_hwid = true;
		} else {
			uint8_t v;
			if (!snp_der_spl(val, val_len, &v)) {
				setd(detail, n, "SPL extension .3.%d is not a DER INTEGER 0..255",
				     key - 2);
				return false;
			}
			switch (key - 2) {
			case 1:
				out->bl = v;
				out->has_bl = true;
				break;
			case 2:
				out->tee = v;
				out->has_tee = true;
				break;
			case 3:
				out->snp = v;
				out->has_snp = true;
				break;
			case 8:
				out->ucode = v;
				out->has_ucode = true;
				break;
			case 9:
				out->fmc = v;
				out->has_fmc = true;
				break;
			}
		}
	}
	return true;
bad:
	setd(detail, n, "malformed extension");
	return false;
}

/*
 * The leaf's public key made ready for the report signatures, which Nettle
 * verifies: mbedTLS parsed and checked the certificate (its point is on
 * P-384, mbedtls_pk_parse_subpubkey); Nettle 3.8's P-384 (curve-specific
 * reduction, a precomputed table for G) verifies about 6x as fast as
 * mbedTLS 2.28 and 1.7x as fast as OpenSSL 3.0, whose P-384 is its generic
 * BIGNUM code (docs/verify.md "Benchmark", bench/verify_floor.c; callgrind
 * found 79% of a report's instructions in mbedtls_ecdsa_verify before). ecc_point_set refuses a
 * point off the curve (Nettle manual, "Elliptic curves"). NULL when the
 * leaf is not a P-384 EC key.
 */
struct snp_leaf_key {
	struct ecc_point q;
};

static bool leaf_is_p384(const mbedtls_x509_crt *leaf)
{
	return (mbedtls_pk_get_type(&leaf->pk) == MBEDTLS_PK_ECKEY ||
		mbedtls_pk_get_type(&leaf->pk) == MBEDTLS_PK_ECDSA) &&
	       mbedtls_pk_ec(leaf->pk)->grp.id == MBEDTLS_ECP_DP_SECP384R1;
}

static void leaf_key_free(struct snp_leaf_key *k)
{
	if (!k)
		return;
	ecc_point_clear(&k->q);
	free(k);
}

static struct snp_leaf_key *leaf_key_new(const mbedtls_x509_crt *leaf)
{
	uint8_t x[SNP_REPORT_P384_LEN], y[SNP_REPORT_P384_LEN];
	struct snp_leaf_key *k;
	mpz_t mx, my;
	int ok;

	if (!leaf_is_p384(leaf))
		return NULL;
	const mbedtls_ecp_keypair *ec = mbedtls_pk_ec(leaf->pk);
	if (mbedtls_mpi_write_binary(&ec->Q.X, x, sizeof(x)) ||
	    mbedtls_mpi_write_binary(&ec->Q.Y, y, sizeof(y)))
		return NULL;
	k = malloc(sizeof(*k));
	if (!k)
		return NULL;
	ecc_point_init(&k->q, nettle_get_secp_384r1());
	mpz_init(mx);
	mpz_init(my);
	mpz_import(mx, sizeof(x), 1, 1, 0, 0, x); /* big-endian bytes */
	mpz_import(my, sizeof(y), 1, 1, 0, 0, y);
	ok = ecc_point_set(&k->q, mx, my);
	mpz_clear(mx);
	mpz_clear(my);
	if (!ok) {
		leaf_key_free(k);
		return NULL;
	}
	return k;
}

/*
 * ECDSA P-384 over a SHA-384 digest, R and S as the report holds them (48
 * little-endian bytes each, interfaces §7). The rule mbedtls_ecdsa_verify
 * applied (SEC 1 4.1.4; RFC 6090 KT-I): R and S in [1, n-1], then
 * x(u1 G + u2 Q) mod n == R; Nettle's ecc_ecdsa_verify checks the same
 * range first (ecdsa_in_range). The one case where they could part, u1 G =
 * +-u2 Q, needs the signing key to construct (Nettle's ecc-ecdsa-verify.c
 * says so); tests/fuzz/fuzz_sigverify.c compares the two on any R, S and
 * report. 1 verifies, 0 not.
 */
static int ecdsa_p384_verify(const struct snp_leaf_key *k, const uint8_t hash[48],
			     const uint8_t *r_le, const uint8_t *s_le)
{
	struct dsa_signature sig;
	int ok;

	dsa_signature_init(&sig);
	mpz_import(sig.r, SNP_REPORT_P384_LEN, -1, 1, 0, 0, r_le); /* little-endian bytes */
	mpz_import(sig.s, SNP_REPORT_P384_LEN, -1, 1, 0, 0, s_le);
	ok = ecdsa_verify(&k->q, SNP_REPORT_P384_LEN, hash, &sig);
	dsa_signature_clear(&sig);
	return ok;
}

/* The signature check with the leaf's key already made (leaf_key_new). */
static bool signature_judge(const struct snp_report *r, const mbedtls_x509_crt *leaf,
			    const struct snp_leaf_key *key, char *detail, size_t n)
{
	uint8_t hash[64]; /* SHA-384 in a SHA-512-sized buffer */

	if (r->raw.signature_algo != SNP_SIG_ALGO_ECDSA_P384_SHA384) {
		setd(detail, n, "SIGNATURE_ALGO is %u, not 1 (ECDSA P-384 SHA-384)",
		     r->raw.signature_algo);
		return false;
	}
	if (r->signer.signing_key == SNP_SIGNING_KEY_NONE) {
		setd(detail, n, "report is not signed (SIGNING_KEY = none)");
		return false;
	}
	if ((r->signer.signing_key == SNP_SIGNING_KEY_VLEK) != snp_cert_is_vlek(leaf)) {
		setd(detail, n, "SIGNING_KEY is %s but the certificate is %s",
		     r->signer.signing_key == SNP_SIGNING_KEY_VLEK ? "VLEK" : "VCEK",
		     snp_cert_is_vlek(leaf) ? "a VLEK" : "not a VLEK");
		return false;
	}
	if (mbedtls_pk_get_type(&leaf->pk) != MBEDTLS_PK_ECKEY &&
	    mbedtls_pk_get_type(&leaf->pk) != MBEDTLS_PK_ECDSA) {
		setd(detail, n, "VCEK/VLEK key is not an EC key");
		return false;
	}
	if (mbedtls_pk_ec(leaf->pk)->grp.id != MBEDTLS_ECP_DP_SECP384R1) {
		setd(detail, n, "VCEK/VLEK key is not on P-384");
		return false;
	}
	if (!key) {
		setd(detail, n, "VCEK/VLEK key could not be loaded for verification");
		return false;
	}
	for (size_t i = SNP_REPORT_P384_LEN; i < SNP_REPORT_SIG_COMP; i++) {
		if (r->raw.sig_r[i] || r->raw.sig_s[i]) {
			setd(detail, n, "R/S wider than 48 bytes");
			return false;
		}
	}
	mbedtls_sha512_ret((const uint8_t *)&r->raw, SNP_REPORT_SIGNED_LEN, hash, 1);
	if (!ecdsa_p384_verify(key, hash, r->raw.sig_r, r->raw.sig_s)) {
		setd(detail, n, "ECDSA P-384 signature over 0x000-0x29F does not verify");
		return false;
	}
	setd(detail, n, "ECDSA P-384/SHA-384 by the %s", snp_cert_is_vlek(leaf) ? "VLEK" : "VCEK");
	return true;
}

bool snp_verify_signature(const struct snp_report *r, const mbedtls_x509_crt *leaf, char *detail,
			  size_t n)
{
	struct snp_leaf_key *key = leaf_key_new(leaf);
	bool ok = signature_judge(r, leaf, key, detail, n);
	leaf_key_free(key);
	return ok;
}

static int time_cmp(const mbedtls_x509_time *a, const struct snp_time *b)
{
	int av[6] = {a->year, a->mon, a->day, a->hour, a->min, a->sec};
	int bv[6] = {b->year, b->mon, b->day, b->hour, b->min, b->sec};
	for (int i = 0; i < 6; i++)
		if (av[i] != bv[i])
			return av[i] < bv[i] ? -1 : 1;
	return 0;
}

static bool cert_valid_at(const mbedtls_x509_crt *c, const struct snp_time *t, const char *what,
			  char *d, size_t n)
{
	if (time_cmp(&c->valid_from, t) > 0) {
		setd(d, n, "%s not valid before %04d-%02d-%02d", what, c->valid_from.year,
		     c->valid_from.mon, c->valid_from.day);
		return false;
	}
	if (time_cmp(&c->valid_to, t) < 0) {
		setd(d, n, "%s expired on %04d-%02d-%02d", what, c->valid_to.year, c->valid_to.mon,
		     c->valid_to.day);
		return false;
	}
	return true;
}

/* child signed by parent with RSASSA-PSS, SHA-384, MGF1-SHA-384, salt 48. */
static bool pss_signed_by(const mbedtls_x509_crt *child, const mbedtls_x509_crt *parent,
			  const char *what, char *d, size_t n)
{
	const mbedtls_pk_rsassa_pss_options *o = child->sig_opts;
	mbedtls_pk_rsassa_pss_options want = {MBEDTLS_MD_SHA384, 48};
	uint8_t hash[64]; /* SHA-384 in a SHA-512-sized buffer */

	if (child->sig_pk != MBEDTLS_PK_RSASSA_PSS || child->sig_md != MBEDTLS_MD_SHA384 || !o ||
	    o->mgf1_hash_id != MBEDTLS_MD_SHA384 || o->expected_salt_len != 48) {
		setd(d, n, "%s is not signed with RSASSA-PSS SHA-384/MGF1-SHA-384/salt 48", what);
		return false;
	}
	if (child->issuer_raw.len != parent->subject_raw.len ||
	    memcmp(child->issuer_raw.p, parent->subject_raw.p, child->issuer_raw.len)) {
		setd(d, n, "%s issuer does not name its parent", what);
		return false;
	}
	if (mbedtls_pk_get_type(&parent->pk) != MBEDTLS_PK_RSA) {
		setd(d, n, "issuer of %s has no RSA key", what);
		return false;
	}
	mbedtls_sha512_ret(child->tbs.p, child->tbs.len, hash, 1);
	int ret =
	    mbedtls_pk_verify_ext(MBEDTLS_PK_RSASSA_PSS, &want, (mbedtls_pk_context *)&parent->pk,
				  MBEDTLS_MD_SHA384, hash, 48, child->sig.p, child->sig.len);
	if (ret) {
		setd(d, n, "%s signature does not verify (-0x%04x)", what, -ret);
		return false;
	}
	return true;
}

static bool ca_cert_ok(const mbedtls_x509_crt *c, const char *what, char *d, size_t n)
{
	if (mbedtls_pk_get_type(&c->pk) != MBEDTLS_PK_RSA ||
	    mbedtls_pk_get_bitlen(&c->pk) != 4096) {
		setd(d, n, "%s key is not RSA-4096", what);
		return false;
	}
	if (!c->ca_istrue) {
		setd(d, n, "%s is not a CA (basicConstraints)", what);
		return false;
	}
	if (mbedtls_x509_crt_check_key_usage(c, MBEDTLS_X509_KU_KEY_CERT_SIGN)) {
		setd(d, n, "%s key usage forbids certificate signing", what);
		return false;
	}
	return true;
}

static bool trusted_extra(const struct snp_verify_opts *o, const uint8_t fp[SNP_FP_LEN])
{
	for (size_t i = 0; i < o->n_trusted_ark; i++)
		if (!memcmp(o->trusted_ark[i], fp, SNP_FP_LEN))
			return true;
	return false;
}

enum snp_product snp_verify_product(const struct snp_chain *c, const struct snp_report *r,
				    enum snp_product hint)
{
	enum snp_product p = SNP_PRODUCT_UNKNOWN;
	if (c && c->have_ark)
		p = snp_cert_cn_product(&c->ark);
	if (!p && c && c->have_ask)
		p = snp_cert_cn_product(&c->ask);
	if (!p && r)
		p = r->product;
	if (!p)
		p = hint;
	return p;
}

/*
 * The warm chain cache (snp_verify.h): what the checks learn from the chain
 * alone, computed once. Everything a report or the options can change (the
 * pin against --trust-ark, validity at o->at, the product line against the
 * report's CPUID and --product, the report's TCB, CHIP_ID and signature) is
 * judged per report by the *_judge functions below, in the order the checks
 * have always run, so a cached and an uncached run give the same verdicts
 * and details: snp_verify_run() is snp_verify_run_cached() on a cache built
 * for the call.
 */
int snp_chain_cache_init(struct snp_chain_cache *cc, const struct snp_chain *c)
{
	memset(cc, 0, sizeof(*cc));
	cc->chain = c;
	if (c->have_ark)
		snp_cert_fingerprint(&c->ark, cc->ark_fp);
	/* The three RSASSA-PSS links, each named as snp_verify_chain() names it. */
	bool vlek = c->have_leaf && snp_cert_is_vlek(&c->leaf);
	if (c->have_ark)
		cc->ark_self.ok =
		    pss_signed_by(&c->ark, &c->ark, "ARK", cc->ark_self.detail, SNP_DETAIL_LEN);
	if (c->have_ask && c->have_ark)
		cc->ask_by_ark.ok = pss_signed_by(&c->ask, &c->ark, vlek ? "ASVK" : "ASK",
						  cc->ask_by_ark.detail, SNP_DETAIL_LEN);
	if (c->have_leaf && c->have_ask)
		cc->leaf_by_ask.ok = pss_signed_by(&c->leaf, &c->ask, vlek ? "VLEK" : "VCEK",
						   cc->leaf_by_ask.detail, SNP_DETAIL_LEN);
	if (c->have_leaf) {
		cc->ext_ok = snp_amd_ext_parse(&c->leaf, &cc->ext, cc->ext_detail, SNP_DETAIL_LEN);
		cc->leaf_key = leaf_key_new(&c->leaf);
	}
	/* A P-384 leaf whose key could not be made (out of memory). */
	if (c->have_leaf && !cc->leaf_key && leaf_is_p384(&c->leaf))
		return -1;
	return 0;
}

void snp_chain_cache_free(struct snp_chain_cache *cc)
{
	leaf_key_free(cc->leaf_key);
	memset(cc, 0, sizeof(*cc));
}

static bool chain_judge(const struct snp_chain_cache *cc, const struct snp_report *r,
			const struct snp_verify_opts *o, enum snp_product *product, char *d,
			size_t n)
{
	const struct snp_chain *c = cc->chain;
	enum snp_product pin, p_ark, p_ask, p_leaf = SNP_PRODUCT_UNKNOWN, p;
	bool vlek;

	*product = SNP_PRODUCT_UNKNOWN;
	if (!c->have_ark || !c->have_ask || !c->have_leaf) {
		setd(d, n, "ARK, ASK/ASVK and VCEK/VLEK are all required");
		return false;
	}
	vlek = snp_cert_is_vlek(&c->leaf);

	/* ARK: pinned or explicitly trusted, self-signed. */
	pin = snp_pinned_ark_product(cc->ark_fp);
	if (!pin && !trusted_extra(o, cc->ark_fp)) {
		setd(d, n,
		     "ARK is not a pinned AMD root (SHA-256 %02x%02x%02x%02x...) and not given by "
		     "--trust-ark",
		     cc->ark_fp[0], cc->ark_fp[1], cc->ark_fp[2], cc->ark_fp[3]);
		return false;
	}
	if (!ca_cert_ok(&c->ark, "ARK", d, n))
		return false;
	if (!cc->ark_self.ok) {
		setd(d, n, "%s", cc->ark_self.detail);
		return false;
	}
	if (!cert_valid_at(&c->ark, &o->at, "ARK", d, n))
		return false;

	/* ASK (VCEK chain) or ASVK (VLEK chain), signed by the ARK. */
	const char *mid = vlek ? "ASVK" : "ASK";
	if (cert_is_asvk(&c->ask) != vlek) {
		setd(d, n,
		     vlek ? "a VLEK needs the ASVK (SEV-VLEK-<product>), not an ASK"
			  : "a VCEK needs the ASK (SEV-<product>), not an ASVK");
		return false;
	}
	if (!ca_cert_ok(&c->ask, mid, d, n))
		return false;
	if (!cc->ask_by_ark.ok) {
		setd(d, n, "%s", cc->ask_by_ark.detail);
		return false;
	}
	if (!cert_valid_at(&c->ask, &o->at, mid, d, n))
		return false;

	/* VCEK/VLEK, signed by the ASK/ASVK. */
	const char *leaf = vlek ? "VLEK" : "VCEK";
	{
		char cn[64];
		snp_cert_cn(&c->leaf, cn, sizeof(cn));
		if (strcmp(cn, "SEV-VCEK") && strcmp(cn, "SEV-VLEK")) {
			setd(d, n, "leaf subject CN is \"%s\", not SEV-VCEK/SEV-VLEK", cn);
			return false;
		}
	}
	if (!cc->leaf_by_ask.ok) {
		setd(d, n, "%s", cc->leaf_by_ask.detail);
		return false;
	}
	if (!cert_valid_at(&c->leaf, &o->at, leaf, d, n))
		return false;
	if (cc->ext_ok && cc->ext.product_name[0])
		p_leaf = product_from_name(cc->ext.product_name);

	/* One product line across root pin, names, the report and --product. */
	p_ark = snp_cert_cn_product(&c->ark);
	p_ask = snp_cert_cn_product(&c->ask);
	p = pin ? pin : p_ark;
	const struct {
		enum snp_product v;
		const char *src;
	} src[] = {
	    {p_ark, "ARK subject"},	    {p_ask, mid},
	    {p_leaf, "productName"},	    {r ? r->product : SNP_PRODUCT_UNKNOWN, "report CPUID"},
	    {o->product_hint, "--product"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(src); i++) {
		if (!src[i].v)
			continue;
		if (!p)
			p = src[i].v;
		if (src[i].v != p) {
			setd(d, n, "product mismatch: %s says %s, chain is %s", src[i].src,
			     snp_product_name(src[i].v), snp_product_name(p));
			return false;
		}
	}
	*product = p;
	setd(d, n, "%s ARK %s -> %s -> %s, RSASSA-PSS SHA-384 salt 48, valid at %04d-%02d-%02d",
	     snp_product_name(p), pin ? "pinned" : "trusted by --trust-ark", mid, leaf, o->at.year,
	     o->at.mon, o->at.day);
	return true;
}

bool snp_verify_chain(const struct snp_chain *c, const struct snp_report *r,
		      const struct snp_verify_opts *o, enum snp_product *product, char *d, size_t n)
{
	struct snp_chain_cache cc;
	snp_chain_cache_init(&cc, c);
	bool ok = chain_judge(&cc, r, o, product, d, n);
	snp_chain_cache_free(&cc);
	return ok;
}

/* The tcb check on the leaf's extensions as snp_amd_ext_parse() gave them. */
static bool tcb_judge(const struct snp_report *r, bool ext_ok, const struct snp_amd_ext *ext,
		      const char *ext_detail, enum snp_product product, char *d, size_t n)
{
	const struct snp_amd_ext *e = ext;
	struct snp_tcb t;
	uint64_t raw = r->raw.reported_tcb;

	if (!ext_ok) {
		setd(d, n, "%s", ext_detail);
		return false;
	}
	snp_tcb_decode(raw, product, &t);
	/* Reserved TCB_VERSION bytes: 2..5 (Milan/Genoa), 4..6 (Turin). */
	uint64_t rsvd =
	    product == SNP_PRODUCT_TURIN ? 0x00FFFFFF00000000ull : 0x0000FFFFFFFF0000ull;
	if (raw & rsvd) {
		setd(d, n, "REPORTED_TCB reserved bytes are not zero (0x%016llx)",
		     (unsigned long long)raw);
		return false;
	}
	if (!e->has_bl || !e->has_tee || !e->has_snp || !e->has_ucode) {
		setd(d, n, "certificate lacks an SPL extension (blSPL/teeSPL/snpSPL/ucodeSPL)");
		return false;
	}
	if (product == SNP_PRODUCT_TURIN && !e->has_fmc) {
		setd(d, n, "Turin certificate lacks fmcSPL");
		return false;
	}
	if (e->bl != t.bl || e->tee != t.tee || e->snp != t.snp || e->ucode != t.ucode ||
	    (t.has_fmc && e->fmc != t.fmc)) {
		setd(d, n,
		     "certificate SPLs bl=%u tee=%u snp=%u ucode=%u fmc=%u != REPORTED_TCB bl=%u "
		     "tee=%u snp=%u ucode=%u fmc=%u",
		     e->bl, e->tee, e->snp, e->ucode, e->fmc, t.bl, t.tee, t.snp, t.ucode, t.fmc);
		return false;
	}
	if (t.has_fmc)
		setd(d, n,
		     "REPORTED_TCB fmc=%u bl=%u tee=%u snp=%u ucode=%u (Turin layout) matches the "
		     "certificate",
		     t.fmc, t.bl, t.tee, t.snp, t.ucode);
	else
		setd(d, n, "REPORTED_TCB bl=%u tee=%u snp=%u ucode=%u matches the certificate",
		     t.bl, t.tee, t.snp, t.ucode);
	return true;
}

bool snp_verify_tcb(const struct snp_report *r, const mbedtls_x509_crt *leaf,
		    enum snp_product product, char *d, size_t n)
{
	struct snp_amd_ext e;
	char ed[SNP_DETAIL_LEN] = "";
	bool ok = snp_amd_ext_parse(leaf, &e, ed, sizeof(ed));
	return tcb_judge(r, ok, &e, ed, product, d, n);
}

/* The chip_id check on the leaf's extensions as snp_amd_ext_parse() gave them. */
static enum snp_check_state chip_id_judge(const struct snp_report *r, const mbedtls_x509_crt *leaf,
					  bool ext_ok, const struct snp_amd_ext *e,
					  const char *ext_detail, enum snp_product product, char *d,
					  size_t n)
{
	size_t want = product == SNP_PRODUCT_TURIN ? 8 : 64;

	if (r->signer.signing_key == SNP_SIGNING_KEY_VLEK || snp_cert_is_vlek(leaf)) {
		setd(d, n, "skipped: VLEK-signed report (no hwID)");
		return SNP_CHECK_SKIP;
	}
	if (r->signer.mask_chip_key) {
		setd(d, n, "skipped: MASK_CHIP_KEY set (CHIP_ID is zero)");
		return SNP_CHECK_SKIP;
	}
	if (!ext_ok) {
		setd(d, n, "%s", ext_detail);
		return SNP_CHECK_FAIL;
	}
	if (!e->has_hwid) {
		setd(d, n, "certificate has no hwID extension");
		return SNP_CHECK_FAIL;
	}
	if (e->hwid_len != want) {
		setd(d, n, "hwID is %zu bytes, %s expects %zu", e->hwid_len,
		     snp_product_name(product), want);
		return SNP_CHECK_FAIL;
	}
	if (memcmp(e->hwid, r->raw.chip_id, want)) {
		setd(d, n, "hwID does not equal CHIP_ID");
		return SNP_CHECK_FAIL;
	}
	setd(d, n, "hwID equals CHIP_ID%s", want == 8 ? " (first 8 bytes, Turin)" : "");
	return SNP_CHECK_PASS;
}

enum snp_check_state snp_verify_chip_id(const struct snp_report *r, const mbedtls_x509_crt *leaf,
					enum snp_product product, char *d, size_t n)
{
	struct snp_amd_ext e;
	char ed[SNP_DETAIL_LEN] = "";
	bool ok = snp_amd_ext_parse(leaf, &e, ed, sizeof(ed));
	return chip_id_judge(r, leaf, ok, &e, ed, product, d, n);
}

static struct snp_check *add(struct snp_verify_result *res, const char *name)
{
	struct snp_check *c = &res->checks[res->n < SNP_MAX_CHECKS ? res->n++ : SNP_MAX_CHECKS - 1];
	c->name = name;
	c->state = SNP_CHECK_FAIL;
	c->detail[0] = 0;
	return c;
}

static void hexs(char *out, const uint8_t *b, size_t n)
{
	static const char h[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[b[i] >> 4];
		out[2 * i + 1] = h[b[i] & 15];
	}
	out[2 * n] = 0;
}

void snp_verify_run_cached(const struct snp_report *r, int parse_err,
			   const struct snp_chain_cache *cc, const struct snp_verify_opts *o,
			   struct snp_verify_result *res)
{
	const struct snp_chain *ch = cc->chain;
	struct snp_check *c;
	enum snp_product chain_product = SNP_PRODUCT_UNKNOWN;

	memset(res, 0, sizeof(*res));

	c = add(res, "parse");
	if (parse_err) {
		long off = snp_report_first_reserved_nonzero(r);
		if (parse_err == SNP_REPORT_ERR_RESERVED && off >= 0)
			setd(c->detail, SNP_DETAIL_LEN,
			     "reserved byte at 0x%03lx is not zero (version %u)", off,
			     r->raw.version);
		else
			setd(c->detail, SNP_DETAIL_LEN, "%s", snp_report_strerror(parse_err));
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN, "1184 bytes, version %u, reserved bytes zero",
		     r->raw.version);
	}

	c = add(res, "signature");
	if (ch->have_leaf)
		c->state = signature_judge(r, &ch->leaf, cc->leaf_key, c->detail, SNP_DETAIL_LEN);
	else
		setd(c->detail, SNP_DETAIL_LEN, "no VCEK/VLEK certificate");

	c = add(res, "chain");
	c->state = chain_judge(cc, r, o, &chain_product, c->detail, SNP_DETAIL_LEN);
	res->product = chain_product ? chain_product : snp_verify_product(ch, r, o->product_hint);

	c = add(res, "tcb");
	if (ch->have_leaf)
		c->state = tcb_judge(r, cc->ext_ok, &cc->ext, cc->ext_detail, res->product,
				     c->detail, SNP_DETAIL_LEN);
	else
		setd(c->detail, SNP_DETAIL_LEN, "no VCEK/VLEK certificate");

	c = add(res, "chip_id");
	if (ch->have_leaf)
		c->state = chip_id_judge(r, &ch->leaf, cc->ext_ok, &cc->ext, cc->ext_detail,
					 res->product, c->detail, SNP_DETAIL_LEN);
	else
		setd(c->detail, SNP_DETAIL_LEN, "no VCEK/VLEK certificate");

	c = add(res, "policy.debug");
	if (r->policy.debug && !o->allow_debug) {
		setd(c->detail, SNP_DETAIL_LEN,
		     "guest policy allows DEBUG (use --allow-debug to accept)");
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN,
		     r->policy.debug ? "DEBUG allowed by --allow-debug"
				     : "DEBUG not allowed by the guest policy");
	}

	/*
	 * GUEST_POLICY (report offset 0x008): AMD SEV-SNP ABI specification
	 * 56860, "GUEST_POLICY Structure": bit 16 SMT, 17 reserved (must be
	 * 1), 18 MIGRATE_MA, 19 DEBUG, 20 SINGLE_SOCKET, 21 CXL_ALLOW, 22
	 * MEM_AES_256_XTS, 23 RAPL_DIS, 24 CIPHERTEXT_HIDING, 25
	 * PAGE_SWAP_DISABLE, 63:26 reserved, must be zero;
	 * shared/reference/snp-svsm-interfaces.md §7 ([G-abi] go-sev-guest
	 * abi.ParseSnpPolicy). `parse` also refuses bit 17 clear and bits
	 * 63:26 (snp_report_check); the checks below name each rule.
	 */
	c = add(res, "policy.migrate_ma");
	if (r->policy.migrate_ma && !o->allow_migrate_ma) {
		setd(c->detail, SNP_DETAIL_LEN,
		     "guest policy allows a migration agent (MIGRATE_MA, bit 18), which can "
		     "export the guest's state (use --allow-migrate-ma to accept)");
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN,
		     r->policy.migrate_ma ? "MIGRATE_MA allowed by --allow-migrate-ma"
					  : "no migration agent allowed by the guest policy");
	}

	c = add(res, "policy.reserved");
	if (!(r->raw.policy & SNP_POLICY_RESERVED1)) {
		setd(c->detail, SNP_DETAIL_LEN,
		     "POLICY bit 17 is clear (reserved, must be 1; policy 0x%llx)",
		     (unsigned long long)r->raw.policy);
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN, "POLICY bit 17 (reserved, must be 1) is set");
	}

	c = add(res, "policy.mbz");
	if (r->raw.policy & SNP_POLICY_MBZ_MASK) {
		setd(c->detail, SNP_DETAIL_LEN,
		     "POLICY bits 63:26 must be zero (unknown to this verifier): 0x%llx set",
		     (unsigned long long)(r->raw.policy & SNP_POLICY_MBZ_MASK));
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN, "POLICY bits 63:26 zero");
	}

	c = add(res, "policy.vmpl");
	if (r->raw.vmpl != o->vmpl) {
		setd(c->detail, SNP_DETAIL_LEN, "report VMPL %u, expected %u", r->raw.vmpl,
		     o->vmpl);
	} else {
		c->state = SNP_CHECK_PASS;
		setd(c->detail, SNP_DETAIL_LEN, "VMPL %u", r->raw.vmpl);
	}

	if (o->have_min_tcb) {
		struct snp_tcb t, m = o->min_tcb;
		c = add(res, "policy.min_tcb");
		snp_tcb_decode(r->raw.reported_tcb, res->product, &t);
		m.has_fmc = m.has_fmc && t.has_fmc;
		if (snp_tcb_at_least(&t, &m)) {
			c->state = SNP_CHECK_PASS;
			setd(c->detail, SNP_DETAIL_LEN,
			     "REPORTED_TCB bl=%u tee=%u snp=%u ucode=%u fmc=%u >= minimum", t.bl,
			     t.tee, t.snp, t.ucode, t.fmc);
		} else {
			setd(c->detail, SNP_DETAIL_LEN,
			     "REPORTED_TCB bl=%u tee=%u snp=%u ucode=%u fmc=%u below minimum bl=%u "
			     "tee=%u snp=%u ucode=%u fmc=%u",
			     t.bl, t.tee, t.snp, t.ucode, t.fmc, m.bl, m.tee, m.snp, m.ucode,
			     m.fmc);
		}
	}

	if (o->have_measurement) {
		char hx[97];
		c = add(res, "measurement");
		if (!memcmp(r->raw.measurement, o->measurement, 48)) {
			c->state = SNP_CHECK_PASS;
			setd(c->detail, SNP_DETAIL_LEN, "MEASUREMENT matches");
		} else {
			hexs(hx, r->raw.measurement, 48);
			setd(c->detail, SNP_DETAIL_LEN, "MEASUREMENT %s differs", hx);
		}
	}

	if (o->have_report_data) {
		c = add(res, "report_data");
		if (!memcmp(r->raw.report_data, o->report_data, 64)) {
			c->state = SNP_CHECK_PASS;
			setd(c->detail, SNP_DETAIL_LEN, "REPORT_DATA matches");
		} else {
			setd(c->detail, SNP_DETAIL_LEN, "REPORT_DATA differs");
		}
	}

	if (o->quote) {
		c = add(res, "quote");
		c->state = snp_verify_quote(o->quote, c->detail, SNP_DETAIL_LEN);
	}

	res->measurement_checked = o->have_measurement;
	res->report_data_checked = o->have_report_data;
	res->verified = true;
	for (size_t i = 0; i < res->n; i++)
		if (res->checks[i].state == SNP_CHECK_FAIL)
			res->verified = false;
}

void snp_verify_run(const struct snp_report *r, int parse_err, const struct snp_chain *ch,
		    const struct snp_verify_opts *o, struct snp_verify_result *res)
{
	struct snp_chain_cache cc;
	snp_chain_cache_init(&cc, ch);
	snp_verify_run_cached(r, parse_err, &cc, o, res);
	snp_chain_cache_free(&cc);
}

/* ---- TPM 2.0 quote (tpm2_checkquote equivalent) ---- */

#define TPM_GENERATED_VALUE  0xff544347u
#define TPM_ST_ATTEST_QUOTE  0x8018u
#define TPM_ALG_RSASSA	     0x0014u
#define TPM_ALG_RSAPSS	     0x0016u
#define TPM_ALG_ECDSA	     0x0018u
#define TPM_PCR_SELECT_MAX   4u	 /* tpm2-tss TPMS_PCR_SELECTION.pcrSelect[] */
#define TPM_NUM_BANKS	     16u /* tpm2-tss TPML_PCR_SELECTION.pcrSelections[] */
#define TPM_DIGESTS_PER_LIST 8u	 /* tpm2-tss TPML_DIGEST.digests[] */
#define TPM_DIGEST_MAX	     64u

/* The quote's structures are read with include/attest/tpm_wire.h. */

static mbedtls_md_type_t tpm_hash(uint16_t alg)
{
	switch (alg) {
	case 0x0004:
		return MBEDTLS_MD_SHA1;
	case 0x000b:
		return MBEDTLS_MD_SHA256;
	case 0x000c:
		return MBEDTLS_MD_SHA384;
	case 0x000d:
		return MBEDTLS_MD_SHA512;
	default:
		return MBEDTLS_MD_NONE;
	}
}

struct pcr_sel {
	size_t n;
	uint16_t hash[TPM_NUM_BANKS];
	uint8_t size[TPM_NUM_BANKS];
	uint8_t bits[TPM_NUM_BANKS][TPM_PCR_SELECT_MAX];
};

bool snp_verify_quote(const struct snp_quote_in *q, char *d, size_t n)
{
	struct tpm_rd c = {q->msg, q->msg_len, 0, false};
	struct pcr_sel qs = {0}, fs = {0};
	const uint8_t *extra, *pcr_digest, *sigp = NULL, *rp = NULL, *sp = NULL;
	size_t extra_len, digest_len, l, sig_len = 0, r_len = 0, s_len = 0;
	uint8_t mh[64], ph[64];
	mbedtls_pk_context ak;
	bool ok = false;
	int ret;

	/* TPMS_ATTEST (Part 2 10.12.12) with TPMS_QUOTE_INFO (10.12.4). */
	if (tpm_rd_be(&c, 4) != TPM_GENERATED_VALUE || c.bad) {
		setd(d, n, "quote message: magic is not TPM_GENERATED_VALUE");
		return false;
	}
	if (tpm_rd_be(&c, 2) != TPM_ST_ATTEST_QUOTE || c.bad) {
		setd(d, n, "quote message: type is not TPM_ST_ATTEST_QUOTE");
		return false;
	}
	tpm_rd_2b(&c, &l);		   /* qualifiedSigner */
	extra = tpm_rd_2b(&c, &extra_len); /* extraData */
	tpm_rd_be(&c, 4);
	tpm_rd_be(&c, 4); /* clockInfo.clock */
	tpm_rd_be(&c, 4);
	tpm_rd_be(&c, 4);
	tpm_rd_be(&c, 1); /* resetCount, restartCount, safe */
	tpm_rd_be(&c, 4);
	tpm_rd_be(&c, 4); /* firmwareVersion */
	qs.n = tpm_rd_be(&c, 4);
	if (c.bad || qs.n == 0 || qs.n > TPM_NUM_BANKS) {
		setd(d, n, "quote message: malformed header or PCR selection count");
		return false;
	}
	for (size_t i = 0; i < qs.n; i++) {
		qs.hash[i] = (uint16_t)tpm_rd_be(&c, 2);
		qs.size[i] = (uint8_t)tpm_rd_be(&c, 1);
		if (qs.size[i] > TPM_PCR_SELECT_MAX) {
			c.bad = true;
			break;
		}
		for (size_t j = 0; j < qs.size[i]; j++)
			qs.bits[i][j] = (uint8_t)tpm_rd_be(&c, 1);
	}
	pcr_digest = tpm_rd_2b(&c, &digest_len);
	if (c.bad || c.off != c.len) {
		setd(d, n, "quote message: malformed TPMS_QUOTE_INFO or trailing bytes");
		return false;
	}
	if (extra_len != q->nonce_len || (extra_len && memcmp(extra, q->nonce, extra_len))) {
		setd(d, n, "quote extraData does not equal --quote-nonce");
		return false;
	}

	/* TPMT_SIGNATURE (Part 2 11.3.4). */
	struct tpm_rd s = {q->sig, q->sig_len, 0, false};
	uint16_t alg = (uint16_t)tpm_rd_be(&s, 2), halg = (uint16_t)tpm_rd_be(&s, 2);
	if (alg == TPM_ALG_ECDSA) {
		rp = tpm_rd_2b(&s, &r_len);
		sp = tpm_rd_2b(&s, &s_len);
	} else if (alg == TPM_ALG_RSASSA || alg == TPM_ALG_RSAPSS) {
		sigp = tpm_rd_2b(&s, &sig_len);
	} else {
		setd(d, n, "quote signature algorithm 0x%04x not supported", alg);
		return false;
	}
	mbedtls_md_type_t md = tpm_hash(halg);
	const mbedtls_md_info_t *mi = mbedtls_md_info_from_type(md);
	if (s.bad || s.off != s.len || !mi) {
		setd(d, n, "quote signature: malformed TPMT_SIGNATURE or unknown hash 0x%04x",
		     halg);
		return false;
	}
	size_t hl = mbedtls_md_get_size(mi);
	mbedtls_md(mi, q->msg, q->msg_len, mh);

	mbedtls_pk_init(&ak);
	if (q->ak_tpm_public) {
		struct tpm_public pub;
		uint8_t name[TPM_NAME_MAX];
		if (!tpm_public_parse(q->ak, q->ak_len, true, &pub, d, n) ||
		    !tpm_ak_check(&pub, d, n))
			goto out;
		if (q->ak_name && (tpm_public_name(&pub, name) != q->ak_name_len ||
				   memcmp(name, q->ak_name, q->ak_name_len))) {
			setd(d, n, "the AK's Name is not --ak-name (not the activated AK)");
			goto out;
		}
		if (tpm_public_to_pk(&pub, &ak)) {
			setd(d, n, "AK public area: not a usable key");
			goto out;
		}
		ret = 0;
	} else {
		uint8_t *z = malloc(q->ak_len + 1);
		if (!z) {
			setd(d, n, "out of memory");
			return false;
		}
		memcpy(z, q->ak, q->ak_len);
		z[q->ak_len] = 0;
		ret = mbedtls_pk_parse_public_key(&ak, z,
						  q->ak_len + (q->ak_len && q->ak[0] != 0x30));
		free(z);
	}
	if (ret) {
		setd(d, n, "AK public key does not parse (PEM or DER SubjectPublicKeyInfo)");
		goto out;
	}
	if (alg == TPM_ALG_ECDSA) {
		mbedtls_mpi R, S;
		if (!mbedtls_pk_can_do(&ak, MBEDTLS_PK_ECDSA)) {
			setd(d, n, "ECDSA quote but the AK is not an EC key");
			goto out;
		}
		const mbedtls_ecp_keypair *ec = mbedtls_pk_ec(ak);
		mbedtls_mpi_init(&R);
		mbedtls_mpi_init(&S);
		ret = mbedtls_mpi_read_binary(&R, rp, r_len);
		if (!ret)
			ret = mbedtls_mpi_read_binary(&S, sp, s_len);
		if (!ret)
			ret = mbedtls_ecdsa_verify((mbedtls_ecp_group *)&ec->grp, mh, hl, &ec->Q,
						   &R, &S);
		mbedtls_mpi_free(&R);
		mbedtls_mpi_free(&S);
	} else if (!mbedtls_pk_can_do(&ak, MBEDTLS_PK_RSA)) {
		setd(d, n, "RSA quote but the AK is not an RSA key");
		goto out;
	} else if (alg == TPM_ALG_RSASSA) {
		ret = mbedtls_pk_verify(&ak, md, mh, hl, sigp, sig_len);
	} else {
		mbedtls_pk_rsassa_pss_options o = {md, MBEDTLS_RSA_SALT_LEN_ANY};
		ret = mbedtls_pk_verify_ext(MBEDTLS_PK_RSASSA_PSS, &o, &ak, md, mh, hl, sigp,
					    sig_len);
	}
	if (ret) {
		setd(d, n, "quote signature does not verify with the AK (-0x%04x)", -ret);
		goto out;
	}

	/* PCR file (tpm2-tools "serialized"): host-order (little-endian) structs. */
	struct tpm_rd f = {q->pcrs, q->pcrs_len, 0, false};
	fs.n = tpm_rd_le(&f, 4);
	if (fs.n > TPM_NUM_BANKS)
		f.bad = true;
	for (size_t i = 0; i < TPM_NUM_BANKS && !f.bad; i++) {
		fs.hash[i] = (uint16_t)tpm_rd_le(&f, 2);
		fs.size[i] = (uint8_t)tpm_rd_le(&f, 1);
		for (size_t j = 0; j < TPM_PCR_SELECT_MAX; j++)
			fs.bits[i][j] = (uint8_t)tpm_rd_le(&f, 1);
		tpm_rd_le(&f, 1); /* padding */
	}
	size_t nlists = tpm_rd_le(&f, 4);
	if (f.bad || nlists > 64) {
		setd(d, n,
		     "PCR file: malformed selection (expected tpm2_quote -o serialized format)");
		goto out;
	}
	bool same = fs.n == qs.n;
	for (size_t i = 0; same && i < qs.n; i++)
		same = fs.hash[i] == qs.hash[i] && fs.size[i] == qs.size[i] &&
		       !memcmp(fs.bits[i], qs.bits[i], qs.size[i]);
	if (!same) {
		setd(d, n, "PCR file selection differs from the quote's");
		goto out;
	}
	/* Count the selected PCRs; the values follow in bank, then index order. */
	size_t want = 0, got = 0;
	for (size_t i = 0; i < qs.n; i++)
		for (size_t j = 0; j < qs.size[i]; j++)
			want += (size_t)__builtin_popcount(qs.bits[i][j]);
	mbedtls_md_context_t mc;
	mbedtls_md_init(&mc);
	if (mbedtls_md_setup(&mc, mi, 0) || mbedtls_md_starts(&mc)) {
		mbedtls_md_free(&mc);
		setd(d, n, "hash setup failed");
		goto out;
	}
	size_t bank = 0, bank_left = 0;
	for (size_t li = 0; li < nlists && !f.bad; li++) {
		size_t cnt = tpm_rd_le(&f, 4);
		if (cnt > TPM_DIGESTS_PER_LIST)
			f.bad = true;
		for (size_t k = 0; k < TPM_DIGESTS_PER_LIST && !f.bad; k++) {
			size_t sz = tpm_rd_le(&f, 2);
			if (f.bad || TPM_DIGEST_MAX > f.len - f.off) {
				f.bad = true;
				break;
			}
			if (k < cnt) {
				/* each value must have its bank's digest size */
				while (bank_left == 0 && bank < qs.n) {
					for (size_t j = 0; j < qs.size[bank]; j++)
						bank_left +=
						    (size_t)__builtin_popcount(qs.bits[bank][j]);
					if (bank_left == 0)
						bank++;
				}
				const mbedtls_md_info_t *bi =
				    bank < qs.n ? mbedtls_md_info_from_type(tpm_hash(qs.hash[bank]))
						: NULL;
				if (!bi || sz != mbedtls_md_get_size(bi)) {
					f.bad = true;
					break;
				}
				mbedtls_md_update(&mc, f.p + f.off, sz);
				got++;
				if (--bank_left == 0)
					bank++;
			}
			f.off += TPM_DIGEST_MAX;
		}
	}
	mbedtls_md_finish(&mc, ph);
	mbedtls_md_free(&mc);
	if (f.bad || f.off != f.len || got != want) {
		setd(d, n, "PCR file: malformed digests or %zu values for %zu selected PCRs", got,
		     want);
		goto out;
	}
	if (digest_len != hl || memcmp(ph, pcr_digest, hl)) {
		setd(d, n, "pcrDigest does not equal the hash of the PCR values");
		goto out;
	}
	setd(d, n, "%s quote by the AK over %zu PCRs, nonce and pcrDigest match",
	     alg == TPM_ALG_ECDSA    ? "ECDSA"
	     : alg == TPM_ALG_RSAPSS ? "RSAPSS"
				     : "RSASSA",
	     want);
	ok = true;
out:
	mbedtls_pk_free(&ak);
	return ok;
}
