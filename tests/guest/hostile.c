/*
 * csvsm hostile guest: a gnu-efi application that attacks isolation the
 * way an outside review did (issue 8), one TAP check per attack, run as an
 * SEV-SNP guest in the SNP machine (tests/snpm/hostile.sh). Each check's
 * text starts with whose property it tests:
 *
 *  - "machine: ..." the SNP machine's device filter (tests/snpm/hv/io.c,
 *    tests/snpm/model/devpolicy.c), which plays the host and is never part of
 *    csvsm's image: IOAPIC redirection entries, local APIC LVT and ICR
 *    delivery modes that would reach another CPU (INIT, SMI, NMI), the
 *    CMOS shutdown byte, fw_cfg selectors with the bits QEMU ignores and
 *    the machine's hidden items, PCI configuration writes through CF8/CFC
 *    and ECAM (PCIEXBAR, PAM, SMRAM, bus mastering), and the INIT +
 *    CMOS-resume escape itself. "machine: refused: ..." checks print
 *    "# machine-refusal: X" before the attempt; hostile.sh requires the
 *    machine's "snpm: refused: X..." line between it and the check, so a
 *    device that drops every write fails there. "machine: control: ..."
 *    checks make an allowed write to the same device and read it back, so
 *    a device that ignores writes fails them;
 *  - "csvsm: ..." csvsm's own isolation: a vCPU that keeps writing a page
 *    csvsm has rescinded (stale TLB), AP creation DESTROY of a vCPU that
 *    moved its calling area with REMAP_CA;
 *  - "setup: ..." what the others need (fault handlers, the SVSM found).
 *
 * Not here: string I/O through csvsm. An SEV-SNP guest's string I/O is a
 * #VC that its own firmware's handler emulates through the GHCB, with the
 * guest's own page tables (56421 §4.1.6); neither csvsm nor the host walks
 * them, so the old checks (rep insb into a read-only page, rep outsb
 * through page tables held in a VMSA page), written for the retired sim
 * platform where csvsm emulated string I/O, cannot apply (docs/snp-machine.md).
 */
#include "probe.h"
#include "probe_int.h"

#define LAPIC_BASE	0xFEE00000ULL
#define LAPIC_ICR_LO	0x300
#define LAPIC_LVT_LINT0 0x350
#define LAPIC_LVT_LINT1 0x360
#define LAPIC_LVT_PERF	0x340
#define IOAPIC_BASE	0xFEC00000ULL
#define DM_SHIFT	8
#define DM_SMI		2
#define DM_NMI		4
#define DM_INIT		5
#define DM_EXTINT	7

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define FW_CFG_SEL    0x510
#define FW_CFG_DATA   0x511

#define SVSM_ERR_FAIL_INUSE 0x80001003ULL /* core protocol, AMD reference SVSM */

u32 hostile_in(u16 port, u32 size);
void hostile_out(u16 port, u32 size, u32 val);
void hostile_write_cr3(u64 v);
void hostile_ap_tlb(void);
void hostile_ap_fault(void);
void hostile_ap_nmi(void);
void hostile_ap_remap(void);
extern u8 hostile_escape_rm[], hostile_escape_rm_end[];

static u64 g_svsm_base, g_svsm_size;
static u8 g_vmpl;

static const CHAR16 *dm_name(unsigned dm)
{
	static const CHAR16 *n[8] = {L"fixed", L"lowest", L"SMI",  L"rsvd",
				     L"NMI",   L"INIT",	  L"SIPI", L"ExtINT"};
	return n[dm & 7];
}

/*
 * The refusal the SNP machine must print for the attempt that follows:
 * tests/snpm/hostile.sh requires a machine line "snpm: refused: <text>..."
 * after this one and before the check's TAP line.
 */
static void expect_refusal(const CHAR16 *fmt, ...)
{
	CHAR16 buf[200];
	va_list ap;

	va_start(ap, fmt);
	UnicodeVSPrint(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	Print(L"# machine-refusal: %s\n", buf);
}

/* ------------------------------------------------------------------------ */
/* Local APIC and IOAPIC                                                     */

static volatile u32 *lapic(unsigned reg)
{
	return (volatile u32 *)(UINTN)(LAPIC_BASE + reg);
}

#define LAPIC_ICR_HI 0x310
#define VEC_TEST     0x57 /* a vector nothing uses; every control entry is masked */

/*
 * Writing an LVT entry with a delivery mode that would reach another CPU
 * (SMI, INIT) must be refused; the same entry masked with fixed delivery
 * (the control) must read back as written.
 */
static void check_lapic(void)
{
	static const unsigned regs[] = {LAPIC_LVT_LINT0, LAPIC_LVT_LINT1, LAPIC_LVT_PERF};
	static const unsigned modes[] = {DM_SMI,
					 DM_INIT}; /* ExtINT on LINT0 is the PIC (allowed) */

	for (UINTN r = 0; r < ARRAY_SIZE(regs); r++) {
		for (UINTN m = 0; m < ARRAY_SIZE(modes); m++) {
			u32 before = *lapic(regs[r]);
			/* Unmasked, the mode's bits set, vector 0x57. */
			u32 bad = (before & ~0x10700u) | (modes[m] << DM_SHIFT) | VEC_TEST;

			expect_refusal(L"lapic: register 0x%x := 0x%x", regs[r], bad);
			*lapic(regs[r]) = bad;
			u32 after = *lapic(regs[r]);
			tap(((after >> DM_SHIFT) & 7) != modes[m] || (after & 0x10000),
			    L"machine: refused: local APIC LVT 0x%x := %s unmasked (read back "
			    L"0x%x, "
			    L"was 0x%x)",
			    regs[r], dm_name(modes[m]), after, before);
			*lapic(regs[r]) = before;
		}
		u64 flags = probe_irq_save();
		u32 before = *lapic(regs[r]);
		u32 good = (before & ~0x107FFu) | 0x10000u | VEC_TEST; /* masked, fixed */
		*lapic(regs[r]) = good;
		u32 after = *lapic(regs[r]);
		*lapic(regs[r]) = before;
		probe_irq_restore(flags);
		tap((after & 0x107FFu) == (good & 0x107FFu),
		    L"machine: control: local APIC LVT 0x%x := 0x%x (masked, fixed) is performed "
		    L"(read back 0x%x, was 0x%x)",
		    regs[r], good, after, before);
	}
	/* An SMI or NMI IPI to every other CPU: csvsm's own vCPUs. */
	static const unsigned ipis[] = {DM_SMI, DM_NMI};
	for (UINTN m = 0; m < ARRAY_SIZE(ipis); m++) {
		u32 before = *lapic(LAPIC_ICR_LO);
		u32 bad = 0x000C4000u | (ipis[m] << DM_SHIFT) | VEC_TEST; /* all excluding self */
		expect_refusal(L"lapic: register 0x%x := 0x%x", LAPIC_ICR_LO, bad);
		*lapic(LAPIC_ICR_LO) = bad;
		uefi_call_wrapper(g_st->BootServices->Stall, 1, 10000);
		u32 after = *lapic(LAPIC_ICR_LO) & ~(1u << 12); /* delivery status */
		tap(after != (bad & ~(1u << 12)),
		    L"machine: refused: local APIC ICR %s IPI to all other CPUs (ICR 0x%x, was "
		    L"0x%x)",
		    dm_name(ipis[m]), after, before);
	}
	/*
	 * The control: a fixed IPI to physical APIC ID 0xF0, which no CPU has
	 * (nothing is delivered), is sent: the ICR reads back as written.
	 */
	u32 hi = *lapic(LAPIC_ICR_HI), good = 0x00004000u | VEC_TEST;
	*lapic(LAPIC_ICR_HI) = 0xF0u << 24;
	*lapic(LAPIC_ICR_LO) = good;
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 10000);
	u32 after = *lapic(LAPIC_ICR_LO) & ~(1u << 12);
	*lapic(LAPIC_ICR_HI) = hi;
	tap(after == good,
	    L"machine: control: local APIC ICR fixed IPI to APIC ID 0xF0 (no CPU) is sent (ICR "
	    L"0x%x, want 0x%x)",
	    after, good);
}

static u32 ioapic_read(unsigned idx)
{
	*(volatile u32 *)(UINTN)IOAPIC_BASE = idx;
	return *(volatile u32 *)(UINTN)(IOAPIC_BASE + 0x10);
}

static void ioapic_write(unsigned idx, u32 v)
{
	*(volatile u32 *)(UINTN)IOAPIC_BASE = idx;
	*(volatile u32 *)(UINTN)(IOAPIC_BASE + 0x10) = v;
}

/*
 * Redirection entries of pins 0 and 2 (the PIT's on q35) with INIT, SMI,
 * NMI, ExtINT must be refused; masked with fixed delivery (the control)
 * they must read back as written.
 */
static void check_ioapic(void)
{
	static const unsigned pins[] = {0, 2};
	static const unsigned modes[] = {DM_INIT, DM_SMI, DM_NMI, DM_EXTINT};
	u64 flags = probe_irq_save();

	for (UINTN p = 0; p < ARRAY_SIZE(pins); p++) {
		unsigned lo = 0x10 + 2 * pins[p], hi = lo + 1;
		u32 save_lo = ioapic_read(lo), save_hi = ioapic_read(hi);

		for (UINTN m = 0; m < ARRAY_SIZE(modes); m++) {
			/* Masked while it is wrong, so a refused-but-half-done write cannot fire.
			 */
			u32 bad = 0x10000u | (modes[m] << DM_SHIFT);
			ioapic_write(hi, 0); /* destination APIC ID 0: the boot CPU */
			expect_refusal(L"ioapic: register 0x%x := 0x%x", lo, bad);
			ioapic_write(lo, bad);
			u32 after = ioapic_read(lo);
			tap(((after >> DM_SHIFT) & 7) != modes[m],
			    L"machine: refused: IOAPIC pin %d redirection := %s to APIC 0 (read "
			    L"back "
			    L"0x%x)",
			    pins[p], dm_name(modes[m]), after);
			ioapic_write(lo, save_lo);
			ioapic_write(hi, save_hi);
		}
		u32 good = 0x10000u | VEC_TEST; /* masked, fixed */
		ioapic_write(lo, good);
		u32 after = ioapic_read(lo);
		ioapic_write(lo, save_lo);
		tap((after & 0x1FFFFu & ~0x5000u) == good,
		    L"machine: control: IOAPIC pin %d redirection := 0x%x (masked, fixed) is "
		    L"performed (read back 0x%x, was 0x%x)",
		    pins[p], good, after, save_lo);
	}
	probe_irq_restore(flags);
}

/* ------------------------------------------------------------------------ */
/* CMOS, fw_cfg                                                              */

static u8 cmos_read(u8 idx)
{
	hostile_out(0x70, 1, idx);
	return (u8)hostile_in(0x71, 1);
}

static void cmos_write(u8 idx, u8 v)
{
	hostile_out(0x70, 1, idx);
	hostile_out(0x71, 1, v);
}

/*
 * The shutdown status byte (0x0F) selects the BIOS resume path: a write
 * must be refused. The seconds alarm (0x01; the alarm interrupt is off) is
 * an RTC register the guest may write: the control.
 */
static void check_cmos(void)
{
	u8 before = cmos_read(0x0F), want = before == 0x0A ? 0x05 : 0x0A;

	expect_refusal(L"cmos: register 0xf := 0x%x", want);
	cmos_write(0x0F, want);
	u8 after = cmos_read(0x0F);
	tap(after == before,
	    L"machine: refused: CMOS shutdown status byte (0x0F) := 0x%x (read back 0x%x, was "
	    L"0x%x)",
	    want, after, before);
	if (after != before)
		cmos_write(0x0F, before);

	u8 alarm = cmos_read(0x01), good = alarm == 0x12 ? 0x34 : 0x12;
	cmos_write(0x01, good);
	u8 got = cmos_read(0x01);
	cmos_write(0x01, alarm);
	tap(got == good,
	    L"machine: control: CMOS seconds alarm (0x01) := 0x%x is performed (read back 0x%x, "
	    L"was 0x%x)",
	    good, got, alarm);
}

static void fw_cfg_read(u16 key, u8 *buf, UINTN n)
{
	hostile_out(FW_CFG_SEL, 2, key);
	for (UINTN i = 0; i < n; i++)
		buf[i] = (u8)hostile_in(FW_CFG_DATA, 1);
}

static u32 be32(const u8 *p)
{
	return (u32)p[0] << 24 | (u32)p[1] << 16 | (u32)p[2] << 8 | p[3];
}

/*
 * QEMU's fw_cfg ignores selector bit 14 (write channel) and takes bit 15 as
 * the architecture table: whatever the guest is shown for a key, the same
 * key with those bits must show the same, and nothing anywhere may carry
 * the simulated PSP's key blob ("CSVSMPSK"). The machine's own files
 * (opt/csvsm/igvm, opt/csvsm/psp-keys) are among the keys 0..0xFF tried:
 * it must say it refused them. The control: the whole 16-bit selector is
 * honoured (the signature item reads "QEMU", 0x8000 reads empty where its
 * low byte alone would select the signature, the directory lists files),
 * so a device that ignored selector writes or their high byte, and read
 * the same for every key with bits 14/15 set, fails it.
 */
static void check_fw_cfg(void)
{
	static u8 dir[4 + 64 * 64], dir2[4 + 64 * 64];
	u8 a[16], b[16];
	u32 mismatch = 0, first_bad = 0, keys_seen = 0;

	fw_cfg_read(0x0019, dir, sizeof(dir));
	fw_cfg_read(0x0000, a, 4);
	fw_cfg_read(0x8000, b, 4); /* ACPI tables, an architecture item the machine does not pass */
	u32 n = be32(dir);
	static const u8 zero[4];
	tap(CompareMem(a, "QEMU", 4) == 0 && CompareMem(b, zero, 4) == 0 && n > 0 && n <= 64,
	    L"machine: control: fw_cfg selector 0x0000 reads the signature (%02x%02x%02x%02x, want "
	    L"\"QEMU\"), 0x8000 reads empty (%02x%02x%02x%02x), 0x0019 a directory of %d files",
	    a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3], n);
	fw_cfg_read(0x4019, dir2, sizeof(dir2));
	BOOLEAN hidden = FALSE;
	for (u32 i = 0; i < n && i < 64; i++)
		if (CompareMem(dir + 4 + 64 * i + 8, "opt/csvsm/", 10) == 0)
			hidden = TRUE;
	tap(CompareMem(dir, dir2, sizeof(dir)) == 0 && !hidden,
	    L"machine: fw_cfg directory through selector 0x4019 == through 0x0019 (%d files, none "
	    L"under opt/csvsm/)",
	    n);

	expect_refusal(L"fw_cfg: hidden item opt/csvsm/igvm");
	expect_refusal(L"fw_cfg: hidden item opt/csvsm/psp-keys");

	for (u32 k = 0; k < 0x100; k++) {
		fw_cfg_read((u16)k, a, sizeof(a));
		static const u16 extra[] = {0x4000, 0xC000};
		for (UINTN e = 0; e < ARRAY_SIZE(extra); e++) {
			u16 key = (u16)(k | extra[e]);
			fw_cfg_read(key, b, sizeof(b));
			/* 0xC000|k selects the architecture table: compare it with 0x8000|k. */
			if (extra[e] == 0xC000)
				fw_cfg_read((u16)(k | 0x8000), a, sizeof(a));
			if (CompareMem(a, b, sizeof(a)) != 0 && !mismatch++)
				first_bad = key;
			if (CompareMem(b, "CSVSMPSK", 8) == 0)
				keys_seen++;
		}
		fw_cfg_read((u16)k, a, sizeof(a));
		if (CompareMem(a, "CSVSMPSK", 8) == 0)
			keys_seen++;
	}
	tap(keys_seen == 0,
	    L"machine: refused: no fw_cfg item of keys 0..0xFF carries the simulated PSP's keys "
	    L"(%d found)",
	    keys_seen);
	tap(mismatch == 0,
	    L"machine: fw_cfg keys 0..0xFF read the same with selector bits 14/15 set (%d differ, "
	    L"first 0x%x)",
	    mismatch, first_bad);
}

/* ------------------------------------------------------------------------ */
/* PCI configuration: CF8/CFC and ECAM                                       */

static u32 cf8_read(u32 bdf, u32 reg)
{
	hostile_out(0xCF8, 4, 0x80000000u | bdf << 8 | (reg & 0xFC));
	return hostile_in(0xCFC, 4);
}

static void cf8_write(u32 bdf, u32 reg, u32 v)
{
	hostile_out(0xCF8, 4, 0x80000000u | bdf << 8 | (reg & 0xFC));
	hostile_out(0xCFC, 4, v);
}

static u64 g_ecam;

static volatile u32 *ecam(u32 bdf, u32 reg)
{
	return (volatile u32 *)(UINTN)(g_ecam + ((u64)bdf << 12) + (reg & 0xFFC));
}

#define BDF_MCH 0x000		 /* 00:00.0 q35 host bridge */
#define BDF_LPC ((31u << 3) | 0) /* 00:1f.0 ICH9 LPC */

static void pci_write(u32 bdf, u32 reg, u32 v, int via_ecam)
{
	if (via_ecam)
		*ecam(bdf, reg) = v;
	else
		cf8_write(bdf, reg, v);
}

static void pci_try(const CHAR16 *what, u32 bdf, u32 reg, u32 bad, int via_ecam)
{
	u32 before = cf8_read(bdf, reg);

	/* The machine's PCIEXBAR is the guest's own copy, refused on its own. */
	expect_refusal(L"%s: 0:%x.%x reg 0x%x := 0x%x", reg == 0x60 ? L"pciexbar" : L"pci",
		       bdf >> 3, bdf & 7, reg, bad);
	pci_write(bdf, reg, bad, via_ecam);
	u32 after = cf8_read(bdf, reg);
	tap(after == before,
	    L"machine: refused: PCI %s (%x:%x reg 0x%x) := 0x%x via %s (0x%x, was 0x%x)", what,
	    bdf >> 3, bdf & 7, reg, bad, via_ecam ? L"ECAM" : L"CF8/CFC", after, before);
	if (after != before)
		cf8_write(bdf, reg, before);
}

/*
 * The control: the command register's INTx-disable bit (10) of the host
 * bridge, which raises no interrupt, is the guest's to change: toggled
 * through `via`, it reads back toggled (status bits written as 0 clear
 * nothing).
 */
static void pci_control(int via_ecam)
{
	u32 before = cf8_read(BDF_MCH, 0x04) & 0xFFFF, good = before ^ 0x400;

	pci_write(BDF_MCH, 0x04, good, via_ecam);
	u32 after = cf8_read(BDF_MCH, 0x04) & 0xFFFF;
	cf8_write(BDF_MCH, 0x04, before);
	tap(after == good,
	    L"machine: control: PCI command of 0:0 := 0x%x (INTx disable toggled) via %s is "
	    L"performed (0x%x, was 0x%x)",
	    good, via_ecam ? L"ECAM" : L"CF8/CFC", after, before);
}

static void check_pci(void)
{
	u32 bar = cf8_read(BDF_MCH, 0x60);

	g_ecam = (u64)(bar & 0xF0000000u) | ((u64)cf8_read(BDF_MCH, 0x64) << 32);
	Print(L"# PCIEXBAR 0x%x: ECAM at 0x%lx\n", bar, g_ecam);
	if (!(bar & 1)) {
		tap(FALSE, L"setup: PCIEXBAR enabled (the q35 firmware turns ECAM on)");
		return;
	}
	for (int via = 0; via < 2; via++) {
		pci_control(via);
		/* Move ECAM over RAM at 256 MiB. */
		pci_try(L"PCIEXBAR", BDF_MCH, 0x60, 0x10000001u, via);
		/* ... and over csvsm's region at the top of low RAM. */
		pci_try(L"PCIEXBAR", BDF_MCH, 0x60, 0x70000001u, via);
		/* PAM0..PAM3 (0x90..0x93): the BIOS area 0xF0000 writable. */
		pci_try(L"PAM0-3", BDF_MCH, 0x90, 0x33333333u ^ cf8_read(BDF_MCH, 0x90), via);
		/* SMRAM (0x9D) open, ESMRAMC (0x9E) off: reg 0x9C's dword. */
		pci_try(L"SMRAM/ESMRAMC", BDF_MCH, 0x9C, cf8_read(BDF_MCH, 0x9C) ^ 0x00ff4000u,
			via);
	}
	/*
	 * Bus mastering on the LPC bridge through ECAM (CF8 is filtered since
	 * issue 3), in a write that also toggles INTx disable: the machine must
	 * clear bit 2 and say so, and perform the rest (the control).
	 */
	u32 cmd = cf8_read(BDF_LPC, 0x04) & 0xFFFF, w = (cmd | 0x4) ^ 0x400;
	expect_refusal(L"bus-master: 0:1f.0 reg 0x4 := 0x%x", w);
	*ecam(BDF_LPC, 0x04) = w;
	u32 after = cf8_read(BDF_LPC, 0x04) & 0xFFFF;
	tap(!(after & 0x4),
	    L"machine: refused: PCI bus-master enable on 00:1f.0 via ECAM (command 0x%x, wrote "
	    L"0x%x)",
	    after, w);
	tap((after & 0x400) == (w & 0x400),
	    L"machine: control: the same write's INTx-disable bit landed (command 0x%x, wrote "
	    L"0x%x)",
	    after, w);
	cf8_write(BDF_LPC, 0x04, cmd);
}

/* ------------------------------------------------------------------------ */
/* Own page tables (identity map) for the escape attempt                    */

#define PT_P  0x1ULL
#define PT_RW 0x2ULL
#define PT_PS 0x80ULL

struct own_pt {
	u64 *pml4, *pdpt, *pd, *pt;
	u64 cr3;
};

/*
 * Identity-map the first 512 GiB with 1 GiB pages, except the 2 MiB region
 * around `page`, which gets 4K entries with `page` mapped `page_flags`.
 */
static BOOLEAN own_pt_build(struct own_pt *t, u64 page, u64 page_flags)
{
	u64 a = alloc_pages(4);

	if (!a)
		return FALSE;
	/* An SEV-SNP guest maps its private memory with the C-bit (CPUID
	 * 0x8000001F EBX[5:0]); the tables themselves are read encrypted too. */
	u64 c = 0;
	if (g_snp) {
		u32 ea, eb, ec, ed;
		__asm__ volatile("cpuid"
				 : "=a"(ea), "=b"(eb), "=c"(ec), "=d"(ed)
				 : "a"(0x8000001Fu), "c"(0));
		c = 1ULL << (eb & 63);
	}
	t->pml4 = (u64 *)(UINTN)a;
	t->pdpt = (u64 *)(UINTN)(a + PAGE_SIZE);
	t->pd = (u64 *)(UINTN)(a + 2 * PAGE_SIZE);
	t->pt = (u64 *)(UINTN)(a + 3 * PAGE_SIZE);
	t->pml4[0] = (u64)(UINTN)t->pdpt | c | PT_P | PT_RW;
	for (u64 i = 0; i < 512; i++)
		t->pdpt[i] = (i << 30) | c | PT_P | PT_RW | PT_PS;
	u64 gb = page >> 30, mb2 = (page >> 21) & 511;
	t->pdpt[gb] = (u64)(UINTN)t->pd | c | PT_P | PT_RW;
	for (u64 i = 0; i < 512; i++)
		t->pd[i] = (gb << 30) | (i << 21) | c | PT_P | PT_RW | PT_PS;
	t->pd[mb2] = (u64)(UINTN)t->pt | c | PT_P | PT_RW;
	for (u64 i = 0; i < 512; i++)
		t->pt[i] = (page & ~0x1FFFFFULL) | (i << 12) | c | PT_P | PT_RW;
	t->pt[(page >> 12) & 511] = (page & ~0xFFFULL) | c | page_flags;
	t->cr3 = a | c;
	return TRUE;
}

/* ------------------------------------------------------------------------ */
/* vCPUs                                                                     */

static void vmsa_seg(u8 *vmsa, unsigned off, u16 sel, u16 attrib, u32 limit, u64 base)
{
	*(u16 *)(vmsa + off) = sel;
	*(u16 *)(vmsa + off + 2) = attrib;
	*(u32 *)(vmsa + off + 4) = limit;
	*(u64 *)(vmsa + off + 8) = base;
}

/* A 64-bit VMSA like the probe's (check_vcpu_run) starting at `rip` with RDI = `rdi`. */
static void vmsa_build(u8 *m, u64 rip, u64 rsp, u64 rdi)
{
	struct {
		u16 limit;
		u64 base;
	} __attribute__((packed)) gdt;

	ZeroMem(m, PAGE_SIZE);
	probe_sgdt(&gdt);
	u16 cs = (u16)probe_read_cs(), ds = (u16)probe_read_ds();
	for (unsigned off = 0x00; off <= 0x50; off += 0x10)
		vmsa_seg(m, off, ds, 0xC93, 0xFFFFFFFF, 0);
	vmsa_seg(m, 0x10, cs, 0xA9B, 0xFFFFFFFF, 0);
	vmsa_seg(m, 0x60, 0, 0, gdt.limit, gdt.base);
	vmsa_seg(m, 0x70, 0, 0x82, 0xFFFF, 0);
	vmsa_seg(m, 0x90, 0, 0x8B, 0xFFFF, 0);
	m[0xCA] = g_vmpl;
	*(u64 *)(m + 0xD0) = probe_rdmsr(0xC0000080) | (1ULL << 12);
	*(u64 *)(m + 0x148) = probe_read_cr4();
	*(u64 *)(m + 0x150) = probe_read_cr3();
	*(u64 *)(m + 0x158) = probe_read_cr0();
	*(u64 *)(m + 0x160) = 0x400;
	*(u64 *)(m + 0x168) = 0xFFFF0FF0;
	*(u64 *)(m + 0x170) = 0x2;
	*(u64 *)(m + 0x178) = rip;
	*(u64 *)(m + 0x1D8) = rsp;
	*(u64 *)(m + 0x268) = 0x0007040600070406ULL;
	*(u64 *)(m + 0x338) = rdi;
	*(u64 *)(m + 0x3B0) = g_sev_status >> 2; /* SEV_FEATURES: the caller's (0 when not SNP) */
}

static u64 ap_event(unsigned event, u64 vmsa, u32 apic_id)
{
	return probe_ghcb_exit(0x80000013ULL, event | ((u64)g_vmpl << 16) | ((u64)apic_id << 32),
			       vmsa, g_sev_status >> 2);
}

static u64 pvalidate1(u64 gpa, int validate)
{
	u64 list = g_caa + CA_BUFFER;
	u8 *l = (u8 *)(UINTN)list;

	ZeroMem(l, 16);
	*(u16 *)l = 1;
	*(u64 *)(l + 8) = gpa | (validate ? 4 : 0);
	return call3(PROTO_CORE, CORE_PVALIDATE, list, 0, 0, NULL);
}

struct tlb_shared {
	u64 target;
	volatile u64 progress;
	volatile u64 faulted;
	u16 idt_limit;
	u64 idt_base;
} __attribute__((packed));

struct gate {
	u16 off_lo, sel;
	u8 ist, type;
	u16 off_mid;
	u32 off_hi, rsvd;
} __attribute__((packed));

static void gate_set(struct gate *g, u64 a, u16 cs)
{
	g->off_lo = (u16)a;
	g->sel = cs;
	g->ist = 0;
	g->type = 0x8E;
	g->off_mid = (u16)(a >> 16);
	g->off_hi = (u32)(a >> 32);
	g->rsvd = 0;
}

/*
 * Another vCPU writes a page in a tight loop (no exits); the boot vCPU
 * rescinds that page through the SVSM. Once PVALIDATE returns, no vCPU may
 * still reach the page: the writer must fault at its next write.
 */
static void check_tlb(void)
{
	static struct tlb_shared sh __attribute__((aligned(64)));
	/* Up to #VC (29): the writer's next write to the rescinded page is a
	 * private access to a page not validated, which the hardware raises as
	 * #VC 0x404 (APM vol. 2 §15.36.10), not an #NPF or #GP. */
	static struct gate idt[32] __attribute__((aligned(16)));
	u64 vmsa = alloc_pages(1), ca = alloc_pages(1), stack = alloc_pages(4),
	    target = alloc_pages(1);
	const u32 apic_id = 1;

	if (!vmsa || !ca || !stack || !target) {
		tap(FALSE, L"csvsm: TLB check: no memory");
		return;
	}
	u16 cs = (u16)probe_read_cs();
	for (int i = 0; i < 32; i++)
		gate_set(&idt[i], (u64)(UINTN)(i == 2 ? hostile_ap_nmi : hostile_ap_fault), cs);
	sh = (struct tlb_shared){
	    .target = target, .idt_limit = sizeof(idt) - 1, .idt_base = (u64)(UINTN)idt};
	vmsa_build((u8 *)(UINTN)vmsa, (u64)(UINTN)hostile_ap_tlb, stack + 4 * PAGE_SIZE - 64,
		   (u64)(UINTN)&sh);
	u64 rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, ca, apic_id, NULL);
	u64 ev = rc == SVSM_SUCCESS ? ap_event(1, vmsa, apic_id) : ~0ULL;
	for (int i = 0; i < 200 && sh.progress < 1000; i++)
		uefi_call_wrapper(g_st->BootServices->Stall, 1, 5000);
	if (rc != SVSM_SUCCESS || ev != 0 || sh.progress < 1000) {
		tap(FALSE,
		    L"csvsm: TLB check: writer vCPU did not start (CREATE_VCPU %s, AP creation "
		    L"0x%lx, "
		    L"progress %ld)",
		    rc_name(rc), ev, sh.progress);
		return;
	}
	rc = pvalidate1(target, 0);
	u64 at_return = sh.progress;
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 50000);
	u64 later = sh.progress;
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 50000);
	u64 last = sh.progress;
	tap(rc == SVSM_SUCCESS && sh.faulted && later == last,
	    L"csvsm: a vCPU writing a page csvsm rescinded faults at once (PVALIDATE %s; writer "
	    L"faulted "
	    L"%d, "
	    L"progress %ld at return, %ld, %ld after 50/100 ms)",
	    rc_name(rc), (int)sh.faulted, at_return, later, last);
	u64 d = ap_event(2, vmsa, apic_id);
	rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa, 0, 0, NULL);
	Print(L"# cleanup: DESTROY 0x%lx, DELETE_VCPU %s, re-validate %s\n", d, rc_name(rc),
	      rc_name(pvalidate1(target, 1)));
}

struct remap_shared {
	u64 ca, newca;
	volatile u64 rax;
	volatile u32 done;
};

/* A vCPU moves its calling area with REMAP_CA and halts; DESTROY must still stop it. */
static void check_destroy_after_remap(void)
{
	static struct remap_shared sh __attribute__((aligned(64)));
	u64 vmsa = alloc_pages(1), ca = alloc_pages(1), newca = alloc_pages(1),
	    stack = alloc_pages(4);
	const u32 apic_id = 2;

	if (!vmsa || !ca || !newca || !stack) {
		tap(FALSE, L"csvsm: REMAP_CA/DESTROY check: no memory");
		return;
	}
	sh = (struct remap_shared){.ca = ca, .newca = newca};
	vmsa_build((u8 *)(UINTN)vmsa, (u64)(UINTN)hostile_ap_remap, stack + 4 * PAGE_SIZE - 64,
		   (u64)(UINTN)&sh);
	u64 rc = call3(PROTO_CORE, CORE_CREATE_VCPU, vmsa, ca, apic_id, NULL);
	u64 ev = rc == SVSM_SUCCESS ? ap_event(1, vmsa, apic_id) : ~0ULL;
	for (int i = 0; i < 200 && !sh.done; i++)
		uefi_call_wrapper(g_st->BootServices->Stall, 1, 5000);
	tap(rc == SVSM_SUCCESS && ev == 0 && sh.done && sh.rax == SVSM_SUCCESS,
	    L"csvsm: a created vCPU moved its calling area (CREATE_VCPU %s, AP creation 0x%lx, "
	    L"REMAP_CA "
	    L"%s)",
	    rc_name(rc), ev, rc_name(sh.rax));
	u64 d = ap_event(2, vmsa, apic_id);
	/*
	 * csvsm answers FAIL_INUSE while one of its vCPUs still serves the
	 * destroyed one (src/vcpu.c vcpu_delete; reference §10.8): that vCPU
	 * leaves it once it sees the DESTROY, so a caller retries, here for
	 * at most 100 ms.
	 */
	unsigned inuse = 0;
	while ((rc = call3(PROTO_CORE, CORE_DELETE_VCPU, vmsa, 0, 0, NULL)) ==
		   SVSM_ERR_FAIL_INUSE &&
	       inuse < 100) {
		inuse++;
		uefi_call_wrapper(g_st->BootServices->Stall, 1, 1000);
	}
	tap(d == 0 && rc == SVSM_SUCCESS,
	    L"csvsm: AP creation DESTROY finds it after REMAP_CA (0x%lx), DELETE_VCPU -> %s "
	    L"(0x%lx; after %d FAIL_INUSE answers)",
	    d, rc_name(rc), rc, inuse);
}

/* ------------------------------------------------------------------------ */
/* The escape of issue 8 item 1, end to end                                  */

/*
 * IOAPIC pin 2 (the PIT) as INIT to APIC 0, CMOS shutdown byte 0x0A, and
 * the far pointer at 40:67 aimed at code that announces itself. If csvsm
 * lets any of it through, QEMU's BIOS resume path runs that code outside
 * the VM and the run ends with "HOSTILE-ESCAPED" (tests/qemu/hostile.sh).
 */
static void attempt_escape(void)
{
	EFI_PHYSICAL_ADDRESS low = 0x9FFFF;
	struct own_pt t;
	UINTN len = (UINTN)(hostile_escape_rm_end - hostile_escape_rm);

	if (EFI_ERROR(uefi_call_wrapper(g_st->BootServices->AllocatePages, 4, AllocateMaxAddress,
					EfiLoaderData, 1, &low)) ||
	    !own_pt_build(&t, 0x1000, PT_P | PT_RW)) {
		tap(FALSE, L"setup: escape attempt: no memory below 1 MiB");
		return;
	}
	CopyMem((void *)(UINTN)low, hostile_escape_rm, len);
	u64 flags = probe_irq_save(), cr3 = probe_read_cr3();
	hostile_write_cr3(t.cr3); /* page 0 may be unmapped by the firmware (NULL detection) */
	volatile u16 *ptr = (volatile u16 *)(UINTN)0x467;
	__asm__("" : "+r"(ptr)); /* a real address, not a null-page constant to GCC */
	ptr[0] = 0;
	ptr[1] = (u16)(low >> 4);
	hostile_write_cr3(cr3);
	expect_refusal(L"cmos: register 0xf := 0xa");
	cmos_write(0x0F, 0x0A);
	ioapic_write(0x15, 0); /* pin 2: destination APIC 0 */
	expect_refusal(L"ioapic: register 0x14 := 0x500");
	ioapic_write(0x14, 0x0500); /* INIT, unmasked */
	/* PIT channel 0, mode 2, ~1 kHz: its IRQ 0 reaches IOAPIC pin 2. */
	hostile_out(0x43, 1, 0x34);
	hostile_out(0x40, 1, 0xA9);
	hostile_out(0x40, 1, 0x04);
	probe_irq_restore(flags);
	uefi_call_wrapper(g_st->BootServices->Stall, 1, 100000);
	struct probe_regs r;
	u64 rc = call3(PROTO_CORE, CORE_QUERY_PROTOCOL, ((u64)PROTO_CORE << 32) | 1, 0, 0, &r);
	tap(rc == SVSM_SUCCESS && r.rcx == ((1ULL << 32) | 1),
	    L"machine: refused: IOAPIC INIT + CMOS resume escape attempted for 100 ms; still "
	    L"inside "
	    L"the VM and csvsm answers (%s)",
	    rc_name(rc));
	ioapic_write(0x14, 0x10000); /* masked */
	cmos_write(0x0F, 0);
}

/* ------------------------------------------------------------------------ */

static BOOLEAN discover(void)
{
	struct flash_info fi;
	CHAR16 why[160];

	if (probe_flash_parse(&fi, why, sizeof(why))) {
		tap(FALSE, L"setup: OVMF footer table / SEV metadata: %s", why);
		return FALSE;
	}
	const u8 *sp = (const u8 *)(UINTN)fi.secrets_gpa;
	CopyMem(&g_svsm_base, (void *)(sp + SECRETS_SVSM_BASE), 8);
	CopyMem(&g_svsm_size, (void *)(sp + SECRETS_SVSM_SIZE), 8);
	CopyMem(&g_caa, (void *)(sp + SECRETS_SVSM_CAA), 8);
	g_vmpl = sp[SECRETS_SVSM_GUEST_VMPL];
	Print(L"# svsm_base 0x%lx svsm_size 0x%lx caa 0x%lx guest_vmpl %d\n", g_svsm_base,
	      g_svsm_size, g_caa, g_vmpl);
	if (!g_svsm_size || !g_caa || g_vmpl < 1 || g_vmpl > 3) {
		tap(FALSE, L"setup: SVSM present (secrets page SVSM fields)");
		return FALSE;
	}
	/* As an SEV-SNP guest (trixie OVMF) the firmware's GHCB, which is
	 * shared; a page of its own would be private (probe_call.c). */
	probe_snp_detect();
	if (g_snp)
		Print(L"# SEV-SNP guest: SEV_STATUS 0x%lx, the firmware's GHCB at 0x%lx\n",
		      g_sev_status, probe_ghcb_current());
	u64 ghcb = g_snp ? probe_ghcb_current() : alloc_pages(1), resp;
	if (!ghcb || probe_ghcb_register(ghcb, &resp)) {
		tap(FALSE, L"setup: GHCB registration (0x%lx)", resp);
		return FALSE;
	}
	return TRUE;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *st)
{
	InitializeLib(image, st);
	g_st = st;
	Print(L"\n# csvsm hostile guest: isolation attacks (TAP)\n");
	EFI_STATUS s = fault_handlers_install();
	tap(!EFI_ERROR(s), L"setup: #UD/#GP/#PF handlers registered (%r)", s);
	if (EFI_ERROR(s) || !discover())
		finish();
	Print(L"# --- device view: interrupt delivery, CMOS, fw_cfg, PCI ---\n");
	check_lapic();
	check_ioapic();
	check_cmos();
	check_fw_cfg();
	check_pci();
	/* No string-I/O checks: see the comment at the top of this file. */
	Print(L"# --- memory: stale TLB ---\n");
	check_tlb();
	Print(L"# --- vCPUs ---\n");
	check_destroy_after_remap();
	Print(L"# --- the escape ---\n");
	attempt_escape();
	finish();
	return EFI_SUCCESS;
}
