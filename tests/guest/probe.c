/*
 * csvsm guest-side probe: a gnu-efi application that OVMF runs as its
 * fw_cfg "kernel". It finds the SVSM the way a guest OS does (OVMF SEV
 * metadata -> secrets page -> SVSM fields), calls it the way Linux does
 * (probe_call.c) and runs a conformance suite over the console in TAP form:
 * `ok N - text` / `not ok N - text`, ending with one line
 * `P passed, F failed`. Then it powers the VM off through
 * RT->ResetSystem(EfiResetShutdown) (on q35: ACPI PM1a control, port 0x604).
 *
 * Expectations come from shared/reference/snp-svsm-interfaces.md (§ numbers
 * below). Checks that only some SVSMs make (coconut-svsm behaviour that the
 * spec text does not confirm) print a `# note` instead of failing.
 */
#include "probe.h"
#include "probe_int.h"
#include "sha512.h"

static u64 g_svsm_base, g_svsm_size, g_boot_caa;
static u32 g_svsm_max_version;
static u8 g_guest_vmpl;

/* ------------------------------------------------------------------------ */
/* Discovery                                                                 */

static BOOLEAN secrets_sane(CHAR16 *why, UINTN n)
{
	/* Sanity, not spec: a non-SVSM OVMF leaves this page as ordinary RAM. */
	if (g_svsm_base & (PAGE_SIZE - 1) || g_svsm_size & (PAGE_SIZE - 1)) {
		UnicodeSPrint(why, n, L"svsm_base/svsm_size not 4K-aligned");
		return FALSE;
	}
	if (g_svsm_base + g_svsm_size < g_svsm_base || g_svsm_base + g_svsm_size > (1ULL << 52)) {
		UnicodeSPrint(why, n, L"svsm_base + svsm_size out of range");
		return FALSE;
	}
	if (!g_boot_caa || g_boot_caa & (PAGE_SIZE - 1)) {
		UnicodeSPrint(why, n, L"svsm_caa 0x%lx not a 4K-aligned page", g_boot_caa);
		return FALSE;
	}
	if (g_boot_caa >= g_svsm_base && g_boot_caa < g_svsm_base + g_svsm_size) {
		UnicodeSPrint(why, n, L"svsm_caa inside the SVSM");
		return FALSE;
	}
	if (g_guest_vmpl < 1 || g_guest_vmpl > 3) {
		UnicodeSPrint(why, n, L"svsm_guest_vmpl %d not 1..3", g_guest_vmpl);
		return FALSE;
	}
	if (g_svsm_max_version < 1) {
		UnicodeSPrint(why, n, L"svsm_max_version 0");
		return FALSE;
	}
	return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Checks                                                                    */

static void check_sha256(void)
{
	static const u8 abc[32] = {0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40,
				   0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17,
				   0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad};
	static const u8 two[32] = {0x24, 0x8d, 0x6a, 0x61, 0xd2, 0x06, 0x38, 0xb8, 0xe5, 0xc0, 0x26,
				   0x93, 0x0c, 0x3e, 0x60, 0x39, 0xa3, 0x3c, 0xe4, 0x59, 0x64, 0xff,
				   0x21, 0x67, 0xf6, 0xec, 0xed, 0xd4, 0x19, 0xdb, 0x06, 0xc1};
	/* SHA-256 of one million 'a' (FIPS 180-2 appendix B.3). */
	static const u8 mil[32] = {0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
				   0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
				   0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0};
	const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	u8 out[32], a[1000];
	struct sha256_ctx c;
	BOOLEAN ok;

	sha256("abc", 3, out);
	ok = CompareMem(out, abc, 32) == 0;
	sha256(m2, strlena((const CHAR8 *)m2), out);
	ok = ok && CompareMem(out, two, 32) == 0;
	SetMem(a, sizeof(a), 'a');
	sha256_init(&c);
	for (UINTN done = 0, i = 0, n; done < 1000000; done += n, i++) {
		n = 1 + i % 997; /* odd-sized pieces exercise the partial-block path */
		if (n > 1000000 - done)
			n = 1000000 - done;
		sha256_update(&c, a, n);
	}
	sha256_final(&c, out);
	ok = ok && CompareMem(out, mil, 32) == 0;
	tap(ok, L"probe self-test: SHA-256 FIPS 180 vectors (abc, 448-bit, 10^6 x 'a')");
}

/* The recovery path the isolation checks rely on, tested where a fault is
 * certain: a non-canonical address raises #GP(0) in any x86-64 guest. */
static void check_fault_selftest(void)
{
	const u64 nc = 0x8000000000000000ULL, sentinel = 0x1234567887654321ULL;
	INTN rv;
	u64 v, re;

	fault_arm((u64)(UINTN)probe_try_read64_fault, (u64)(UINTN)probe_try_read64_resume, 0);
	v = probe_try_read64(nc, sentinel);
	fault_disarm();
	rv = g_fault.vector;
	re = g_fault.error_code;
	fault_arm((u64)(UINTN)probe_try_write64_fault, (u64)(UINTN)probe_try_write64_resume, 0);
	probe_try_write64(nc, sentinel);
	fault_disarm();
	tap(rv == 13 && re == 0 && v == sentinel && g_fault.vector == 13 && g_fault.error_code == 0,
	    L"probe self-test: non-canonical read/write -> %s(0x%lx)/%s(0x%lx), resumed, sentinel "
	    L"%a",
	    rv == 13 ? L"#GP" : L"?", re, g_fault.vector == 13 ? L"#GP" : L"?", g_fault.error_code,
	    v == sentinel ? "kept" : "lost");
}

static void check_mechanics(u64 ghcb_page)
{
	struct probe_regs r;
	enum call_status s;
	u64 rc, resp;

	g_form = FORM_MSR;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"MSR form (0x016/0x017): QUERY_PROTOCOL(core, v1) -> %s RCX 0x%lx (want SUCCESS, "
	    L"0x100000001)",
	    rc_name(rc), r.rcx);

	if (g_snp) /* the firmware's GHCB, registered again: KVM accepts the same GPA */
		ghcb_page = probe_ghcb_current();
	rc = probe_ghcb_register(ghcb_page, &resp);
	tap(rc == 0, L"GHCB MSR protocol 0x012: register %s GHCB page 0x%lx -> 0x%lx (want 0x%lx)",
	    g_snp ? L"the firmware's" : L"a", ghcb_page, resp, ghcb_page | GHCB_MSR_REG_GPA_RESP);

	g_form = FORM_GHCB;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"GHCB form (SNP_RUN_VMPL 0x80000018): QUERY_PROTOCOL(core, v1) -> %s RCX 0x%lx",
	    rc_name(rc), r.rcx);
	g_form = FORM_MSR;

	/* Reference §1.1 "SVSM entry check": no call without call_pending. */
	r = regs(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0x1234, 0x5678);
	s = probe_call_not_pending(FORM_MSR, &r);
	tap(s == CALL_OK && r.rax == SVSM_CALL(PROTO_CORE, CORE_QUERY_PROTOCOL) &&
		r.rcx == (((u64)PROTO_CORE << 32) | 1) && r.rdx == 0x1234 && r.r8 == 0x5678,
	    L"VMPL0 request with call_pending = 0 is not a call: VMPL switch %s, RAX 0x%lx RCX "
	    L"0x%lx unchanged",
	    probe_call_status_str(s), r.rax, r.rcx);
}

static void check_core(void)
{
	struct probe_regs r;
	u64 rc;

	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, (99ULL << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == 0,
	    L"QUERY_PROTOCOL(99, v1) -> %s RCX 0x%lx (want SUCCESS, 0)", rc_name(rc), r.rcx);
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 2, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == 0,
	    L"QUERY_PROTOCOL(core, v2) -> %s RCX 0x%lx (want SUCCESS, 0)", rc_name(rc), r.rcx);
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_ATTEST << 32) | 1, 0, 0, &r);
	Print(L"# QUERY_PROTOCOL(attestation, v1) -> %s RCX 0x%lx\n", rc_name(rc), r.rcx);

	rc = call3(7, 0, 0, 0, 0, NULL);
	tap(rc == SVSM_ERR_UNSUPPORTED_PROTOCOL,
	    L"unknown protocol 7 -> %s 0x%lx (want UNSUPPORTED_PROTOCOL)", rc_name(rc), rc);
	rc = call3(PROTO_CORE, 99, 0, 0, 0, NULL);
	tap(rc == SVSM_ERR_UNSUPPORTED_CALL, L"core call 99 -> %s 0x%lx (want UNSUPPORTED_CALL)",
	    rc_name(rc), rc);
	rc = call3(PROTO_CORE, CORE_CONFIGURE_VTOM, 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == 0,
	    L"CONFIGURE_VTOM query -> %s RCX 0x%lx (want SUCCESS, 0)", rc_name(rc), r.rcx);

	/* Reference §10.1: layouts unconfirmed; an unaligned address must not succeed. */
	rc = call3(PROTO_CORE, CORE_DEPOSIT_MEM, 0x1001, 0, 0, NULL);
	tap(rc == SVSM_ERR_UNSUPPORTED_CALL || rc == SVSM_ERR_INVALID_PARAMETER ||
		rc == SVSM_ERR_INVALID_ADDRESS,
	    L"DEPOSIT_MEM(unaligned list) -> %s (UNSUPPORTED_CALL or INVALID_*)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_WITHDRAW_MEM, 0x1001, 0, 0, NULL);
	tap(rc == SVSM_ERR_UNSUPPORTED_CALL || rc == SVSM_ERR_INVALID_PARAMETER ||
		rc == SVSM_ERR_INVALID_ADDRESS,
	    L"WITHDRAW_MEM(unaligned list) -> %s (UNSUPPORTED_CALL or INVALID_*)", rc_name(rc));
}

/* Write a PVALIDATE request at `list` (any gPA the probe owns) and call. */
static u64 pvalidate(u64 list, u16 entries, u16 next, const u64 *ent, u32 n_write, u16 *next_out)
{
	volatile u8 *p = (volatile u8 *)(UINTN)list;

	*(volatile u16 *)(p + 0) = entries;
	*(volatile u16 *)(p + 2) = next;
	*(volatile u32 *)(p + 4) = 0;
	for (u32 i = 0; i < n_write; i++)
		*(volatile u64 *)(p + PVAL_HDR_SIZE + 8 * i) = ent[i];
	{
		u64 rc = call3(PROTO_CORE, CORE_PVALIDATE, list, 0, 0, NULL);
		if (next_out)
			*next_out = *(volatile u16 *)(p + 2);
		return rc;
	}
}

/*
 * Rescind the 2 MiB range at `big` (SNP mode): as one 2M entry when the
 * firmware validated it so, else as 512 4K entries (SIZEMISMATCH, as on
 * hardware when the RMP holds it as 4K pages), 255 per request.
 */
static u64 snp_rescind_2m(u64 list, u64 big)
{
	u64 e[255], rc;
	u16 next;

	e[0] = big | PVAL_SIZE_2M;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	if (rc != SVSM_PVALIDATE_FAIL_SIZEMISMATCH)
		return rc;
	for (u64 done = 0; done < 512; done += 255) {
		u16 n = (u16)(512 - done < 255 ? 512 - done : 255);
		for (u16 i = 0; i < n; i++)
			e[i] = (big + (done + i) * PAGE_SIZE) | PVAL_SIZE_4K;
		rc = pvalidate(list, n, 0, e, n, &next);
		if (rc != SVSM_SUCCESS)
			return rc;
	}
	return SVSM_SUCCESS;
}

static void check_pvalidate(u64 pool, u64 big)
{
	u64 list = g_caa + CA_BUFFER, e[4], rc, v;
	u64 pg[12];
	u16 next;
	int vec;

	for (int i = 0; i < 12; i++)
		pg[i] = pool + i * PAGE_SIZE;

	if (g_snp) {
		/* An SNP firmware validated all of its RAM (through csvsm) before the
		 * probe ran: validating those pages again is FAIL_NO_CHANGE, as on
		 * hardware. Rescind the ones the checks below validate first. */
		u64 r[8] = {pg[0], pg[1], pg[2], pg[3], pg[5], pg[6], pg[7], pg[11]};
		for (int i = 0; i < 8; i++)
			r[i] |= PVAL_SIZE_4K;
		e[0] = pg[0] | PVAL_VALIDATE;
		rc = pvalidate(list, 1, 0, e, 1, &next);
		tap(rc == SVSM_PVALIDATE_FAIL_NO_CHANGE,
		    L"PVALIDATE validate of a page the firmware validated -> %s (want "
		    L"PVALIDATE_FAIL_NO_CHANGE)",
		    rc_name(rc));
		rc = pvalidate(list, 8, 0, r, 8, &next);
		tap(rc == SVSM_SUCCESS && next == 8,
		    L"PVALIDATE rescind of 8 firmware-validated probe pages -> %s, next %d",
		    rc_name(rc), next);
		rc = snp_rescind_2m(list, big);
		tap(rc == SVSM_SUCCESS, L"PVALIDATE rescind of the 2 MiB range 0x%lx -> %s", big,
		    rc_name(rc));
	}
	for (int i = 0; i < 4; i++)
		e[i] = pg[i] | PVAL_VALIDATE | PVAL_SIZE_4K;
	rc = pvalidate(list, 4, 0, e, 4, &next);
	tap(rc == SVSM_SUCCESS && next == 4,
	    L"PVALIDATE 4 x 4K validate of %s probe pages (list at CA+8) -> %s, next %d "
	    L"(want SUCCESS, 4)",
	    g_snp ? L"rescinded" : L"pre-accepted", rc_name(rc), next);

	/* Rescind, then validate again: the page must come back zeroed (§1.5 "Validate ... zero the
	 * page"). */
	SetMem((void *)(UINTN)pg[4], PAGE_SIZE, 0x5A);
	e[0] = pg[4] | PVAL_SIZE_4K;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc == SVSM_SUCCESS && next == 1, L"PVALIDATE rescind 4K page 0x%lx -> %s, next %d",
	    pg[4], rc_name(rc), next);
	/* A rescinded page is not memory csvsm may touch (on SNP it would fault). */
	rc = call3(PROTO_CORE, CORE_REMAP_CA, pg[4], 0, 0, NULL);
	tap(rc == SVSM_ERR_INVALID_ADDRESS,
	    L"REMAP_CA to the rescinded page -> %s (want INVALID_ADDRESS)", rc_name(rc));
	if (rc == SVSM_SUCCESS) { /* the SVSM moved the CA there: move it back to go on */
		u64 old = g_caa;
		g_caa = pg[4];
		call3(PROTO_CORE, CORE_REMAP_CA, old, 0, 0, NULL);
		g_caa = old;
	}
	e[0] = pg[4] | PVAL_VALIDATE | PVAL_SIZE_4K;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	vec = probe_safe_read64(pg[4] + 0x800, &v);
	tap(rc == SVSM_SUCCESS && next == 1 && vec == 0 && v == 0,
	    L"PVALIDATE re-validate after rescind -> %s; page readable (%a) and zeroed (qword "
	    L"0x%lx)",
	    rc_name(rc), vec ? "no" : "yes", v);

	e[0] = big | PVAL_VALIDATE | PVAL_SIZE_2M;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc == SVSM_SUCCESS || rc == SVSM_PVALIDATE_FAIL_SIZEMISMATCH,
	    L"PVALIDATE 2M validate at 2M-aligned 0x%lx -> %s (SUCCESS; SIZEMISMATCH allowed: "
	    L"Linux then uses 4K)",
	    big, rc_name(rc));
	e[0] = (big + PAGE_SIZE) | PVAL_VALIDATE | PVAL_SIZE_2M;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"PVALIDATE 2M entry not 2M-aligned -> %s (want INVALID_PARAMETER)", rc_name(rc));

	e[0] = pg[5] | PVAL_VALIDATE;
	e[1] = pg[6] | PVAL_VALIDATE;
	rc = pvalidate(list, 2, 2, e, 2, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"PVALIDATE next (2) >= entries (2) -> %s (want INVALID_PARAMETER)", rc_name(rc));

	rc = pvalidate(g_caa + PAGE_SIZE - 16, 2, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"PVALIDATE list crossing the CA page end (CA+0xFF0, 2 entries) -> %s (want "
	    L"INVALID_PARAMETER)",
	    rc_name(rc));

	rc = pvalidate(list + 4, 1, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"PVALIDATE list at unaligned CA+0xC -> %s (want INVALID_PARAMETER)", rc_name(rc));

	e[0] = pg[5] | PVAL_VALIDATE | 0x10;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER && next == 0,
	    L"PVALIDATE entry with reserved bit 4 -> %s, next %d (want INVALID_PARAMETER, 0)",
	    rc_name(rc), next);

	e[0] = pg[5] | PVAL_VALIDATE | 0x2;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER && next == 0,
	    L"PVALIDATE page size 2 -> %s, next %d (want INVALID_PARAMETER, 0)", rc_name(rc), next);

	e[0] = g_svsm_base | PVAL_VALIDATE;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc_either(rc, SVSM_ERR_INVALID_ADDRESS, SVSM_ERR_INVALID_PARAMETER),
	    L"PVALIDATE validate of a csvsm page (svsm_base 0x%lx) -> %s (INVALID_ADDRESS or "
	    L"INVALID_PARAMETER)",
	    g_svsm_base, rc_name(rc));
	e[0] = g_svsm_base;
	rc = pvalidate(list, 1, 0, e, 1, &next);
	tap(rc_either(rc, SVSM_ERR_INVALID_ADDRESS, SVSM_ERR_INVALID_PARAMETER),
	    L"PVALIDATE rescind of a csvsm page -> %s (INVALID_ADDRESS or INVALID_PARAMETER)",
	    rc_name(rc));

	rc = pvalidate(list, PVAL_MAX_IN_CA + 1, 0, e, 1, &next);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"PVALIDATE 511 entries in the CA (max 510) -> %s (want INVALID_PARAMETER)",
	    rc_name(rc));

	/* `next` written back on error, and a resumed request starts at `next` (§1.5). */
	e[0] = pg[5] | PVAL_VALIDATE;
	e[1] = pg[6] | PVAL_VALIDATE;
	e[2] = g_svsm_base | PVAL_VALIDATE;
	rc = pvalidate(list, 3, 0, e, 3, &next);
	/* `next` must name the first entry not done: 2 for an SVSM that acts entry
	 * by entry (coconut), 0 for one that checks the whole list first (csvsm). */
	tap(rc != SVSM_SUCCESS && rc != RC_TRANSPORT_FAIL && (next == 2 || next == 0),
	    L"PVALIDATE [ok, ok, csvsm page] -> %s, next written back as %d (want an error, 2 or "
	    L"0)",
	    rc_name(rc), next);
	e[2] = pg[7] | PVAL_VALIDATE;
	e[0] = g_svsm_base | PVAL_VALIDATE; /* before `next`: must not be looked at */
	rc = pvalidate(list, 3, 2, e, 3, &next);
	tap(rc == SVSM_SUCCESS && next == 3,
	    L"PVALIDATE resumed at next = 2 (entry 0 bad, skipped) -> %s, next %d", rc_name(rc),
	    next);
}

static void check_vcpu(u64 vmsa, u64 newca)
{
	u64 rc;

	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa + 0x100, newca, 1, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"CREATE_VCPU unaligned VMSA -> %s (INVALID_PARAMETER or INVALID_ADDRESS)",
	    rc_name(rc));
	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, newca + 0x100, 1, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"CREATE_VCPU unaligned CA -> %s (INVALID_PARAMETER or INVALID_ADDRESS)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, vmsa, 1, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"CREATE_VCPU VMSA == CA -> %s (INVALID_PARAMETER or INVALID_ADDRESS)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, g_svsm_base, newca, 1, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"CREATE_VCPU VMSA inside csvsm -> %s (INVALID_PARAMETER or INVALID_ADDRESS)",
	    rc_name(rc));
	/* An all-zero VMSA: VMPL 0 != guest VMPL, EFER.SVME clear (§1.5 checks). */
	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, newca, 1, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"CREATE_VCPU all-zero VMSA (VMPL 0, SVME clear) -> %s (INVALID_PARAMETER or "
	    L"INVALID_ADDRESS)",
	    rc_name(rc));
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa, 0, 0, NULL);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"DELETE_VCPU of a page that is no VMSA -> %s (want INVALID_PARAMETER)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa + 8, 0, 0, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"DELETE_VCPU unaligned -> %s (INVALID_PARAMETER or INVALID_ADDRESS)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, g_svsm_base, 0, 0, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_PARAMETER, SVSM_ERR_INVALID_ADDRESS),
	    L"DELETE_VCPU inside csvsm -> %s (INVALID_PARAMETER or INVALID_ADDRESS)", rc_name(rc));
}

/*
 * A new vCPU, as Linux brings up an AP at VMPL>0 (reference §4.5): a VMSA
 * for 64-bit code on the probe's own page tables and GDT, CREATE_VCPU, then
 * the GHCB AP creation event. The vCPU makes one SVSM call through its own
 * calling area. VMSA offsets from reference §5.3 (written here, not shared
 * with csvsm's headers, so a wrong offset on either side fails a check).
 */
static const CHAR16 *vec_name(INTN v);

struct ap_shared {
	u64 ca, rax, rcx, ghcb_msr;
	volatile u32 done;
	volatile u32 stop; /* set by the BSP: the vCPU stops spinning and halts */
};

static void vmsa_seg(u8 *vmsa, unsigned off, u16 sel, u16 attrib, u32 limit, u64 base)
{
	*(u16 *)(vmsa + off) = sel;
	*(u16 *)(vmsa + off + 2) = attrib;
	*(u32 *)(vmsa + off + 4) = limit;
	*(u64 *)(vmsa + off + 8) = base;
}

/* RMPADJUST attribute bits and result (APM vol. 3; reference §5.2). */
#define RMPA_R		       0x1ULL
#define RMPA_W		       0x2ULL
#define RMPA_XS		       0x8ULL
#define RMPA_FAIL_PERMISSION   2
#define RMPA_FAIL_SIZEMISMATCH 6

static void check_vcpu_run(void)
{
	static struct ap_shared shared __attribute__((aligned(64)));
	u64 vmsa = alloc_pages(1), ca = alloc_pages(1), stack = alloc_pages(4), v, rc;
	u8 *m = (u8 *)(UINTN)vmsa;
	struct {
		u16 limit;
		u64 base;
	} __attribute__((packed)) gdt;
	const u32 apic_id = 1;

	if (!vmsa || !ca || !stack) {
		tap(0, L"CREATE_VCPU run: no memory for the VMSA");
		return;
	}
	for (int i = 0; i < 4096; i++)
		m[i] = 0, ((u8 *)(UINTN)ca)[i] = 0;
	shared = (struct ap_shared){.ca = ca};
	probe_sgdt(&gdt);
	u16 cs = (u16)probe_read_cs(), ds = (u16)probe_read_ds();
	for (unsigned off = 0x00; off <= 0x50; off += 0x10) /* es cs ss ds fs gs */
		vmsa_seg(m, off, ds, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(m, 0x10, cs, 0xA9B, 0xFFFFFFFF, 0); /* 64-bit code: P S type B, L, G */
	vmsa_seg(m, 0x60, 0, 0, gdt.limit, gdt.base);
	vmsa_seg(m, 0x70, 0, 0x82, 0xFFFF, 0);
	vmsa_seg(m, 0x80, 0, 0, 0, 0); /* no IDT: the vCPU takes no exception */
	vmsa_seg(m, 0x90, 0, 0x8B, 0xFFFF, 0);
	m[0xCA] = g_guest_vmpl;
	*(u64 *)(m + 0xD0) = probe_rdmsr(0xC0000080) | (1ULL << 12); /* EFER with SVME */
	*(u64 *)(m + 0x148) = probe_read_cr4();
	*(u64 *)(m + 0x150) = probe_read_cr3();
	*(u64 *)(m + 0x158) = probe_read_cr0();
	*(u64 *)(m + 0x160) = 0x400;
	*(u64 *)(m + 0x168) = 0xFFFF0FF0;
	*(u64 *)(m + 0x170) = 0x2;
	*(u64 *)(m + 0x178) = (u64)(UINTN)probe_ap_entry;
	*(u64 *)(m + 0x1D8) = stack + 4 * PAGE_SIZE - 64;
	*(u64 *)(m + 0x268) = 0x0007040600070406ULL;
	*(u64 *)(m + 0x338) = (u64)(UINTN)&shared; /* RDI */
	*(u64 *)(m + 0x3B0) = g_sev_status >> 2;   /* SEV_FEATURES, as Linux sets them */

	rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, ca, apic_id, NULL);
	tap(rc == SVSM_SUCCESS, L"CREATE_VCPU of a valid VMSA (VMPL%d, 64-bit) -> %s", g_guest_vmpl,
	    rc_name(rc));
	if (rc != SVSM_SUCCESS)
		return;
		/* Read-only for the guest VMPL from now on (coconut-svsm grants READ
		 * with the VMSA bit; Linux reads sev_features back from it). A write
		 * would be an RMP violation KVM cannot resolve (the guest would hang:
		 * the machine stops it, tests/snpm/faults.sh), so the probe asks the
		 * RMP instead: a VMPL grants only what it holds, and RMPADJUST giving
		 * VMPL3 write access must fail (FAIL_PERMISSION). */
#if PROBE_FAULT == 2
	Print(L"# fault: writing the VMSA page 0x%lx (read-only for this VMPL)\n", vmsa);
	probe_safe_write64(vmsa + 0x3F8, 0x5A5A5A5A5A5A5A5AULL);
	Print(L"# fault: the write returned\n");
#endif
	u64 wrc = probe_rmpadjust(vmsa, 0, 3 | (RMPA_R | RMPA_W) << 8);
	int rvec = probe_safe_read64(vmsa + 0x3B0, &v);
	tap(wrc == RMPA_FAIL_PERMISSION && rvec == 0 && v == (g_sev_status >> 2),
	    L"the VMSA page is read-only for the guest: RMPADJUST(VMPL3, RW) -> %ld (want "
	    L"FAIL_PERMISSION 2), read -> %s (SEV_FEATURES 0x%lx)",
	    wrc, rvec ? vec_name(rvec) : L"ok", v);
	rc = probe_ghcb_exit(0x80000013ULL, 1 | ((u64)g_guest_vmpl << 16) | ((u64)apic_id << 32),
			     vmsa, g_sev_status >> 2);
	tap(rc == 0, L"AP creation (GHCB 0x80000013, CREATE) -> sw_exit_info_1 0x%lx", rc);
	for (int i = 0; i < 200 && !shared.done; i++)
		uefi_call_wrapper(g_st->BootServices->Stall, 1, 5000);
	tap(shared.done && shared.rax == SVSM_SUCCESS && shared.rcx == ((1ULL << 32) | 1) &&
		shared.ghcb_msr == 0x17,
	    L"the new vCPU ran and made an SVSM call through its own CA: RAX 0x%lx RCX 0x%lx (done "
	    L"%d)",
	    shared.rax, shared.rcx, shared.done);
	tap(*(volatile u8 *)(UINTN)ca == 0, L"the new vCPU's call_pending was cleared by csvsm");
	/* It spins in guest mode: its VMSA is in use (in a VMRUN). */
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa, 0, 0, NULL);
	tap(rc == 0x80001003ULL,
	    L"DELETE_VCPU of a running vCPU -> 0x%lx (want FAIL_INUSE 0x80001003)", rc);
	shared.stop = 1;
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 20000);
	rc = probe_ghcb_exit(0x80000013ULL, 2 | ((u64)g_guest_vmpl << 16) | ((u64)apic_id << 32),
			     vmsa, g_sev_status >> 2);
	tap(rc == 0, L"AP creation DESTROY -> sw_exit_info_1 0x%lx", rc);
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa, 0, 0, NULL);
	tap(rc == SVSM_SUCCESS, L"DELETE_VCPU after DESTROY -> %s", rc_name(rc));
	int vec = probe_safe_read64(vmsa, &v);
	tap(vec == 0, L"the VMSA page is the guest's again: read -> %s",
	    vec ? vec_name(vec) : L"ok");
}

static void check_remap(u64 newca, u64 spare_page)
{
	struct probe_regs r;
	u64 rc, e[1];
	u16 next;
	volatile u8 *old = ca_ptr(), *nw = (volatile u8 *)(UINTN)newca;

	rc = call3(PROTO_CORE, CORE_REMAP_CA, newca + 8, 0, 0, NULL);
	tap(rc == SVSM_ERR_INVALID_PARAMETER, L"REMAP_CA unaligned -> %s (want INVALID_PARAMETER)",
	    rc_name(rc));
	rc = call3(PROTO_CORE, CORE_REMAP_CA, g_svsm_base, 0, 0, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_ADDRESS, SVSM_ERR_INVALID_PARAMETER),
	    L"REMAP_CA to svsm_base -> %s (INVALID_ADDRESS or INVALID_PARAMETER)", rc_name(rc));
	rc = call3(PROTO_CORE, CORE_REMAP_CA, 0x7FFFFFFFF000ULL, 0, 0, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_ADDRESS, SVSM_ERR_INVALID_PARAMETER),
	    L"REMAP_CA to a gPA outside guest memory (0x7FFFFFFFF000) -> %s (INVALID_ADDRESS or "
	    L"INVALID_PARAMETER)",
	    rc_name(rc));

	for (int i = 1; i < 8; i++)
		nw[i] = 0xA5;
	rc = call3(PROTO_CORE, CORE_REMAP_CA, newca, 0, 0, NULL);
	tap(rc == SVSM_SUCCESS && old[CA_CALL_PENDING] == 0,
	    L"REMAP_CA to probe page 0x%lx -> %s (old CA call_pending cleared)", newca,
	    rc_name(rc));
	if (rc != SVSM_SUCCESS)
		return;
	Print(L"# new CA header after REMAP_CA: %02x %02x %02x %02x %02x %02x %02x %02x (coconut "
	      L"zeroes it)\n",
	      nw[0], nw[1], nw[2], nw[3], nw[4], nw[5], nw[6], nw[7]);
	g_caa = newca;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"call through the new CA (call_pending set there) -> %s RCX 0x%lx", rc_name(rc),
	    r.rcx);
	e[0] = spare_page | PVAL_VALIDATE;
	rc = pvalidate(g_caa + CA_BUFFER, 1, 0, e, 1, &next);
	tap(rc == SVSM_SUCCESS && next == 1, L"PVALIDATE list at new CA+8 -> %s, next %d",
	    rc_name(rc), next);
	g_form = FORM_GHCB;
	rc = call3(PROTO_CORE, CORE_REMAP_CA, g_boot_caa, 0, 0, NULL);
	g_form = FORM_MSR;
	tap(rc == SVSM_SUCCESS, L"REMAP_CA back to the boot CA 0x%lx (GHCB form) -> %s", g_boot_caa,
	    rc_name(rc));
	if (rc == SVSM_SUCCESS)
		g_caa = g_boot_caa;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS, L"call through the boot CA again -> %s", rc_name(rc));
}

/* --- vTPM (§3) ----------------------------------------------------------- */

static u16 be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}
static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/* Request {u32 cmd; u8 locality; u32 size; command} (packed), Table 16. */
static u64 vtpm_call(u64 page, u32 platcmd, u8 locality, u32 size, const u8 *cmd, u32 cmdlen)
{
	u8 *p = (u8 *)(UINTN)page;

	ZeroMem(p, PAGE_SIZE);
	CopyMem(p, &platcmd, 4);
	p[4] = locality;
	CopyMem(p + 5, &size, 4);
	if (cmd)
		CopyMem(p + VTPM_REQ_HDR, (void *)cmd, cmdlen);
	return call3(PROTO_VTPM, VTPM_CMD, page, 0, 0, NULL);
}

/* Send a TPM command; returns the response (in the page) or NULL. */
static const u8 *tpm_cmd(u64 page, const u8 *cmd, u32 len, u32 *rsp_len, u64 *rc_out)
{
	const u8 *p = (const u8 *)(UINTN)page;
	u32 rlen;
	u64 rc = vtpm_call(page, VTPM_PLAT_SEND_CMD, 0, len, cmd, len);

	*rc_out = rc;
	if (rc != SVSM_SUCCESS)
		return NULL;
	CopyMem(&rlen, (void *)p, 4);
	/* Response {u32 size; rsp}: size <= 4092 and covers the TPM header (Table 17). */
	if (rlen > PAGE_SIZE - VTPM_RSP_HDR || rlen < 10 || be32(p + 4 + 2) != rlen) {
		Print(L"# vTPM response size %d (TPM header says %d) is malformed\n", rlen,
		      rlen >= 10 ? be32(p + 6) : 0);
		return NULL;
	}
	*rsp_len = rlen;
	return p + 4;
}

static u8 g_flash_sha256[32];
static u8 g_pcr0_expect[32]; /* extend(0^32, SHA-256(flash)), from check_pcr0 */

static void check_pcr0(u64 page)
{
	static const u8 pcr_read[20] = {
	    0x80, 0x01, 0, 0, 0,    20,	  0, 0,	   0x01, 0x7E,	/* TPM2_PCR_Read */
	    0,	  0,	0, 1, 0x00, 0x0B, 3, 0x01, 0x00, 0x00}; /* SHA256: PCR0 */
	u8 fw[32], buf[64], want[32];
	const u8 *rsp;
	u32 rlen, off;
	u64 rc;
	BOOLEAN ok = FALSE;

	CopyMem(fw, g_flash_sha256, 32);
	ZeroMem(buf, 32);
	CopyMem(buf + 32, fw, 32);
	sha256(buf, 64, want);
	rsp = tpm_cmd(page, pcr_read, sizeof(pcr_read), &rlen, &rc);
	if (rsp && be32(rsp + 6) == 0 && rlen >= 10 + 4 + 4) {
		/* pcrUpdateCounter u32, TPML_PCR_SELECTION, TPML_DIGEST{count, TPM2B{u16, bytes}}.
		 */
		off = 10 + 4;
		if (be32(rsp + off) == 1 && off + 4 + 3 <= rlen) {
			u8 sos = rsp[off + 4 + 2];
			off += 4 + 3 + sos;
			if (off + 4 + 2 + 32 <= rlen && be32(rsp + off) == 1 &&
			    be16(rsp + off + 4) == 32) {
				hex32(L"PCR0 sha256 from the vTPM:", rsp + off + 6);
				ok = CompareMem(rsp + off + 6, want, 32) == 0;
			}
		}
	}
	hex32(L"SHA-256(flash image):     ", fw);
	hex32(L"expected PCR0 (extend):   ", want);
	CopyMem(g_pcr0_expect, want, 32);
	tap(ok,
	    L"vTPM PCR0 (SHA-256) == extend(0^32, SHA-256(flash as the guest sees it)) (%s, TPM rc "
	    L"0x%x)",
	    rc_name(rc), rsp ? be32(rsp + 6) : 0xFFFFFFFF);
}

/* CPUID as the guest sees it (under SNP a #VC that OVMF answers from the CPUID page). */
static void probe_cpuid(u32 leaf, u32 sub, u32 r[4])
{
	__asm__ volatile("cpuid"
			 : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
			 : "a"(leaf), "c"(sub));
}

/*
 * With XSAVE and AVX in the CPUID page (the machine's snpm.xsave=1; every
 * SNP EPYC), the guest's YMM registers must survive a vTPM command too:
 * csvsm's libraries run with XCR0 = x87 | SSE | AVX and their AVX2 paths,
 * and the hardware keeps each VMSA's extended state its own. The probe
 * enables AVX itself (OVMF leaves CR4.OSXSAVE clear). Skipped when the
 * page offers no AVX.
 */
static void check_ymm(u64 page, const u8 *create, u32 create_len, u8 *flush)
{
	static u8 ymm[1024] __attribute__((aligned(32)));
	u32 r1[4], rd[4];
	const u8 *rsp;
	u32 rlen = 0, handle = 0;
	u64 rc;
	int bad = 0;

	probe_cpuid(1, 0, r1);
	probe_cpuid(0, 0, rd);
	if (!(r1[2] & (1u << 26)) || !(r1[2] & (1u << 28)) || rd[0] < 0xD) {
		tap_skip(L"the CPUID page offers no XSAVE/AVX",
			 L"YMM0..15 preserved across a vTPM CreatePrimary");
		return;
	}
	probe_cpuid(0xD, 0, rd);
	if (!(rd[0] & 4)) {
		tap_skip(L"CPUID 0xD offers no AVX state",
			 L"YMM0..15 preserved across a vTPM CreatePrimary");
		return;
	}
	probe_enable_avx();
	for (int i = 0; i < 512; i++)
		ymm[i] = (u8)(0x3C ^ (i * 5)), ymm[512 + i] = 0;
	g_xmm_check = ymm;
	g_ymm_check = 1;
	rsp = tpm_cmd(page, create, create_len, &rlen, &rc);
	g_ymm_check = 0;
	g_xmm_check = NULL;
	for (int i = 0; i < 512; i++)
		bad += ymm[i] != ymm[512 + i];
	if (rsp && be32(rsp + 6) == 0 && rlen >= 14)
		handle = be32(rsp + 10);
	/* The registers only: the command's own result is check_tpm_quote's. */
	tap(bad == 0,
	    L"YMM0..15 preserved across a vTPM CreatePrimary (XCR0 7, csvsm's AVX paths): %d bytes "
	    L"differ (TPM handle 0x%x)",
	    bad, handle);
	if (handle) {
		flush[10] = (u8)(handle >> 24), flush[11] = (u8)(handle >> 16);
		flush[12] = (u8)(handle >> 8), flush[13] = (u8)handle;
		tpm_cmd(page, flush, 14, &rlen, &rc);
	}
}

/*
 * TPM2_Startup (csvsm already started the TPM: TPM_RC_INITIALIZE), then
 * CreatePrimary of an ECC P-256 restricted signing key under the owner
 * hierarchy and a Quote over PCR0 (SHA-256) with a nonce: the quote must be
 * a TPM-generated TPMS_ATTEST of type QUOTE carrying the nonce and
 * pcrDigest = SHA-256(PCR0). Command layouts: TPM 2.0 Part 3 §9.3, §24.1,
 * §18.4; the XMM registers must survive these calls (libtpms uses SSE/AVX
 * inside csvsm).
 */
static void check_tpm_quote(u64 page)
{
	static const u8 startup[12] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x44, 0, 0};
	static const u8 create_primary[65] = {
	    0x80, 0x02, 0,    0,    0,	  65,	0, 0,	 0x01, 0x31, /* TPM2_CreatePrimary */
	    0x40, 0,	0,    0x01,				     /* TPM_RH_OWNER */
	    0,	  0,	0,    9,    0x40, 0,	0, 0x09, 0,    0,
	    0,	  0,	0,			/* password session, empty auth */
	    0,	  4,	0,    0,    0,	  0,	/* TPM2B_SENSITIVE_CREATE: empty */
	    0,	  24,	0x00, 0x23, 0x00, 0x0B, /* TPM2B_PUBLIC: ECC, nameAlg SHA-256 */
	    0x00, 0x05, 0x00, 0x72, /* fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|restricted|sign
				     */
	    0,	  0,		    /* authPolicy: empty */
	    0x00, 0x10, 0x00, 0x18, 0x00, 0x0B,	      /* symmetric NULL, scheme ECDSA/SHA-256 */
	    0x00, 0x03, 0x00, 0x10, 0,	  0,	0, 0, /* NIST P-256, kdf NULL, unique empty */
	    0,	  0,				      /* outsideInfo */
	    0,	  0,	0,    0};		      /* creationPCR: none */
	u8 quote[49] = {
	    0x80, 0x02, 0, 0,	0,    49,   0,	 0,    0x01, 0x58, /* TPM2_Quote */
	    0,	  0,	0, 0,					   /* signHandle (filled in) */
	    0,	  0,	0, 9,	0x40, 0,    0,	 0x09, 0,    0,	   0,	0,
	    0,	  0,	8, 'c', 's',  'v',  's', 'm',  'n',  'o',  'n', /* qualifyingData: 8-byte
									   nonce */
	    0x00, 0x10,							/* inScheme: the key's */
	    0,	  0,	0, 1,	0x00, 0x0B, 3,	 0x01, 0x00, 0x00};	/* PCR0, SHA-256 */
	u8 flush[14] = {0x80, 0x01, 0, 0, 0, 14, 0, 0, 0x01, 0x65, 0, 0, 0, 0};
	static u8 xmm[512] __attribute__((aligned(16)));
	const u8 *rsp;
	u32 rlen = 0, handle = 0;
	u64 rc;
	int bad = 0;

	rsp = tpm_cmd(page, startup, sizeof(startup), &rlen, &rc);
	tap(rsp && be32(rsp + 6) == 0x100,
	    L"TPM2_Startup(CLEAR) from the guest -> TPM rc 0x%x (want TPM_RC_INITIALIZE 0x100)",
	    rsp ? be32(rsp + 6) : 0xFFFFFFFF);

	for (int i = 0; i < 256; i++)
		xmm[i] = (u8)(0xA5 ^ i), xmm[256 + i] = 0;
	g_xmm_check = xmm;
	rsp = tpm_cmd(page, create_primary, sizeof(create_primary), &rlen, &rc);
	g_xmm_check = NULL;
	for (int i = 0; i < 256; i++)
		bad += xmm[i] != xmm[256 + i];
	if (rsp && be32(rsp + 6) == 0 && rlen >= 14)
		handle = be32(rsp + 10);
	tap(handle >> 24 == 0x80,
	    L"TPM2_CreatePrimary ECC P-256 signing key -> TPM rc 0x%x, handle 0x%x",
	    rsp ? be32(rsp + 6) : 0xFFFFFFFF, handle);
	tap(bad == 0,
	    L"XMM0..15 preserved across a vTPM CreatePrimary (libtpms uses SSE/AVX): %d bytes "
	    L"differ",
	    bad);
	check_ymm(page, create_primary, sizeof(create_primary), flush);
	if (!handle)
		return;

	quote[10] = (u8)(handle >> 24), quote[11] = (u8)(handle >> 16),
	quote[12] = (u8)(handle >> 8);
	quote[13] = (u8)handle;
	/* TPM_RC_RETRY (0x922) asks the caller to send the command again (Part 2 §6.6). */
	for (int tries = 0; tries < 5; tries++) {
		rsp = tpm_cmd(page, quote, sizeof(quote), &rlen, &rc);
		if (!rsp || be32(rsp + 6) != 0x922)
			break;
	}
	BOOLEAN ok = FALSE;
	if (rsp && be32(rsp + 6) == 0 && rlen > 10 + 4 + 2) {
		const u8 *a = rsp + 10 + 4 + 2; /* parameterSize, TPM2B_ATTEST size */
		u32 alen = be16(rsp + 14), off = 6;
		if (14 + 2 + alen <= rlen && alen > off + 2) {
			off += 2 + be16(a + off); /* qualifiedSigner */
			BOOLEAN nonce_ok = off + 2 + 8 <= alen && be16(a + off) == 8 &&
					   CompareMem((void *)(a + off + 2), "csvsmnon", 8) == 0;
			off +=
			    2 + be16(a + off) + 17 + 8; /* extraData, clockInfo, firmwareVersion */
			if (off + 4 + 2 + 1 + 3 + 2 + 32 <= alen && be32(a + off) == 1) {
				off += 4 + 2 + 1 + a[off + 4 + 2];
				ok = be32(a) == 0xFF544347 && be16(a + 4) == 0x8018 && nonce_ok &&
				     be16(a + off) == 32;
				if (ok) {
					u8 d[32];
					sha256(g_pcr0_expect, 32, d);
					ok = CompareMem((void *)(a + off + 2), d, 32) == 0;
				}
			}
		}
	}
	tap(ok,
	    L"TPM2_Quote over PCR0: TPM-generated QUOTE with the nonce and pcrDigest = "
	    L"SHA-256(PCR0) (TPM rc 0x%x)",
	    rsp ? be32(rsp + 6) : 0xFFFFFFFF);
	flush[10] = (u8)(handle >> 24), flush[11] = (u8)(handle >> 16),
	flush[12] = (u8)(handle >> 8);
	flush[13] = (u8)handle;
	rsp = tpm_cmd(page, flush, sizeof(flush), &rlen, &rc);
	tap(rsp && be32(rsp + 6) == 0, L"TPM2_FlushContext of the key -> TPM rc 0x%x",
	    rsp ? be32(rsp + 6) : 0xFFFFFFFF);
}

static void check_vtpm(u64 page)
{
	static const u8 get_random[12] = {0x80, 0x01, 0, 0, 0, 12, 0, 0, 0x01, 0x7B, 0, 16};
	struct probe_regs r;
	const u8 *rsp;
	u32 rlen = 0;
	u64 rc;

	g_form = FORM_GHCB;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_VTPM << 32) | 1, 0, 0, &r);
	if (rc == SVSM_SUCCESS && r.rcx == 0) {
		const CHAR16 *why = L"vTPM not implemented (QUERY_PROTOCOL(2) = 0)";
		tap_skip(why, L"vTPM SVSM_VTPM_QUERY");
		tap_skip(why, L"vTPM TPM2_GetRandom(16)");
		tap_skip(why, L"vTPM PCR0 measurement");
		g_form = FORM_MSR;
		return;
	}
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"QUERY_PROTOCOL(vTPM, v1) -> %s RCX 0x%lx (want SUCCESS, 0x100000001)", rc_name(rc),
	    r.rcx);

	rc = call3(PROTO_VTPM, VTPM_QUERY, 0, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && (r.rcx & (1ULL << 8)) && r.rdx == 0,
	    L"SVSM_VTPM_QUERY -> %s RCX 0x%lx (bit 8 TPM_SEND_COMMAND) RDX 0x%lx (want 0)",
	    rc_name(rc), r.rcx, r.rdx);

	rsp = tpm_cmd(page, get_random, sizeof(get_random), &rlen, &rc);
	tap(rsp && rlen == 10 + 2 + 16 && be16(rsp) == 0x8001 && be32(rsp + 6) == 0 &&
		be16(rsp + 10) == 16,
	    L"SVSM_VTPM_CMD TPM2_GetRandom(16) -> %s, response %d bytes, TPM rc 0x%x", rc_name(rc),
	    rlen, rsp ? be32(rsp + 6) : 0xFFFFFFFF);
	if (rsp && be32(rsp + 6) == 0x100)
		Print(L"# TPM_RC_INITIALIZE: csvsm did not send TPM2_Startup before measuring\n");

	rc = vtpm_call(page, VTPM_PLAT_SEND_CMD, 1, sizeof(get_random), get_random,
		       sizeof(get_random));
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"SVSM_VTPM_CMD locality 1 -> %s (want INVALID_PARAMETER)", rc_name(rc));
	rc = vtpm_call(page, VTPM_PLAT_SEND_CMD, 0, 4088, get_random, sizeof(get_random));
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"SVSM_VTPM_CMD size 4088 (max 4087) -> %s (want INVALID_PARAMETER)", rc_name(rc));
	rc = vtpm_call(page, VTPM_PLAT_POWER_OFF, 0, 0, NULL, 0);
	tap(rc == SVSM_ERR_UNSUPPORTED_CALL,
	    L"SVSM_VTPM_CMD platform command 2 (POWER_OFF) -> %s (want UNSUPPORTED_CALL)",
	    rc_name(rc));
	rc = vtpm_call(page, 99, 0, 0, NULL, 0);
	tap(rc == SVSM_ERR_INVALID_PARAMETER,
	    L"SVSM_VTPM_CMD platform command 99 -> %s (want INVALID_PARAMETER)", rc_name(rc));
	rc = call3(PROTO_VTPM, 2, 0, 0, 0, NULL);
	tap(rc == SVSM_ERR_UNSUPPORTED_CALL, L"vTPM call 2 -> %s (want UNSUPPORTED_CALL)",
	    rc_name(rc));
	rc = call3(PROTO_VTPM, VTPM_CMD, g_svsm_base, 0, 0, NULL);
	tap(rc_either(rc, SVSM_ERR_INVALID_ADDRESS, SVSM_ERR_INVALID_PARAMETER),
	    L"SVSM_VTPM_CMD buffer inside csvsm -> %s (INVALID_ADDRESS or INVALID_PARAMETER)",
	    rc_name(rc));

	check_pcr0(page);
	check_tpm_quote(page);
	g_form = FORM_MSR;
}

/* --- Attestation (§2, §6.5, §7) ------------------------------------------ */

/* Attest Services operation (0x40 B) and Single Service (0x58 B), reference §2. */
#define ATT_SERVICES	   0
#define ATT_SINGLE_SERVICE 1
#define ATT_OP_REPORT_GPA  0x00
#define ATT_OP_REPORT_SIZE 0x08
#define ATT_OP_NONCE_GPA   0x10
#define ATT_OP_NONCE_SIZE  0x18
#define ATT_OP_MANIF_GPA   0x20
#define ATT_OP_MANIF_SIZE  0x28
#define ATT_OP_CERTS_GPA   0x30
#define ATT_OP_CERTS_SIZE  0x38
#define ATT_OP_GUID	   0x40
#define ATT_OP_MANIF_VER   0x50
#define ATT_OP_SIZE	   0x40
#define ATT_SINGLE_OP_SIZE 0x58
#define ATT_NONCE_LEN	   64
/* ATTESTATION_REPORT, reference §7. */
#define REPORT_SIZE	   0x4A0
#define REPORT_VERSION	   0x000
#define REPORT_VMPL	   0x030
#define REPORT_DATA	   0x050
#define REPORT_MEASUREMENT 0x090
#define CERT_ENTRY_SIZE	   24

/* Services manifest GUID 63849ebb-3d92-4670-a1ff-58f9c94b87bb, EFI mixed-endian bytes. */
static const u8 g_manifest_guid[16] = {0xbb, 0x9e, 0x84, 0x63, 0x92, 0x3d, 0x70, 0x46,
				       0xa1, 0xff, 0x58, 0xf9, 0xc9, 0x4b, 0x87, 0xbb};
/* vTPM service c476f1eb-0123-45a5-9641-b4e7dde5bfe3, EFI mixed-endian bytes. */
static const u8 g_vtpm_guid[16] = {0xeb, 0xf1, 0x76, 0xc4, 0x23, 0x01, 0xa5, 0x45,
				   0x96, 0x41, 0xb4, 0xe7, 0xdd, 0xe5, 0xbf, 0xe3};
/* VCEK certificate 63da758d-e664-4564-adc5-f4b93be8accd, RFC-4122 byte order (§6.5). */
static const u8 g_vcek_guid[16] = {0x63, 0xda, 0x75, 0x8d, 0xe6, 0x64, 0x45, 0x64,
				   0xad, 0xc5, 0xf4, 0xb9, 0x3b, 0xe8, 0xac, 0xcd};

static void check_sha512(void)
{
	static const u8 abc[64] = {0xdd, 0xaf, 0x35, 0xa1, 0x93, 0x61, 0x7a, 0xba, 0xcc, 0x41, 0x73,
				   0x49, 0xae, 0x20, 0x41, 0x31, 0x12, 0xe6, 0xfa, 0x4e, 0x89, 0xa9,
				   0x7e, 0xa2, 0x0a, 0x9e, 0xee, 0xe6, 0x4b, 0x55, 0xd3, 0x9a, 0x21,
				   0x92, 0x99, 0x2a, 0x27, 0x4f, 0xc1, 0xa8, 0x36, 0xba, 0x3c, 0x23,
				   0xa3, 0xfe, 0xeb, 0xbd, 0x45, 0x4d, 0x44, 0x23, 0x64, 0x3c, 0xe8,
				   0x0e, 0x2a, 0x9a, 0xc9, 0x4f, 0xa5, 0x4c, 0xa4, 0x9f};
	/* 896-bit message "abcdefghbcdefghi...nopqrstu" (FIPS 180-2 appendix C.2). */
	static const u8 two[64] = {0x8e, 0x95, 0x9b, 0x75, 0xda, 0xe3, 0x13, 0xda, 0x8c, 0xf4, 0xf7,
				   0x28, 0x14, 0xfc, 0x14, 0x3f, 0x8f, 0x77, 0x79, 0xc6, 0xeb, 0x9f,
				   0x7f, 0xa1, 0x72, 0x99, 0xae, 0xad, 0xb6, 0x88, 0x90, 0x18, 0x50,
				   0x1d, 0x28, 0x9e, 0x49, 0x00, 0xf7, 0xe4, 0x33, 0x1b, 0x99, 0xde,
				   0xc4, 0xb5, 0x43, 0x3a, 0xc7, 0xd3, 0x29, 0xee, 0xb6, 0xdd, 0x26,
				   0x54, 0x5e, 0x96, 0xe5, 0x5b, 0x87, 0x4b, 0xe9, 0x09};
	/* SHA-512 of one million 'a' (FIPS 180-2 appendix C.3). */
	static const u8 mil[64] = {0xe7, 0x18, 0x48, 0x3d, 0x0c, 0xe7, 0x69, 0x64, 0x4e, 0x2e, 0x42,
				   0xc7, 0xbc, 0x15, 0xb4, 0x63, 0x8e, 0x1f, 0x98, 0xb1, 0x3b, 0x20,
				   0x44, 0x28, 0x56, 0x32, 0xa8, 0x03, 0xaf, 0xa9, 0x73, 0xeb, 0xde,
				   0x0f, 0xf2, 0x44, 0x87, 0x7e, 0xa6, 0x0a, 0x4c, 0xb0, 0x43, 0x2c,
				   0xe5, 0x77, 0xc3, 0x1b, 0xeb, 0x00, 0x9c, 0x5c, 0x2c, 0x49, 0xaa,
				   0x2e, 0x4e, 0xad, 0xb2, 0x17, 0xad, 0x8c, 0xc0, 0x9b};
	const char *m2 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
			 "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
	u8 out[64], a[1000];
	struct sha512_ctx c;
	BOOLEAN ok;

	sha512("abc", 3, out);
	ok = CompareMem(out, abc, 64) == 0;
	sha512(m2, strlena((const CHAR8 *)m2), out);
	ok = ok && CompareMem(out, two, 64) == 0;
	SetMem(a, sizeof(a), 'a');
	sha512_init(&c);
	for (UINTN done = 0, i = 0, n; done < 1000000; done += n, i++) {
		n = 1 + i % 997; /* odd-sized pieces exercise the partial-block path */
		if (n > 1000000 - done)
			n = 1000000 - done;
		sha512_update(&c, a, n);
	}
	sha512_final(&c, out);
	ok = ok && CompareMem(out, mil, 64) == 0;
	tap(ok, L"probe self-test: SHA-512 FIPS 180 vectors (abc, 896-bit, 10^6 x 'a')");
}

static int rdrand64(u64 *v)
{
	u8 ok;

	__asm__ volatile("rdrand %0; setc %1" : "=r"(*v), "=qm"(ok) : : "cc");
	return ok;
}

/*
 * A relying party's nonce (csvsm-kbs, tests/snpm/attest.sh): csvsm.nonce=<128
 * hex digits> on the probe's command line (QEMU's -append, which OVMF's
 * kernel loader hands over as the image's LoadOptions: OvmfPkg
 * X86QemuLoadImageLib QemuLoadKernelImage). The probe then attests to it
 * instead of a nonce of its own.
 */
static u8 g_given_nonce[ATT_NONCE_LEN];
static BOOLEAN g_have_given_nonce;

static void read_load_options(EFI_HANDLE image)
{
	EFI_LOADED_IMAGE *li = NULL;
	static const CHAR16 key[] = L"csvsm.nonce=";
	const UINTN kl = sizeof(key) / sizeof(key[0]) - 1;

	if (EFI_ERROR(uefi_call_wrapper(g_st->BootServices->HandleProtocol, 3, image,
					&LoadedImageProtocol, (void **)&li)) ||
	    !li || !li->LoadOptions)
		return;
	const CHAR16 *o = li->LoadOptions;
	UINTN n = li->LoadOptionsSize / sizeof(CHAR16);
	for (UINTN i = 0; i + kl + 2 * ATT_NONCE_LEN <= n; i++) {
		if (CompareMem(o + i, key, kl * sizeof(CHAR16)) != 0)
			continue;
		for (UINTN j = 0; j < 2 * ATT_NONCE_LEN; j++) {
			CHAR16 c = o[i + kl + j];
			int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
			if (v < 0)
				return;
			g_given_nonce[j / 2] = (u8)(g_given_nonce[j / 2] << 4 | v);
		}
		g_have_given_nonce = TRUE;
		Print(L"# nonce from the command line (csvsm.nonce=): the relying party's\n");
		return;
	}
}

/* 64 fresh nonce bytes from RDRAND (CPUID.1:ECX[30]), retried as Intel's DRNG guide advises. */
static BOOLEAN make_nonce(u8 *nonce)
{
	u32 a = 1, b, c = 0, d;

	if (g_have_given_nonce) {
		CopyMem(nonce, g_given_nonce, ATT_NONCE_LEN);
		return TRUE;
	}

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	if (!(c & (1u << 30)))
		return FALSE;
	for (int i = 0; i < ATT_NONCE_LEN / 8; i++) {
		u64 v;
		int tries = 0;

		while (!rdrand64(&v))
			if (++tries > 100)
				return FALSE;
		CopyMem(nonce + 8 * i, &v, 8);
	}
	return TRUE;
}

static u32 le32(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

/* `# evidence NAME OFFSET HEX` lines, 32 bytes each, for tests/qemu/attest.sh. */
static void evidence(const CHAR8 *name, const u8 *d, UINTN n)
{
	CHAR16 hex[2 * 32 + 1];

	for (UINTN off = 0; off < n; off += 32) {
		UINTN k = n - off < 32 ? n - off : 32;

		for (UINTN i = 0; i < k; i++) {
			hex[2 * i] = L"0123456789abcdef"[d[off + i] >> 4];
			hex[2 * i + 1] = L"0123456789abcdef"[d[off + i] & 15];
		}
		hex[2 * k] = 0;
		Print(L"# evidence %a %ld %s\n", name, (u64)off, hex);
	}
}

/* Fill the op page for SVSM_ATTEST_SERVICES (and SINGLE_SERVICE if guid). */
static void attest_op(u8 *op, u64 nonce, u64 report, u32 report_size, u64 manifest,
		      u32 manifest_size, u64 certs, u32 certs_size, const u8 *guid)
{
	u16 nlen = ATT_NONCE_LEN;

	ZeroMem(op, ATT_SINGLE_OP_SIZE);
	CopyMem(op + ATT_OP_REPORT_GPA, &report, 8);
	CopyMem(op + ATT_OP_REPORT_SIZE, &report_size, 4);
	CopyMem(op + ATT_OP_NONCE_GPA, &nonce, 8);
	CopyMem(op + ATT_OP_NONCE_SIZE, &nlen, 2);
	CopyMem(op + ATT_OP_MANIF_GPA, &manifest, 8);
	CopyMem(op + ATT_OP_MANIF_SIZE, &manifest_size, 4);
	CopyMem(op + ATT_OP_CERTS_GPA, &certs, 8);
	CopyMem(op + ATT_OP_CERTS_SIZE, &certs_size, 4);
	if (guid)
		CopyMem(op + ATT_OP_GUID, (void *)guid, 16); /* manifest version @0x50 stays 0 */
}

/*
 * Services manifest (§2): GUID table {GUID 63849ebb-..., u32 total, u32 N,
 * N x {GUID, u32 offset, u32 size}, data}. Returns the vTPM entry's data.
 */
static BOOLEAN manifest_parse(const u8 *m, u32 mlen, const u8 **vtpm, u32 *vtpm_len, CHAR16 *why,
			      UINTN wn)
{
	u32 total, n;

	*vtpm = NULL;
	*vtpm_len = 0;
	if (mlen < 24 || CompareMem((void *)m, (void *)g_manifest_guid, 16) != 0) {
		UnicodeSPrint(why, wn, L"no services-manifest GUID header");
		return FALSE;
	}
	total = le32(m + 0x10);
	n = le32(m + 0x14);
	if (total != mlen || n > (mlen - 24) / 24) {
		UnicodeSPrint(why, wn, L"total size %d (returned %d) or count %d inconsistent",
			      total, mlen, n);
		return FALSE;
	}
	for (u32 i = 0; i < n; i++) {
		const u8 *e = m + 24 + 24 * i;
		u32 off = le32(e + 16), sz = le32(e + 20);

		Print(L"# manifest service %g: offset %d size %d\n", (EFI_GUID *)e, off, sz);
		if (off < 24 + 24 * n || off > mlen || sz > mlen - off) {
			UnicodeSPrint(why, wn, L"service %d data [%d, +%d) outside the manifest", i,
				      off, sz);
			return FALSE;
		}
		if (CompareMem((void *)e, (void *)g_vtpm_guid, 16) == 0) {
			*vtpm = m + off;
			*vtpm_len = sz;
		}
	}
	UnicodeSPrint(why, wn, L"%d services", n);
	return TRUE;
}

/*
 * Certificate table (§6.5): 24-byte entries {GUID, u32 offset, u32 length}
 * up to an all-zero one; offsets from the table start. Returns the used
 * length (entries, terminator and data) or 0 if malformed.
 */
static u32 certtable_parse(const u8 *t, u32 cap, BOOLEAN *vcek, u32 *count)
{
	u32 used, entries_end, i;

	*vcek = FALSE;
	*count = 0;
	for (i = 0;; i++) {
		static const u8 zero[CERT_ENTRY_SIZE];

		if ((i + 1) * CERT_ENTRY_SIZE > cap)
			return 0;
		if (CompareMem((void *)(t + i * CERT_ENTRY_SIZE), (void *)zero, CERT_ENTRY_SIZE) ==
		    0)
			break;
	}
	*count = i;
	used = entries_end = (i + 1) * CERT_ENTRY_SIZE;
	for (u32 k = 0; k < i; k++) {
		const u8 *e = t + k * CERT_ENTRY_SIZE;
		u32 off = le32(e + 16), len = le32(e + 20);

		Print(L"# certificate table entry %d: %02x%02x%02x%02x-... offset %d length %d\n",
		      k, e[0], e[1], e[2], e[3], off, len);
		if (len && off < entries_end)
			return 0;
		if (off > cap || len > cap - off)
			return 0;
		if (off + len > used)
			used = off + len;
		if (CompareMem((void *)e, (void *)g_vcek_guid, 16) == 0 && len)
			*vcek = TRUE;
	}
	return used;
}

static void attest_skip_all(const CHAR16 *why)
{
	static const CHAR16 *names[] = {
	    L"SVSM_ATTEST_SERVICES manifest buffer too small -> INVALID_PARAMETER with sizes",
	    L"SVSM_ATTEST_SERVICES -> SUCCESS, report 0x4A0 bytes",
	    L"attestation report VERSION >= 3, VMPL 0",
	    L"attestation REPORT_DATA == SHA-512(nonce || manifest)",
	    L"services manifest: GUID table with the vTPM EK (TPMT_PUBLIC RSA, SHA-256)",
	    L"certificate table with a VCEK entry",
	    L"SVSM_ATTEST_SINGLE_SERVICE(vTPM) -> the vTPM service data",
	};
	for (UINTN i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		tap_skip(why, L"%s", names[i]);
}

static void check_attest(void)
{
	struct probe_regs r;
	u64 rc, op_page, report, manifest, certs, nonce_gpa;
	u32 man_pages = 2, cert_pages = 4, mlen, clen, vtpm_len = 0, used, count;
	u8 *op, *nonce, want[64];
	const u8 *rep, *vtpm = NULL;
	struct sha512_ctx c;
	CHAR16 why[160];
	BOOLEAN ok, vcek;

	g_form = FORM_GHCB;
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_ATTEST << 32) | 1, 0, 0, &r);
	if (rc == SVSM_SUCCESS && r.rcx == 0) {
		attest_skip_all(L"attestation not implemented (QUERY_PROTOCOL(1) = 0)");
		g_form = FORM_MSR;
		return;
	}
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"QUERY_PROTOCOL(attestation, v1) -> %s RCX 0x%lx (want SUCCESS, 0x100000001)",
	    rc_name(rc), r.rcx);

	op_page = alloc_pages(1);
	report = alloc_pages(1);
	manifest = alloc_pages(man_pages);
	certs = alloc_pages(cert_pages);
	if (!op_page || !report || !manifest || !certs) {
		tap(FALSE, L"AllocatePages for the attestation buffers");
		g_form = FORM_MSR;
		return;
	}
	op = (u8 *)(UINTN)op_page;
	nonce_gpa = op_page + 0x800; /* 64 bytes, inside the op's page */
	nonce = (u8 *)(UINTN)nonce_gpa;
	if (!make_nonce(nonce)) {
		tap(FALSE, L"nonce: 64 bytes from RDRAND (CPUID.1:ECX[30] %a)",
		    "missing or RDRAND failing");
		g_form = FORM_MSR;
		return;
	}

	/* 1. Manifest buffer of 16 bytes: INVALID_PARAMETER, and the sizes the SVSM needs. */
	attest_op(op, nonce_gpa, report, PAGE_SIZE, manifest, 16, certs, cert_pages * PAGE_SIZE,
		  NULL);
	rc = call3(PROTO_ATTEST, ATT_SERVICES, op_page, 0, 0, &r);
	tap(rc == SVSM_ERR_INVALID_PARAMETER && r.rcx > 16 && r.r8 == REPORT_SIZE,
	    L"SVSM_ATTEST_SERVICES manifest buffer 16 bytes -> %s, RCX (manifest) %ld, RDX (certs) "
	    L"%ld, R8 (report) 0x%lx "
	    L"(want INVALID_PARAMETER, RCX > 16, R8 0x4A0)",
	    rc_name(rc), r.rcx, r.rdx, r.r8);
	if (rc == SVSM_ERR_INVALID_PARAMETER && r.rcx > man_pages * PAGE_SIZE &&
	    r.rcx <= 64 * PAGE_SIZE) {
		man_pages = (u32)((r.rcx + PAGE_SIZE - 1) / PAGE_SIZE);
		manifest = alloc_pages(man_pages);
	}
	if (rc == SVSM_ERR_INVALID_PARAMETER && r.rdx > cert_pages * PAGE_SIZE &&
	    r.rdx <= 64 * PAGE_SIZE) {
		cert_pages = (u32)((r.rdx + PAGE_SIZE - 1) / PAGE_SIZE);
		certs = alloc_pages(cert_pages);
	}

	/* 2. The real call; a certificate table larger than announced gets one retry (Linux
	 * retries). */
	for (int tries = 0; tries < 2 && manifest && certs; tries++) {
		attest_op(op, nonce_gpa, report, PAGE_SIZE, manifest, man_pages * PAGE_SIZE, certs,
			  cert_pages * PAGE_SIZE, NULL);
		rc = call3(PROTO_ATTEST, ATT_SERVICES, op_page, 0, 0, &r);
		if (rc != SVSM_ERR_INVALID_PARAMETER || r.rdx <= cert_pages * PAGE_SIZE ||
		    r.rdx > 64 * PAGE_SIZE)
			break;
		Print(L"# certificate table needs %ld bytes: retrying with a larger buffer\n",
		      r.rdx);
		cert_pages = (u32)((r.rdx + PAGE_SIZE - 1) / PAGE_SIZE);
		certs = alloc_pages(cert_pages);
	}
	mlen = (u32)r.rcx;
	clen = (u32)r.rdx;
	ok = rc == SVSM_SUCCESS && r.r8 == REPORT_SIZE && mlen >= 24 &&
	     mlen <= man_pages * PAGE_SIZE && clen <= cert_pages * PAGE_SIZE;
	tap(ok,
	    L"SVSM_ATTEST_SERVICES -> %s, manifest %d bytes, certificates %d bytes, report 0x%lx "
	    L"bytes "
	    L"(want SUCCESS, R8 0x4A0)",
	    rc_name(rc), mlen, clen, r.r8);
	if (!ok) {
		g_form = FORM_MSR;
		return;
	}
	rep = (const u8 *)(UINTN)report;
	tap(le32(rep + REPORT_VERSION) >= 3 && le32(rep + REPORT_VMPL) == 0,
	    L"attestation report VERSION %d (want >= 3), VMPL %d (want 0)",
	    le32(rep + REPORT_VERSION), le32(rep + REPORT_VMPL));
	sha512_init(&c);
	sha512_update(&c, nonce, ATT_NONCE_LEN);
	sha512_update(&c, (void *)(UINTN)manifest, mlen);
	sha512_final(&c, want);
	tap(CompareMem((void *)(rep + REPORT_DATA), want, 64) == 0,
	    L"attestation REPORT_DATA == SHA-512(nonce || manifest)");

	ok = manifest_parse((const u8 *)(UINTN)manifest, mlen, &vtpm, &vtpm_len, why, sizeof(why));
	tap(ok && vtpm && vtpm_len >= 4 && vtpm[0] == 0x00 && vtpm[1] == 0x01 && vtpm[2] == 0x00 &&
		vtpm[3] == 0x0B,
	    L"services manifest: GUID table (%s) with the vTPM service, EK TPMT_PUBLIC %d bytes, "
	    L"type/nameAlg %02x%02x "
	    L"%02x%02x (want 0001 000b: RSA, SHA-256)",
	    why, vtpm_len, vtpm_len >= 4 ? vtpm[0] : 0, vtpm_len >= 4 ? vtpm[1] : 0,
	    vtpm_len >= 4 ? vtpm[2] : 0, vtpm_len >= 4 ? vtpm[3] : 0);

	used = certtable_parse((const u8 *)(UINTN)certs, cert_pages * PAGE_SIZE, &vcek, &count);
	tap(used && count && vcek && used <= clen,
	    L"certificate table: %d entries, %d bytes used (RDX %d), VCEK entry %a", count, used,
	    clen, vcek ? "present" : "MISSING");

	/* The evidence for the host-side verifier (tests/qemu/attest.sh). */
	Print(L"# evidence sizes report %d manifest %d certs %d\n", REPORT_SIZE, mlen, used);
	evidence((const CHAR8 *)"nonce", nonce, ATT_NONCE_LEN);
	evidence((const CHAR8 *)"report", rep, REPORT_SIZE);
	evidence((const CHAR8 *)"manifest", (const u8 *)(UINTN)manifest, mlen);
	evidence((const CHAR8 *)"certs", (const u8 *)(UINTN)certs, used);
	evidence((const CHAR8 *)"measurement", rep + REPORT_MEASUREMENT, 48);
	Print(L"# evidence end\n");

	/* 3. SINGLE_SERVICE(vTPM, version 0): the raw vTPM service data. */
	if (!vtpm) {
		tap(FALSE, L"SVSM_ATTEST_SINGLE_SERVICE(vTPM): no vTPM service in the manifest to "
			   L"compare with");
		g_form = FORM_MSR;
		return;
	}
	{
		u64 single = alloc_pages(man_pages);
		u8 vt[1024];
		BOOLEAN rd_ok = FALSE;

		if (vtpm_len > sizeof(vt) || !single) {
			tap(FALSE,
			    L"SVSM_ATTEST_SINGLE_SERVICE(vTPM): vTPM data %d bytes too large for "
			    L"the probe",
			    vtpm_len);
			g_form = FORM_MSR;
			return;
		}
		CopyMem(vt, (void *)vtpm, vtpm_len);
		ZeroMem((void *)(UINTN)report, PAGE_SIZE);
		attest_op(op, nonce_gpa, report, PAGE_SIZE, single, man_pages * PAGE_SIZE, certs,
			  cert_pages * PAGE_SIZE, g_vtpm_guid);
		rc = call3(PROTO_ATTEST, ATT_SINGLE_SERVICE, op_page, 0, 0, &r);
		ok = rc == SVSM_SUCCESS && r.rcx == vtpm_len && r.r8 == REPORT_SIZE &&
		     CompareMem((void *)(UINTN)single, vt, vtpm_len) == 0;
		if (ok) {
			sha512_init(&c);
			sha512_update(&c, nonce, ATT_NONCE_LEN);
			sha512_update(&c, vt, vtpm_len);
			sha512_final(&c, want);
			rd_ok = CompareMem((void *)(rep + REPORT_DATA), want, 64) == 0;
		}
		tap(ok && rd_ok,
		    L"SVSM_ATTEST_SINGLE_SERVICE(vTPM, version 0) -> %s, manifest %ld bytes == the "
		    L"vTPM service data (%d), "
		    L"REPORT_DATA == SHA-512(nonce || it) %a",
		    rc_name(rc), r.rcx, vtpm_len, rd_ok ? "yes" : "NO");
	}
	g_form = FORM_MSR;
}

/* --- Isolation: csvsm memory must be closed to the guest (DESIGN "sim") --- */

static const CHAR16 *vec_name(INTN v)
{
	return v == 13 ? L"#GP" : v == 14 ? L"#PF" : v < 0 ? L"no fault" : L"other";
}

/*
 * RMPADJUST of the page at va for VMPL3 with `perm`: a VMPL grants only the
 * permissions it holds (APM vol. 3 RMPADJUST), so FAIL_PERMISSION says this
 * VMPL lacks one of them. A 4K request inside a 2M RMP entry fails with
 * FAIL_SIZEMISMATCH: then the 2M form on the 2 MiB page around va.
 */
static u64 rmp_grant_vmpl3(u64 va, u64 perm)
{
	u64 rc = probe_rmpadjust(va & ~(PAGE_SIZE - 1), 0, 3 | perm << 8);

	if (rc == RMPA_FAIL_SIZEMISMATCH)
		rc = probe_rmpadjust(va & ~(SZ_2M - 1), 1, 3 | perm << 8);
	return rc;
}

/*
 * csvsm's memory is closed to this VMPL. Touching it is not a check a test
 * can make and go on: OVMF maps [svsm_base, +svsm_size) without the C-bit,
 * and a shared access to a private page makes KVM exit to QEMU, which
 * converts the page (csvsm's copy is discarded, the guest reads fresh
 * memory); a private access would be an RMP violation KVM re-enters on
 * forever. docs/snp-machine.md "Faults as a KVM host sees them";
 * tests/snpm/faults.sh runs those accesses (probe-fault*.efi). Here the
 * RMP itself answers: RMPADJUST granting VMPL3 read, write or execute on
 * csvsm's first and last page must fail with FAIL_PERMISSION.
 */
static void check_isolation(void)
{
	u64 last = g_svsm_base + g_svsm_size - 8;

#if PROBE_FAULT == 1
	u64 v;

	Print(L"# fault: reading csvsm 0x%lx through the firmware's mapping\n", g_svsm_base);
	fault_arm((u64)(UINTN)probe_try_read64_fault, (u64)(UINTN)probe_try_read64_resume, 0);
	v = probe_try_read64(g_svsm_base, 0x5E171E15E171E1ULL);
	fault_disarm();
	Print(L"# fault: the read returned 0x%lx (fault vector %d)\n", v, (int)g_fault.vector);
	{
		/* csvsm lost that page (the host converted it to shared): it must
		 * serve on, and never validate the page again (faults.sh). */
		struct probe_regs r;
		u64 rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0,
			       0, &r);
		Print(L"# fault: csvsm answers after the read: %s RCX 0x%lx\n", rc_name(rc),
		      r.rcx);
	}
#endif
#if PROBE_FAULT == 3
	{
		/* A page of this guest made private anew by the host (GHCB MSR
		 * page-state change, 56421 §2.3.1) without a PVALIDATE: a private
		 * access to it fails the validation check. */
		u64 pg = alloc_pages(1), old = probe_rdmsr(0xC0010130), resp;

		/* Shared first (the RMP entry is cleared), then private: a
		 * conversion of a page that is private already changes nothing
		 * (KVM_SET_MEMORY_ATTRIBUTES to what it is). */
		probe_wrmsr(0xC0010130, 0x014 | (pg & ~(PAGE_SIZE - 1)) | (2ULL << 52));
		probe_vmgexit();
		probe_wrmsr(0xC0010130, 0x014 | (pg & ~(PAGE_SIZE - 1)) | (1ULL << 52));
		probe_vmgexit();
		resp = probe_rdmsr(0xC0010130);
		probe_wrmsr(0xC0010130, old);
		Print(L"# fault: page 0x%lx made private, not validated (PSC answer 0x%lx); "
		      L"reading it\n",
		      pg, resp);
		fault_arm((u64)(UINTN)probe_try_read64_fault, (u64)(UINTN)probe_try_read64_resume,
			  0);
		probe_try_read64(pg, 0);
		fault_disarm();
		Print(L"# fault: the read returned (fault vector %d)\n", (int)g_fault.vector);
	}
#endif
	struct {
		u64 va, perm;
		const CHAR16 *what;
	} t[] = {{g_svsm_base, RMPA_R, L"read"},
		 {last, RMPA_R, L"read"},
		 {g_svsm_base, RMPA_W, L"write"},
		 {g_svsm_base, RMPA_XS, L"execute"}};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		u64 rc = rmp_grant_vmpl3(t[i].va, t[i].perm);

		tap(rc == RMPA_FAIL_PERMISSION,
		    L"%s at csvsm 0x%lx closed to this VMPL: RMPADJUST(VMPL3, %s) -> %ld (want "
		    L"FAIL_PERMISSION 2)",
		    t[i].what, t[i].va, t[i].what, rc);
	}
}

/*
 * A hostile guest sends INIT and start-up IPIs to every other CPU (what
 * OVMF's MpInitLib does on a multi-CPU view). csvsm's own vCPUs must not be
 * restarted: csvsm answers afterwards, and its `vcpu-check` line at power-off
 * (asserted by tests/qemu/probe.sh) proves its other vCPUs are still its own.
 */
/* VMRUN does not switch SSE state: a call must leave the guest's XMM registers as they were. */
static void check_fpu(void)
{
	static u8 buf[512] __attribute__((aligned(16)));
	struct probe_regs r;
	int bad = 0;

	for (int form = 0; form < 2; form++) {
		for (int i = 0; i < 256; i++)
			buf[i] = (u8)(i * 7 + 13 + form), buf[256 + i] = 0;
		g_xmm_check = buf;
		enum call_form saved = g_form;
		g_form = form ? FORM_GHCB : FORM_MSR;
		u64 rc =
		    call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
		g_form = saved;
		g_xmm_check = NULL;
		for (int i = 0; i < 256; i++)
			bad += buf[i] != buf[256 + i];
		tap(rc == SVSM_SUCCESS && bad == 0,
		    L"XMM0..15 preserved across an SVSM call (%s form): %d bytes differ",
		    form ? L"GHCB" : L"MSR", bad);
	}
}

static void check_init_ipi(void)
{
	volatile u32 *icr_lo = (volatile u32 *)(UINTN)0xFEE00300ULL;
	struct probe_regs r;
	u64 rc;

	/* The delays of Intel SDM vol. 3 §8.4.4.1, through EFI's Stall. */
	*icr_lo = 0x000C4500; /* INIT, assert, all excluding self */
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 10000);
	*icr_lo = 0x000C4610; /* start-up IPI, vector 0x10 */
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 200);
	*icr_lo = 0x000C4610;
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 10000);
	rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"INIT-SIPI-SIPI to all other CPUs sent; csvsm still answers (%s)", rc_name(rc));
}

/* ------------------------------------------------------------------------ */

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	struct flash_info fi;
	CHAR16 why[160];
	EFI_STATUS s;
	const u8 *sp;
	u64 ghcb, pool, big_alloc, big, vmsa, newca, vtpm_page;

	InitializeLib(image, st);
	g_st = st;
	read_load_options(image);
	/* OVMF's terminal emits escape sequences first: start on a clean line. */
	Print(L"\n# csvsm probe: SVSM client conformance suite (TAP)\n");

	check_sha256();
	check_sha512();

	s = fault_handlers_install();
	tap(!EFI_ERROR(s), L"#UD/#GP/#PF handlers registered through EFI_CPU_ARCH_PROTOCOL (%r)",
	    s);
	if (EFI_ERROR(s))
		g_cpu = NULL;
	else
		check_fault_selftest();

	if (probe_flash_parse(&fi, why, sizeof(why))) {
		tap(FALSE, L"OVMF footer table / SEV metadata: %s", why);
		Print(L"# no SVSM found\n");
		finish();
	}
	Print(L"# flash [0x%lx, 4 GiB), %ld KiB; SEV metadata at 0x%lx, %d items\n", fi.base,
	      fi.size >> 10, fi.meta_gpa, fi.meta_items);
	tap(TRUE, L"OVMF footer table and SEV metadata found; SNP secrets page at gPA 0x%lx",
	    fi.secrets_gpa);
	/* For the PCR0 check; compare with `sha256sum OVMF.fd` on the host. */
	sha256((const void *)(UINTN)fi.base, fi.size, g_flash_sha256);
	hex32(L"flash sha256", g_flash_sha256);
#ifdef PROBE_FAKE_SVSM
	if (fake_svsm_setup(fi.secrets_gpa, g_flash_sha256))
		Print(L"# fake SVSM set-up failed\n");
#endif

	sp = (const u8 *)(UINTN)fi.secrets_gpa;
	CopyMem(&g_svsm_base, (void *)(sp + SECRETS_SVSM_BASE), 8);
	CopyMem(&g_svsm_size, (void *)(sp + SECRETS_SVSM_SIZE), 8);
	CopyMem(&g_boot_caa, (void *)(sp + SECRETS_SVSM_CAA), 8);
	CopyMem(&g_svsm_max_version, (void *)(sp + SECRETS_SVSM_MAX_VERSION), 4);
	g_guest_vmpl = sp[SECRETS_SVSM_GUEST_VMPL];
	Print(L"# secrets page: svsm_base 0x%lx svsm_size 0x%lx svsm_caa 0x%lx max_version %d "
	      L"guest_vmpl %d\n",
	      g_svsm_base, g_svsm_size, g_boot_caa, g_svsm_max_version, g_guest_vmpl);
	if (!g_svsm_size) {
		Print(L"# no SVSM found\n");
		tap(FALSE, L"SVSM present (secrets page svsm_size != 0)");
		finish();
	}
	if (!secrets_sane(why, sizeof(why))) {
		Print(L"# no SVSM found: %s\n", why);
		tap(FALSE, L"SVSM present (consistent SVSM fields in the secrets page)");
		finish();
	}
	tap(TRUE, L"SVSM present: [0x%lx, +0x%lx), CA 0x%lx, guest VMPL %d", g_svsm_base,
	    g_svsm_size, g_boot_caa, g_guest_vmpl);
	probe_snp_detect();
	if (g_snp)
		Print(L"# SEV-SNP guest: SEV_STATUS 0x%lx, the firmware's GHCB at 0x%lx\n",
		      g_sev_status, probe_ghcb_current());
	else
		Print(L"# not an SEV-SNP guest: the probe registers a GHCB of its own\n");
	g_caa = g_boot_caa;
	{
		/* The guest's copy has VMPCK0..VMPCK(guest VMPL - 1) cleared (reference §1.6). */
		BOOLEAN cleared = TRUE, others = TRUE;

		for (u32 k = 0; k < 4; k++) {
			BOOLEAN zero = TRUE;

			for (u32 i = 0; i < SECRETS_VMPCK_SIZE; i++)
				if (sp[SECRETS_VMPCK0 + k * SECRETS_VMPCK_SIZE + i])
					zero = FALSE;
			if (k < g_guest_vmpl && !zero)
				cleared = FALSE;
			if (k >= g_guest_vmpl && zero)
				others = FALSE;
		}
		tap(cleared, L"secrets page: VMPCK0..VMPCK%d cleared in the guest's copy",
		    g_guest_vmpl - 1);
		Print(L"# VMPCK%d..VMPCK3 %a\n", g_guest_vmpl,
		      others ? "present (non-zero)" : "include an all-zero key");
	}

	ghcb = alloc_pages(1);
	pool = alloc_pages(12);
	big_alloc = alloc_pages(1024); /* 4 MiB: holds one 2M-aligned 2 MiB range */
	vmsa = alloc_pages(1);
	newca = alloc_pages(1);
	vtpm_page = alloc_pages(1);
	if (!ghcb || !pool || !big_alloc || !vmsa || !newca || !vtpm_page) {
		tap(FALSE, L"AllocatePages for the test pages");
		finish();
	}
	big = (big_alloc + SZ_2M - 1) & ~(SZ_2M - 1);

	Print(L"# --- call mechanics ---\n");
	check_mechanics(ghcb);
	Print(L"# --- core protocol (0), MSR form ---\n");
	check_core();
	Print(L"# --- core PVALIDATE ---\n");
	check_pvalidate(pool, big);
	Print(L"# --- core CREATE_VCPU / DELETE_VCPU with bad arguments ---\n");
	check_vcpu(vmsa, pool + 10 * PAGE_SIZE);
	check_vcpu_run();
	Print(L"# --- core REMAP_CA ---\n");
	check_remap(newca, pool + 11 * PAGE_SIZE);
	Print(L"# --- vTPM protocol (2), GHCB form ---\n");
	check_vtpm(vtpm_page);
	Print(L"# --- attestation protocol (1), GHCB form ---\n");
	check_attest();
	Print(L"# --- isolation: guest access to csvsm memory ---\n");
	check_fpu();
	check_init_ipi();
	check_isolation();
	finish();
	return EFI_SUCCESS;
}
