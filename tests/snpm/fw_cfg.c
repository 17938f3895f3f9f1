/*
 * QEMU fw_cfg (docs/specs/fw_cfg.rst), the SNP machine's way of reading its
 * launch image, the firmware and the guests' files. The machine's own: csvsm
 * never reads fw_cfg (on SEV-SNP the host's device is untrusted and its DMA
 * would write into memory csvsm chose), so this is not in csvsm.elf
 * (issue 15 item 5).
 */
#include "arch/x86/insn.h"
#include "base/string.h"
#include "tests/snpm/fw_cfg.h"

/* ---- fw_cfg (QEMU docs/specs/fw_cfg.txt), port interface ---- */
#define FW_CFG_PORT_SEL	 0x510
#define FW_CFG_PORT_DATA 0x511
#define FW_CFG_SIGNATURE 0x0000
#define FW_CFG_FILE_DIR	 0x0019

static void fw_cfg_select(uint16_t key)
{
	outw(FW_CFG_PORT_SEL, key);
}

bool fw_cfg_present(void)
{
	char sig[4];
	fw_cfg_select(FW_CFG_SIGNATURE);
	for (int i = 0; i < 4; i++)
		sig[i] = (char)inb(FW_CFG_PORT_DATA);
	return memcmp(sig, "QEMU", 4) == 0;
}

void fw_cfg_read(uint16_t key, void *buf, uint32_t len)
{
	uint8_t *p = buf;
	fw_cfg_select(key);
	for (uint32_t i = 0; i < len; i++)
		p[i] = inb(FW_CFG_PORT_DATA);
}

uint16_t fw_cfg_read16(uint16_t key)
{
	uint16_t v;
	fw_cfg_read(key, &v, 2);
	return v;
}

static uint32_t be32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3];
}

bool fw_cfg_find(const char *name, uint16_t *key, uint32_t *size)
{
	uint8_t hdr[4];
	fw_cfg_select(FW_CFG_FILE_DIR);
	for (int i = 0; i < 4; i++)
		hdr[i] = inb(FW_CFG_PORT_DATA);
	uint32_t count = be32(hdr);
	for (uint32_t i = 0; i < count && i < 4096; i++) {
		uint8_t e[64]; /* u32 size, u16 select, u16 reserved, char name[56] */
		for (int j = 0; j < 64; j++)
			e[j] = inb(FW_CFG_PORT_DATA);
		e[63] = 0;
		if (strcmp((const char *)e + 8, name) == 0) {
			*size = be32(e);
			*key = (uint16_t)(e[4] << 8 | e[5]);
			return true;
		}
	}
	return false;
}

/*
 * The machine's bulk reads (the launch image, the probe) use the fw_cfg DMA
 * interface when QEMU offers it (FW_CFG_ID bit 1); the guest never gets
 * DMA (tests/snpm/model/devpolicy.c). Fields are big-endian (fw_cfg.txt).
 */
#define FW_CFG_ID	   0x0001
#define FW_CFG_DMA_ADDR_HI 0x514
#define FW_CFG_DMA_ADDR_LO 0x518
#define FW_CFG_DMA_ERROR   0x01
#define FW_CFG_DMA_READ	   0x02
#define FW_CFG_DMA_SELECT  0x08

struct fw_cfg_dma {
	uint32_t control, length;
	uint64_t address;
} __aligned(16);

static uint32_t bswap32(uint32_t v)
{
	return __builtin_bswap32(v);
}

static bool fw_cfg_dma_read(uint16_t key, void *buf, uint32_t len)
{
	static struct fw_cfg_dma d;
	uint32_t id;
	fw_cfg_read(FW_CFG_ID, &id, 4);
	if (!(id & 2))
		return false;
	d.control = bswap32((uint32_t)key << 16 | FW_CFG_DMA_SELECT | FW_CFG_DMA_READ);
	d.length = bswap32(len);
	d.address = __builtin_bswap64((uint64_t)(uintptr_t)buf);
	uint64_t pa = (uint64_t)(uintptr_t)&d;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	outl(FW_CFG_DMA_ADDR_HI, bswap32((uint32_t)(pa >> 32)));
	outl(FW_CFG_DMA_ADDR_LO, bswap32((uint32_t)pa));
	for (uint64_t i = 0; i < 100000000ULL; i++) {
		uint32_t c = bswap32(__atomic_load_n(&d.control, __ATOMIC_ACQUIRE));
		if (c == 0)
			return true;
		if (c & FW_CFG_DMA_ERROR)
			return false;
		cpu_relax();
	}
	return false;
}

void fw_cfg_read_key(uint16_t key, void *buf, uint32_t len)
{
	if (!fw_cfg_dma_read(key, buf, len))
		fw_cfg_read(key, buf, len);
}

bool fw_cfg_load_file(const char *name, void *buf, uint32_t max, uint32_t *size)
{
	uint16_t key;
	if (!fw_cfg_find(name, &key, size) || *size > max)
		return false;
	if (!fw_cfg_dma_read(key, buf, *size))
		fw_cfg_read(key, buf, *size);
	return true;
}
