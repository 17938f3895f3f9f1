/* QEMU fw_cfg for the SNP machine (tests/snpm/fw_cfg.c); never in csvsm.elf. */
#ifndef SNPM_FW_CFG_H
#define SNPM_FW_CFG_H

#include "base/types.h"

/* Port interface. */
bool fw_cfg_present(void);
uint16_t fw_cfg_read16(uint16_t key);
/* Finds a named file; returns its key and size. */
bool fw_cfg_find(const char *name, uint16_t *key, uint32_t *size);
void fw_cfg_read(uint16_t key, void *buf, uint32_t len);
/* Bulk read of a key (DMA when offered). */
void fw_cfg_read_key(uint16_t key, void *buf, uint32_t len);
/* Reads the named file into buf (at most max bytes; DMA when offered). false if absent/too big. */
bool fw_cfg_load_file(const char *name, void *buf, uint32_t max, uint32_t *size);

#endif
