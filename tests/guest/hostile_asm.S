/*
 * The hostile guest's assembly (tests/guest/hostile.c): port I/O, CR3, and
 * the code of the vCPUs it creates with CREATE_VCPU. System V ABI, like
 * probe_asm.S.
 */
#define VMGEXIT .byte 0xf3, 0x0f, 0x01, 0xd9

	.text

/* u32 hostile_in(u16 port, u32 size), void hostile_out(u16 port, u32 size, u32 val) */
	.globl hostile_in, hostile_out
hostile_in:
	movl	%edi, %edx
	xorl	%eax, %eax
	cmpl	$1, %esi
	je	1f
	cmpl	$2, %esi
	je	2f
	inl	%dx, %eax
	ret
1:	inb	%dx, %al
	ret
2:	inw	%dx, %ax
	ret
hostile_out:
	movl	%edx, %eax
	movl	%edi, %edx
	cmpl	$1, %esi
	je	1f
	cmpl	$2, %esi
	je	2f
	outl	%eax, %dx
	ret
1:	outb	%al, %dx
	ret
2:	outw	%ax, %dx
	ret

/* void hostile_write_cr3(u64) */
	.globl hostile_write_cr3
hostile_write_cr3:
	movq	%rdi, %cr3
	ret

/*
 * A created vCPU that writes a counter into a page for ever (issue 8 item
 * 4: after csvsm revokes the page, the write must fault on this vCPU too,
 * not keep going through a stale TLB entry). RDI = struct tlb_shared:
 *   0 target page, 8 progress, 16 faulted vector+1 (0 = none), 24 IDT
 *   descriptor (10 bytes).
 * The IDT's gates lead to hostile_ap_fault (NMI to hostile_ap_nmi).
 */
	.globl hostile_ap_tlb, hostile_ap_fault, hostile_ap_nmi
hostile_ap_tlb:
	lidt	24(%rdi)
	movq	0(%rdi), %rsi
	xorq	%rax, %rax
1:	incq	%rax
	movq	%rax, (%rsi)
	movq	%rax, 8(%rdi)
	jmp	1b
hostile_ap_fault:
	movq	$1, 16(%rdi)
2:	cli
	hlt
	jmp	2b
hostile_ap_nmi:
	iretq

/*
 * A created vCPU that moves its calling area with REMAP_CA and halts (issue
 * 8 item 5: AP creation DESTROY must still find it). RDI = struct
 * remap_shared: 0 CA, 8 new CA, 16 RAX out, 24 done.
 */
	.globl hostile_ap_remap
hostile_ap_remap:
	movq	%rdi, %rbx
	movq	0(%rbx), %rsi
	movb	$1, (%rsi)		/* call_pending */
	movl	$0xC0010130, %ecx
	movl	$0x016, %eax		/* VMPL0 request, MSR form */
	xorl	%edx, %edx
	wrmsr
	xorq	%rax, %rax		/* core REMAP_CA */
	movq	8(%rbx), %rcx
	VMGEXIT
	movq	%rax, 16(%rbx)
	movl	$1, 24(%rbx)
3:	cli
	hlt
	jmp	3b

/*
 * Real-mode code that an escape would run (issue 8 item 1): it prints
 * "HOSTILE-ESCAPED" on COM1 and ends QEMU through isa-debug-exit with
 * value 0x2A (exit status 85). Copied below 1 MiB by hostile.c; position
 * independent (no memory operands).
 */
	.globl hostile_escape_rm, hostile_escape_rm_end
	.code16
hostile_escape_rm:
	cli
	movw	$0x3F8, %dx
	.irp c, 'H','O','S','T','I','L','E','-','E','S','C','A','P','E','D',13,10
	movb	$\c, %al
	outb	%al, %dx
	.endr
	movw	$0xF4, %dx
	movb	$0x2A, %al
	outb	%al, %dx
4:	hlt
	jmp	4b
hostile_escape_rm_end:
	.code64

	.section .note.GNU-stack, "", @progbits
