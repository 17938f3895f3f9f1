/*
 * PVH entry (32-bit protected mode, paging off, EBX = physical address of
 * struct hvm_start_info): switch to 64-bit long mode on a 4 GiB identity
 * map (src/boot.S), enable SSE/AVX state, then boot_main(start_info).
 * Also the INIT-SIPI AP trampoline (copied below 1 MiB). Not in csvsm's
 * image (the SNP launch image): the SNP machine and the libc smoke test.
 */
#include "src/entry.h"
#define XEN_ELFNOTE_PHYS32_ENTRY 18
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
#define TRAMPOLINE_BASE 0x8000

	/* PVH entry note (Xen public/elfnote.h); ELF64 descriptor is 8 bytes. */
	.section .note.pvh, "a"
	.p2align 2
	.long 4, 8, XEN_ELFNOTE_PHYS32_ENTRY
	.asciz "Xen"
	.p2align 2
	.quad pvh_entry32
	.p2align 2

	.section .text.boot, "ax"
	.code32
	.globl pvh_entry32
pvh_entry32:
	cli
	cld
	mov %ebx, %esi                  /* keep start_info across bss clearing */
	/* Zero .bss (the loader's zero fill is not relied on). */
	mov $__bss_start, %edi
	mov $__bss_end, %ecx
	sub %edi, %ecx
	shr $2, %ecx
	xor %eax, %eax
	rep stosl
	mov %ebx, %esi
	mov %esi, pvh_start_info
	mov $(boot_stack + BOOT_STACK_SIZE), %esp

	/* 4 GiB identity map with 2 MiB pages: PML4[0] -> PDPT -> 4 PDs. */
	mov $boot_pdpt, %eax
	or $0x7, %eax
	mov %eax, boot_pml4
	xor %ecx, %ecx
1:	mov %ecx, %eax
	shl $12, %eax
	add $boot_pd, %eax
	or $0x7, %eax
	mov %eax, boot_pdpt(,%ecx,8)
	inc %ecx
	cmp $4, %ecx
	jb 1b
	xor %ecx, %ecx                  /* 2048 PDEs */
2:	mov %ecx, %eax
	shl $21, %eax
	or $0x87, %eax                  /* P | RW | US | PS */
	mov %eax, boot_pd(,%ecx,8)
	mov %ecx, %eax
	shr $11, %eax
	mov %eax, boot_pd+4(,%ecx,8)
	inc %ecx
	cmp $2048, %ecx
	jb 2b

	call enter_long_mode32
	ljmp $0x08, $long_entry64

	.code64
long_entry64:
	LOAD_DATA_SEGMENTS64
	lea (boot_stack + BOOT_STACK_SIZE)(%rip), %rsp
	call cpu_enable_fpu
	xor %ebp, %ebp
	mov pvh_start_info(%rip), %edi
	call boot_main
3:	cli
	hlt
	jmp 3b

/*
 * AP trampoline, copied to TRAMPOLINE_BASE (SIPI vector 0x08). Real mode
 * with CS = 0x0800: labels are addressed as offsets from tramp_start.
 * tramp_cr3/tramp_stack/tramp_arg are filled by smp.c before each SIPI.
 */
	.section .rodata
	.p2align 12
	.globl tramp_start, tramp_end, tramp_cr3, tramp_stack, tramp_arg
	.code16
tramp_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	lgdtl (tramp_gdt_desc - tramp_start)
	mov %cr0, %eax
	or $CR0_PE, %eax
	mov %eax, %cr0
	ljmpl $0x08, $(tramp_pm - tramp_start + TRAMPOLINE_BASE)
	.code32
tramp_pm:
	mov $0x10, %eax
	mov %eax, %ds
	mov %eax, %es
	mov %eax, %ss
	mov %cr4, %eax
	or $CR4_PAE, %eax
	mov %eax, %cr4
	mov (tramp_cr3 - tramp_start + TRAMPOLINE_BASE), %eax
	mov %eax, %cr3
	mov $MSR_EFER, %ecx
	rdmsr
	or $(EFER_LME | EFER_NXE), %eax
	wrmsr
	mov %cr0, %eax
	or $(CR0_PG | CR0_WP), %eax
	mov %eax, %cr0
	ljmp $0x18, $(tramp_lm - tramp_start + TRAMPOLINE_BASE)
	.code64
tramp_lm:
	mov (tramp_stack - tramp_start + TRAMPOLINE_BASE), %rsp
	mov (tramp_arg - tramp_start + TRAMPOLINE_BASE), %rdi
	movabs $ap_entry64, %rax
	jmp *%rax
	.p2align 3
tramp_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff        /* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff        /* 0x10: data */
	.quad 0x00af9a000000ffff        /* 0x18: 64-bit code */
tramp_gdt_desc:
	.word tramp_gdt_desc - tramp_gdt - 1
	.long tramp_gdt - tramp_start + TRAMPOLINE_BASE
	.p2align 3
tramp_cr3:   .quad 0
tramp_stack: .quad 0
tramp_arg:   .quad 0
tramp_end:

	.section .data
	.globl pvh_start_info
pvh_start_info: .quad 0

	.section .note.GNU-stack, "", @progbits
