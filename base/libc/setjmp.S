/*
 * setjmp/longjmp with glibc's x86_64 jmp_buf layout (sysdeps/x86_64/jmpbuf-offsets.h):
 * JB_RBX 0, JB_RBP 1, JB_R12 2, JB_R13 3, JB_R14 4, JB_R15 5, JB_RSP 6, JB_PC 7,
 * then int __mask_was_saved at 64. libtpms' failure path (_plat__Fail ->
 * __longjmp_chk into _plat__RunCommand's _setjmp) uses it; both ends are
 * these functions, so no pointer mangling (glibc-abi-notes §3.10). There are
 * no signals: the signal mask is never saved. No shadow stack (CET is off).
 */
	.text
	.globl _setjmp, setjmp, __sigsetjmp, _longjmp, longjmp, __longjmp_chk, siglongjmp
	.type _setjmp, @function
	.type setjmp, @function
	.type __sigsetjmp, @function
_setjmp:
setjmp:
__sigsetjmp:
	mov %rbx, 0(%rdi)
	mov %rbp, 8(%rdi)
	mov %r12, 16(%rdi)
	mov %r13, 24(%rdi)
	mov %r14, 32(%rdi)
	mov %r15, 40(%rdi)
	lea 8(%rsp), %rdx               /* caller's RSP after our return */
	mov %rdx, 48(%rdi)
	mov (%rsp), %rdx                /* return address */
	mov %rdx, 56(%rdi)
	movl $0, 64(%rdi)               /* __mask_was_saved */
	xor %eax, %eax
	ret
	.size _setjmp, . - _setjmp

	.type __longjmp_chk, @function
	.type _longjmp, @function
	.type longjmp, @function
	.type siglongjmp, @function
__longjmp_chk:
	/* glibc's check: the target frame must be older (higher) than ours. */
	cmp %rsp, 48(%rdi)
	jb 2f
_longjmp:
longjmp:
siglongjmp:
	mov %esi, %eax
	test %eax, %eax
	jnz 1f
	inc %eax                        /* longjmp(env, 0) returns 1 */
1:	mov 0(%rdi), %rbx
	mov 8(%rdi), %rbp
	mov 16(%rdi), %r12
	mov 24(%rdi), %r13
	mov 32(%rdi), %r14
	mov 40(%rdi), %r15
	mov 48(%rdi), %rsp
	jmp *56(%rdi)
2:	sub $8, %rsp                    /* align the stack for the call */
	lea longjmp_msg(%rip), %rdi
	xor %eax, %eax
	call panic
	.size __longjmp_chk, . - __longjmp_chk

	.section .rodata
longjmp_msg:
	.asciz "libc: __longjmp_chk: longjmp causes uninitialized stack frame"
	.section .note.GNU-stack, "", @progbits
