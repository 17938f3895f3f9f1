/*
 * The probe's only assembly: the SVSM call (registers around VMGEXIT, as
 * Linux svsm_issue_call does), MSR access, interrupt masking, and the
 * fault-protected accesses the isolation checks use. System V ABI (the probe
 * is compiled without ms_abi). GNU as rejects `rep vmmcall`, so VMGEXIT is
 * emitted as bytes (sim-platform-notes §4 pitfall 12; reference §4.6).
 */
#define VMGEXIT .byte 0xf3, 0x0f, 0x01, 0xd9

	.text

/* u8 probe_svsm_issue(struct probe_regs *r, volatile u8 *call_pending) */
	.globl probe_svsm_issue
probe_svsm_issue:
	pushq	%rbx
	pushq	%rdi
	pushq	%rsi
	movq	0(%rdi), %rax
	movq	8(%rdi), %rcx
	movq	16(%rdi), %rdx
	movq	24(%rdi), %r8
	movq	32(%rdi), %r9
	VMGEXIT
	popq	%rsi
	popq	%rdi
	movq	%rax, 0(%rdi)
	movq	%rcx, 8(%rdi)
	movq	%rdx, 16(%rdi)
	movq	%r8, 24(%rdi)
	movq	%r9, 32(%rdi)
	xorl	%eax, %eax
	xchgb	%al, (%rsi)		/* locked: pending = xchg(&ca->call_pending, 0) */
	movzbl	%al, %eax
	popq	%rbx
	ret

/* void probe_vmgexit(void): a bare VMGEXIT for GHCB MSR protocol requests
 * (e.g. GHCB GPA registration) that are not SVSM calls. */
	.globl probe_vmgexit
probe_vmgexit:
	VMGEXIT
	ret

/* u64 probe_rdmsr(u32 msr) */
	.globl probe_rdmsr
probe_rdmsr:
	movl	%edi, %ecx
	rdmsr
	shlq	$32, %rdx
	orq	%rdx, %rax
	ret

/* void probe_wrmsr(u32 msr, u64 val) */
	.globl probe_wrmsr
probe_wrmsr:
	movl	%edi, %ecx
	movq	%rsi, %rax
	movq	%rsi, %rdx
	shrq	$32, %rdx
	wrmsr
	ret

/* u64 probe_irq_save(void): keep interrupts off from the GHCB MSR write to
 * VMGEXIT and the read-back (reference §4.6). */
	.globl probe_irq_save
probe_irq_save:
	pushfq
	popq	%rax
	cli
	ret

/* void probe_irq_restore(u64 rflags) */
	.globl probe_irq_restore
probe_irq_restore:
	pushq	%rdi
	popfq
	ret

	.globl probe_read_cr3
probe_read_cr3:
	movq	%cr3, %rax
	ret

/* u64 probe_try_read64(u64 addr, u64 sentinel): a blocked read resumes at
 * probe_try_read64_resume with RAX still holding the sentinel. */
	.globl probe_try_read64, probe_try_read64_fault, probe_try_read64_resume
probe_try_read64:
	movq	%rsi, %rax
probe_try_read64_fault:
	movq	(%rdi), %rax
probe_try_read64_resume:
	ret

/* void probe_try_write64(u64 addr, u64 val) */
	.globl probe_try_write64, probe_try_write64_fault, probe_try_write64_resume
probe_try_write64:
probe_try_write64_fault:
	movq	%rsi, (%rdi)
probe_try_write64_resume:
	ret

/* void probe_try_exec(u64 addr): a blocked fetch at addr resumes at
 * probe_try_exec_resume after the handler pops the return address. */
	.globl probe_try_exec, probe_try_exec_resume
probe_try_exec:
	call	*%rdi
probe_try_exec_resume:
	ret

	.section .note.GNU-stack, "", @progbits
