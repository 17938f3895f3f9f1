/*
 * SVSM call mechanics, exactly as a Linux guest issues them
 * (arch/x86/boot/startup/sev-shared.c svsm_perform_msr_protocol,
 * arch/x86/coco/sev/svsm.c svsm_perform_ghcb_protocol; reference §1.1):
 * set CA call_pending, load RAX/RCX/RDX/R8/R9, ask for VMPL0 through the
 * GHCB (MSR form or GHCB page form), VMGEXIT, take the outputs, then
 * xchg(call_pending, 0): a value still 1 means the SVSM never ran.
 */
#include "probe.h"
#include "probe_int.h"

u8 *g_xmm_check;
int g_ymm_check;

u64 g_caa;	     /* current calling area gPA (changes with REMAP_CA) */
static u8 *g_ghcb;   /* the probe's own GHCB page (identity-mapped) */
u64 g_last_ghcb_msr; /* GHCB MSR value read back after the last call */
u64 g_last_exit_info1, g_last_exit_info2;

/*
 * QEMU TCG reads an MSR it does not implement as 0 and ignores writes (no
 * #GP), so the fake-SVSM self-test build (probe_fake.c) takes the GHCB MSR
 * here instead of trapping it. The real probe always uses RDMSR/WRMSR.
 */
#ifdef PROBE_FAKE_SVSM
#define ghcb_msr_read()	  fake_ghcb_msr_read()
#define ghcb_msr_write(v) fake_ghcb_msr_write(v)
#else
#define ghcb_msr_read()	  probe_rdmsr(MSR_GHCB)
#define ghcb_msr_write(v) probe_wrmsr(MSR_GHCB, (v))
#endif

int g_snp;
u64 g_sev_status;

static void probe_cpuid(u32 leaf, u32 *a, u32 *b, u32 *c, u32 *d)
{
	__asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(0));
}

void probe_snp_detect(void)
{
	u32 a, b, c, d;

	probe_cpuid(0x80000000u, &a, &b, &c, &d);
	if (a < 0x8000001Fu)
		return;
	probe_cpuid(0x8000001Fu, &a, &b, &c, &d);
	if (!(a & (1u << 4))) /* SEV-SNP (APM vol. 3 CPUID Fn8000_001F EAX) */
		return;
	g_sev_status = probe_rdmsr(0xC0010131u); /* SEV_STATUS */
	g_snp = (g_sev_status & (1u << 2)) != 0;
	if (g_snp)
		g_ghcb = (u8 *)(UINTN)probe_ghcb_current();
}

u64 probe_ghcb_current(void)
{
	u64 v = ghcb_msr_read();

	return (v & GHCB_MSR_INFO_MASK) ? 0 : v;
}

static u64 ghcb_rd(unsigned off)
{
	return *(volatile u64 *)(g_ghcb + off);
}
static void ghcb_wr(unsigned off, u64 v)
{
	volatile u64 *bitmap = (volatile u64 *)(g_ghcb + GHCB_OFF_VALID_BITMAP);
	unsigned bit = off / 8; /* 56421: valid bit = field offset / 8 (reference §4.2) */

	*(volatile u64 *)(g_ghcb + off) = v;
	bitmap[bit / 64] |= 1ULL << (bit % 64);
}

/*
 * Register `page` as this vCPU's GHCB with the MSR protocol (0x012 -> 0x013,
 * GFN echoed; reference §4.1). On SNP the page must already be shared: in
 * SNP mode the probe only re-registers the firmware's own GHCB.
 */
int probe_ghcb_register(u64 page, u64 *resp_out)
{
	u64 flags, saved, resp, gfn = page >> 12;

	flags = probe_irq_save();
	saved = ghcb_msr_read();
	ghcb_msr_write((gfn << 12) | GHCB_MSR_REG_GPA_REQ);
	probe_vmgexit();
	resp = ghcb_msr_read();
	ghcb_msr_write(saved);
	probe_irq_restore(flags);
	*resp_out = resp;
	if ((resp & GHCB_MSR_INFO_MASK) != GHCB_MSR_REG_GPA_RESP || (resp >> 12) != gfn)
		return -1;
	g_ghcb = (u8 *)(UINTN)page;
	*(volatile u16 *)(g_ghcb + GHCB_OFF_PROTO_VERSION) = GHCB_PROTOCOL_VERSION;
	*(volatile u32 *)(g_ghcb + GHCB_OFF_USAGE) = 0;
	return 0;
}

static enum call_status call_msr(struct probe_regs *r, volatile u8 *pending_byte, int set_pending)
{
	u64 flags, saved, resp;
	u8 pending;

	flags = probe_irq_save();
	saved = ghcb_msr_read();
	/* GHCBData[39:32] = target VMPL 0; info 0x016 (reference §4.1). */
	ghcb_msr_write(GHCB_MSR_VMPL_REQ | ((u64)0 << 32));
	if (set_pending)
		*pending_byte = 1;
	pending = probe_svsm_issue(r, pending_byte, g_xmm_check, g_ymm_check);
	resp = ghcb_msr_read();
	ghcb_msr_write(saved);
	probe_irq_restore(flags);
	g_last_ghcb_msr = resp;
	if (pending)
		return CALL_NOT_RUN;
	/* Response 0x017 with GHCBData[63:32] = 0 (success) and [31:12] = 0. */
	if (resp != GHCB_MSR_VMPL_RESP)
		return CALL_VMPL_ERROR;
	return CALL_OK;
}

static enum call_status call_ghcb(struct probe_regs *r, volatile u8 *pending_byte, int set_pending)
{
	volatile u64 *bitmap = (volatile u64 *)(g_ghcb + GHCB_OFF_VALID_BITMAP);
	u64 flags, saved;
	u8 pending;

	if (!g_ghcb)
		return CALL_NO_GHCB;
	/* Interrupts off before the page is filled: in SNP mode it is the
	 * firmware's GHCB, and an interrupt handler's #VC would reuse it. */
	flags = probe_irq_save();
	/* Linux vc_ghcb_invalidate + ghcb_set_sw_exit_*: SNP_RUN_VMPL, VMPL0. */
	bitmap[0] = 0;
	bitmap[1] = 0;
	ghcb_wr(GHCB_OFF_SW_EXIT_CODE, SVM_VMGEXIT_SNP_RUN_VMPL);
	ghcb_wr(GHCB_OFF_SW_EXIT_INFO_1, 0);
	ghcb_wr(GHCB_OFF_SW_EXIT_INFO_2, 0);
	*(volatile u16 *)(g_ghcb + GHCB_OFF_PROTO_VERSION) = GHCB_PROTOCOL_VERSION;
	*(volatile u32 *)(g_ghcb + GHCB_OFF_USAGE) = 0;

	saved = ghcb_msr_read();
	ghcb_msr_write((u64)(UINTN)g_ghcb);
	if (set_pending)
		*pending_byte = 1;
	pending = probe_svsm_issue(r, pending_byte, g_xmm_check, g_ymm_check);
	g_last_ghcb_msr = ghcb_msr_read();
	ghcb_msr_write(saved);
	g_last_exit_info1 = ghcb_rd(GHCB_OFF_SW_EXIT_INFO_1);
	g_last_exit_info2 = ghcb_rd(GHCB_OFF_SW_EXIT_INFO_2);
	probe_irq_restore(flags);
	if (pending)
		return CALL_NOT_RUN;
	/* sw_exit_info_1[31:0] = 0: OK; 1: exception; 2: error (reference §4.2). */
	if ((u32)g_last_exit_info1 != 0)
		return CALL_VMPL_ERROR;
	return CALL_OK;
}

enum call_status probe_call(enum call_form form, struct probe_regs *r)
{
	volatile u8 *pending = (volatile u8 *)(UINTN)(g_caa + CA_CALL_PENDING);

	return form == FORM_GHCB ? call_ghcb(r, pending, 1) : call_msr(r, pending, 1);
}

/* A VMPL0 request with CA call_pending = 0: must not be taken as a call. */
enum call_status probe_call_not_pending(enum call_form form, struct probe_regs *r)
{
	volatile u8 *pending = (volatile u8 *)(UINTN)(g_caa + CA_CALL_PENDING);

	*pending = 0;
	return form == FORM_GHCB ? call_ghcb(r, pending, 0) : call_msr(r, pending, 0);
}

const CHAR16 *probe_call_status_str(enum call_status s)
{
	switch (s) {
	case CALL_OK:
		return L"ok";
	case CALL_NOT_RUN:
		return L"call_pending still 1: the SVSM did not run";
	case CALL_VMPL_ERROR:
		return L"VMPL switch refused (bad GHCB response)";
	case CALL_NO_GHCB:
		return L"no GHCB page registered";
	}
	return L"?";
}

u64 probe_ghcb_exit(u64 code, u64 info1, u64 info2, u64 rax)
{
	volatile u64 *bitmap = (volatile u64 *)(g_ghcb + GHCB_OFF_VALID_BITMAP);
	u64 flags, saved, out;

	if (!g_ghcb)
		return ~0ULL;
	flags = probe_irq_save();
	bitmap[0] = bitmap[1] = 0;
	ghcb_wr(GHCB_OFF_SW_EXIT_CODE, code);
	ghcb_wr(GHCB_OFF_SW_EXIT_INFO_1, info1);
	ghcb_wr(GHCB_OFF_SW_EXIT_INFO_2, info2);
	ghcb_wr(0x1F8, rax); /* GHCB rax (reference §4.2) */
	*(volatile u16 *)(g_ghcb + GHCB_OFF_PROTO_VERSION) = GHCB_PROTOCOL_VERSION;
	*(volatile u32 *)(g_ghcb + GHCB_OFF_USAGE) = 0;
	saved = ghcb_msr_read();
	ghcb_msr_write((u64)(UINTN)g_ghcb);
	probe_vmgexit();
	ghcb_msr_write(saved);
	out = ghcb_rd(GHCB_OFF_SW_EXIT_INFO_1);
	probe_irq_restore(flags);
	return out;
}
