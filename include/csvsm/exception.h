/*
 * Exception frame as pushed by src/exception.S, the IDT set-up, and which
 * vectors run on a stack of their own (IST, src/cpu.c). Included by
 * src/exception.S for the constants.
 */
#ifndef CSVSM_EXCEPTION_H
#define CSVSM_EXCEPTION_H

/*
 * IST slots (AMD APM vol. 2 §8.9.4 "Interrupt-Stack Table"; the TSS holds
 * IST1..IST7, src/cpu.c): every event that can arrive while library code
 * runs gets a per-vCPU stack of its own, so the CPU never pushes on the
 * interrupted RSP. Debian's libcrypto, libmbedcrypto and libtpms are built
 * for user space and keep live data in the 128 bytes below RSP (System V
 * x86-64 ABI §3.2.2, the red zone; sha256_block_data_order_avx2 keeps a
 * copy of its frame pointer at -8(%rsp)). #HV can come at any instruction
 * boundary (restricted injection, src/hv_doorbell.c), #VC at any CPUID or
 * port access, an NMI anywhere (the SNP machine, which links this IDT,
 * takes them); #DF and #MC need a stack that works when the interrupted
 * one does not.
 */
#define EXC_IST_NMI   1
#define EXC_IST_DF    2
#define EXC_IST_MC    3
#define EXC_IST_HV    4
#define EXC_IST_VC    5
#define EXC_IST_COUNT 5

/*
 * Set in exc_frame.vector by the IST stub when the interrupted RSP lay on
 * the event's own IST stack: a same-vector event arrived before the first
 * one had copied its frame off that stack, and the CPU wrote the new frame
 * over it (src/exception.S). The first one's return address is gone:
 * csvsm terminates with reason set 1, code EXC_TERM_NESTED_IST | vector
 * (a fatal exception is 0x80 | vector).
 */
#define EXC_NESTED_IST	    0x100
#define EXC_TERM_NESTED_IST 0xC0

#ifndef __ASSEMBLY__
#include "base/types.h"

struct exc_frame {
	uint64_t r15, r14, r13, r12, r11, r10, r9, r8;
	uint64_t rbp, rdi, rsi, rdx, rcx, rbx, rax;
	uint64_t vector, error_code;
	uint64_t rip, cs, rflags, rsp, ss; /* pushed by the CPU */
};

void idt_init(void);
void idt_load(void);
void exception_dispatch(struct exc_frame *f);

/* The snp #VC handler (src/vc.c vc_exception), NULL elsewhere; true when handled. */
extern bool (*exception_vc_handler)(struct exc_frame *f);
/* Optional #HV (vector 28) handler, set by the snp platform (src/hv_doorbell.c). */
extern void (*exception_hv_handler)(struct exc_frame *f);
#endif

#endif
