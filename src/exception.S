/*
 * Exception entry stubs: push a uniform frame (vector, error code, all GPRs)
 * and call exception_dispatch(struct exc_frame *). Layout must match
 * struct exc_frame in include/csvsm/exception.h.
 *
 * The events csvsm resumes after (#HV, #VC, NMI) arrive on a per-vCPU IST
 * stack (src/idt.c, src/cpu.c) and leave it at once: the stub copies the
 * CPU's frame to below the interrupted RSP less the 128-byte red zone that
 * Debian's libraries use (System V x86-64 ABI §3.2.2) and continues there,
 * so the handler runs on the interrupted stack without touching what the
 * interrupted code keeps below its RSP, and the IST stack is free again
 * for the next event of that vector: a #HV while a #HV or a #VC is handled,
 * a #VC while a #HV is handled, nest as on any stack. This is Linux's #VC
 * entry (arch/x86/entry/entry_64.S idtentry_vc: "Switch off the IST stack
 * to make it free for nested exceptions"; arch/x86/kernel/traps.c
 * vc_switch_off_ist), with the red zone skipped because csvsm, unlike the
 * kernel, runs code built with one.
 *
 * The window is the few instructions before the stub leaves the IST stack:
 * a second event of the same vector there gets the same IST top and the
 * CPU writes its frame over the first one's (APM vol. 2 §8.9.4: the IST
 * pointer is loaded unconditionally). NMIs are blocked until IRET and
 * nothing in the window executes one; nothing in it raises #VC (no
 * intercepted instruction; a page the host took away from csvsm raises
 * #VC 0x404, on which csvsm terminates anyway); a host injects #HV only
 * when the doorbell page's NoFurtherSignal is clear
 * (KVM prepare_hv_injection), and it sets that flag as it injects, while
 * csvsm clears it in the handler, after the window (src/hv_doorbell.c). A
 * host that injects anyway, or nests #HV before the stub's first
 * instruction, is detected: the second event finds the interrupted RSP on
 * its own IST stack, and csvsm terminates (exception_dispatch,
 * EXC_NESTED_IST) instead of returning through a frame that is gone.
 */
#include "csvsm/exception.h"
#include "src/entry.h"

	.text
	.code64
.macro EXC_NOERR n
	.p2align 4
exc_stub_\n:
	pushq $0
	pushq $\n
	jmp exc_common
.endm
.macro EXC_ERR n
	.p2align 4
exc_stub_\n:
	pushq $\n
	jmp exc_common
.endm
/* Resumed events on an IST stack (idt.c gives their gates an IST index). */
.macro EXC_IST_NOERR n
	.p2align 4
exc_stub_\n:
	pushq $0
	pushq $\n
	jmp exc_ist_common
.endm
.macro EXC_IST_ERR n
	.p2align 4
exc_stub_\n:
	pushq $\n
	jmp exc_ist_common
.endm

EXC_NOERR 0
EXC_NOERR 1
EXC_IST_NOERR 2
EXC_NOERR 3
EXC_NOERR 4
EXC_NOERR 5
EXC_NOERR 6
EXC_NOERR 7
EXC_ERR 8
EXC_NOERR 9
EXC_ERR 10
EXC_ERR 11
EXC_ERR 12
EXC_ERR 13
EXC_ERR 14
EXC_NOERR 15
EXC_NOERR 16
EXC_ERR 17
EXC_NOERR 18
EXC_NOERR 19
EXC_NOERR 20
EXC_ERR 21
EXC_NOERR 22
EXC_NOERR 23
EXC_NOERR 24
EXC_NOERR 25
EXC_NOERR 26
EXC_NOERR 27
EXC_IST_NOERR 28
EXC_IST_ERR 29
EXC_ERR 30
EXC_NOERR 31

/*
 * On the IST stack: vector, error code and the CPU's RIP, CS, RFLAGS, RSP,
 * SS, seven words from its top (the CPU aligned the top to 16 bytes and
 * pushed 5 or 6 of them; the stub made them 7). With RAX and RBX saved
 * below: 0 rbx, 8 rax, 16 vector, 24 error, 32 rip, 40 cs, 48 rflags,
 * 56 rsp, 64 ss; the top is at 72(%rsp).
 */
exc_ist_common:
	push %rax
	push %rbx
	lea 72(%rsp), %rax
	sub 56(%rsp), %rax		/* top - interrupted RSP */
	cmp $IST_STACK_SIZE, %rax
	jbe 1f				/* interrupted on this very stack */
	mov 56(%rsp), %rax
	sub $128, %rax			/* the interrupted code's red zone */
	and $~0xf, %rax			/* the alignment the CPU gives a frame */
	sub $72, %rax
	.irp off,0,8,16,24,32,40,48,56,64
	mov \off(%rsp), %rbx
	mov %rbx, \off(%rax)
	.endr
	mov %rax, %rsp			/* off the IST stack: it is free again */
	pop %rbx
	pop %rax
	jmp exc_common
1:	orq $EXC_NESTED_IST, 16(%rsp)	/* exception_dispatch terminates, here */
	pop %rbx
	pop %rax
	jmp exc_common

exc_common:
	push %rax
	push %rbx
	push %rcx
	push %rdx
	push %rsi
	push %rdi
	push %rbp
	push %r8
	push %r9
	push %r10
	push %r11
	push %r12
	push %r13
	push %r14
	push %r15
	mov %rsp, %rdi
	mov %rsp, %rbx
	and $~0xf, %rsp
	cld
	call exception_dispatch
	mov %rbx, %rsp
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %r11
	pop %r10
	pop %r9
	pop %r8
	pop %rbp
	pop %rdi
	pop %rsi
	pop %rdx
	pop %rcx
	pop %rbx
	pop %rax
	add $16, %rsp
	iretq

	.section .rodata
	.p2align 3
	.globl exc_stub_table
exc_stub_table:
	.irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	.quad exc_stub_\n
	.endr
	.section .note.GNU-stack, "", @progbits
