/*
 * Unit tests of the guest's device view (tests/snpm/model/devpolicy.c): every
 * way issue 8's review found to reach csvsm's CPUs or hidden data through a
 * device is refused (IOAPIC / LAPIC INIT, SMI, NMI delivery; the CMOS
 * shutdown byte; i8042 reset; fw_cfg selector bits QEMU ignores; PCIEXBAR,
 * PAM, SMRAM and bus mastering through any configuration path), while what
 * OVMF and Linux need still passes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/snpm/model/devpolicy.h"

#define MCH 0x000
#define LPC ((31u << 3) | 0)

static void test_ports(void **state)
{
	assert_int_equal(devpolicy_port(0x3F8), DP_UART);
	assert_int_equal(devpolicy_port(0x510), DP_FWCFG_SEL);
	assert_int_equal(devpolicy_port(0x511), DP_FWCFG_DATA);
	assert_int_equal(devpolicy_port(0xCF8), DP_PCI_ADDR);
	assert_int_equal(devpolicy_port(0xCFE), DP_PCI_DATA);
	assert_int_equal(devpolicy_port(0xCF9), DP_RESET);
	assert_int_equal(devpolicy_port(0x604), DP_PM1A_CNT);
	assert_int_equal(devpolicy_port(0x70), DP_CMOS_INDEX);
	assert_int_equal(devpolicy_port(0x71), DP_CMOS_DATA);
	assert_int_equal(devpolicy_port(0x64), DP_KBC_CMD);
	assert_int_equal(devpolicy_port(0x40), DP_PASS);
	assert_int_equal(devpolicy_port(0x608), DP_PASS); /* PM timer */
	assert_int_equal(devpolicy_port(0x2F8), DP_PASS); /* COM2, the harness's channel */
	assert_int_equal(devpolicy_port(0x2FF), DP_PASS);
	assert_int_equal(devpolicy_port(0x2E8), DP_SVSM_CHAN); /* csvsm's vTPM channel */
	assert_int_equal(devpolicy_port(0x2EF), DP_SVSM_CHAN);
	assert_int_equal(devpolicy_port(0x2E7), DP_DENY);
	assert_int_equal(devpolicy_port(0x2F0), DP_DENY);
	/* SMI and reset sources, DMA, debug ports: denied. */
	static const uint16_t deny[] = {0xB2,  0xB3,  0x92, 0x630,  0x634,  0x660, 0x668, 0x514,
					0x518, 0x402, 0xF4, 0x80,   0x5658, 0x72,  0x73,  0xCFA,
					0xCFB, 0x1F0, 0x0,  0xFFFF, 0x2F7,  0x300, 0x2E7};
	for (unsigned i = 0; i < sizeof(deny) / sizeof(deny[0]); i++)
		assert_int_equal(devpolicy_port(deny[i]), DP_DENY);
}

static void test_cmos_kbc(void **state)
{
	assert_true(devpolicy_cmos_write(0x00));
	assert_true(devpolicy_cmos_write(0x0B));
	assert_true(devpolicy_cmos_write(0x8B));  /* NMI-mask bit is not the register */
	assert_false(devpolicy_cmos_write(0x0F)); /* shutdown status: BIOS resume path */
	assert_false(devpolicy_cmos_write(0x8F));
	assert_false(devpolicy_cmos_write(0x0E));
	assert_false(devpolicy_cmos_write(0x34));
	assert_true(devpolicy_kbc_command(0xAA));
	assert_false(devpolicy_kbc_command(0xFE)); /* pulse reset */
	assert_false(devpolicy_kbc_command(0xF0));
	assert_false(devpolicy_kbc_command(0xD1)); /* write output port: bit 0 resets */
}

static void test_fw_cfg(void **state)
{
	/* QEMU selects key & 0x3fff in the table of bit 15. */
	assert_int_equal(devpolicy_fw_cfg_key(0x4019), 0x0019);
	assert_int_equal(devpolicy_fw_cfg_key(0x0019), 0x0019);
	assert_int_equal(devpolicy_fw_cfg_key(0xC003), 0x8003);
	assert_int_equal(devpolicy_fw_cfg_key(0x7FFF), 0x3FFF);
	assert_true(devpolicy_fw_cfg_plain(0x0000));
	assert_false(devpolicy_fw_cfg_plain(0x0003)); /* RAM size: csvsm's memory included */
	assert_false(devpolicy_fw_cfg_plain(0x8003)); /* legacy e820 */
	assert_false(devpolicy_fw_cfg_plain(0x0020)); /* files go through the directory */
}

static void test_mmio(void **state)
{
	assert_int_equal(devpolicy_mmio(0xFEE00300, 0), DPM_LAPIC);
	assert_int_equal(devpolicy_mmio(0xFEC00010, 0), DPM_IOAPIC);
	assert_int_equal(devpolicy_mmio(0xB0000000, 0xB0000000), DPM_ECAM);
	assert_int_equal(devpolicy_mmio(0xBFFFFFFC, 0xB0000000), DPM_ECAM);
	assert_int_equal(devpolicy_mmio(0xC0000000, 0xB0000000), DPM_DENY);
	assert_int_equal(devpolicy_mmio(0xB0000000, 0), DPM_DENY);
	assert_int_equal(devpolicy_mmio(0xFED00000, 0xB0000000), DPM_DENY); /* HPET */
	assert_int_equal(devpolicy_mmio(0xFED1C000, 0xB0000000), DPM_DENY); /* RCBA */
}

static void test_lapic(void **state)
{
	assert_true(devpolicy_lapic_write(0x0B0, 0));	     /* EOI */
	assert_true(devpolicy_lapic_write(0x300, 0x40F1));   /* fixed IPI */
	assert_true(devpolicy_lapic_write(0x300, 0x0100));   /* lowest priority */
	assert_false(devpolicy_lapic_write(0x300, 0xC4500)); /* INIT */
	assert_false(devpolicy_lapic_write(0x300, 0xC4610)); /* start-up */
	assert_false(devpolicy_lapic_write(0x300, 0xC4200)); /* SMI */
	assert_false(devpolicy_lapic_write(0x300, 0xC4400)); /* NMI */
	assert_true(devpolicy_lapic_write(0x350, 0x700));    /* LINT0 ExtINT (OVMF, Linux) */
	assert_false(devpolicy_lapic_write(0x350, 0x200));   /* LINT0 SMI: PIC INTR as SMI */
	assert_false(devpolicy_lapic_write(0x350, 0x500));
	assert_false(devpolicy_lapic_write(0x350, 0x10500)); /* masked does not matter */
	assert_true(devpolicy_lapic_write(0x360, 0x400));    /* LINT1 NMI (Linux) */
	assert_false(devpolicy_lapic_write(0x360, 0x200));
	assert_false(devpolicy_lapic_write(0x340, 0x500));
	assert_true(devpolicy_lapic_write(0x320, 0x200EF)); /* timer, periodic */
	assert_false(devpolicy_lapic_write(0x320, 0x200));
	assert_false(devpolicy_lapic_write(0x020, 0x01000000)); /* APIC ID */
	assert_false(devpolicy_lapic_write(0x304, 0));		/* unaligned */
}

static void test_ioapic(void **state)
{
	assert_true(devpolicy_ioapic_write(0x14, 0x0030)); /* pin 2 fixed vector 0x30 */
	assert_true(devpolicy_ioapic_write(0x14, 0x10000));
	assert_true(devpolicy_ioapic_write(0x15, 0x01000000)); /* destination */
	assert_false(devpolicy_ioapic_write(0x14, 0x0500));    /* INIT */
	assert_false(devpolicy_ioapic_write(0x10, 0x0200));    /* SMI */
	assert_false(devpolicy_ioapic_write(0x3E, 0x0400));    /* NMI */
	assert_false(devpolicy_ioapic_write(0x3E, 0x0700));    /* ExtINT */
	assert_false(devpolicy_ioapic_write(0x00, 0));	       /* ID */
	assert_false(devpolicy_ioapic_write(0x40, 0));
}

static void test_pci(void **state)
{
	uint32_t v;
	/* Bus mastering is cleared on any function, any path. */
	v = 0x0007;
	assert_true(devpolicy_pci_write(LPC, 0x04, 2, &v, 0x02000003));
	assert_int_equal(v, 0x0003);
	v = 0x00100007;
	assert_true(devpolicy_pci_write(LPC, 0x04, 4, &v, 0x00100003));
	assert_int_equal(v, 0x00100003);
	v = 0x04;
	assert_true(devpolicy_pci_write(MCH, 0x04, 1, &v, 0));
	assert_int_equal(v, 0);
	/* PAM and SMRAM/ESMRAMC. */
	v = 0x33;
	assert_false(devpolicy_pci_write(MCH, 0x90, 1, &v, 0x11111110));
	v = 0x4A;
	assert_false(devpolicy_pci_write(MCH, 0x9D, 1, &v, 0x00380A00));
	/* LPC: PIRQ routing and ACPI_CNTL pass; PMBASE and RCBA keep their value. */
	v = 0x0B0A0B0A;
	assert_true(devpolicy_pci_write(LPC, 0x60, 4, &v, 0x80808080));
	v = 0x80;
	assert_true(devpolicy_pci_write(LPC, 0x44, 1, &v, 0));
	v = 0x0601;
	assert_true(devpolicy_pci_write(LPC, 0x40, 2, &v, 0x00000601));
	v = 0x0001;
	assert_false(devpolicy_pci_write(LPC, 0x40, 2, &v, 0x00000601));
	v = 0x00000001;
	assert_false(devpolicy_pci_write(LPC, 0xF0, 4, &v, 0xFED1C001));
	/* BARs of any other function stay. */
	v = 0xFFFFFFFF;
	assert_false(devpolicy_pci_write(0x08, 0x10, 4, &v, 0));
	/* Malformed accesses. */
	v = 0;
	assert_false(devpolicy_pci_write(LPC, 0x05, 2, &v, 0));
	assert_false(devpolicy_pci_write(LPC, 0x04, 3, &v, 0));
	assert_false(devpolicy_pci_write(LPC, 0xFFE, 4, &v, 0));
}

/* PCIEXBAR: where the guest may put its ECAM window. */
static void test_pciexbar(void **state)
{
	/* q35 -m 4G: RAM below 2G (csvsm's region inside it) and above 4G */
	const struct dp_range ram[] = {{0x100000000ULL, 0x180000000ULL}, {0, 0x80000000ULL}};
	gpa_t base = 0;

	assert_int_equal(devpolicy_pciexbar(0xE0000001ULL, ram, 2, &base), DPX_OK);
	assert_int_equal(base, 0xE0000000ULL);
	assert_int_equal(devpolicy_pciexbar(0xB0000001ULL, ram, 2, &base), DPX_OK);
	assert_int_equal(base, 0xB0000000ULL);
	assert_int_equal(devpolicy_pciexbar(0x80000001ULL, ram, 2, &base), DPX_OK);
	/* disabled: the guest has no window, whatever the rest says */
	assert_int_equal(devpolicy_pciexbar(0, ram, 2, &base), DPX_DISABLED);
	assert_int_equal(devpolicy_pciexbar(0xE0000000ULL, ram, 2, &base), DPX_DISABLED);
	/* over RAM (csvsm's region is RAM), over the APICs and flash, above 4G */
	base = 0;
	assert_int_equal(devpolicy_pciexbar(0x70000001ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0x00000001ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0xF0000001ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0x200000001ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0x1F0000001ULL, ram, 2, &base), DPX_REFUSED);
	/* 128/64 MiB lengths and reserved bits */
	assert_int_equal(devpolicy_pciexbar(0xE0000003ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0xE0000005ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0xE8000001ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0xE0000101ULL, ram, 2, &base), DPX_REFUSED);
	assert_int_equal(base, 0);
	/* with 3 GiB below 4G no 256 MiB window fits under 0xF0000000 but one */
	const struct dp_range big[] = {{0, 0xC0000000ULL}};
	assert_int_equal(devpolicy_pciexbar(0xB0000001ULL, big, 1, &base), DPX_REFUSED);
	assert_int_equal(devpolicy_pciexbar(0xC0000001ULL, big, 1, &base), DPX_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pciexbar), cmocka_unit_test(test_ports),
	    cmocka_unit_test(test_cmos_kbc), cmocka_unit_test(test_fw_cfg),
	    cmocka_unit_test(test_mmio),     cmocka_unit_test(test_lapic),
	    cmocka_unit_test(test_ioapic),   cmocka_unit_test(test_pci),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
