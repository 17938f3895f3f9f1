/*
 * csvsm's SEV-SNP entry (the IGVM launch image's BSP RIP), apart from the
 * PVH entry in boot.S so that programs built from csvsm's boot objects
 * (libc-smoke, the SNP machine) need not provide snp_boot_main. Shares
 * boot.S's page tables, GDT, stack and long-mode switch.
 */
#include "src/entry.h"

	.section .text.boot, "ax"
/*
 * SEV-SNP entry from csvsm's IGVM launch image (include/csvsm/igvm_boot.h):
 * 32-bit protected mode, paging off (every access private), ESI = the boot
 * block's GPA, no stack. Nothing here may exit to the hypervisor: no CPUID,
 * no port I/O, no intercepted MSR (there is no #VC handler yet). The C-bit
 * position comes from the CPUID page the PSP checked (leaf 0x8000001F
 * EBX[5:0]), never from the hypervisor; the boot page tables carry it in
 * every entry (bit 32 or above: the high dword). Page-table walks of an
 * SNP guest are always private, so CR3 needs no C-bit (APM vol. 2 §15.34).
 * The launch validated csvsm's image, .bss included (zero pages).
 */
#define BB_CPUID_GPA   0x50  /* struct csvsm_igvm_boot_block.cpuid_gpa */
#define CPUID_PAGE_MAX 64
	.code32
	.globl snp_entry32
snp_entry32:
	cli
	cld
	mov %esi, snp_boot_block
	mov $(boot_stack + BOOT_STACK_SIZE), %esp
	/* The C-bit from the CPUID page: count at 0, 48-byte entries at 16
	 * (eax_in at +0, ecx_in at +4, ebx at +28). */
	mov BB_CPUID_GPA(%esi), %esi
	mov (%esi), %ecx
	cmp $CPUID_PAGE_MAX, %ecx
	ja snp_entry_fail
	lea 16(%esi), %edi
1:	test %ecx, %ecx
	jz snp_entry_fail
	cmpl $0x8000001F, (%edi)
	jne 2f
	cmpl $0, 4(%edi)
	je 3f
2:	add $48, %edi
	dec %ecx
	jmp 1b
3:	mov 28(%edi), %eax
	and $0x3F, %eax
	cmp $32, %eax                   /* the C-bit lies above the 4 GiB boot map */
	jb snp_entry_fail
	cmp $51, %eax
	ja snp_entry_fail
	sub $32, %eax
	mov %eax, %ecx
	mov $1, %edx
	shl %cl, %edx                   /* the C-bit in a PTE's high dword */
	mov %edx, snp_cbit_hi

	/* The same 4 GiB identity map as the PVH path, every entry private. */
	mov $boot_pdpt, %eax
	or $0x7, %eax
	mov %eax, boot_pml4
	mov %edx, boot_pml4+4
	xor %ecx, %ecx
4:	mov %ecx, %eax
	shl $12, %eax
	add $boot_pd, %eax
	or $0x7, %eax
	mov %eax, boot_pdpt(,%ecx,8)
	mov %edx, boot_pdpt+4(,%ecx,8)
	inc %ecx
	cmp $4, %ecx
	jb 4b
	xor %ecx, %ecx
5:	mov %ecx, %eax
	shl $21, %eax
	or $0x87, %eax                  /* P | RW | US | PS */
	mov %eax, boot_pd(,%ecx,8)
	mov %edx, boot_pd+4(,%ecx,8)
	inc %ecx
	cmp $2048, %ecx
	jb 5b
	call enter_long_mode32
	ljmp $0x08, $snp_long64
snp_entry_fail:
	/* No console, no GHCB: ask for termination through the MSR protocol
	 * (GHCB MSR 0xC0010130 is never intercepted; 0x100 = terminate,
	 * reason set 0, code 1 = general). */
	mov $0xC0010130, %ecx
	mov $0x1100, %eax
	xor %edx, %edx
	wrmsr
	.byte 0xf3, 0x0f, 0x01, 0xd9    /* VMGEXIT */
	jmp snp_entry_fail

	.code64
snp_long64:
	LOAD_DATA_SEGMENTS64
	lea (boot_stack + BOOT_STACK_SIZE)(%rip), %rsp
	xor %ebp, %ebp
	mov snp_boot_block(%rip), %edi
	call snp_boot_main
6:	cli
	hlt
	jmp 6b


	.section .data
	.globl snp_boot_block, snp_cbit_hi
snp_boot_block: .quad 0
snp_cbit_hi:    .long 0

	.section .note.GNU-stack, "", @progbits
