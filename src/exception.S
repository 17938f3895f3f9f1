/*
 * Exception entry stubs: push a uniform frame (vector, error code, all GPRs)
 * and call exception_dispatch(struct exc_frame *). Layout must match
 * struct exc_frame in include/csvsm/exception.h.
 */
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

EXC_NOERR 0
EXC_NOERR 1
EXC_NOERR 2
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
EXC_NOERR 28
EXC_ERR 29
EXC_ERR 30
EXC_NOERR 31

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
