/*
 * A fake SVSM inside the probe, only in build/probe-fake.efi: it lets the
 * probe's own plumbing (register convention around VMGEXIT, GHCB MSR and
 * GHCB page forms, CA handling, PVALIDATE list and vTPM buffer handling,
 * TAP accounting) run under plain OVMF, where no SVSM exists. It traps
 * VMGEXIT, which raises #UD there (`rep vmmcall` without EFER.SVME), and
 * serves the request from the registers in the exception context; the GHCB
 * MSR is a variable here (probe_call.c), because TCG silently reads an
 * unimplemented MSR as 0. Its answers follow the same reading of the spec as the
 * probe, so it checks the probe's mechanics, not its expectations. The
 * isolation checks are expected to fail against it (its "SVSM memory" is
 * ordinary guest RAM filled with RET instructions).
 */
#include "probe.h"
#include "probe_int.h"

#define FAKE_SVSM_PAGES 16

static u64 f_msr, f_ghcb, f_ca, f_base, f_size;
static const u8 *f_flash_sha256;

static int in_svsm(u64 gpa, u64 len)
{
	return gpa < f_base + f_size && gpa + len > f_base;
}
static int bad_gpa(u64 gpa)
{
	return gpa >= FOUR_GIB || in_svsm(gpa, PAGE_SIZE);
}

int fake_svsm_setup(u64 secrets_gpa, const u8 *flash_sha256)
{
	EFI_PHYSICAL_ADDRESS a = 0xFFFFFFFFULL, ca = 0xFFFFFFFFULL;
	u8 *sp = (u8 *)(UINTN)secrets_gpa;
	u32 maxv = 1;

	if (EFI_ERROR(uefi_call_wrapper(BS->AllocatePages, 4, AllocateMaxAddress, EfiLoaderData,
					FAKE_SVSM_PAGES, &a)) ||
	    EFI_ERROR(
		uefi_call_wrapper(BS->AllocatePages, 4, AllocateMaxAddress, EfiLoaderData, 1, &ca)))
		return -1;
	SetMem((void *)(UINTN)a, FAKE_SVSM_PAGES * PAGE_SIZE, 0xC3);
	ZeroMem((void *)(UINTN)ca, PAGE_SIZE);
	f_base = a;
	f_size = FAKE_SVSM_PAGES * PAGE_SIZE;
	f_ca = ca;
	f_flash_sha256 = flash_sha256;
	ZeroMem(sp, PAGE_SIZE);
	CopyMem(sp + SECRETS_SVSM_BASE, &f_base, 8);
	CopyMem(sp + SECRETS_SVSM_SIZE, &f_size, 8);
	CopyMem(sp + SECRETS_SVSM_CAA, &f_ca, 8);
	CopyMem(sp + SECRETS_SVSM_MAX_VERSION, &maxv, 4);
	sp[SECRETS_SVSM_GUEST_VMPL] = 2;
	SetMem(sp + SECRETS_VMPCK0 + 2 * SECRETS_VMPCK_SIZE, 2 * SECRETS_VMPCK_SIZE,
	       0x77); /* VMPCK2, 3 */
	Print(L"# FAKE SVSM (probe self-test build): not csvsm\n");
	return 0;
}

static u64 pvalidate(u64 gpa)
{
	volatile u8 *p = (volatile u8 *)(UINTN)gpa;
	u16 entries, next;

	if (gpa & 7 || bad_gpa(gpa))
		return (gpa & 7) ? SVSM_ERR_INVALID_PARAMETER : SVSM_ERR_INVALID_ADDRESS;
	if ((gpa & (PAGE_SIZE - 1)) + PVAL_HDR_SIZE > PAGE_SIZE)
		return SVSM_ERR_INVALID_PARAMETER;
	entries = *(volatile u16 *)p;
	next = *(volatile u16 *)(p + 2);
	if (!entries || next >= entries || entries > (PAGE_SIZE - (gpa & (PAGE_SIZE - 1)) - 8) / 8)
		return SVSM_ERR_INVALID_PARAMETER;
	for (; next < entries; next++) {
		u64 e = *(volatile u64 *)(p + 8 + 8ULL * next), pa = e & ~0xFFFULL;
		u64 sz = (e & 3) == 1 ? SZ_2M : PAGE_SIZE;

		if ((e & 3) > 1 || (e & 0xFF0) || (pa & (sz - 1))) {
			*(volatile u16 *)(p + 2) = next;
			return SVSM_ERR_INVALID_PARAMETER;
		}
		if (pa + sz > FOUR_GIB || in_svsm(pa, sz)) {
			*(volatile u16 *)(p + 2) = next;
			return SVSM_ERR_INVALID_ADDRESS;
		}
		if (e & PVAL_VALIDATE)
			ZeroMem((void *)(UINTN)pa,
				sz); /* stands in for "validated pages come back zeroed" */
	}
	*(volatile u16 *)(p + 2) = next;
	return SVSM_SUCCESS;
}

static u64 vtpm_cmd(u64 gpa)
{
	u8 *p = (u8 *)(UINTN)gpa, *rsp = p + 4;
	u32 cmd, size, cc, rlen;

	if (gpa & (PAGE_SIZE - 1) || bad_gpa(gpa))
		return (gpa & (PAGE_SIZE - 1)) ? SVSM_ERR_INVALID_PARAMETER
					       : SVSM_ERR_INVALID_ADDRESS;
	CopyMem(&cmd, p, 4);
	if (cmd != VTPM_PLAT_SEND_CMD)
		return cmd >= 1 && cmd <= 30 ? SVSM_ERR_UNSUPPORTED_CALL
					     : SVSM_ERR_INVALID_PARAMETER;
	CopyMem(&size, p + 5, 4);
	if (p[4] != 0 || size > PAGE_SIZE - VTPM_REQ_HDR)
		return SVSM_ERR_INVALID_PARAMETER;
	cc = (u32)p[9 + 6] << 24 | (u32)p[9 + 7] << 16 | (u32)p[9 + 8] << 8 | p[9 + 9];
	ZeroMem(rsp, 64);
	rsp[0] = 0x80;
	rsp[1] = 0x01;
	if (cc == 0x17B) { /* GetRandom(16) */
		rlen = 10 + 2 + 16;
		rsp[11] = 16;
		for (int i = 0; i < 16; i++)
			rsp[12 + i] = (u8)(i * 37 + 1);
	} else if (cc == 0x17E) { /* PCR_Read(SHA256, PCR0) */
		u8 buf[64];
		u8 *q = rsp + 10;

		ZeroMem(buf, 32);
		CopyMem(buf + 32, (void *)f_flash_sha256, 32);
		q[3] = 1; /* pcrUpdateCounter */
		q[7] = 1;
		q[8] = 0;
		q[9] = 0x0B;
		q[10] = 3;
		q[11] = 1; /* selection */
		q[17] = 1;
		q[18] = 0;
		q[19] = 32; /* TPML_DIGEST count 1, size 32 */
		sha256(buf, 64, q + 20);
		rlen = 10 + 20 + 32;
	} else {
		rlen = 10;
		rsp[8] = 0x01; /* TPM_RC_COMMAND_CODE 0x143 */
		rsp[9] = 0x43;
	}
	rsp[2] = (u8)(rlen >> 24);
	rsp[3] = (u8)(rlen >> 16);
	rsp[4] = (u8)(rlen >> 8);
	rsp[5] = (u8)rlen;
	CopyMem(p, &rlen, 4);
	return SVSM_SUCCESS;
}

static void svsm_request(EFI_SYSTEM_CONTEXT_X64 *x)
{
	volatile u8 *ca = (volatile u8 *)(UINTN)f_ca;
	u32 proto = (u32)(x->Rax >> 32), id = (u32)x->Rax;
	u64 rc = SVSM_SUCCESS;

	if (!ca[CA_CALL_PENDING])
		return; /* not a call: registers untouched */
	if (proto == PROTO_CORE) {
		switch (id) {
		case CORE_REMAP_CA:
			if (x->Rcx & (PAGE_SIZE - 1))
				rc = SVSM_ERR_INVALID_PARAMETER;
			else if (bad_gpa(x->Rcx))
				rc = SVSM_ERR_INVALID_ADDRESS;
			else {
				ca[CA_CALL_PENDING] = 0;
				f_ca = x->Rcx;
				ZeroMem((void *)(UINTN)f_ca, 8);
				ca = (volatile u8 *)(UINTN)f_ca;
			}
			break;
		case CORE_PVALIDATE:
			rc = pvalidate(x->Rcx);
			break;
		case CORE_CREATE_VCPU:
		case CORE_DELETE_VCPU:
			if ((x->Rcx | (id == CORE_CREATE_VCPU ? x->Rdx : 0)) & (PAGE_SIZE - 1))
				rc = SVSM_ERR_INVALID_PARAMETER;
			else if (bad_gpa(x->Rcx))
				rc = SVSM_ERR_INVALID_ADDRESS;
			else
				rc = SVSM_ERR_INVALID_PARAMETER; /* no valid VMSA in the probe */
			break;
		case CORE_QUERY_PROTOCOL:
			x->Rcx = (x->Rcx == (((u64)PROTO_CORE << 32) | 1) ||
				  x->Rcx == (((u64)PROTO_VTPM << 32) | 1))
				     ? (1ULL << 32) | 1
				     : 0;
			break;
		case CORE_CONFIGURE_VTOM:
			if (x->Rcx & 1)
				x->Rcx = 0;
			else
				rc = SVSM_ERR_INVALID_REQUEST;
			break;
		default:
			rc = SVSM_ERR_UNSUPPORTED_CALL;
			break;
		}
	} else if (proto == PROTO_VTPM) {
		if (id == VTPM_QUERY) {
			x->Rcx = 1ULL << 8;
			x->Rdx = 0;
		} else if (id == VTPM_CMD)
			rc = vtpm_cmd(x->Rcx);
		else
			rc = SVSM_ERR_UNSUPPORTED_CALL;
	} else
		rc = SVSM_ERR_UNSUPPORTED_PROTOCOL;
	x->Rax = rc;
	ca[CA_CALL_PENDING] = 0;
}

u64 fake_ghcb_msr_read(void)
{
	return f_msr;
}
void fake_ghcb_msr_write(u64 v)
{
	f_msr = v;
}

/* Called from the probe's #UD/#GP handler; returns 1 if it emulated the instruction. */
int fake_svsm_trap(EFI_EXCEPTION_TYPE type, EFI_SYSTEM_CONTEXT_X64 *x)
{
	const u8 *ip = (const u8 *)(UINTN)x->Rip;

	/* RMPADJUST: the fake has no RMP and refuses nothing (RAX 0), so the
	 * isolation checks, which want FAIL_PERMISSION, fail as selftest.sh
	 * expects. */
	if (type == 6 && ip[0] == 0xF3 && ip[1] == 0x0F && ip[2] == 0x01 && ip[3] == 0xFE) {
		x->Rax = 0;
		x->Rip += 4;
		return 1;
	}

	if (type == 6 && ip[0] == 0xF3 && ip[1] == 0x0F && ip[2] == 0x01 && ip[3] == 0xD9) {
		x->Rip += 4;
		if ((f_msr & GHCB_MSR_INFO_MASK) == GHCB_MSR_REG_GPA_REQ) {
			f_ghcb = f_msr & ~GHCB_MSR_INFO_MASK;
			f_msr = f_ghcb | GHCB_MSR_REG_GPA_RESP;
		} else if (f_msr == GHCB_MSR_VMPL_REQ) {
			svsm_request(x);
			f_msr = GHCB_MSR_VMPL_RESP;
		} else if (f_msr == f_ghcb && f_ghcb) {
			volatile u8 *g = (volatile u8 *)(UINTN)f_ghcb;

			if (*(volatile u64 *)(g + GHCB_OFF_SW_EXIT_CODE) ==
				SVM_VMGEXIT_SNP_RUN_VMPL &&
			    *(volatile u64 *)(g + GHCB_OFF_SW_EXIT_INFO_1) == 0) {
				svsm_request(x);
				*(volatile u64 *)(g + GHCB_OFF_SW_EXIT_INFO_1) = 0;
			} else {
				*(volatile u64 *)(g + GHCB_OFF_SW_EXIT_INFO_1) = 2;
				*(volatile u64 *)(g + GHCB_OFF_SW_EXIT_INFO_2) = 5;
			}
		}
		return 1;
	}
	return 0;
}
