/*
 * The guest's device view, default deny (devpolicy.h).
 *
 * Register layouts: Intel 82093AA IOAPIC datasheet §3.2 (redirection
 * entries: delivery mode bits 10:8); Intel SDM vol. 3 §10.5-10.6 and AMD
 * APM vol. 2 §16.3-16.5 (local APIC LVT and ICR delivery modes: 000 fixed,
 * 001 lowest priority, 010 SMI, 100 NMI, 101 INIT, 110 start-up, 111
 * ExtINT); Intel 3 Series (MCH) and ICH9 datasheets as QEMU 7.2 models
 * them (hw/pci-host/q35.h: PCIEXBAR 0x60, PAM0 0x90..0x96, SMRAM 0x9D,
 * ESMRAMC 0x9E; hw/isa/lpc_ich9.h: PMBASE 0x40, ACPI_CNTL 0x44, GPIOBASE
 * 0x48, PIRQA-D 0x60, PIRQE-H 0x68, RCBA 0xF0; ICH9 PM I/O at PMBASE 0x600:
 * PM1a_EVT 0x00, PM1a_CNT 0x04, PM timer 0x08, GPE0 0x20, SMI_EN 0x30,
 * TCO 0x60); QEMU docs/specs/fw_cfg.rst and hw/nvram/fw_cfg.c (selector
 * masking); the MC146818 RTC register map (0x00..0x0D, 0x0F shutdown
 * status); the i8042 command set (0xD1 write output port, 0xF0..0xFF pulse
 * output lines, 0xFE = reset).
 */
#include "tests/snpm/model/devpolicy.h"

#define DM(val)	   (((val) >> 8) & 7)
#define DM_FIXED   0
#define DM_LOWEST  1
#define DM_NMI	   4
#define DM_EXTINT  7
#define LVT_MASKED (1u << 16)

enum devpolicy_port devpolicy_port(uint16_t port)
{
	if (port >= 0x3F8 && port <= 0x3FF)
		return DP_UART;
	switch (port) {
	case 0x510:
		return DP_FWCFG_SEL;
	case 0x511:
		return DP_FWCFG_DATA;
	case 0xCF8:
		return DP_PCI_ADDR;
	case 0xCF9:
		return DP_RESET;
	case 0x70:
		return DP_CMOS_INDEX;
	case 0x71:
		return DP_CMOS_DATA;
	case 0x64:
		return DP_KBC_CMD;
	case 0x604:
	case 0x605:
		return DP_PM1A_CNT;
	}
	if (port >= 0xCFC && port <= 0xCFF)
		return DP_PCI_DATA;
	/* csvsm's vTPM channel (docs/vtpm.md "Persistence"): a 16550 on a host
	 * socket; only VMPL0 reaches it (hv/io.c), the guest VMPLs read all ones. */
	if (port >= 0x2E8 && port <= 0x2EF)
		return DP_SVSM_CHAN;
	/* Devices that neither master DMA nor signal a CPU beyond ordinary interrupts. */
	if ((port >= 0x20 && port <= 0x21) ||	/* PIC master */
	    (port >= 0xA0 && port <= 0xA1) ||	/* PIC slave */
	    (port >= 0x4D0 && port <= 0x4D1) || /* ELCR */
	    (port >= 0x40 && port <= 0x43) ||	/* PIT */
	    port == 0x61 ||			/* PIT gate / speaker; QEMU raises no NMI */
	    port == 0x60 ||			/* i8042 data (commands are filtered) */
	    (port >= 0x2F8 && port <= 0x2FF) || /* COM2: a 16550, IRQ 3; the harness's channel */
	    (port >= 0x600 && port <= 0x603) || /* ICH9 PM1a_EVT */
	    (port >= 0x608 && port <= 0x60B) || /* ICH9 PM timer */
	    (port >= 0x620 && port <= 0x62F))	/* ICH9 GPE0 (SCI status/enable) */
		return DP_PASS;
	/* Everything else, including SMI_EN/SMI_STS (0x630..), the TCO timer
	 * (0x660..; it raises SMIs and resets), APM 0xB2, port 0x92, the
	 * fw_cfg DMA ports and isa-debug-exit. */
	return DP_DENY;
}

bool devpolicy_cmos_write(uint8_t idx)
{
	idx &= 0x7F;	    /* bit 7 of the index is the NMI mask, not the register */
	return idx <= 0x0B; /* time, alarm, status A and B; never 0x0F (shutdown status) */
}

bool devpolicy_kbc_command(uint8_t cmd)
{
	return cmd != 0xD1 && cmd < 0xF0;
}

uint16_t devpolicy_fw_cfg_key(uint16_t selector)
{
	return selector & 0xBFFF; /* FW_CFG_ENTRY_MASK 0x3fff | FW_CFG_ARCH_LOCAL 0x8000 */
}

bool devpolicy_fw_cfg_plain(uint16_t key)
{
	switch (key) {
	case 0x0000: /* FW_CFG_SIGNATURE */
	case 0x0002: /* FW_CFG_UUID */
	case 0x0004: /* FW_CFG_NOGRAPHIC */
	case 0x0006: /* FW_CFG_MACHINE_ID */
	case 0x000C: /* FW_CFG_BOOT_DEVICE */
	case 0x000D: /* FW_CFG_NUMA */
	case 0x000E: /* FW_CFG_BOOT_MENU */
		return true;
	default:
		return false;
	}
}

enum devpolicy_mmio devpolicy_mmio(gpa_t gpa, gpa_t ecam_base)
{
	if (gpa >= DP_LAPIC_BASE && gpa < DP_LAPIC_BASE + PAGE_SIZE)
		return DPM_LAPIC;
	if (gpa >= DP_IOAPIC_BASE && gpa < DP_IOAPIC_BASE + PAGE_SIZE)
		return DPM_IOAPIC;
	if (ecam_base && gpa >= ecam_base && gpa - ecam_base < DP_ECAM_SIZE)
		return DPM_ECAM;
	return DPM_DENY;
}

bool devpolicy_lapic_write(unsigned off, uint32_t val)
{
	if (off & 0xF)
		return false;
	switch (off) {
	case 0x080: /* TPR */
	case 0x0B0: /* EOI */
	case 0x0D0: /* LDR */
	case 0x0E0: /* DFR */
	case 0x0F0: /* SVR */
	case 0x280: /* ESR */
	case 0x310: /* ICR high: the destination */
	case 0x380: /* timer initial count */
	case 0x3E0: /* timer divide configuration */
		return true;
	case 0x300: /* ICR low: fixed and lowest-priority IPIs only */
		return DM(val) == DM_FIXED || DM(val) == DM_LOWEST;
	case 0x320: /* LVT timer and error: no delivery mode of their own */
	case 0x370:
	case 0x2F0: /* CMCI, thermal */
	case 0x330:
		return DM(val) == DM_FIXED;
	case 0x340: /* performance counters: fixed or NMI (the CPU's own counters) */
		return DM(val) == DM_FIXED || DM(val) == DM_NMI;
	case 0x350: /* LINT0: the PIC's INTR, fixed or ExtINT (virtual wire) */
		return DM(val) == DM_FIXED || DM(val) == DM_EXTINT;
	case 0x360: /* LINT1: NMI pin, which only the host drives */
		return DM(val) == DM_FIXED || DM(val) == DM_NMI;
	default: /* APIC ID (0x20), read-only registers */
		return false;
	}
}

bool devpolicy_ioapic_write(uint32_t index, uint32_t val)
{
	if (index < 0x10 || index > 0x3F)
		return false; /* ID, version, arbitration: not the guest's to change */
	if (index & 1)
		return true; /* high dword: destination field */
	return DM(val) == DM_FIXED || DM(val) == DM_LOWEST;
}

/* How a byte of configuration space may change. */
enum pci_byte { PB_KEEP, PB_ANY, PB_COMMAND };

static enum pci_byte pci_byte_rule(uint16_t bdf, unsigned off)
{
	if (off == 0x04)
		return PB_COMMAND;
	if (off == 0x05 || off == 0x06 || off == 0x07)
		return PB_ANY; /* command high byte (INTx disable...), status (write 1 to clear) */
	if (bdf == ((31u << 3) | 0)) { /* 00:1f.0 ICH9 LPC */
		if (off == 0x44)       /* ACPI_CNTL: ACPI I/O enable, SCI IRQ */
			return PB_ANY;
		if ((off >= 0x60 && off <= 0x64) || (off >= 0x68 && off <= 0x6B))
			return PB_ANY; /* PIRQ routing and serial IRQ control */
	}
	/* Everything else keeps its value: PAM, SMRAM, ESMRAMC,
	 * TSEG; LPC PMBASE, GPIOBASE, RCBA; every BAR. */
	return PB_KEEP;
}

bool devpolicy_pci_write(uint16_t bdf, unsigned reg, unsigned size, uint32_t *val, uint32_t cur)
{
	if ((size != 1 && size != 2 && size != 4) || reg + size > 0x1000 || (reg & (size - 1)) != 0)
		return false;
	uint32_t v = *val;
	for (unsigned i = 0; i < size; i++) {
		unsigned off = reg + i;
		uint8_t nb = (uint8_t)(v >> (8 * i)), ob = (uint8_t)(cur >> (8 * (off & 3)));
		switch (pci_byte_rule(bdf, off)) {
		case PB_COMMAND:
			nb &= (uint8_t)~0x04; /* bus-master enable: no device may DMA */
			v = (v & ~(0xFFu << (8 * i))) | ((uint32_t)nb << (8 * i));
			break;
		case PB_ANY:
			break;
		case PB_KEEP:
			if (nb != ob)
				return false;
			break;
		}
	}
	*val = v;
	return true;
}

/*
 * PCIEXBAR (Intel 3 Series datasheet §5.1.13; QEMU hw/pci-host/q35.c
 * mch_update_pciexbar): bit 0 enable, bits 2:1 length (00 = 256 MiB),
 * bits 27:3 reserved, bits 35:28 base.
 */
enum devpolicy_pciexbar devpolicy_pciexbar(uint64_t want, const struct dp_range *ram, unsigned n,
					   gpa_t *base)
{
	if (!(want & 1))
		return DPX_DISABLED;
	if (want & 0x0FFFFFFEULL)
		return DPX_REFUSED; /* 128/64 MiB windows or reserved bits */
	gpa_t b = want & ~0x0FFFFFFFULL;
	if (!b || b > DP_ECAM_LIMIT - DP_ECAM_SIZE)
		return DPX_REFUSED; /* over low memory's start, flash, the APICs, or above 4G */
	for (unsigned i = 0; i < n; i++) {
		if (ram[i].start < b + DP_ECAM_SIZE && b < ram[i].end)
			return DPX_REFUSED;
	}
	*base = b;
	return DPX_OK;
}
