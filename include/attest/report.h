/*
 * SEV-SNP ATTESTATION_REPORT (AMD pub. 56860, snp-svsm-interfaces.md §7):
 * the 1184-byte layout, pinned at compile time, and a strict decoder.
 *
 * The report reaches csvsm (from the PSP via the hypervisor-shared page) and
 * csvsm-verify (from a file) as untrusted bytes, so the decoder works on a
 * caller-owned copy, never allocates, never prints, checks every size, and
 * returns an error code instead of trusting a field it does not understand.
 * It is core code (image and host library).
 */
#ifndef ATTEST_REPORT_H
#define ATTEST_REPORT_H

#include <base/types.h>

#define SNP_REPORT_SIZE		       0x4A0u /* 1184 bytes */
#define SNP_REPORT_SIGNED_LEN	       0x2A0u /* signature covers bytes 0x000-0x29F */
#define SNP_REPORT_SIG_COMP	       72u    /* R and S, little-endian, zero-extended */
#define SNP_REPORT_P384_LEN	       48u    /* meaningful bytes of R and S */
#define SNP_REPORT_VERSION_MIN	       2u
#define SNP_REPORT_VERSION_MAX	       5u
#define SNP_SIG_ALGO_ECDSA_P384_SHA384 1u

/* GUEST_POLICY bits (§7, go-sev-guest ParseSnpPolicy). */
#define SNP_POLICY_ABI_MINOR_MASK    0xFFull
#define SNP_POLICY_ABI_MAJOR_SHIFT   8
#define SNP_POLICY_SMT		     (1ull << 16)
#define SNP_POLICY_RESERVED1	     (1ull << 17) /* must be 1 */
#define SNP_POLICY_MIGRATE_MA	     (1ull << 18)
#define SNP_POLICY_DEBUG	     (1ull << 19)
#define SNP_POLICY_SINGLE_SOCKET     (1ull << 20)
#define SNP_POLICY_CXL_ALLOW	     (1ull << 21)
#define SNP_POLICY_MEM_AES_256_XTS   (1ull << 22)
#define SNP_POLICY_RAPL_DIS	     (1ull << 23)
#define SNP_POLICY_CIPHERTEXT_HIDING (1ull << 24)
#define SNP_POLICY_PAGE_SWAP_DISABLE (1ull << 25)
#define SNP_POLICY_MBZ_MASK	     (~0ull << 26)

/* PLATFORM_INFO bits (§7). Unknown bits are tolerated: firmware adds them. */
#define SNP_PINFO_SMT_EN	       (1ull << 0)
#define SNP_PINFO_TSME_EN	       (1ull << 1)
#define SNP_PINFO_ECC_EN	       (1ull << 2)
#define SNP_PINFO_RAPL_DIS	       (1ull << 3)
#define SNP_PINFO_CIPHERTEXT_HIDING_EN (1ull << 4)
#define SNP_PINFO_ALIAS_CHECK_COMPLETE (1ull << 5)
#define SNP_PINFO_TIO_EN	       (1ull << 7)

/* Signer info word at 0x048 (§7). */
#define SNP_SIGNER_AUTHOR_KEY_EN     (1u << 0)
#define SNP_SIGNER_MASK_CHIP_KEY     (1u << 1)
#define SNP_SIGNER_SIGNING_KEY_SHIFT 2
#define SNP_SIGNER_SIGNING_KEY_MASK  (7u << 2)
#define SNP_SIGNER_MBZ_MASK	     (~0u << 5)
#define SNP_SIGNING_KEY_VCEK	     0u
#define SNP_SIGNING_KEY_VLEK	     1u
#define SNP_SIGNING_KEY_NONE	     7u

/* The raw layout. Byte arrays only where the field is not an integer. */
struct snp_report_raw {
	uint32_t version;		    /* 0x000 */
	uint32_t guest_svn;		    /* 0x004 */
	uint64_t policy;		    /* 0x008 */
	uint8_t family_id[16];		    /* 0x010 */
	uint8_t image_id[16];		    /* 0x020 */
	uint32_t vmpl;			    /* 0x030 */
	uint32_t signature_algo;	    /* 0x034 */
	uint64_t current_tcb;		    /* 0x038 */
	uint64_t platform_info;		    /* 0x040 */
	uint32_t signer_info;		    /* 0x048 */
	uint32_t reserved_04c;		    /* 0x04C */
	uint8_t report_data[64];	    /* 0x050 */
	uint8_t measurement[48];	    /* 0x090 */
	uint8_t host_data[32];		    /* 0x0C0 */
	uint8_t id_key_digest[48];	    /* 0x0E0 */
	uint8_t author_key_digest[48];	    /* 0x110 */
	uint8_t report_id[32];		    /* 0x140 */
	uint8_t report_id_ma[32];	    /* 0x160 */
	uint64_t reported_tcb;		    /* 0x180 */
	uint8_t cpuid_fam_id;		    /* 0x188 (v3+, reserved in v2) */
	uint8_t cpuid_mod_id;		    /* 0x189 */
	uint8_t cpuid_step;		    /* 0x18A */
	uint8_t reserved_18b[21];	    /* 0x18B */
	uint8_t chip_id[64];		    /* 0x1A0 */
	uint64_t committed_tcb;		    /* 0x1E0 */
	uint8_t current_build;		    /* 0x1E8 */
	uint8_t current_minor;		    /* 0x1E9 */
	uint8_t current_major;		    /* 0x1EA */
	uint8_t reserved_1eb;		    /* 0x1EB */
	uint8_t committed_build;	    /* 0x1EC */
	uint8_t committed_minor;	    /* 0x1ED */
	uint8_t committed_major;	    /* 0x1EE */
	uint8_t reserved_1ef;		    /* 0x1EF */
	uint64_t launch_tcb;		    /* 0x1F0 */
	uint64_t launch_mit_vector;	    /* 0x1F8 (v5, reserved earlier) */
	uint64_t current_mit_vector;	    /* 0x200 (v5, reserved earlier) */
	uint8_t reserved_208[0x98];	    /* 0x208 */
	uint8_t sig_r[SNP_REPORT_SIG_COMP]; /* 0x2A0 */
	uint8_t sig_s[SNP_REPORT_SIG_COMP]; /* 0x2E8 */
	uint8_t reserved_330[0x170];	    /* 0x330 */
} __packed;

#define SNP_REPORT_OFF(f, o)                                                                       \
	_Static_assert(offsetof(struct snp_report_raw, f) == (o),                                  \
		       "SNP ABI 56860 ATTESTATION_REPORT: " #f)
SNP_REPORT_OFF(guest_svn, 0x004);
SNP_REPORT_OFF(policy, 0x008);
SNP_REPORT_OFF(family_id, 0x010);
SNP_REPORT_OFF(image_id, 0x020);
SNP_REPORT_OFF(vmpl, 0x030);
SNP_REPORT_OFF(signature_algo, 0x034);
SNP_REPORT_OFF(current_tcb, 0x038);
SNP_REPORT_OFF(platform_info, 0x040);
SNP_REPORT_OFF(signer_info, 0x048);
SNP_REPORT_OFF(reserved_04c, 0x04C);
SNP_REPORT_OFF(report_data, 0x050);
SNP_REPORT_OFF(measurement, 0x090);
SNP_REPORT_OFF(host_data, 0x0C0);
SNP_REPORT_OFF(id_key_digest, 0x0E0);
SNP_REPORT_OFF(author_key_digest, 0x110);
SNP_REPORT_OFF(report_id, 0x140);
SNP_REPORT_OFF(report_id_ma, 0x160);
SNP_REPORT_OFF(reported_tcb, 0x180);
SNP_REPORT_OFF(cpuid_fam_id, 0x188);
SNP_REPORT_OFF(reserved_18b, 0x18B);
SNP_REPORT_OFF(chip_id, 0x1A0);
SNP_REPORT_OFF(committed_tcb, 0x1E0);
SNP_REPORT_OFF(current_build, 0x1E8);
SNP_REPORT_OFF(committed_build, 0x1EC);
SNP_REPORT_OFF(launch_tcb, 0x1F0);
SNP_REPORT_OFF(launch_mit_vector, 0x1F8);
SNP_REPORT_OFF(current_mit_vector, 0x200);
SNP_REPORT_OFF(reserved_208, 0x208);
SNP_REPORT_OFF(sig_r, 0x2A0);
SNP_REPORT_OFF(sig_s, 0x2E8);
SNP_REPORT_OFF(reserved_330, 0x330);
_Static_assert(sizeof(struct snp_report_raw) == SNP_REPORT_SIZE,
	       "SNP ABI 56860 ATTESTATION_REPORT is 0x4A0 bytes");

/* Product lines; the TCB_VERSION layout and the AMD root depend on it. */
enum snp_product {
	SNP_PRODUCT_UNKNOWN = 0,
	SNP_PRODUCT_MILAN,
	SNP_PRODUCT_GENOA, /* also Siena (Zen 4c, family 0x19 model 0xA0) */
	SNP_PRODUCT_TURIN,
};

/* TCB_VERSION decoded (§7 table). fmc is meaningful only when has_fmc. */
struct snp_tcb {
	uint8_t bl, tee, snp, ucode, fmc;
	bool has_fmc;
};

struct snp_policy {
	uint8_t abi_minor, abi_major;
	bool smt, migrate_ma, debug, single_socket, cxl_allow, mem_aes_256_xts, rapl_dis,
	    ciphertext_hiding, page_swap_disable;
};

struct snp_signer_info {
	bool author_key_en, mask_chip_key;
	uint8_t signing_key; /* SNP_SIGNING_KEY_* */
};

/* A decoded report: a private copy of the bytes plus the decoded words. */
struct snp_report {
	struct snp_report_raw raw;
	enum snp_product product; /* from CPUID_FAM_ID/MOD_ID, v3+; else UNKNOWN */
	struct snp_policy policy;
	struct snp_signer_info signer;
};

enum snp_report_err {
	SNP_REPORT_OK = 0,
	SNP_REPORT_ERR_INVAL = -1,     /* NULL argument */
	SNP_REPORT_ERR_SIZE = -2,      /* not exactly 1184 bytes */
	SNP_REPORT_ERR_VERSION = -3,   /* VERSION outside 2..5 */
	SNP_REPORT_ERR_SIG_ALGO = -4,  /* SIGNATURE_ALGO is not ECDSA P-384 */
	SNP_REPORT_ERR_POLICY = -5,    /* POLICY bit 17 clear or MBZ bits set */
	SNP_REPORT_ERR_SIGNER = -6,    /* signer-info MBZ bits or unknown key */
	SNP_REPORT_ERR_RESERVED = -7,  /* a reserved byte is not zero */
	SNP_REPORT_ERR_SIGNATURE = -8, /* R or S high bytes (48..71) not zero */
	SNP_REPORT_ERR_VMPL = -9,      /* VMPL above 3 */
};

/*
 * Copy and decode a report. Only the size is checked here, so a report that
 * breaks a field rule can still be shown; snp_report_check() applies the
 * rules. snp_report_parse() does both.
 */
int snp_report_decode(const void *buf, size_t len, struct snp_report *out);
int snp_report_check(const struct snp_report *r);
int snp_report_parse(const void *buf, size_t len, struct snp_report *out);

/* Offset of the first non-zero reserved byte for this version, or -1. */
long snp_report_first_reserved_nonzero(const struct snp_report *r);

/* Product line from the report's CPUID_FAM_ID/MOD_ID (v3+). */
enum snp_product snp_report_product_from_cpuid(uint8_t family, uint8_t model);

/* TCB_VERSION decode for a product line (Turin has FMC and a new order). */
void snp_tcb_decode(uint64_t raw, enum snp_product product, struct snp_tcb *out);
/* true when every component of a is >= the one in min (fmc only if both have it). */
bool snp_tcb_at_least(const struct snp_tcb *a, const struct snp_tcb *min);

void snp_policy_decode(uint64_t raw, struct snp_policy *out);
void snp_signer_info_decode(uint32_t raw, struct snp_signer_info *out);

const char *snp_product_name(enum snp_product p); /* "Milan", ... or "unknown" */
const char *snp_report_strerror(int err);

#endif
