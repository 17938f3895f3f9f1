/*
 * The probe's only assembly: the SVSM call (registers around VMGEXIT, as
 * Linux svsm_issue_call does), MSR access, interrupt masking, and the
 * fault-protected accesses the isolation checks use. System V ABI (the probe
 * is compiled without ms_abi). GNU as rejects `rep vmmcall`, so VMGEXIT is
 * emitted as bytes (sim-platform-notes §4 pitfall 12; reference §4.6).
 */
#define VMGEXIT .byte 0xf3, 0x0f, 0x01, 0xd9

	.text

/* u8 probe_svsm_issue(struct probe_regs *r, volatile u8 *call_pending, u8 *xmm, int ymm)
 * xmm, when not NULL: 16 x 16 bytes loaded into XMM0..15 before the VMGEXIT
 * and the registers stored at xmm + 256 after it (VMRUN does not switch
 * SSE state; csvsm must preserve the guest's). With ymm set (the caller
 * enabled AVX in CR4/XCR0), 16 x 32 bytes into YMM0..15, stored at
 * xmm + 512. */
	.globl probe_svsm_issue
probe_svsm_issue:
	pushq	%rbx
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	testq	%rdx, %rdx
	jz	1f
	testl	%ecx, %ecx
	jnz	3f
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	\n*16(%rdx), %xmm\n
	.endr
	jmp	1f
3:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	\n*32(%rdx), %ymm\n
	.endr
1:	movq	0(%rdi), %rax
	movq	8(%rdi), %rcx
	movq	16(%rdi), %rdx
	movq	24(%rdi), %r8
	movq	32(%rdi), %r9
	VMGEXIT
	popq	%r11			/* ymm flag (RCX is a result) */
	popq	%rbx			/* xmm buffer */
	testq	%rbx, %rbx
	jz	2f
	testl	%r11d, %r11d
	jnz	4f
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	movdqu	%xmm\n, 256+\n*16(%rbx)
	.endr
	jmp	2f
4:
	.irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
	vmovdqu	%ymm\n, 512+\n*32(%rbx)
	.endr
2:	popq	%rsi
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

/* u64 probe_rmpadjust(u64 va, u64 size_2m, u64 attrs): RMPADJUST at the
 * caller's VMPL (F3 0F 01 FE: RAX va, RCX page size, RDX attributes); its
 * result. APM vol. 3 RMPADJUST. */
	.globl probe_rmpadjust
probe_rmpadjust:
	movq	%rdi, %rax
	movq	%rsi, %rcx
	.byte	0xf3, 0x0f, 0x01, 0xfe
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

	.text
/* void probe_enable_avx(void): CR4.OSXSAVE, then XCR0 = x87 | SSE | AVX. */
	.globl probe_enable_avx
probe_enable_avx:
	movq	%cr4, %rax
	orq	$(1 << 18), %rax
	movq	%rax, %cr4
	xorl	%ecx, %ecx
	xorl	%edx, %edx
	movl	$7, %eax
	xsetbv
	ret

/* u64 probe_read_cr0(void), probe_read_cr4(void), u16 probe_read_cs/ds(void),
 * void probe_sgdt(void *desc10): state for a VMSA of a new vCPU. */
	.globl probe_read_cr0, probe_read_cr4, probe_read_cs, probe_read_ds, probe_sgdt
probe_read_cr0:
	movq	%cr0, %rax
	ret
probe_read_cr4:
	movq	%cr4, %rax
	ret
probe_read_cs:
	movw	%cs, %ax
	movzwl	%ax, %eax
	ret
probe_read_ds:
	movw	%ds, %ax
	movzwl	%ax, %eax
	ret
probe_sgdt:
	sgdt	(%rdi)
	ret

/*
 * Entry of a vCPU the probe creates with CREATE_VCPU + AP creation. RDI =
 * struct ap_shared { u64 ca; u64 rax; u64 rcx; u64 ghcb_msr; u32 done; }.
 * It makes one SVSM call (QUERY_PROTOCOL core v1) through the MSR form with
 * its own calling area, records the result and halts (interrupts off).
 */
	.globl probe_ap_entry
probe_ap_entry:
	movq	%rdi, %rbx
	movq	0(%rbx), %rsi		/* its CA */
	movb	$1, (%rsi)		/* call_pending */
	movl	$0xC0010130, %ecx
	movl	$0x016, %eax		/* VMPL0 request, MSR form */
	xorl	%edx, %edx
	wrmsr
	movq	$6, %rax		/* core QUERY_PROTOCOL */
	movq	$0x1, %rcx		/* (core << 32) | version 1 */
	VMGEXIT
	movq	%rax, 8(%rbx)
	movq	%rcx, 16(%rbx)
	movl	$0xC0010130, %ecx
	rdmsr
	shlq	$32, %rdx
	orq	%rdx, %rax
	movq	%rax, 24(%rbx)
	movl	$1, 32(%rbx)
2:	pause				/* running, in guest mode, until told to stop */
	cmpl	$0, 36(%rbx)
	je	2b
1:	cli
	hlt
	jmp	1b
