/*
 * ATTESTATION_REPORT decoding and field rules (AMD 56860, interfaces §7).
 *
 * Core code: runs in the module on reports relayed by the hypervisor and on
 * the host in csvsm-verify. The input is hostile: the caller's buffer is
 * read once (copied into struct snp_report), sizes are checked before the
 * copy, and each rule is a separate error code so a verifier can name it.
 */
#include <attest/report.h>
#include <base/string.h>

int snp_report_decode(const void *buf, size_t len, struct snp_report *out)
{
	if (!buf || !out)
		return SNP_REPORT_ERR_INVAL;
	if (len != SNP_REPORT_SIZE)
		return SNP_REPORT_ERR_SIZE;

	memcpy(&out->raw, buf, SNP_REPORT_SIZE); /* the one read of the input */
	const struct snp_report_raw *raw = &out->raw;

	out->product = SNP_PRODUCT_UNKNOWN;
	if (raw->version >= 3)
		out->product = snp_report_product_from_cpuid(raw->cpuid_fam_id, raw->cpuid_mod_id);
	snp_policy_decode(raw->policy, &out->policy);
	snp_signer_info_decode(raw->signer_info, &out->signer);
	return SNP_REPORT_OK;
}

static long first_nonzero(const uint8_t *base, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (base[i])
			return (long)i;
	return -1;
}

long snp_report_first_reserved_nonzero(const struct snp_report *r)
{
	const uint8_t *b = (const uint8_t *)&r->raw;
	uint32_t v = r->raw.version;
	/* Reserved ranges [from, to) per version (§7 table). */
	const size_t ranges[][2] = {
	    {0x04C, 0x050}, {v >= 3 ? 0x18B : 0x188, 0x1A0}, {0x1EB, 0x1EC},
	    {0x1EF, 0x1F0}, {v >= 5 ? 0x208 : 0x1F8, 0x2A0}, {0x330, 0x4A0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(ranges); i++) {
		long off = first_nonzero(b, ranges[i][0], ranges[i][1]);
		if (off >= 0)
			return off;
	}
	return -1;
}

int snp_report_check(const struct snp_report *r)
{
	if (!r)
		return SNP_REPORT_ERR_INVAL;
	const struct snp_report_raw *raw = &r->raw;

	if (raw->version < SNP_REPORT_VERSION_MIN || raw->version > SNP_REPORT_VERSION_MAX)
		return SNP_REPORT_ERR_VERSION;
	if (raw->signature_algo != SNP_SIG_ALGO_ECDSA_P384_SHA384)
		return SNP_REPORT_ERR_SIG_ALGO;
	if (!(raw->policy & SNP_POLICY_RESERVED1) || (raw->policy & SNP_POLICY_MBZ_MASK))
		return SNP_REPORT_ERR_POLICY;
	if (raw->signer_info & SNP_SIGNER_MBZ_MASK)
		return SNP_REPORT_ERR_SIGNER;
	if (r->signer.signing_key != SNP_SIGNING_KEY_VCEK &&
	    r->signer.signing_key != SNP_SIGNING_KEY_VLEK &&
	    r->signer.signing_key != SNP_SIGNING_KEY_NONE)
		return SNP_REPORT_ERR_SIGNER;
	if (raw->vmpl > 3)
		return SNP_REPORT_ERR_VMPL;
	if (snp_report_first_reserved_nonzero(r) >= 0)
		return SNP_REPORT_ERR_RESERVED;
	/* P-384 R and S are < 2^384: the zero extension must be zero. */
	if (first_nonzero(raw->sig_r, SNP_REPORT_P384_LEN, SNP_REPORT_SIG_COMP) >= 0 ||
	    first_nonzero(raw->sig_s, SNP_REPORT_P384_LEN, SNP_REPORT_SIG_COMP) >= 0)
		return SNP_REPORT_ERR_SIGNATURE;
	return SNP_REPORT_OK;
}

int snp_report_parse(const void *buf, size_t len, struct snp_report *out)
{
	int err = snp_report_decode(buf, len, out);
	if (err)
		return err;
	return snp_report_check(out);
}

/* go-sev-guest kds.ProductLine / abi: family 0x19 Milan (model 0x0x),
 * Genoa (0x1x) and Siena (0xAx, the Genoa chain); family 0x1A Turin. */
enum snp_product snp_report_product_from_cpuid(uint8_t family, uint8_t model)
{
	if (family == 0x19) {
		if (model <= 0x0F)
			return SNP_PRODUCT_MILAN;
		if ((model >= 0x10 && model <= 0x1F) || (model >= 0xA0 && model <= 0xAF))
			return SNP_PRODUCT_GENOA;
	} else if (family == 0x1A) {
		if (model <= 0x1F)
			return SNP_PRODUCT_TURIN;
	}
	return SNP_PRODUCT_UNKNOWN;
}

void snp_tcb_decode(uint64_t raw, enum snp_product product, struct snp_tcb *out)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(raw >> (8 * i));
	memset(out, 0, sizeof(*out));
	if (product == SNP_PRODUCT_TURIN) {
		/* Turin: FMC, BL, TEE, SNP, reserved[3], UCODE. */
		out->fmc = b[0];
		out->bl = b[1];
		out->tee = b[2];
		out->snp = b[3];
		out->ucode = b[7];
		out->has_fmc = true;
	} else {
		/* Milan/Genoa: BL, TEE, reserved[4], SNP, UCODE. */
		out->bl = b[0];
		out->tee = b[1];
		out->snp = b[6];
		out->ucode = b[7];
	}
}

bool snp_tcb_at_least(const struct snp_tcb *a, const struct snp_tcb *min)
{
	if (a->bl < min->bl || a->tee < min->tee || a->snp < min->snp || a->ucode < min->ucode)
		return false;
	if (a->has_fmc && min->has_fmc && a->fmc < min->fmc)
		return false;
	return true;
}

void snp_policy_decode(uint64_t raw, struct snp_policy *out)
{
	out->abi_minor = (uint8_t)(raw & SNP_POLICY_ABI_MINOR_MASK);
	out->abi_major = (uint8_t)(raw >> SNP_POLICY_ABI_MAJOR_SHIFT);
	out->smt = raw & SNP_POLICY_SMT;
	out->migrate_ma = raw & SNP_POLICY_MIGRATE_MA;
	out->debug = raw & SNP_POLICY_DEBUG;
	out->single_socket = raw & SNP_POLICY_SINGLE_SOCKET;
	out->cxl_allow = raw & SNP_POLICY_CXL_ALLOW;
	out->mem_aes_256_xts = raw & SNP_POLICY_MEM_AES_256_XTS;
	out->rapl_dis = raw & SNP_POLICY_RAPL_DIS;
	out->ciphertext_hiding = raw & SNP_POLICY_CIPHERTEXT_HIDING;
	out->page_swap_disable = raw & SNP_POLICY_PAGE_SWAP_DISABLE;
}

void snp_signer_info_decode(uint32_t raw, struct snp_signer_info *out)
{
	out->author_key_en = raw & SNP_SIGNER_AUTHOR_KEY_EN;
	out->mask_chip_key = raw & SNP_SIGNER_MASK_CHIP_KEY;
	out->signing_key =
	    (uint8_t)((raw & SNP_SIGNER_SIGNING_KEY_MASK) >> SNP_SIGNER_SIGNING_KEY_SHIFT);
}

const char *snp_product_name(enum snp_product p)
{
	switch (p) {
	case SNP_PRODUCT_MILAN:
		return "Milan";
	case SNP_PRODUCT_GENOA:
		return "Genoa";
	case SNP_PRODUCT_TURIN:
		return "Turin";
	default:
		return "unknown";
	}
}

const char *snp_report_strerror(int err)
{
	switch (err) {
	case SNP_REPORT_OK:
		return "ok";
	case SNP_REPORT_ERR_INVAL:
		return "invalid argument";
	case SNP_REPORT_ERR_SIZE:
		return "report is not 1184 bytes";
	case SNP_REPORT_ERR_VERSION:
		return "unknown report version (2..5 known)";
	case SNP_REPORT_ERR_SIG_ALGO:
		return "SIGNATURE_ALGO is not 1 (ECDSA P-384/SHA-384)";
	case SNP_REPORT_ERR_POLICY:
		return "POLICY bit 17 clear or bits 63:26 set";
	case SNP_REPORT_ERR_SIGNER:
		return "signer info MBZ bits set or unknown SIGNING_KEY";
	case SNP_REPORT_ERR_RESERVED:
		return "reserved byte not zero";
	case SNP_REPORT_ERR_SIGNATURE:
		return "signature R/S bytes 48..71 not zero";
	case SNP_REPORT_ERR_VMPL:
		return "VMPL above 3";
	default:
		return "unknown error";
	}
}
