/*
 * The SNP machine: one guest entry/exit. svm_vmrun(struct svm_vcpu *v):
 * saves csvsm's callee-saved registers, loads the guest GPRs (RAX and RSP
 * are in the VMCB), VMLOAD/VMRUN/VMSAVE around the guest (QEMU's VMRUN
 * switches only ES/CS/SS/DS/CRs: FS/GS/TR/LDTR/KernelGSBase/STAR/... need
 * VMLOAD/VMSAVE, sim notes pitfall 5), then stores the guest GPRs back and
 * restores csvsm's FS/GS bases from its own VMSAVE area. VMRUN does not switch
 * x87/SSE/AVX state, and csvsm's own code uses general registers only: the
 * guest's state stays in the registers across an exit. Only the libraries
 * (crypto, libtpms) use it; before they run, sim_fpu_enter saves the
 * guest's state (XSAVE) and sets V_FPU_SAVED, and the next entry restores
 * it (XRSTOR) here. The mask is XCR0, exactly the components csvsm enabled
 * (boot.S).
 * struct svm_vcpu layout: see SVM_VCPU_* offsets in tests/snpm/hv/svm.h.
 */
#define V_GPRS      0   /* struct guest_gprs: rbx rcx rdx rsi rdi rbp r8..r15 */
#define V_VMCB_PA   112
#define V_HOST_PA   120
#define V_XSAVE     128 /* guest x87/SSE/AVX area, 64-byte aligned */
#define V_FPU_SAVED 136 /* u32: the area holds the guest's state, restore it */

	.text
	.code64
	.globl svm_vmrun
svm_vmrun:
	push %rbx
	push %rbp
	push %r12
	push %r13
	push %r14
	push %r15
	push %rdi
	mov V_HOST_PA(%rdi), %rax
	vmsave %rax                      /* csvsm's FS/GS/TR/... */
	cmpl $0, V_FPU_SAVED(%rdi)
	je 1f
	xor %ecx, %ecx
	xgetbv                           /* EDX:EAX = XCR0 */
	mov V_XSAVE(%rdi), %rsi
	xrstor64 (%rsi)
	movl $0, V_FPU_SAVED(%rdi)
1:	mov V_GPRS+0(%rdi), %rbx
	mov V_GPRS+8(%rdi), %rcx
	mov V_GPRS+16(%rdi), %rdx
	mov V_GPRS+24(%rdi), %rsi
	mov V_GPRS+40(%rdi), %rbp
	mov V_GPRS+48(%rdi), %r8
	mov V_GPRS+56(%rdi), %r9
	mov V_GPRS+64(%rdi), %r10
	mov V_GPRS+72(%rdi), %r11
	mov V_GPRS+80(%rdi), %r12
	mov V_GPRS+88(%rdi), %r13
	mov V_GPRS+96(%rdi), %r14
	mov V_GPRS+104(%rdi), %r15
	mov V_VMCB_PA(%rdi), %rax
	mov V_GPRS+32(%rdi), %rdi
	vmload %rax
	vmrun %rax
	vmsave %rax
	push %rdi                        /* guest RDI */
	mov 8(%rsp), %rdi                /* struct svm_vcpu * */
	mov %rbx, V_GPRS+0(%rdi)
	mov %rcx, V_GPRS+8(%rdi)
	mov %rdx, V_GPRS+16(%rdi)
	mov %rsi, V_GPRS+24(%rdi)
	pop %rax
	mov %rax, V_GPRS+32(%rdi)
	mov %rbp, V_GPRS+40(%rdi)
	mov %r8, V_GPRS+48(%rdi)
	mov %r9, V_GPRS+56(%rdi)
	mov %r10, V_GPRS+64(%rdi)
	mov %r11, V_GPRS+72(%rdi)
	mov %r12, V_GPRS+80(%rdi)
	mov %r13, V_GPRS+88(%rdi)
	mov %r14, V_GPRS+96(%rdi)
	mov %r15, V_GPRS+104(%rdi)
	mov V_HOST_PA(%rdi), %rax
	vmload %rax                      /* csvsm's FS base (canary TCB) and GS base (percpu) */
	pop %rdi
	pop %r15
	pop %r14
	pop %r13
	pop %r12
	pop %rbp
	pop %rbx
	ret
	.section .note.GNU-stack, "", @progbits
