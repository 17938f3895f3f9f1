/*
 * The verifier's side of TPM 2.0 credential activation (include/attest/
 * tpm_cred.h): parse and judge the EK and AK a guest presents, and make
 * the credential only the TPM holding both can open. Sources:
 *   TPM 2.0 Library Part 1 (Architecture) §11.4.10.2 KDFa, §16 Names,
 *     §24 Credential Protection (seed, "STORAGE", "INTEGRITY"),
 *     Annex B.10.3 RSA secret sharing (OAEP, label "IDENTITY" with its NUL)
 *   Part 2 (Structures) §12.2.3-12.2.4 TPMU_PUBLIC_PARMS / TPMT_PUBLIC,
 *     §11.1.7 TPMT_SYM_DEF_OBJECT, §11.2.3.5 TPMT_RSA_SCHEME (RSAES has no
 *     details), §11.2.5.6 TPMT_ECC_SCHEME (ECDAA adds a count)
 *   Part 3 (Commands) §12.6 TPM2_MakeCredential
 *   tpm2-tools tools/tpm2_makecredential.c write_cred_and_secret (the file)
 *   TCG EK Credential Profile 2.0 §2.2.1.4, template L-1 (RSA 2048,
 *     AES-128-CFB, restricted decrypt)
 */
#include <attest/tpm_cred.h>
#include <attest/tpm_wire.h>

#include <mbedtls/aes.h>
#include <mbedtls/ecp.h>
#include <mbedtls/md.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/rsa.h>
#include <mbedtls/sha256.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* A scheme's details: none for NULL and RSAES, a hash, or a hash and a count (ECDAA). */
static void rd_scheme(struct tpm_rd *r, uint16_t *scheme, uint16_t *hash)
{
	*scheme = (uint16_t)tpm_rd_be(r, 2);
	*hash = 0;
	if (*scheme == TPM2_ALG_NULL || *scheme == TPM2_ALG_RSAES)
		return;
	*hash = (uint16_t)tpm_rd_be(r, 2);
	if (*scheme == TPM2_ALG_ECDAA)
		tpm_rd_be(r, 2);
}

bool tpm_public_parse(const uint8_t *buf, size_t len, bool from_2b, struct tpm_public *o, char *d,
		      size_t n)
{
	struct tpm_rd r = {buf, len, 0, false};
	size_t l;

	memset(o, 0, sizeof(*o));
	if (!buf) {
		setd(d, n, "no public area");
		return false;
	}
	if (from_2b) {
		size_t inner = tpm_rd_be(&r, 2);
		if (r.bad || inner != len - 2 || inner == 0) {
			setd(d, n, "TPM2B_PUBLIC size %zu does not match the %zu bytes that follow",
			     inner, len < 2 ? 0 : len - 2);
			return false;
		}
	}
	o->raw = buf + r.off;
	o->raw_len = len - r.off;
	o->type = (uint16_t)tpm_rd_be(&r, 2);
	o->name_alg = (uint16_t)tpm_rd_be(&r, 2);
	o->attrs = tpm_rd_be(&r, 4);
	tpm_rd_2b(&r, &l); /* authPolicy: a TPM2B_DIGEST, at most a SHA-512 digest */
	if (l > 64)
		r.bad = true;
	if (r.bad) {
		setd(d, n, "public area: truncated header");
		return false;
	}
	if (o->type != TPM2_ALG_RSA && o->type != TPM2_ALG_ECC) {
		setd(d, n, "public area: type 0x%04x is neither RSA nor ECC", o->type);
		return false;
	}
	o->sym_alg = (uint16_t)tpm_rd_be(&r, 2);
	if (o->sym_alg != TPM2_ALG_NULL) {
		/* TPMU_SYM_KEY_BITS, then TPMU_SYM_MODE, which XOR has not (Part 2 §11.1.5-11.1.7)
		 */
		o->sym_bits = (uint16_t)tpm_rd_be(&r, 2);
		if (o->sym_alg != TPM2_ALG_XOR)
			o->sym_mode = (uint16_t)tpm_rd_be(&r, 2);
	}
	rd_scheme(&r, &o->scheme, &o->scheme_hash);
	if (o->type == TPM2_ALG_RSA) {
		o->rsa_bits = (uint16_t)tpm_rd_be(&r, 2);
		o->exponent = tpm_rd_be(&r, 4);
		o->n = tpm_rd_2b(&r, &o->n_len);
	} else {
		uint16_t kdf_hash;
		o->curve = (uint16_t)tpm_rd_be(&r, 2);
		rd_scheme(&r, &o->kdf, &kdf_hash);
		o->x = tpm_rd_2b(&r, &o->x_len);
		o->y = tpm_rd_2b(&r, &o->y_len);
	}
	if (r.bad) {
		setd(d, n, "public area: truncated parameters or unique field");
		return false;
	}
	if (r.off != len) {
		setd(d, n, "public area: %zu trailing bytes", len - r.off);
		return false;
	}
	return true;
}

bool tpm_public_parse_any(const uint8_t *buf, size_t len, struct tpm_public *o, char *d, size_t n)
{
	bool is_2b = buf && len >= 2 && (size_t)(buf[0] << 8 | buf[1]) == len - 2;
	return tpm_public_parse(buf, len, is_2b, o, d, n);
}

size_t tpm_public_name(const struct tpm_public *p, uint8_t name[TPM_NAME_MAX])
{
	if (p->name_alg != TPM2_ALG_SHA256 || !p->raw)
		return 0;
	name[0] = TPM2_ALG_SHA256 >> 8;
	name[1] = TPM2_ALG_SHA256 & 0xff;
	mbedtls_sha256_ret(p->raw, p->raw_len, name + 2, 0);
	return TPM_NAME_MAX;
}

bool tpm_ek_check(const struct tpm_public *ek, char *d, size_t n)
{
	const uint32_t need = TPMA_FIXED_TPM | TPMA_FIXED_PARENT | TPMA_SENSITIVE_ORIGIN |
			      TPMA_RESTRICTED | TPMA_DECRYPT;
	if (ek->type != TPM2_ALG_RSA || ek->rsa_bits != 2048 || ek->n_len != 256) {
		setd(d, n, "EK: not an RSA-2048 key (type 0x%04x, %u bits, modulus %zu bytes)",
		     ek->type, ek->rsa_bits, ek->n_len);
		return false;
	}
	if (!(ek->n[0] & 0x80) || !(ek->n[255] & 1)) {
		setd(d, n, "EK: the modulus is not a 2048-bit odd number");
		return false;
	}
	if (ek->exponent != 0 && ek->exponent != 65537) {
		setd(d, n, "EK: exponent %u, not 65537", ek->exponent);
		return false;
	}
	if (ek->name_alg != TPM2_ALG_SHA256) {
		setd(d, n, "EK: nameAlg 0x%04x, not SHA-256", ek->name_alg);
		return false;
	}
	if ((ek->attrs & need) != need || (ek->attrs & TPMA_SIGN)) {
		setd(d, n, "EK: attributes 0x%08x are not a restricted decryption key the TPM made",
		     ek->attrs);
		return false;
	}
	if (ek->sym_alg != TPM2_ALG_AES || ek->sym_bits != 128 || ek->sym_mode != TPM2_ALG_CFB) {
		setd(d, n, "EK: symmetric 0x%04x/%u/0x%04x, not AES-128-CFB", ek->sym_alg,
		     ek->sym_bits, ek->sym_mode);
		return false;
	}
	if (ek->scheme != TPM2_ALG_NULL) {
		setd(d, n, "EK: scheme 0x%04x, a storage key has none", ek->scheme);
		return false;
	}
	return true;
}

bool tpm_ak_check(const struct tpm_public *ak, char *d, size_t n)
{
	const uint32_t need = TPMA_FIXED_TPM | TPMA_FIXED_PARENT | TPMA_SENSITIVE_ORIGIN |
			      TPMA_RESTRICTED | TPMA_SIGN;
	if (ak->name_alg != TPM2_ALG_SHA256) {
		setd(d, n, "AK: nameAlg 0x%04x, not SHA-256", ak->name_alg);
		return false;
	}
	/* A restricted signing key signs only digests the TPM computed itself
	 * (Part 1 §25.2): a quote with it cannot be forged from outside. */
	if ((ak->attrs & need) != need || (ak->attrs & TPMA_DECRYPT)) {
		setd(d, n,
		     "AK: attributes 0x%08x are not a restricted signing key that stays in the TPM "
		     "(fixedTPM, fixedParent, sensitiveDataOrigin, restricted, sign; not decrypt)",
		     ak->attrs);
		return false;
	}
	if (ak->type == TPM2_ALG_RSA && ak->exponent != 0 && ak->exponent != 65537) {
		setd(d, n, "AK: RSA exponent %u, not 65537", ak->exponent);
		return false;
	}
	if (ak->type == TPM2_ALG_ECC
		? ak->curve != TPM2_ECC_NIST_P256 || ak->x_len != 32 || ak->y_len != 32
		: ak->rsa_bits < 2048 || ak->n_len != ak->rsa_bits / 8u) {
		setd(d, n, "AK: key size (curve 0x%04x, %u bits) not supported", ak->curve,
		     ak->rsa_bits);
		return false;
	}
	return true;
}

int tpm_public_to_pk(const struct tpm_public *p, mbedtls_pk_context *pk)
{
	int ret;
	if (p->type == TPM2_ALG_RSA) {
		uint8_t e[4] = {0x00, 0x01, 0x00, 0x01};
		if (p->exponent) {
			for (int i = 0; i < 4; i++)
				e[i] = (uint8_t)(p->exponent >> (24 - 8 * i));
		}
		ret = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA));
		if (!ret)
			ret = mbedtls_rsa_import_raw(mbedtls_pk_rsa(*pk), p->n, p->n_len, NULL, 0,
						     NULL, 0, NULL, 0, e, sizeof(e));
		if (!ret)
			ret = mbedtls_rsa_complete(mbedtls_pk_rsa(*pk));
		if (!ret)
			ret = mbedtls_rsa_check_pubkey(mbedtls_pk_rsa(*pk));
		return ret;
	}
	if (p->curve != TPM2_ECC_NIST_P256)
		return -1;
	ret = mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY));
	if (ret)
		return ret;
	mbedtls_ecp_keypair *ec = mbedtls_pk_ec(*pk);
	ret = mbedtls_ecp_group_load(&ec->grp, MBEDTLS_ECP_DP_SECP256R1);
	if (!ret)
		ret = mbedtls_mpi_read_binary(&ec->Q.X, p->x, p->x_len);
	if (!ret)
		ret = mbedtls_mpi_read_binary(&ec->Q.Y, p->y, p->y_len);
	if (!ret)
		ret = mbedtls_mpi_lset(&ec->Q.Z, 1);
	if (!ret)
		ret = mbedtls_ecp_check_pubkey(&ec->grp, &ec->Q);
	return ret;
}

void tpm_kdfa_sha256(const uint8_t *key, size_t key_len, const char *label, const uint8_t *u,
		     size_t u_len, const uint8_t *v, size_t v_len, unsigned bits, uint8_t *out)
{
	const mbedtls_md_info_t *mi = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	size_t want = bits / 8, done = 0;
	uint8_t blk[32], be[4];

	/* K(i) = HMAC(key, [i]32 || Label || 00 || Context_U || Context_V || [L]32):
	 * the label is taken with its terminating NUL. */
	for (uint32_t i = 1; done < want; i++) {
		mbedtls_md_context_t c;
		mbedtls_md_init(&c);
		mbedtls_md_setup(&c, mi, 1);
		mbedtls_md_hmac_starts(&c, key, key_len);
		be[0] = (uint8_t)(i >> 24), be[1] = (uint8_t)(i >> 16), be[2] = (uint8_t)(i >> 8),
		be[3] = (uint8_t)i;
		mbedtls_md_hmac_update(&c, be, 4);
		mbedtls_md_hmac_update(&c, (const uint8_t *)label, strlen(label) + 1);
		if (u_len)
			mbedtls_md_hmac_update(&c, u, u_len);
		if (v_len)
			mbedtls_md_hmac_update(&c, v, v_len);
		be[0] = (uint8_t)(bits >> 24), be[1] = (uint8_t)(bits >> 16),
		be[2] = (uint8_t)(bits >> 8), be[3] = (uint8_t)bits;
		mbedtls_md_hmac_update(&c, be, 4);
		mbedtls_md_hmac_finish(&c, blk);
		mbedtls_md_free(&c);
		size_t k = want - done < sizeof(blk) ? want - done : sizeof(blk);
		memcpy(out + done, blk, k);
		done += k;
	}
	mbedtls_platform_zeroize(blk, sizeof(blk));
}

static void put16(uint8_t *p, size_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

size_t tpm_make_credential(const struct tpm_public *ek, const uint8_t *name, size_t name_len,
			   const uint8_t *secret, size_t secret_len,
			   int (*rng)(void *, unsigned char *, size_t), void *rng_ctx, uint8_t *out,
			   size_t cap)
{
	const mbedtls_md_info_t *mi = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
	uint8_t seed[32], sym[16], hkey[32], plain[2 + 64], iv[16] = {0};
	uint8_t *hmac, *enc;
	size_t off = 0, cred_len, iv_off = 0;
	mbedtls_rsa_context rsa;
	mbedtls_aes_context aes;
	size_t ok = 0;

	if (!ek->n || ek->n_len != 256 || !name_len || name_len > TPM_NAME_MAX || !secret_len ||
	    secret_len > 64 || !rng)
		return 0;
	cred_len = 2 + 32 + 2 + secret_len; /* TPM2B integrityHMAC || encIdentity */
	if (cap < 8 + 2 + cred_len + 2 + 256)
		return 0;
	if (rng(rng_ctx, seed, sizeof(seed)))
		return 0;

	/* The file header, then TPM2B_ID_OBJECT { TPM2B_DIGEST integrityHMAC, encIdentity }. */
	memcpy(out, "\xba\xdc\xc0\xde\x00\x00\x00\x01", 8);
	off = 8;
	put16(out + off, cred_len);
	put16(out + off + 2, 32);
	hmac = out + off + 4;
	enc = hmac + 32;
	off += 2 + cred_len;

	/* encIdentity = CFB(KDFa(seed, "STORAGE", Name, 128), IV 0, TPM2B credential). */
	put16(plain, secret_len);
	memcpy(plain + 2, secret, secret_len);
	tpm_kdfa_sha256(seed, sizeof(seed), "STORAGE", name, name_len, NULL, 0, 128, sym);
	mbedtls_aes_init(&aes);
	if (mbedtls_aes_setkey_enc(&aes, sym, 128) ||
	    mbedtls_aes_crypt_cfb128(&aes, MBEDTLS_AES_ENCRYPT, 2 + secret_len, &iv_off, iv, plain,
				     enc))
		goto out;

	/* integrityHMAC = HMAC(KDFa(seed, "INTEGRITY", -, 256), encIdentity || Name). */
	tpm_kdfa_sha256(seed, sizeof(seed), "INTEGRITY", NULL, 0, NULL, 0, 256, hkey);
	{
		mbedtls_md_context_t c;
		mbedtls_md_init(&c);
		int r = mbedtls_md_setup(&c, mi, 1);
		r = r ? r : mbedtls_md_hmac_starts(&c, hkey, sizeof(hkey));
		r = r ? r : mbedtls_md_hmac_update(&c, enc, 2 + secret_len);
		r = r ? r : mbedtls_md_hmac_update(&c, name, name_len);
		r = r ? r : mbedtls_md_hmac_finish(&c, hmac);
		mbedtls_md_free(&c);
		if (r)
			goto out;
	}

	/* TPM2B_ENCRYPTED_SECRET: the seed, RSA-OAEP(SHA-256) to the EK, label "IDENTITY\0". */
	uint8_t e[4] = {0x00, 0x01, 0x00, 0x01};
	if (ek->exponent)
		for (int i = 0; i < 4; i++)
			e[i] = (uint8_t)(ek->exponent >> (24 - 8 * i));
	mbedtls_rsa_init(&rsa, MBEDTLS_RSA_PKCS_V21, MBEDTLS_MD_SHA256);
	if (mbedtls_rsa_import_raw(&rsa, ek->n, ek->n_len, NULL, 0, NULL, 0, NULL, 0, e,
				   sizeof(e)) ||
	    mbedtls_rsa_complete(&rsa) ||
	    mbedtls_rsa_rsaes_oaep_encrypt(&rsa, rng, rng_ctx, MBEDTLS_RSA_PUBLIC,
					   (const uint8_t *)"IDENTITY", 9, sizeof(seed), seed,
					   out + off + 2)) {
		mbedtls_rsa_free(&rsa);
		goto out;
	}
	mbedtls_rsa_free(&rsa);
	put16(out + off, 256);
	ok = off + 2 + 256;
out:
	mbedtls_aes_free(&aes);
	mbedtls_platform_zeroize(seed, sizeof(seed));
	mbedtls_platform_zeroize(sym, sizeof(sym));
	mbedtls_platform_zeroize(hkey, sizeof(hkey));
	mbedtls_platform_zeroize(plain, sizeof(plain));
	return ok;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

bool svsm_manifest_find(const uint8_t *m, size_t len, const uint8_t guid[16], const uint8_t **data,
			size_t *data_len, char *d, size_t n)
{
	size_t count, found = 0;

	*data = NULL;
	*data_len = 0;
	/* 63849ebb-3d92-4670-a1ff-58f9c94b87bb, EFI byte order (attest/manifest.c). */
	static const uint8_t table[16] = {0xbb, 0x9e, 0x84, 0x63, 0x92, 0x3d, 0x70, 0x46,
					  0xa1, 0xff, 0x58, 0xf9, 0xc9, 0x4b, 0x87, 0xbb};
	if (m && len >= 24 && memcmp(m, table, 16)) {
		setd(d, n, "manifest: not an SVSM services manifest (table GUID)");
		return false;
	}
	if (!m || len < 24 || le32(m + 16) != len) {
		setd(d, n, "manifest: %zu bytes, its header says %u", len,
		     m && len >= 24 ? le32(m + 16) : 0);
		return false;
	}
	count = le32(m + 20);
	if (count > (len - 24) / 24) {
		setd(d, n, "manifest: %zu entries do not fit in %zu bytes", count, len);
		return false;
	}
	for (size_t i = 0; i < count; i++) {
		const uint8_t *e = m + 24 + 24 * i;
		uint32_t off = le32(e + 16), sz = le32(e + 20);
		if (off > len || sz > len - off) {
			setd(d, n, "manifest: entry %zu (offset %u, %u bytes) lies outside it", i,
			     off, sz);
			return false;
		}
		if (memcmp(e, guid, 16))
			continue;
		if (found++) {
			setd(d, n, "manifest: the service GUID appears twice");
			return false;
		}
		*data = m + off;
		*data_len = sz;
	}
	if (!found) {
		setd(d, n, "manifest: no entry for the service");
		return false;
	}
	return true;
}
