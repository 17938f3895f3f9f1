/*
 * Little-endian loads and stores of unaligned bytes: the wire and file
 * formats of the vTPM's persistence (the channel's frames, the sealed
 * state's header, csvsm-proxy's slot file) are little-endian like the SNP
 * and SVSM ABIs. Byte by byte, so that alignment and the host's order do
 * not matter; compilers turn them into one load or store.
 */
#ifndef BASE_LE_H
#define BASE_LE_H

#include "base/types.h"

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t le64_get(const uint8_t *p)
{
	return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}
static inline void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

#endif
