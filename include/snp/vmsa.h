/*
 * SEV-ES/SNP VM save area (VMSA, AMD APM vol. 2 table B-4 "VMSA layout,
 * state save area for SEV-ES"; AMD pub. 56421). One 4 KiB page per vCPU
 * and VMPL. Offsets from shared/reference/snp-svsm-interfaces.md §5.3
 * (coconut-svsm cpuarch/src/vmsa.rs, cross-checked with sev-snp-measure
 * vmsa.py); fields between them follow coconut's layout. No bitfields: the
 * segment attribute word is built with the masks below.
 */
#ifndef SNP_VMSA_H
#define SNP_VMSA_H

#include "base/types.h"

struct vmsa_seg {
	uint16_t selector; /* 0x0 */
	uint16_t attrib;   /* 0x2: compressed attributes, see VMSA_SEG_* */
	uint32_t limit;	   /* 0x4 */
	uint64_t base;	   /* 0x8 */
} __packed;
_Static_assert(sizeof(struct vmsa_seg) == 16, "APM vol. 2 table B-4: segment is 16 bytes");
_Static_assert(offsetof(struct vmsa_seg, attrib) == 2, "APM vol. 2 VMCB segment layout");
_Static_assert(offsetof(struct vmsa_seg, limit) == 4, "APM vol. 2 VMCB segment layout");
_Static_assert(offsetof(struct vmsa_seg, base) == 8, "APM vol. 2 VMCB segment layout");

/*
 * Compressed segment attributes (APM vol. 2 §15.5.1 VMCB segment attrib:
 * descriptor bits 47:40 in [7:0], bits 55:52 in [11:8]).
 */
#define VMSA_SEG_TYPE_MASK 0x000Fu
#define VMSA_SEG_S	   (1u << 4)
#define VMSA_SEG_DPL_SHIFT 5
#define VMSA_SEG_P	   (1u << 7)
#define VMSA_SEG_AVL	   (1u << 8)
#define VMSA_SEG_L	   (1u << 9)
#define VMSA_SEG_DB	   (1u << 10)
#define VMSA_SEG_G	   (1u << 11)
/* coconut types.rs SVSM_CS_FLAGS / SVSM_DS_FLAGS: 64-bit code, flat data. */
#define VMSA_ATTR_CODE64 (VMSA_SEG_P | VMSA_SEG_S | 0xBu | VMSA_SEG_L)		     /* 0x29B */
#define VMSA_ATTR_DATA	 (VMSA_SEG_P | VMSA_SEG_S | 0x3u | VMSA_SEG_DB | VMSA_SEG_G) /* 0xC93 */

#define VMSA_EFER_SVME	  (1ULL << 12)
#define VMSA_EXIT_VMGEXIT 0x403ULL /* guest_exit_code after VMGEXIT (coconut GuestVMExit) */

struct vmsa {
	struct vmsa_seg es, cs, ss, ds, fs, gs;		  /* 0x000 */
	struct vmsa_seg gdtr, ldtr, idtr, tr;		  /* 0x060 */
	uint64_t pl0_ssp, pl1_ssp, pl2_ssp, pl3_ssp;	  /* 0x0A0 */
	uint64_t u_cet;					  /* 0x0C0 */
	uint16_t rsvd_0c8;				  /* 0x0C8 */
	uint8_t vmpl;					  /* 0x0CA */
	uint8_t cpl;					  /* 0x0CB */
	uint32_t rsvd_0cc;				  /* 0x0CC */
	uint64_t efer;					  /* 0x0D0 */
	uint8_t rsvd_0d8[104];				  /* 0x0D8 */
	uint64_t xss;					  /* 0x140 */
	uint64_t cr4;					  /* 0x148 */
	uint64_t cr3;					  /* 0x150 */
	uint64_t cr0;					  /* 0x158 */
	uint64_t dr7;					  /* 0x160 */
	uint64_t dr6;					  /* 0x168 */
	uint64_t rflags;				  /* 0x170 */
	uint64_t rip;					  /* 0x178 */
	uint64_t dr0, dr1, dr2, dr3;			  /* 0x180 */
	uint64_t dr0_mask, dr1_mask, dr2_mask, dr3_mask;  /* 0x1A0 */
	uint8_t rsvd_1c0[24];				  /* 0x1C0 */
	uint64_t rsp;					  /* 0x1D8 */
	uint64_t s_cet;					  /* 0x1E0 */
	uint64_t ssp;					  /* 0x1E8 */
	uint64_t isst_addr;				  /* 0x1F0 */
	uint64_t rax;					  /* 0x1F8 */
	uint64_t star, lstar, cstar, sfmask;		  /* 0x200 */
	uint64_t kernel_gs_base;			  /* 0x220 */
	uint64_t sysenter_cs, sysenter_esp, sysenter_eip; /* 0x228 */
	uint64_t cr2;					  /* 0x240 */
	uint8_t rsvd_248[32];				  /* 0x248 */
	uint64_t g_pat;					  /* 0x268 */
	uint64_t dbgctl;				  /* 0x270 */
	uint64_t br_from, br_to;			  /* 0x278 */
	uint64_t last_excp_from, last_excp_to;		  /* 0x288 */
	uint8_t rsvd_298[72];				  /* 0x298 */
	uint64_t rsvd_2e0;				  /* 0x2E0 */
	uint32_t pkru;					  /* 0x2E8 */
	uint32_t rsvd_2ec;	   /* 0x2EC: tsc_aux in sev-snp-measure (reference §10.10) */
	uint64_t guest_tsc_scale;  /* 0x2F0 */
	uint64_t guest_tsc_offset; /* 0x2F8 */
	uint64_t reg_prot_nonce;   /* 0x300 */
	uint64_t rcx, rdx, rbx;	   /* 0x308 */
	uint64_t rsvd_320;	   /* 0x320 */
	uint64_t rbp, rsi, rdi;	   /* 0x328 */
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15; /* 0x340 */
	uint8_t rsvd_380[16];			       /* 0x380 */
	uint64_t guest_exit_info_1;		       /* 0x390 */
	uint64_t guest_exit_info_2;		       /* 0x398 */
	uint64_t guest_exit_int_info;		       /* 0x3A0 */
	uint64_t guest_nrip;			       /* 0x3A8 */
	uint64_t sev_features;			       /* 0x3B0 */
	uint64_t vintr_ctrl;			       /* 0x3B8 */
	uint64_t guest_exit_code;		       /* 0x3C0 */
	uint64_t virtual_tom;			       /* 0x3C8 */
	uint64_t tlb_id;			       /* 0x3D0 */
	uint64_t pcpu_id;			       /* 0x3D8 */
	uint64_t event_inj;			       /* 0x3E0 */
	uint64_t xcr0;				       /* 0x3E8 */
	uint8_t rsvd_3f0[16];			       /* 0x3F0 */
	uint64_t x87_dp;			       /* 0x400 */
	uint32_t mxcsr;				       /* 0x408 */
	uint16_t x87_ftw;			       /* 0x40C */
	uint16_t x87_fsw;			       /* 0x40E */
	uint16_t x87_fcw;			       /* 0x410 */
	uint16_t x87_fop;			       /* 0x412 */
	uint16_t x87_ds;			       /* 0x414 */
	uint16_t x87_cs;			       /* 0x416 */
	uint64_t x87_rip;			       /* 0x418 */
	uint8_t fpreg_x87[80];			       /* 0x420 */
	uint8_t fpreg_xmm[256];			       /* 0x470 */
	uint8_t fpreg_ymm[256];			       /* 0x570 */
	uint8_t lbr_stack[256];			       /* 0x670 */
	uint64_t lbr_select;			       /* 0x770 */
	uint64_t ibs[10];			       /* 0x778 */
	uint8_t rsvd_7c8[2104];			       /* 0x7C8 */
} __packed;

#define VMSA_OFF(f, off)                                                                           \
	_Static_assert(offsetof(struct vmsa, f) == (off),                                          \
		       "APM vol. 2 table B-4 / coconut vmsa.rs: " #f)
_Static_assert(sizeof(struct vmsa) == 4096, "APM vol. 2 table B-4: VMSA is 4 KiB");
VMSA_OFF(es, 0x000);
VMSA_OFF(cs, 0x010);
VMSA_OFF(ss, 0x020);
VMSA_OFF(ds, 0x030);
VMSA_OFF(fs, 0x040);
VMSA_OFF(gs, 0x050);
VMSA_OFF(gdtr, 0x060);
VMSA_OFF(ldtr, 0x070);
VMSA_OFF(idtr, 0x080);
VMSA_OFF(tr, 0x090);
VMSA_OFF(vmpl, 0x0CA);
VMSA_OFF(cpl, 0x0CB);
VMSA_OFF(efer, 0x0D0);
VMSA_OFF(xss, 0x140);
VMSA_OFF(cr4, 0x148);
VMSA_OFF(cr3, 0x150);
VMSA_OFF(cr0, 0x158);
VMSA_OFF(dr7, 0x160);
VMSA_OFF(dr6, 0x168);
VMSA_OFF(rflags, 0x170);
VMSA_OFF(rip, 0x178);
VMSA_OFF(rsp, 0x1D8);
VMSA_OFF(rax, 0x1F8);
VMSA_OFF(g_pat, 0x268);
VMSA_OFF(pkru, 0x2E8);
VMSA_OFF(rcx, 0x308);
VMSA_OFF(rdx, 0x310);
VMSA_OFF(rbx, 0x318);
VMSA_OFF(rbp, 0x328);
VMSA_OFF(rsi, 0x330);
VMSA_OFF(rdi, 0x338);
VMSA_OFF(r8, 0x340);
VMSA_OFF(r9, 0x348);
VMSA_OFF(r15, 0x378);
VMSA_OFF(guest_exit_info_1, 0x390);
VMSA_OFF(guest_exit_info_2, 0x398);
VMSA_OFF(guest_nrip, 0x3A8);
VMSA_OFF(sev_features, 0x3B0);
VMSA_OFF(vintr_ctrl, 0x3B8);
VMSA_OFF(guest_exit_code, 0x3C0);
VMSA_OFF(virtual_tom, 0x3C8);
VMSA_OFF(event_inj, 0x3E0);
VMSA_OFF(xcr0, 0x3E8);
VMSA_OFF(mxcsr, 0x408);
VMSA_OFF(x87_ftw, 0x40C);
VMSA_OFF(x87_fcw, 0x410);
VMSA_OFF(fpreg_x87, 0x420);
VMSA_OFF(lbr_select, 0x770);
VMSA_OFF(rsvd_7c8, 0x7C8);
#undef VMSA_OFF

#endif
