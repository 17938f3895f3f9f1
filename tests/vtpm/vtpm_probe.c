/*
 * build/vtpm-probe.efi: the guest side of the persistent-vTPM tests
 * (tests/vtpm/sealed.sh) and benchmark (bench/vtpm_bench.sh). A gnu-efi
 * application like tests/guest/bench.c, linked with the probe's discovery
 * and call code, that talks to csvsm's vTPM through the SVSM vTPM protocol
 * (TPM_SEND_COMMAND) at VMPL2 and prints what a later boot must find:
 *
 *   vtpm-probe: ek sha256=<hex> public=<hex>      the TCG default RSA EK (L-1)
 *   vtpm-probe: nv created|present data=<hex>     NV index 0x01500016, 32 bytes
 *   vtpm-probe: persistent created|present name=<hex>   0x81000010, ECC P-256 SRK
 *   vtpm-probe: counter before=N after=N+2        NV index 0x01500017, written twice
 *   vtpm-probe: sealed created|present            a data object sealed to PCR0
 *                                                 (sha256), persistent 0x81000011
 *   vtpm-probe: unseal ok data=<hex> | unseal refused rc=0x...   under PolicyPCR
 *   vtpm-probe: ekcert bytes=N sha256=<hex> der=<hex> | ekcert none
 *   vtpm-probe: platform rc=0x...                 TPM2_HierarchyControl under the
 *                                                 platform hierarchy (csvsm disabled it)
 *   vtpm-probe: timing getrandom_cycles=C nv_write_cycles=C1,C2
 *   vtpm-probe: done
 *
 * Every TPM command is built here from TPM 2.0 Part 3 (command layouts) and
 * Part 2 (constants), with empty owner authorization (password sessions):
 * the vTPM has no other owner. Failures print "vtpm-probe: error ..." and
 * the probe powers off, so the script sees what went wrong.
 */
#include "probe.h"
#include "probe_int.h"

#define NV_MARKER	   0x01500016u
#define NV_COUNTER	   0x01500017u
#define PERSISTENT	   0x81000010u
#define SEALED		   0x81000011u
#define EK_CERT		   0x01C00002u
#define TPM_RH_PLATFORM	   0x4000000Cu
#define TPM_RH_NULL	   0x40000007u
#define TPM_RH_OWNER	   0x40000001u
#define TPM_RH_ENDORSEMENT 0x4000000Bu
#define TPM_RS_PW	   0x40000009u
#define TPM_RC_HANDLE_1	   0x18Bu /* TPM_RC_HANDLE + TPM_RC_1: no such index/object */

/* The marker csvsm's sealed state must carry and the proxy must never see. */
static const u8 marker[32] = "CSVSM-NV-MARKER:do-not-leak-0001";

static u8 cmd[2048];
static u32 clen;
static const u8 *rsp;
static u32 rlen;
static u64 page;

static u64 rdtsc(void)
{
	u32 lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	return ((u64)hi << 32) | lo;
}

static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}
static u16 be16(const u8 *p)
{
	return (u16)(p[0] << 8 | p[1]);
}

static void p8(u8 v)
{
	cmd[clen++] = v;
}
static void p16(u16 v)
{
	p8((u8)(v >> 8));
	p8((u8)v);
}
static void p32(u32 v)
{
	p16((u16)(v >> 16));
	p16((u16)v);
}
static void pbytes(const u8 *p, u32 n)
{
	CopyMem(cmd + clen, (void *)p, n);
	clen += n;
}
static void start(u16 tag, u32 cc)
{
	clen = 0;
	p16(tag);
	p32(0);
	p32(cc);
}
static void pw_session(void)
{
	p32(9);
	p32(TPM_RS_PW);
	p16(0);
	p8(0);
	p16(0);
}

static void hex_print(const CHAR16 *label, const u8 *p, u32 n)
{
	Print(L"%s", label);
	for (u32 i = 0; i < n; i++)
		Print(L"%02x", p[i]);
}

static __attribute__((noreturn)) void fail(const CHAR16 *what, u32 rc)
{
	Print(L"vtpm-probe: error %s (TPM rc 0x%x)\n", what, rc);
	shutdown();
}

static u32 send_once(void);
/* Sends cmd[0..clen); returns the TPM response code (rsp/rlen set). A TPM that
 * asks for the command again (TPM_RC_RETRY 0x922, YIELDED 0x908, TESTING
 * 0x90A: Part 2 §6.6.3 warnings) gets it again, as tpm2-tss's ESAPI does. */
static u32 send(void)
{
	static u8 again[2048];
	u32 n = clen, rc = 0;
	CopyMem(again, cmd, n);
	for (int i = 0; i < 10; i++) {
		CopyMem(cmd, again, n);
		clen = n;
		rc = send_once();
		if (rc != 0x922 && rc != 0x908 && rc != 0x90A)
			break;
	}
	return rc;
}

static u32 send_once(void)
{
	u8 *p = (u8 *)(UINTN)page;
	u32 size, platcmd = VTPM_PLAT_SEND_CMD;
	cmd[2] = (u8)(clen >> 24), cmd[3] = (u8)(clen >> 16), cmd[4] = (u8)(clen >> 8),
	cmd[5] = (u8)clen;
	ZeroMem(p, PAGE_SIZE);
	CopyMem(p, &platcmd, 4);
	p[4] = 0;
	CopyMem(p + 5, &clen, 4);
	CopyMem(p + VTPM_REQ_HDR, cmd, clen);
	u64 rc = call3(PROTO_VTPM, VTPM_CMD, page, 0, 0, NULL);
	if (rc != SVSM_SUCCESS)
		fail(L"SVSM_VTPM_CMD", (u32)rc);
	CopyMem(&size, p, 4);
	if (size < 10 || size > PAGE_SIZE - VTPM_RSP_HDR || be32(p + 4 + 2) != size)
		fail(L"malformed vTPM response", size);
	rsp = p + 4;
	rlen = size;
	return be32(rsp + 6);
}

/* send(), which must succeed (else the probe fails naming what): its TSC cycles. */
static u64 send_timed(const CHAR16 *what)
{
	u64 t0 = rdtsc();
	u32 rc = send();
	u64 t1 = rdtsc();
	if (rc)
		fail(what, rc);
	return t1 - t0;
}

static void flush(u32 h)
{
	start(0x8001, 0x165); /* TPM2_FlushContext */
	p32(h);
	send();
}

/* TPM2_CreatePrimary(hierarchy, template): returns the handle; *pub the TPM2B_PUBLIC body. */
static u32 create_primary(u32 hier, const u8 *tmpl, u32 tlen, const u8 **pub, u16 *plen)
{
	start(0x8002, 0x131);
	p32(hier);
	pw_session();
	p16(4); /* TPM2B_SENSITIVE_CREATE: empty auth, empty data */
	p16(0);
	p16(0);
	p16((u16)tlen);
	pbytes(tmpl, tlen);
	p16(0); /* outsideInfo */
	p32(0); /* creationPCR */
	u32 rc = send();
	if (rc)
		fail(L"TPM2_CreatePrimary", rc);
	/* handle, parameterSize, TPM2B_PUBLIC {size @18, TPMT_PUBLIC @20} */
	*plen = be16(rsp + 18);
	*pub = rsp + 20;
	return be32(rsp + 10);
}

/* TCG EK template L-1 (RSA-2048), as csvsm's tpm/vtpm.c makes it. */
static void ek(void)
{
	static const u8 policy_a[32] = {0x83, 0x71, 0x97, 0x67, 0x44, 0x84, 0xb3, 0xf8,
					0x1a, 0x90, 0xcc, 0x8d, 0x46, 0xa5, 0xd7, 0x24,
					0xfd, 0x52, 0xd7, 0x6e, 0x06, 0x52, 0x0b, 0x64,
					0xf2, 0xa1, 0xda, 0x1b, 0x33, 0x14, 0x69, 0xaa};
	static u8 t[320];
	u32 n = 0;
	const u8 *pub;
	u16 plen;
	u8 d[32];
#define T16(v) (t[n++] = (u8)((v) >> 8), t[n++] = (u8)(v))
	T16(0x0001);
	T16(0x000B);
	T16(0x0003);
	T16(0x00B2);
	T16(32);
	CopyMem(t + n, (void *)policy_a, 32);
	n += 32;
	T16(0x0006);
	T16(128);
	T16(0x0043);
	T16(0x0010);
	T16(2048);
	T16(0);
	T16(0);
	T16(256);
	ZeroMem(t + n, 256);
	n += 256;
	u32 h = create_primary(TPM_RH_ENDORSEMENT, t, n, &pub, &plen);
	sha256(pub, plen, d);
	hex_print(L"vtpm-probe: ek sha256=", d, 32);
	hex_print(L" public=", pub, plen);
	Print(L"\n");
	flush(h);
}

static u32 nv_read_public(u32 index)
{
	start(0x8001, 0x169);
	p32(index);
	return send();
}

static void nv_define(u32 index, u16 size)
{
	start(0x8002, 0x12A); /* TPM2_NV_DefineSpace */
	p32(TPM_RH_OWNER);
	pw_session();
	p16(0); /* auth */
	p16(4 + 2 + 4 + 2 + 2);
	p32(index);
	p16(0x000B);	 /* nameAlg SHA-256 */
	p32(0x00020002); /* OWNERWRITE | OWNERREAD */
	p16(0);		 /* authPolicy */
	p16(size);
	u32 rc = send();
	if (rc)
		fail(L"TPM2_NV_DefineSpace", rc);
}

static u64 nv_write(u32 index, const u8 *data, u16 n)
{
	start(0x8002, 0x137); /* TPM2_NV_Write */
	p32(TPM_RH_OWNER);
	p32(index);
	pw_session();
	p16(n);
	pbytes(data, n);
	p16(0); /* offset */
	return send_timed(L"TPM2_NV_Write");
}

static const u8 *nv_read(u32 index, u16 n)
{
	start(0x8002, 0x14E); /* TPM2_NV_Read */
	p32(TPM_RH_OWNER);
	p32(index);
	pw_session();
	p16(n);
	p16(0);
	u32 rc = send();
	/* header, parameterSize, TPM2B_MAX_NV_BUFFER {size @14, data @16} */
	if (rc || rlen < 16u + n || be16(rsp + 14) != n)
		fail(L"TPM2_NV_Read", rc);
	return rsp + 16;
}

static void nv_marker(void)
{
	u32 rc = nv_read_public(NV_MARKER);
	if (rc == 0) {
		hex_print(L"vtpm-probe: nv present data=", nv_read(NV_MARKER, 32), 32);
		Print(L"\n");
		return;
	}
	if (rc != TPM_RC_HANDLE_1)
		fail(L"TPM2_NV_ReadPublic", rc);
	nv_define(NV_MARKER, 32);
	nv_write(NV_MARKER, marker, 32);
	hex_print(L"vtpm-probe: nv created data=", nv_read(NV_MARKER, 32), 32);
	Print(L"\n");
}

static u32 read_public(u32 handle)
{
	start(0x8001, 0x173); /* TPM2_ReadPublic */
	p32(handle);
	return send();
}

static void persistent(void)
{
	/* ECC P-256 storage key: fixedTPM|fixedParent|sensitiveDataOrigin|userWithAuth|
	 * restricted|decrypt, AES-128-CFB, scheme NULL, curve P-256, KDF NULL, empty unique. */
	static const u8 srk[] = {0x00, 0x23, 0x00, 0x0B, 0x00, 0x03, 0x00, 0x72, 0x00,
				 0x00, 0x00, 0x06, 0x00, 0x80, 0x00, 0x43, 0x00, 0x10,
				 0x00, 0x03, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00};
	const u8 *pub;
	u16 plen;
	const CHAR16 *how = L"present";

	u32 rc = read_public(PERSISTENT);
	if (rc == TPM_RC_HANDLE_1) {
		u32 h = create_primary(TPM_RH_OWNER, srk, sizeof(srk), &pub, &plen);
		start(0x8002, 0x120); /* TPM2_EvictControl */
		p32(TPM_RH_OWNER);
		p32(h);
		pw_session();
		p32(PERSISTENT);
		rc = send();
		if (rc)
			fail(L"TPM2_EvictControl", rc);
		flush(h);
		how = L"created";
		rc = read_public(PERSISTENT);
	}
	if (rc)
		fail(L"TPM2_ReadPublic", rc);
	/* outPublic TPM2B_PUBLIC @10, then TPM2B_NAME */
	u32 off = 10 + 2 + be16(rsp + 10);
	if (off + 2 > rlen || off + 2 + be16(rsp + off) > rlen)
		fail(L"TPM2_ReadPublic answer", rlen);
	Print(L"vtpm-probe: persistent %s", how);
	hex_print(L" name=", rsp + off + 2, be16(rsp + off));
	Print(L"\n");
}

static u64 be64(const u8 *p)
{
	return (u64)be32(p) << 32 | be32(p + 4);
}

static void counter(u64 *c1, u64 *c2)
{
	u8 v[8];
	u64 before = 0;
	u32 rc = nv_read_public(NV_COUNTER);
	if (rc == TPM_RC_HANDLE_1)
		nv_define(NV_COUNTER, 8);
	else if (rc)
		fail(L"TPM2_NV_ReadPublic", rc);
	else
		before = be64(nv_read(NV_COUNTER, 8));
	Print(L"vtpm-probe: counter before=%ld\n", before);
	for (int k = 1; k <= 2; k++) {
		u64 x = before + (u64)k;
		for (int i = 0; i < 8; i++)
			v[i] = (u8)(x >> (56 - 8 * i));
		/* The second write is the one tests/vtpm/sealed.sh has the host tear. */
		Print(L"vtpm-probe: counter writing %ld\n", x);
		*(k == 1 ? c1 : c2) = nv_write(NV_COUNTER, v, 8);
	}
	Print(L"vtpm-probe: counter after=%ld\n", be64(nv_read(NV_COUNTER, 8)));
}

/* ---- a data object sealed to PCR0 (sha256) under PolicyPCR ---- */

static const u8 pcr0_sel[] = {0, 0, 0, 1, 0x00, 0x0B, 3, 0x01, 0, 0}; /* TPML_PCR_SELECTION */

/* TPM2_StartAuthSession(NULL, NULL, 16-byte nonce, no salt, type, no symmetric, SHA-256) */
static u32 start_session(u8 type)
{
	start(0x8001, 0x176);
	p32(TPM_RH_NULL);
	p32(TPM_RH_NULL);
	p16(16);
	for (int i = 0; i < 16; i++)
		p8((u8)(0xA0 + i));
	p16(0);
	p8(type);
	p16(0x0010);
	p16(0x000B);
	u32 rc = send();
	if (rc)
		fail(L"TPM2_StartAuthSession", rc);
	return be32(rsp + 10);
}

static void policy_pcr(u32 sess)
{
	start(0x8001, 0x17F); /* TPM2_PolicyPCR: pcrDigest empty (the current values) */
	p32(sess);
	p16(0);
	pbytes(pcr0_sel, sizeof(pcr0_sel));
	u32 rc = send();
	if (rc)
		fail(L"TPM2_PolicyPCR", rc);
}

static void sealed(void)
{
	static const u8 secret[32] = "CSVSM-SEALED-TO-PCR0:0123456789";
	u8 digest[32];
	if (read_public(SEALED) == 0) {
		Print(L"vtpm-probe: sealed present\n");
	} else {
		/* the policy digest by a trial session */
		u32 t = start_session(0x03);
		policy_pcr(t);
		start(0x8001, 0x189); /* TPM2_PolicyGetDigest */
		p32(t);
		u32 rc = send();
		if (rc || be16(rsp + 10) != 32)
			fail(L"TPM2_PolicyGetDigest", rc);
		CopyMem(digest, (void *)(rsp + 12), 32);
		flush(t);
		start(0x8002, 0x153); /* TPM2_Create under the persistent SRK */
		p32(PERSISTENT);
		pw_session();
		p16(2 + 2 + 32); /* TPM2B_SENSITIVE_CREATE: empty userAuth, the data */
		p16(0);
		p16(32);
		pbytes(secret, 32);
		p16(2 + 2 + 4 + 2 + 32 + 2 + 2); /* TPM2B_PUBLIC: KEYEDHASH, fixedTPM|fixedParent */
		p16(0x0008);
		p16(0x000B);
		p32(0x00000012);
		p16(32);
		pbytes(digest, 32);
		p16(0x0010); /* scheme NULL */
		p16(0);	     /* unique */
		p16(0);	     /* outsideInfo */
		p32(0);	     /* creationPCR */
		rc = send();
		if (rc)
			fail(L"TPM2_Create (sealed)", rc);
		static u8 priv[512], pub[512];
		u16 pl = be16(rsp + 14), ul = be16(rsp + 16 + pl);
		if (pl + 2u > sizeof(priv) || ul + 2u > sizeof(pub))
			fail(L"TPM2_Create answer", rlen);
		CopyMem(priv, (void *)(rsp + 14), pl + 2u);
		CopyMem(pub, (void *)(rsp + 16 + pl), ul + 2u);
		start(0x8002, 0x157); /* TPM2_Load */
		p32(PERSISTENT);
		pw_session();
		pbytes(priv, pl + 2u);
		pbytes(pub, ul + 2u);
		rc = send();
		if (rc)
			fail(L"TPM2_Load (sealed)", rc);
		u32 h = be32(rsp + 10);
		start(0x8002, 0x120); /* TPM2_EvictControl */
		p32(TPM_RH_OWNER);
		p32(h);
		pw_session();
		p32(SEALED);
		rc = send();
		if (rc)
			fail(L"TPM2_EvictControl (sealed)", rc);
		flush(h);
		Print(L"vtpm-probe: sealed created\n");
	}
	/* unseal under a policy session that saw PCR0 as it is now */
	u32 sess = start_session(0x01);
	policy_pcr(sess);
	start(0x8002, 0x15E); /* TPM2_Unseal */
	p32(SEALED);
	p32(4 + 2 + 16 + 1 + 2); /* the policy session: a nonce, no HMAC (no auth value) */
	p32(sess);
	p16(16);
	for (int i = 0; i < 16; i++)
		p8((u8)(0xB0 + i));
	p8(0); /* not continueSession: the session ends with the command */
	p16(0);
	u32 rc = send();
	if (rc == 0 && rlen >= 16u + 32 && be16(rsp + 14) == 32) {
		hex_print(L"vtpm-probe: unseal ok data=", rsp + 16, 32);
		Print(L"\n");
	} else {
		Print(L"vtpm-probe: unseal refused rc=0x%x\n", rc);
		flush(sess);
	}
}

/* ---- the EK certificate csvsm-kbs issued, at NV 0x01C00002 ---- */

static void ekcert(void)
{
	static u8 der[2048];
	u8 d[32];
	u32 rc = nv_read_public(EK_CERT);
	if (rc) {
		Print(L"vtpm-probe: ekcert none (rc 0x%x)\n", rc);
		return;
	}
	/* TPM2B_NV_PUBLIC @10: index, nameAlg, attributes, authPolicy, dataSize */
	u16 pol = be16(rsp + 22);
	u16 size = be16(rsp + 24 + pol);
	if (size > sizeof(der))
		fail(L"EK certificate size", size);
	for (u16 off = 0; off < size; off += 1024) {
		u16 n = (u16)(size - off < 1024 ? size - off : 1024);
		start(0x8002, 0x14E); /* TPM2_NV_Read, owner authorization */
		p32(TPM_RH_OWNER);
		p32(EK_CERT);
		pw_session();
		p16(n);
		p16(off);
		rc = send();
		if (rc || be16(rsp + 14) != n)
			fail(L"TPM2_NV_Read (EK certificate)", rc);
		CopyMem(der + off, (void *)(rsp + 16), n);
	}
	sha256(der, size, d);
	Print(L"vtpm-probe: ekcert bytes=%d", size);
	hex_print(L" sha256=", d, 32);
	hex_print(L" der=", der, size);
	Print(L"\n");
}

/* The platform hierarchy (empty auth) must be closed to the guest. */
static void platform(void)
{
	start(0x8002, 0x121); /* TPM2_HierarchyControl(platform): enable owner, NO */
	p32(TPM_RH_PLATFORM);
	pw_session();
	p32(TPM_RH_OWNER);
	p8(0);
	Print(L"vtpm-probe: platform rc=0x%x\n", send());
}

static u64 get_random(void)
{
	start(0x8001, 0x17B);
	p16(16);
	return send_timed(L"TPM2_GetRandom");
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	struct flash_info fi;
	CHAR16 why[160];
	u64 svsm_size, caa, c1 = 0, c2 = 0;

	InitializeLib(image, st);
	g_st = st;
	Print(L"\nvtpm-probe: start\n");
	if (probe_flash_parse(&fi, why, sizeof(why)))
		fail(why, 0);
	CopyMem(&svsm_size, (void *)(UINTN)(fi.secrets_gpa + SECRETS_SVSM_SIZE), 8);
	CopyMem(&caa, (void *)(UINTN)(fi.secrets_gpa + SECRETS_SVSM_CAA), 8);
	if (!svsm_size || !caa || (caa & (PAGE_SIZE - 1)))
		fail(L"no SVSM", 0);
	g_caa = caa;
	probe_snp_detect();
	page = alloc_pages(1);
	if (!page)
		fail(L"no page", 0);
	u64 gr = get_random();
	ek();
	nv_marker();
	persistent();
	ekcert();
	platform();
	sealed();
	counter(&c1, &c2);
	Print(L"vtpm-probe: timing getrandom_cycles=%ld nv_write_cycles=%ld,%ld\n", gr, c1, c2);
	Print(L"vtpm-probe: done\n");
	shutdown();
	return EFI_SUCCESS;
}
