/*
 * SEV-SNP launch digest (MEASUREMENT) computation, snp-svsm-interfaces.md §8.
 *
 * The PSP extends LD = SHA-384(PAGE_INFO) for every page added by
 * SNP_LAUNCH_UPDATE; this file replays that chain for a given launch, byte
 * for byte as virtee/sev-snp-measure does (sevsnpmeasure/gctx.py, guest.py,
 * vmsa.py, sev_hashes.py). It is core code: no heap, no stdio, and hashing
 * goes through a caller-supplied const ops table (mbedTLS in the host
 * tools, launch_digest_mbedtls.c), so it also builds freestanding.
 */
#ifndef ATTEST_LAUNCH_DIGEST_H
#define ATTEST_LAUNCH_DIGEST_H

#include <base/types.h>
#include <attest/ovmf_meta.h>

#define LD_SHA384_LEN	 48
#define LD_SHA256_LEN	 32
#define LD_PAGE_INFO_LEN 0x70

/* SNP ABI (AMD 56860) PAGE_INFO.PAGE_TYPE, §8. */
#define LD_PAGE_NORMAL	   0x01
#define LD_PAGE_VMSA	   0x02
#define LD_PAGE_ZERO	   0x03
#define LD_PAGE_UNMEASURED 0x04
#define LD_PAGE_SECRETS	   0x05
#define LD_PAGE_CPUID	   0x06

/* Every VMSA is recorded at GPA (u64)-1, page aligned, bits 63:52 clear. */
#define LD_VMSA_GPA 0xFFFFFFFFF000ULL
#define LD_FOUR_GB  0x100000000ULL
#define LD_BSP_EIP  0xFFFFFFF0U

enum ld_err {
	LD_OK = 0,
	LD_ERR_INVAL = -1,	  /* bad argument */
	LD_ERR_ALIGN = -2,	  /* length/GPA not a multiple of 4 KiB */
	LD_ERR_RANGE = -3,	  /* GPA range overflows / does not fit */
	LD_ERR_NO_RESET = -4,	  /* firmware lacks the SEV-ES reset block */
	LD_ERR_NO_HASHES = -5,	  /* kernel given, firmware lacks the hashes section */
	LD_ERR_SECTION = -6,	  /* unknown or malformed metadata section */
	LD_ERR_NO_SVSM_INFO = -7, /* SVSM image lacks the SVSM info entry */
	LD_ERR_FIRMWARE = -8,	  /* firmware metadata could not be parsed */
};

/* The one primitive the computation needs: SHA-384 of a buffer. */
struct ld_hash_ops {
	void (*sha384)(const void *data, size_t len, uint8_t out[LD_SHA384_LEN]);
};

/* mbedTLS-backed ops (host library; launch_digest_mbedtls.c, -lmbedcrypto). */
extern const struct ld_hash_ops ld_hash_mbedtls;
/* SHA-256 helper for the kernel-hashes table (host, mbedTLS). */
void ld_sha256_mbedtls(const void *data, size_t len, uint8_t out[LD_SHA256_LEN]);

struct launch_digest {
	uint8_t ld[LD_SHA384_LEN];
	const struct ld_hash_ops *hash;
};

/* Start a chain at 48 zero bytes, or at seed (firmware-hash seed mode). */
void launch_digest_init(struct launch_digest *ld, const struct ld_hash_ops *hash,
			const uint8_t *seed);
/* One PAGE_INFO update (gctx.py _update). */
void launch_digest_update(struct launch_digest *ld, uint8_t page_type, uint64_t gpa,
			  const uint8_t contents[LD_SHA384_LEN]);
int launch_digest_normal_pages(struct launch_digest *ld, uint64_t gpa, const uint8_t *data,
			       size_t len);
int launch_digest_zero_pages(struct launch_digest *ld, uint64_t gpa, uint64_t len);
void launch_digest_secrets_page(struct launch_digest *ld, uint64_t gpa);
void launch_digest_cpuid_page(struct launch_digest *ld, uint64_t gpa);
void launch_digest_vmsa_page(struct launch_digest *ld, const uint8_t page[PAGE_SIZE]);

/*
 * QEMU's initial SNP VMSA for a vCPU starting at eip (vmsa.py VMSA, QEMU
 * column; virtee/sev vmsa.rs): the BSP at LD_BSP_EIP, APs at the reset
 * block EIP. page is fully overwritten.
 */
void launch_digest_build_vmsa(uint8_t page[PAGE_SIZE], uint32_t eip, uint64_t sev_features,
			      uint32_t vcpu_sig);
/* sev-snp-measure's VMSA_SVSM: 32-bit flat, RIP = SVSM entry (FCW 0, §8 quirk). */
void launch_digest_build_vmsa_svsm(uint8_t page[PAGE_SIZE], uint64_t rip, uint64_t sev_features,
				   uint32_t vcpu_sig);

/*
 * Kernel-hashes page (sev_hashes.py construct_page; QEMU's SEV hash table):
 * the table at offset_in_page of a zero page. Hashes are SHA-256 of the
 * kernel, the initrd (empty if none) and the command line with its NUL.
 */
int launch_digest_hashes_page(uint8_t page[PAGE_SIZE], uint32_t offset_in_page,
			      const uint8_t kernel_sha256[LD_SHA256_LEN],
			      const uint8_t initrd_sha256[LD_SHA256_LEN],
			      const uint8_t cmdline_sha256[LD_SHA256_LEN]);

/* Parameters of an OVMF-only SNP launch (guest.py snp_calc_launch_digest). */
struct ld_snp_launch {
	const uint8_t *ovmf; /* whole flash image, mapped at 4 GiB - len */
	size_t ovmf_len;
	const struct ovmf_info *info; /* ovmf_info_parse() of the same image */
	const uint8_t *seed;	      /* NULL, or the snp:ovmf-hash value (skips OVMF pages) */
	const uint8_t *hashes_page;   /* NULL (no kernel: ZERO pages) or a built page */
	uint32_t vcpus;
	uint32_t vcpu_sig;
	uint64_t guest_features;
};
int launch_digest_snp(const struct ld_hash_ops *hash, const struct ld_snp_launch *p,
		      uint8_t out[LD_SHA384_LEN]);

/* snp:ovmf-hash: LD after only the OVMF NORMAL pages. */
int launch_digest_ovmf_hash(const struct ld_hash_ops *hash, const uint8_t *ovmf, size_t ovmf_len,
			    uint8_t out[LD_SHA384_LEN]);

/* sev-snp-measure snp:svsm (guest.py svsm_calc_launch_digest, §8 SVSM mode). */
struct ld_svsm_launch {
	const uint8_t *ovmf;
	size_t ovmf_len;
	const uint8_t *svsm; /* SVSM image, ends at OVMF GPA - vars_size */
	size_t svsm_len;
	const struct ovmf_info *svsm_info; /* ovmf_info_parse() of the SVSM image */
	uint64_t vars_size;
	uint32_t vcpus;
	uint32_t vcpu_sig;
	uint64_t guest_features;
};
int launch_digest_svsm(const struct ld_hash_ops *hash, const struct ld_svsm_launch *p,
		       uint8_t out[LD_SHA384_LEN]);

/* A PT_LOAD segment of an ELF image (attest/elf_load.c), as csvsm-igvm
 * lays csvsm's ELF into an IGVM file (attest/igvm_csvsm.c). */
struct ld_segment {
	uint64_t paddr;
	const uint8_t *data; /* filesz bytes */
	uint64_t filesz;
	uint64_t memsz;
};
const char *launch_digest_strerror(int err);

#endif
