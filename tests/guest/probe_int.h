/* Interfaces between the probe's C files (probe.c, probe_call.c, probe_flash.c). */
#ifndef PROBE_INT_H
#define PROBE_INT_H

#include "probe.h"

/* probe_call.c */
enum call_form { FORM_MSR, FORM_GHCB };
enum call_status { CALL_OK, CALL_NOT_RUN, CALL_VMPL_ERROR, CALL_NO_GHCB };
extern u64 g_caa;
extern u64 g_last_ghcb_msr, g_last_exit_info1, g_last_exit_info2;
int probe_ghcb_register(u64 page, u64 *resp_out);
/*
 * SEV-SNP guest mode (an SNP-aware OVMF launched the probe): CPUID
 * 0x8000001F says SNP and SEV_STATUS has SNP active. The firmware's #VC
 * handler owns the vCPU's registered, shared GHCB; the probe issues its
 * calls through that page (as AmdSvsmLib does) and never registers one of
 * its own, which a KVM host would take as the vCPU's GHCB from then on.
 */
extern int g_snp;
extern u64 g_sev_status;
void probe_snp_detect(void);
/* The GHCB page the GHCB MSR names now (0 if it holds a protocol value). */
u64 probe_ghcb_current(void);
enum call_status probe_call(enum call_form form, struct probe_regs *r);
enum call_status probe_call_not_pending(enum call_form form, struct probe_regs *r);
const CHAR16 *probe_call_status_str(enum call_status s);

/* probe_flash.c */
struct flash_info {
	u64 base, size; /* flash as the guest sees it: [base, 4 GiB) */
	int footer_found;
	u64 meta_gpa; /* "ASEV" header, 0 if none */
	u32 meta_items;
	u64 secrets_gpa; /* SNP_SECRETS item, 0 if none */
	u64 secrets_size;
};
int probe_flash_find_base(u64 *base);
int probe_flash_parse(struct flash_info *fi, CHAR16 *why, UINTN why_size);

/* probe_lib.c: TAP output, fault recovery, allocation, SVSM call wrappers. */
/* What call() returns when the SVSM did not answer: no valid result code. */
#define RC_TRANSPORT_FAIL 0xDEAD0000DEADULL
extern int g_n, g_pass, g_fail, g_skip;
extern EFI_SYSTEM_TABLE *g_st;
extern enum call_form g_form;
struct probe_fault {
	int armed;
	u64 expect_rip; /* where the blocked access must fault */
	u64 resume_rip;
	int pop_return; /* exec check: pop the call's return address */
	INTN vector;
	u64 error_code, rip, cr2;
};
extern volatile struct probe_fault g_fault;
struct efi_cpu_arch_protocol;
extern struct efi_cpu_arch_protocol *g_cpu;
void tap(BOOLEAN ok, const CHAR16 *fmt, ...);
void tap_skip(const CHAR16 *why, const CHAR16 *fmt, ...);
const CHAR16 *rc_name(u64 rc);
__attribute__((noreturn)) void shutdown(void);
void fault_arm(u64 expect_rip, u64 resume_rip, int pop_return);
void fault_disarm(void);
EFI_STATUS fault_handlers_install(void);
void fault_handlers_remove(void);
/* Fault-protected 64-bit read (0 on success, else the vector). */
int probe_safe_read64(u64 addr, u64 *val);
/* Fault-protected 64-bit write (0 on success, else the vector). */
int probe_safe_write64(u64 addr, u64 val);
u64 alloc_pages(UINTN n);
u8 *ca_ptr(void);
struct probe_regs regs(u32 proto, u32 call, u64 rcx, u64 rdx, u64 r8);
u64 call(struct probe_regs *r);
u64 call3(u32 proto, u32 id, u64 rcx, u64 rdx, u64 r8, struct probe_regs *out);
BOOLEAN rc_either(u64 rc, u64 a, u64 b);
void hex32(const CHAR16 *label, const u8 *d);
/* Prints the summary line and powers the VM off. */
__attribute__((noreturn)) void finish(void);

/* probe_fake.c, only in build/guest/probe-fake.efi (-DPROBE_FAKE_SVSM). */
int fake_svsm_setup(u64 secrets_gpa, const u8 *flash_sha256);
int fake_svsm_trap(EFI_EXCEPTION_TYPE type, EFI_SYSTEM_CONTEXT_X64 *x);
u64 fake_ghcb_msr_read(void);
void fake_ghcb_msr_write(u64 v);

#endif
