/*
 * AMD SVM: the VMCB (AMD64 APM vol. 2, appendix B, tables B-1 and B-2) and
 * the exit codes the SNP machine handles. The save area uses the same
 * offsets as the SEV-ES VMSA for the fields both have (reference §5.3).
 */
#ifndef ARCH_X86_SVM_H
#define ARCH_X86_SVM_H

#include "base/types.h"

struct vmcb_seg {
	uint16_t sel;
	uint16_t attrib;
	uint32_t limit;
	uint64_t base;
};
_Static_assert(sizeof(struct vmcb_seg) == 16, "APM vol. 2 table B-2: 16-byte segment");

struct vmcb_control {
	uint16_t intercept_cr_read;    /* 0x000 */
	uint16_t intercept_cr_write;   /* 0x002 */
	uint16_t intercept_dr_read;    /* 0x004 */
	uint16_t intercept_dr_write;   /* 0x006 */
	uint32_t intercept_exceptions; /* 0x008 */
	uint32_t intercept_misc1;      /* 0x00C */
	uint32_t intercept_misc2;      /* 0x010 */
	uint32_t intercept_misc3;      /* 0x014 */
	uint8_t rsvd0[0x3C - 0x18];
	uint16_t pause_filter_thresh; /* 0x03C */
	uint16_t pause_filter_count;  /* 0x03E */
	uint64_t iopm_base_pa;	      /* 0x040 */
	uint64_t msrpm_base_pa;	      /* 0x048 */
	uint64_t tsc_offset;	      /* 0x050 */
	uint32_t asid;		      /* 0x058 */
	uint8_t tlb_control;	      /* 0x05C */
	uint8_t rsvd1[3];
	uint64_t vintr;		 /* 0x060 */
	uint64_t int_state;	 /* 0x068 */
	uint64_t exit_code;	 /* 0x070 */
	uint64_t exit_info_1;	 /* 0x078 */
	uint64_t exit_info_2;	 /* 0x080 */
	uint64_t exit_int_info;	 /* 0x088 */
	uint64_t nested_ctl;	 /* 0x090 */
	uint64_t avic_vapic_bar; /* 0x098 */
	uint64_t ghcb_gpa;	 /* 0x0A0 */
	uint64_t event_inj;	 /* 0x0A8 */
	uint64_t nested_cr3;	 /* 0x0B0 */
	uint64_t virt_ext;	 /* 0x0B8 */
	uint32_t clean_bits;	 /* 0x0C0 */
	uint32_t rsvd2;
	uint64_t next_rip; /* 0x0C8 */
	uint8_t insn_len;  /* 0x0D0 */
	uint8_t insn_bytes[15];
	uint8_t rsvd3[0x400 - 0xE0];
};
_Static_assert(sizeof(struct vmcb_control) == 0x400, "APM vol. 2 table B-1");
_Static_assert(offsetof(struct vmcb_control, iopm_base_pa) == 0x040, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, asid) == 0x058, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, exit_code) == 0x070, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, nested_ctl) == 0x090, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, event_inj) == 0x0A8, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, nested_cr3) == 0x0B0, "APM table B-1");
_Static_assert(offsetof(struct vmcb_control, next_rip) == 0x0C8, "APM table B-1");

struct vmcb_save {
	struct vmcb_seg es, cs, ss, ds, fs, gs, gdtr, ldtr, idtr, tr; /* 0x000 */
	uint8_t rsvd0[0xCB - 0xA0];
	uint8_t cpl; /* 0x0CB */
	uint32_t rsvd1;
	uint64_t efer; /* 0x0D0 */
	uint8_t rsvd2[0x148 - 0xD8];
	uint64_t cr4;	 /* 0x148 */
	uint64_t cr3;	 /* 0x150 */
	uint64_t cr0;	 /* 0x158 */
	uint64_t dr7;	 /* 0x160 */
	uint64_t dr6;	 /* 0x168 */
	uint64_t rflags; /* 0x170 */
	uint64_t rip;	 /* 0x178 */
	uint8_t rsvd3[0x1D8 - 0x180];
	uint64_t rsp; /* 0x1D8 */
	uint8_t rsvd4[0x1F8 - 0x1E0];
	uint64_t rax;		 /* 0x1F8 */
	uint64_t star;		 /* 0x200 */
	uint64_t lstar;		 /* 0x208 */
	uint64_t cstar;		 /* 0x210 */
	uint64_t sfmask;	 /* 0x218 */
	uint64_t kernel_gs_base; /* 0x220 */
	uint64_t sysenter_cs;	 /* 0x228 */
	uint64_t sysenter_esp;	 /* 0x230 */
	uint64_t sysenter_eip;	 /* 0x238 */
	uint64_t cr2;		 /* 0x240 */
	uint8_t rsvd5[0x268 - 0x248];
	uint64_t g_pat; /* 0x268 */
	uint8_t rsvd6[0xC00 - 0x270];
};
_Static_assert(offsetof(struct vmcb_save, cpl) == 0x0CB, "APM table B-2 (VMCB offset 0x4CB)");
_Static_assert(offsetof(struct vmcb_save, efer) == 0x0D0, "APM table B-2 (0x4D0)");
_Static_assert(offsetof(struct vmcb_save, cr4) == 0x148, "APM table B-2 (0x548)");
_Static_assert(offsetof(struct vmcb_save, rip) == 0x178, "APM table B-2 (0x578)");
_Static_assert(offsetof(struct vmcb_save, rsp) == 0x1D8, "APM table B-2 (0x5D8)");
_Static_assert(offsetof(struct vmcb_save, rax) == 0x1F8, "APM table B-2 (0x5F8)");
_Static_assert(offsetof(struct vmcb_save, cr2) == 0x240, "APM table B-2 (0x640)");
_Static_assert(offsetof(struct vmcb_save, g_pat) == 0x268, "APM table B-2 (0x668)");

struct vmcb {
	struct vmcb_control ctl;
	struct vmcb_save save;
} __aligned(4096);
_Static_assert(sizeof(struct vmcb) == 4096, "one page");
_Static_assert(offsetof(struct vmcb, save) == 0x400, "APM: save area at 0x400");

/* intercept_misc1 bits (APM table B-1, offset 0x00C) */
#define SVM_INTERCEPT_INTR	(1u << 0)
#define SVM_INTERCEPT_NMI	(1u << 1)
#define SVM_INTERCEPT_SMI	(1u << 2)
#define SVM_INTERCEPT_INIT	(1u << 3)
#define SVM_INTERCEPT_CPUID	(1u << 18)
#define SVM_INTERCEPT_HLT	(1u << 24)
#define SVM_INTERCEPT_INVLPGA	(1u << 26)
#define SVM_INTERCEPT_IOIO_PROT (1u << 27)
#define SVM_INTERCEPT_MSR_PROT	(1u << 28)
#define SVM_INTERCEPT_SHUTDOWN	(1u << 31)
/* intercept_misc2 bits (offset 0x010) */
#define SVM_INTERCEPT_VMRUN   (1u << 0)
#define SVM_INTERCEPT_VMMCALL (1u << 1)
#define SVM_INTERCEPT_VMLOAD  (1u << 2)
#define SVM_INTERCEPT_VMSAVE  (1u << 3)
#define SVM_INTERCEPT_STGI    (1u << 4)
#define SVM_INTERCEPT_CLGI    (1u << 5)
#define SVM_INTERCEPT_SKINIT  (1u << 6)
#define SVM_INTERCEPT_XSETBV  (1u << 13)

#define SVM_NESTED_CTL_NP_ENABLE 1ULL

/* Exit codes (APM appendix C). */
#define SVM_EXIT_EXCP_BASE  0x040
#define SVM_EXIT_INTR	    0x060
#define SVM_EXIT_NMI	    0x061
#define SVM_EXIT_SMI	    0x062
#define SVM_EXIT_INIT	    0x063
#define SVM_EXIT_CPUID_CODE 0x072
#define SVM_EXIT_HLT	    0x078
#define SVM_EXIT_IOIO_CODE  0x07B
#define SVM_EXIT_MSR_CODE   0x07C
#define SVM_EXIT_SHUTDOWN   0x07F
#define SVM_EXIT_VMRUN	    0x080
#define SVM_EXIT_VMMCALL    0x081
#define SVM_EXIT_VMLOAD	    0x082
#define SVM_EXIT_VMSAVE	    0x083
#define SVM_EXIT_STGI	    0x084
#define SVM_EXIT_CLGI	    0x085
#define SVM_EXIT_SKINIT	    0x086
#define SVM_EXIT_XSETBV	    0x08D
#define SVM_EXIT_NPF	    0x400
#define SVM_EXIT_INVALID    0xFFFFFFFFu /* QEMU TCG writes 32 bits (sim-platform-notes §4.3) */

/* IOIO exit_info_1 (APM §15.10.2) */
#define SVM_IOIO_TYPE_IN    (1u << 0)
#define SVM_IOIO_STR	    (1u << 2)
#define SVM_IOIO_REP	    (1u << 3)
#define SVM_IOIO_SZ8	    (1u << 4)
#define SVM_IOIO_SZ16	    (1u << 5)
#define SVM_IOIO_SZ32	    (1u << 6)
#define SVM_IOIO_PORT_SHIFT 16

/* EVENTINJ (APM §15.20) */
#define SVM_EVTINJ_VALID     (1ULL << 31)
#define SVM_EVTINJ_VALID_ERR (1ULL << 11)
#define SVM_EVTINJ_TYPE_EXCP (3ULL << 8)

#define MSR_VM_HSAVE_PA 0xC0010117u

/* Guest general registers the VMRUN stub swaps (RAX and RSP live in the VMCB). */
struct guest_gprs {
	uint64_t rbx, rcx, rdx, rsi, rdi, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
};

#endif
