/*
 * csvsm guest-side probe: the SVSM client that runs inside OVMF as a gnu-efi
 * application. Everything the probe knows about the interfaces is written
 * here again on purpose, from shared/reference/snp-svsm-interfaces.md,
 * instead of being taken from the include/snp headers: the probe is an independent
 * second implementation of the client side, so a wrong constant or offset
 * in csvsm's own headers shows up as a failing check instead of being
 * shared by both ends.
 */
#ifndef PROBE_H
#define PROBE_H

#include <efi.h>
#include <efilib.h>

typedef UINT8 u8;
typedef UINT16 u16;
typedef UINT32 u32;
typedef UINT64 u64;

#define PAGE_SIZE 4096ULL
#define SZ_2M	  0x200000ULL
#define FOUR_GIB  0x100000000ULL

/* --- SVSM protocol (58019; reference §1) ---------------------------------- */
#define SVSM_CALL(proto, id) (((u64)(proto) << 32) | (u32)(id))

#define PROTO_CORE   0
#define PROTO_ATTEST 1
#define PROTO_VTPM   2

#define CORE_REMAP_CA	    0
#define CORE_PVALIDATE	    1
#define CORE_CREATE_VCPU    2
#define CORE_DELETE_VCPU    3
#define CORE_DEPOSIT_MEM    4
#define CORE_WITHDRAW_MEM   5
#define CORE_QUERY_PROTOCOL 6
#define CORE_CONFIGURE_VTOM 7

#define VTPM_QUERY 0
#define VTPM_CMD   1

/* Result codes, reference §1.3. */
#define SVSM_SUCCESS			 0x00000000ULL
#define SVSM_ERR_INCOMPLETE		 0x80000000ULL
#define SVSM_ERR_UNSUPPORTED_PROTOCOL	 0x80000001ULL
#define SVSM_ERR_UNSUPPORTED_CALL	 0x80000002ULL
#define SVSM_ERR_INVALID_ADDRESS	 0x80000003ULL
#define SVSM_ERR_INVALID_FORMAT		 0x80000004ULL
#define SVSM_ERR_INVALID_PARAMETER	 0x80000005ULL
#define SVSM_ERR_INVALID_REQUEST	 0x80000006ULL
#define SVSM_ERR_BUSY			 0x80000007ULL
#define SVSM_PVALIDATE_FAIL_SIZEMISMATCH 0x80001006ULL
#define SVSM_PVALIDATE_FAIL_NO_CHANGE	 0x80001010ULL

/* Calling area, reference §1.2. */
#define CA_CALL_PENDING 0x000
#define CA_MEM_AVAIL	0x001
#define CA_BUFFER	0x008

/* PVALIDATE request, reference §1.5: {u16 entries; u16 next; u32 rsvd; u64 entry[]}. */
#define PVAL_HDR_SIZE  8
#define PVAL_SIZE_4K   0x0ULL
#define PVAL_SIZE_2M   0x1ULL
#define PVAL_VALIDATE  (1ULL << 2)
#define PVAL_IGNORE_CF (1ULL << 3)
#define PVAL_MAX_IN_CA 510

/* vTPM platform commands, reference §3. */
#define VTPM_PLAT_POWER_OFF 2
#define VTPM_PLAT_SEND_CMD  8
#define VTPM_REQ_HDR	    9 /* u32 cmd; u8 locality; u32 size (packed) */
#define VTPM_RSP_HDR	    4 /* u32 size */

/* --- Secrets page (reference §6.4 / §1.6) -------------------------------- */
#define SECRETS_VMPCK0		 0x020 /* VMPCK0..3 at 0x20, 0x40, 0x60, 0x80 */
#define SECRETS_VMPCK_SIZE	 32
#define SECRETS_SVSM_BASE	 0x140
#define SECRETS_SVSM_SIZE	 0x148
#define SECRETS_SVSM_CAA	 0x150
#define SECRETS_SVSM_MAX_VERSION 0x158
#define SECRETS_SVSM_GUEST_VMPL	 0x15C

/* --- GHCB (56421; reference §4.1, §4.2) ---------------------------------- */
#define MSR_GHCB		 0xC0010130u
#define GHCB_MSR_INFO_MASK	 0xFFFULL
#define GHCB_MSR_REG_GPA_REQ	 0x012ULL
#define GHCB_MSR_REG_GPA_RESP	 0x013ULL
#define GHCB_MSR_VMPL_REQ	 0x016ULL
#define GHCB_MSR_VMPL_RESP	 0x017ULL
#define SVM_VMGEXIT_SNP_RUN_VMPL 0x80000018ULL

#define GHCB_OFF_RAX		0x1F8
#define GHCB_OFF_RCX		0x308
#define GHCB_OFF_SW_EXIT_CODE	0x390
#define GHCB_OFF_SW_EXIT_INFO_1 0x398
#define GHCB_OFF_SW_EXIT_INFO_2 0x3A0
#define GHCB_OFF_VALID_BITMAP	0x3F0
#define GHCB_OFF_PROTO_VERSION	0xFFA
#define GHCB_OFF_USAGE		0xFFC
#define GHCB_PROTOCOL_VERSION	2

/* --- OVMF footer table and SEV metadata (reference §8, §8.1) ------------- */
#define OVMF_FOOTER_SKIP	  32 /* the table ends 32 bytes before the image end */
#define OVMF_ENTRY_HDR		  18 /* u16 size + GUID, after an entry's data */
#define SEV_META_ITEM_SNP_SECRETS 2

/* --- asm helpers (probe_asm.S) ------------------------------------------- */
struct probe_regs {
	u64 rax, rcx, rdx, r8, r9; /* offsets 0, 8, 16, 24, 32 in probe_asm.S */
};

/* Loads RAX/RCX/RDX/R8/R9 from *r, VMGEXIT, stores them back into *r,
 * then xchg(*call_pending, 0) and returns the old value (Linux
 * svsm_issue_call). The caller sets *call_pending and the GHCB MSR. */
u8 probe_svsm_issue(struct probe_regs *r, volatile u8 *call_pending, u8 *xmm, int ymm);
/* When set, every SVSM call loads XMM0..15 from g_xmm_check[0..255] and stores them at [256..511];
 * with g_ymm_check also set, YMM0..15 from [0..511], stored at [512..1023]. */
extern u8 *g_xmm_check;
extern int g_ymm_check;
void probe_enable_avx(void);
u64 probe_read_cr0(void);
u64 probe_read_cr4(void);
u32 probe_read_cs(void);
u32 probe_read_ds(void);
void probe_sgdt(void *desc10);
void probe_ap_entry(void);
/* A GHCB-page VMGEXIT with any exit code: returns sw_exit_info_1 after it (0 = OK). */
u64 probe_ghcb_exit(u64 code, u64 info1, u64 info2, u64 rax);
void probe_vmgexit(void);
u64 probe_rdmsr(u32 msr);
void probe_wrmsr(u32 msr, u64 val);
u64 probe_irq_save(void);	    /* pushfq; cli; returns the old RFLAGS */
void probe_irq_restore(u64 rflags); /* popfq */
u64 probe_read_cr3(void);
u64 probe_rmpadjust(u64 va, u64 size_2m, u64 attrs);

/*
 * Fault-protected accesses. The #GP/#PF handler (probe.c) resumes at
 * probe_fault_resume. try_read preloads RAX with `sentinel` and returns RAX,
 * so a blocked read returns the sentinel unchanged.
 */
u64 probe_try_read64(u64 addr, u64 sentinel);
void probe_try_write64(u64 addr, u64 val);
void probe_try_exec(u64 addr);
extern u8 probe_try_read64_fault[], probe_try_read64_resume[];
extern u8 probe_try_write64_fault[], probe_try_write64_resume[];
extern u8 probe_try_exec_resume[];

/* --- SHA-256 (sha256.c) --------------------------------------------------- */
struct sha256_ctx {
	u32 h[8];
	u64 len;
	u8 buf[64];
	u32 fill;
};
void sha256_init(struct sha256_ctx *c);
void sha256_update(struct sha256_ctx *c, const void *data, UINTN len);
void sha256_final(struct sha256_ctx *c, u8 out[32]);
void sha256(const void *data, UINTN len, u8 out[32]);

#endif
