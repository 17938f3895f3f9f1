/* Host fake of include/arch/x86/insn.h: tests steer it through these hooks. */
#ifndef TESTS_FAKE_INSN_FAKE_H
#define TESTS_FAKE_INSN_FAKE_H

#include "arch/x86/insn.h"

/* Optional hooks; a NULL hook makes the instruction abort the test. */
extern int (*fake_pvalidate)(vaddr_t va, unsigned size, bool validate, bool *unchanged);
extern int (*fake_rmpadjust)(vaddr_t va, unsigned size, uint64_t attrs);
extern void (*fake_vmgexit)(void);
extern void (*fake_cpuid)(uint32_t leaf, uint32_t subleaf, struct cpuid_regs *r);

/* MSRs: a small table; unknown MSRs read as 0. */
void fake_msr_reset(void);

/* Port output is captured; port input comes from fake_inb_value. */
extern uint8_t fake_port_out[8192];
extern size_t fake_port_out_len;
extern uint16_t fake_port_last;
extern uint32_t fake_in_value;

/* INVLPGB (all, global) and TLBSYNC executed so far. */
extern unsigned fake_invlpgb_count, fake_tlbsync_count;

extern uint64_t fake_tsc;
extern bool fake_rdrand_fail;

/* Pages snp code mapped shared (pgtable_set_shared), in order. */
extern vaddr_t fake_shared_pages[64];
extern unsigned fake_shared_count;

#endif
