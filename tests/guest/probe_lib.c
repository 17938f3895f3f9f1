/*
 * Shared infrastructure of the guest-side EFI applications (the probe and
 * the hostile guest): TAP output, #UD/#GP/#PF recovery through
 * EFI_CPU_ARCH_PROTOCOL, page allocation below 4 GiB, and the SVSM call
 * wrappers that turn a transport failure into an impossible result code.
 */
#include "probe.h"
#include "probe_int.h"

int g_n, g_pass, g_fail, g_skip;
EFI_SYSTEM_TABLE *g_st;

/* ------------------------------------------------------------------------ */
/* TAP output                                                               */

void tap(BOOLEAN ok, const CHAR16 *fmt, ...)
{
	CHAR16 buf[320];
	va_list ap;

	va_start(ap, fmt);
	UnicodeVSPrint(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_n++;
	if (ok)
		g_pass++;
	else
		g_fail++;
	Print(L"%s %d - %s\n", ok ? L"ok" : L"not ok", g_n, buf);
}

/* A skipped check: TAP `ok N - text # SKIP why`, counted in neither total. */
void tap_skip(const CHAR16 *why, const CHAR16 *fmt, ...)
{
	CHAR16 buf[320];
	va_list ap;

	va_start(ap, fmt);
	UnicodeVSPrint(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g_n++;
	g_skip++;
	Print(L"ok %d - %s # SKIP %s\n", g_n, buf, why);
}

const CHAR16 *rc_name(u64 rc)
{
	switch (rc) {
	case SVSM_SUCCESS:
		return L"SUCCESS";
	case SVSM_ERR_INCOMPLETE:
		return L"INCOMPLETE";
	case SVSM_ERR_UNSUPPORTED_PROTOCOL:
		return L"UNSUPPORTED_PROTOCOL";
	case SVSM_ERR_UNSUPPORTED_CALL:
		return L"UNSUPPORTED_CALL";
	case SVSM_ERR_INVALID_ADDRESS:
		return L"INVALID_ADDRESS";
	case SVSM_ERR_INVALID_FORMAT:
		return L"INVALID_FORMAT";
	case SVSM_ERR_INVALID_PARAMETER:
		return L"INVALID_PARAMETER";
	case SVSM_ERR_INVALID_REQUEST:
		return L"INVALID_REQUEST";
	case SVSM_ERR_BUSY:
		return L"BUSY";
	case SVSM_PVALIDATE_FAIL_SIZEMISMATCH:
		return L"PVALIDATE_FAIL_SIZEMISMATCH";
	case SVSM_PVALIDATE_FAIL_NO_CHANGE:
		return L"PVALIDATE_FAIL_NO_CHANGE";
	case RC_TRANSPORT_FAIL:
		return L"(no answer)";
	}
	return L"(other)";
}

__attribute__((noreturn)) void shutdown(void)
{
	uefi_call_wrapper(g_st->RuntimeServices->ResetSystem, 4, EfiResetShutdown, EFI_SUCCESS, 0,
			  NULL);
	for (;;)
		__asm__ volatile("hlt");
}

/* ------------------------------------------------------------------------ */
/* #GP / #PF recovery (EFI_CPU_ARCH_PROTOCOL.RegisterInterruptHandler)       */

#define EFI_CPU_ARCH_PROTOCOL_GUID                                                                 \
	{                                                                                          \
		0x26baccb1, 0x6f42, 0x11d4,                                                        \
		{                                                                                  \
			0xbc, 0xe7, 0x00, 0x80, 0xc7, 0x3c, 0x88, 0x81                             \
		}                                                                                  \
	}

typedef void(__attribute__((ms_abi)) * cpu_interrupt_handler)(EFI_EXCEPTION_TYPE,
							      EFI_SYSTEM_CONTEXT);
/* PI spec vol. 2 EFI_CPU_ARCH_PROTOCOL; only RegisterInterruptHandler is used. */
struct efi_cpu_arch_protocol {
	void *flush_data_cache, *enable_interrupt, *disable_interrupt, *get_interrupt_state, *init;
	EFI_STATUS(__attribute__((ms_abi)) * register_interrupt_handler)
	(struct efi_cpu_arch_protocol *, EFI_EXCEPTION_TYPE, cpu_interrupt_handler);
};

struct efi_cpu_arch_protocol *g_cpu;

volatile struct probe_fault g_fault;

static void __attribute__((ms_abi)) fault_handler(EFI_EXCEPTION_TYPE type, EFI_SYSTEM_CONTEXT ctx)
{
	EFI_SYSTEM_CONTEXT_X64 *x = ctx.SystemContextX64;

#ifdef PROBE_FAKE_SVSM
	if (fake_svsm_trap(type, x))
		return;
#endif
	g_fault.vector = type;
	g_fault.error_code = x->ExceptionData;
	g_fault.rip = x->Rip;
	g_fault.cr2 = x->Cr2;
	if (!g_fault.armed || x->Rip != g_fault.expect_rip) {
		Print(L"# unexpected exception %d error code 0x%lx at RIP 0x%lx (CR2 0x%lx)\n",
		      type, x->ExceptionData, x->Rip, x->Cr2);
		Print(L"Bail out! unexpected exception\n");
		Print(L"%d passed, %d failed\n", g_pass, g_fail + 1);
		shutdown();
	}
	g_fault.armed = 0;
	if (g_fault.pop_return)
		x->Rsp += 8;
	x->Rip = g_fault.resume_rip;
}

void fault_arm(u64 expect_rip, u64 resume_rip, int pop_return)
{
	g_fault.vector = -1;
	g_fault.error_code = 0;
	g_fault.expect_rip = expect_rip;
	g_fault.resume_rip = resume_rip;
	g_fault.pop_return = pop_return;
	__asm__ volatile("" ::: "memory");
	g_fault.armed = 1;
	__asm__ volatile("" ::: "memory");
}

void fault_disarm(void)
{
	__asm__ volatile("" ::: "memory");
	g_fault.armed = 0;
}

EFI_STATUS fault_handlers_install(void)
{
	EFI_GUID guid = EFI_CPU_ARCH_PROTOCOL_GUID;
	EFI_STATUS s;

	s = uefi_call_wrapper(g_st->BootServices->LocateProtocol, 3, &guid, NULL, (void **)&g_cpu);
	if (EFI_ERROR(s))
		return s;
	/* #UD too: a VMGEXIT that nobody intercepts ends the run instead of hanging. */
	s = g_cpu->register_interrupt_handler(g_cpu, 6, fault_handler);
	if (EFI_ERROR(s))
		return s;
	s = g_cpu->register_interrupt_handler(g_cpu, 13, fault_handler);
	if (EFI_ERROR(s))
		return s;
	return g_cpu->register_interrupt_handler(g_cpu, 14, fault_handler);
}

void fault_handlers_remove(void)
{
	if (g_cpu) {
		g_cpu->register_interrupt_handler(g_cpu, 6, NULL);
		g_cpu->register_interrupt_handler(g_cpu, 13, NULL);
		g_cpu->register_interrupt_handler(g_cpu, 14, NULL);
	}
}

int probe_safe_read64(u64 addr, u64 *val)
{
	if (!g_cpu) {
		*val = *(volatile u64 *)(UINTN)addr;
		return 0;
	}
	fault_arm((u64)(UINTN)probe_try_read64_fault, (u64)(UINTN)probe_try_read64_resume, 0);
	*val = probe_try_read64(addr, 0);
	fault_disarm();
	return g_fault.vector >= 0 ? (int)g_fault.vector : 0;
}

int probe_safe_write64(u64 addr, u64 val)
{
	if (!g_cpu) {
		*(volatile u64 *)(UINTN)addr = val;
		return 0;
	}
	fault_arm((u64)(UINTN)probe_try_write64_fault, (u64)(UINTN)probe_try_write64_resume, 0);
	probe_try_write64(addr, val);
	fault_disarm();
	return g_fault.vector >= 0 ? (int)g_fault.vector : 0;
}

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

u64 alloc_pages(UINTN n)
{
	EFI_PHYSICAL_ADDRESS a = 0xFFFFFFFFULL;

	if (EFI_ERROR(uefi_call_wrapper(g_st->BootServices->AllocatePages, 4, AllocateMaxAddress,
					EfiLoaderData, n, &a)))
		return 0;
	ZeroMem((void *)(UINTN)a, n * PAGE_SIZE);
	return a;
}

u8 *ca_ptr(void)
{
	return (u8 *)(UINTN)g_caa;
}

struct probe_regs regs(u32 proto, u32 call, u64 rcx, u64 rdx, u64 r8)
{
	struct probe_regs r = {SVSM_CALL(proto, call), rcx, rdx, r8, 0};
	return r;
}

/*
 * Issue a call; on a transport failure print why and return an impossible
 * result code so that the caller's check fails.
 */
enum call_form g_form = FORM_MSR;

u64 call(struct probe_regs *r)
{
	u64 rax_in = r->rax;
	enum call_status s = probe_call(g_form, r);

	if (s != CALL_OK) {
		Print(L"# call RAX=0x%lx via %s form failed: %s (GHCB MSR after: 0x%lx", rax_in,
		      g_form == FORM_GHCB ? L"GHCB" : L"MSR", probe_call_status_str(s),
		      g_last_ghcb_msr);
		if (g_form == FORM_GHCB)
			Print(L", sw_exit_info_1 0x%lx, sw_exit_info_2 0x%lx", g_last_exit_info1,
			      g_last_exit_info2);
		Print(L")\n");
		return RC_TRANSPORT_FAIL;
	}
	return r->rax;
}

u64 call3(u32 proto, u32 id, u64 rcx, u64 rdx, u64 r8, struct probe_regs *out)
{
	struct probe_regs r = regs(proto, id, rcx, rdx, r8);
	u64 rc = call(&r);

	if (out)
		*out = r;
	return rc;
}

BOOLEAN rc_either(u64 rc, u64 a, u64 b)
{
	return rc == a || rc == b;
}

void hex32(const CHAR16 *label, const u8 *d)
{
	CHAR16 hex[65];

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = L"0123456789abcdef"[d[i] >> 4];
		hex[2 * i + 1] = L"0123456789abcdef"[d[i] & 15];
	}
	hex[64] = 0;
	Print(L"# %s %s\n", label, hex);
}

void finish(void)
{
	if (g_skip)
		Print(L"# %d skipped\n", g_skip);
	Print(L"%d passed, %d failed\n", g_pass, g_fail);
	fault_handlers_remove();
	shutdown();
}
