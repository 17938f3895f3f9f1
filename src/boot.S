/*
 * What every entry shares: the 32-bit -> long mode switch, SSE/AVX
 * enabling, the AP 64-bit entry, the boot GDT, page tables and stack, and
 * OpenSSL's .init wrapper. The entries themselves: src/snp_entry.S (the
 * SNP launch image) and tests/snpm/model/pvh_entry.S (PVH: the SNP
 * machine and the libc smoke test; never in csvsm's image).
 */
#include "src/entry.h"
#define MSR_EFER    0xC0000080
#define EFER_LME    (1 << 8)
#define EFER_NXE    (1 << 11)
#define CR0_PE      (1 << 0)
#define CR0_MP      (1 << 1)
#define CR0_EM      (1 << 2)
#define CR0_NE      (1 << 5)
#define CR0_WP      (1 << 16)
#define CR0_PG      (1 << 31)
#define CR4_PAE     (1 << 5)
#define CR4_OSFXSR  (1 << 9)
#define CR4_OSXMMEXCPT (1 << 10)
#define CR4_OSXSAVE (1 << 18)

	.section .text.boot, "ax"
	.code32
	/* Common 32-bit -> long mode switch (BSP path); CR3 = boot_pml4. */
	.globl enter_long_mode32
enter_long_mode32:
	lgdt boot_gdt_desc
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov $boot_pml4, %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $(EFER_LME | EFER_NXE), %eax
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_PE | CR0_WP), %eax
	mov %eax, %cr0
	ret

	.code64
	/*
	 * SSE must be on before any library code (glibc-abi-notes §3.7);
	 * XCR0 only advertises state csvsm saves: x87 | SSE | AVX.
	 */
	.globl cpu_enable_fpu
cpu_enable_fpu:
	mov %cr0, %rax
	and $~CR0_EM, %rax
	or $(CR0_MP | CR0_NE), %rax
	mov %rax, %cr0
	mov %cr4, %rax
	or $(CR4_OSFXSR | CR4_OSXMMEXCPT), %rax
	mov %rax, %cr4
	/* FCW and MXCSR at their reset values (0x37F, 0x1F80: every
	 * exception masked), whatever the VMSA this vCPU started from held:
	 * the launch VMSA has zero in both (attest/igvm_csvsm.c: the COCONUT
	 * QEMU 9-era check_vmsa_supported refuses a non-zero x87 FCW or
	 * MXCSR), so csvsm sets what it needs itself (issue 35 item 3). */
	fninit
	ldmxcsr mxcsr_reset(%rip)
	push %rbx
	mov $1, %eax
	cpuid
	bt $26, %ecx                    /* XSAVE */
	jnc 4f
	mov %cr4, %rax
	or $CR4_OSXSAVE, %rax
	mov %rax, %cr4
	mov $0xd, %eax
	xor %ecx, %ecx
	cpuid
	/* What the host's CPUID page offers of x87, SSE and AVX. XSETBV
	 * raises #GP without x87 (bit 0) or with AVX (bit 2) but not SSE
	 * (bit 1): a page that offers such a set gets x87 (and SSE) only
	 * here, and snp_boot_main refuses it with a message (hostile review
	 * of the #HV change, finding 3). */
	and $7, %eax
	or $1, %eax
	test $2, %eax
	jnz 7f
	and $~4, %eax
7:	xor %edx, %edx
	xor %ecx, %ecx
	xsetbv
4:	pop %rbx
	ret

	/* AP 64-bit entry from the trampoline: RSP is set, RDI = percpu. */
	.globl ap_entry64
ap_entry64:
	LOAD_DATA_SEGMENTS64
	lgdt boot_gdt_desc64(%rip)
	pushq $0x08                     /* reload CS from csvsm's GDT */
	lea 6f(%rip), %rax
	push %rax
	lretq
6:	push %rdi
	push %rdi                       /* twice: RSP stays 16-byte aligned at the calls */
	/* TR first: csvsm's IDT (the SNP AP's from its creation) sends #VC,
	 * #HV and NMI to IST stacks, and cpu_enable_fpu's CPUID is a #VC. */
	call cpu_load_tr
	call cpu_enable_fpu
	pop %rdi
	pop %rdi
	xor %ebp, %ebp
	call ap_main
5:	cli
	hlt
	jmp 5b

	.section .rodata
	.p2align 2
mxcsr_reset: .long 0x1F80

	/* Boot GDT: 0x08 64-bit code, 0x10 data, 0x18 32-bit code. */
	.section .data
	.p2align 4
boot_gdt:
	.quad 0
	.quad 0x00af9a000000ffff
	.quad 0x00cf92000000ffff
	.quad 0x00cf9a000000ffff
boot_gdt_end:
boot_gdt_desc:
	.word boot_gdt_end - boot_gdt - 1
	.long boot_gdt
boot_gdt_desc64:
	.word boot_gdt_end - boot_gdt - 1
	.quad boot_gdt
	.section .bss.pagetables, "aw", @nobits
	.p2align 12
	.globl boot_pml4, boot_pdpt, boot_pd
boot_pml4: .skip 4096
boot_pdpt: .skip 4096
boot_pd:   .skip 4 * 4096
	/* Guard pages under the boot vCPU's stack (unmapped by snp_boot_main
	 * before it loads the IDT, as src/smp.c does for the APs; 16 KiB, the
	 * APs' size, larger than any unprobed library frame): an overflow
	 * faults there instead of writing over the .bss below; the #PF cannot
	 * be pushed there either, and the #DF arrives on the vCPU's #DF IST
	 * stack (src/cpu.c, APM vol. 2 §8.2.9), which reports it and ends the
	 * VM. */
	.section .bss, "aw", @nobits
	.p2align 12
	.globl boot_stack_guard, boot_stack
boot_stack_guard: .skip BOOT_STACK_GUARD
boot_stack: .skip BOOT_STACK_SIZE
	/* OpenSSL's bare .init fragment needs a prologue and epilogue (§3.6). */
	.section .init.prologue, "ax"
	sub $8, %rsp
	.section .init.epilogue, "ax"
	add $8, %rsp
	ret
	.section .note.GNU-stack, "", @progbits
