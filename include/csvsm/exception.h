/* Exception frame as pushed by src/exception.S, and the IDT set-up. */
#ifndef CSVSM_EXCEPTION_H
#define CSVSM_EXCEPTION_H

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
