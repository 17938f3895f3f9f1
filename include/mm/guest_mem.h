/*
 * Guest-memory access for request handlers (mm/guest_mem.c). Every guest
 * address goes through here: it must lie entirely in guest RAM, outside
 * csvsm's region and off every page csvsm uses as a VMSA/VMCB. Data is
 * copied once into csvsm memory before it is checked or used (STYLE.md 5).
 */
#ifndef MM_GUEST_MEM_H
#define MM_GUEST_MEM_H

#include "base/types.h"

struct memmap;

#define GUEST_MEM_MAX_PROTECTED 64

void guest_mem_init(const struct memmap *mm);
/*
 * Track which guest pages are validated (1 bit per 4K page of [0, max_gpa),
 * caller-provided storage, all clear at first). Once enabled, guest_mem_check
 * also refuses pages that are not validated: on SNP csvsm's own access to
 * such a page would fault (#VC), so a guest naming a rescinded page gets an
 * error instead. csvsm performs every PVALIDATE for the guest, so its record
 * is complete. Returns 0 or -1 (storage too small).
 */
size_t guest_mem_validated_bytes(gpa_t max_gpa);
int guest_mem_track_validated(void *storage, size_t bytes, gpa_t max_gpa);
void guest_mem_set_validated(gpa_t gpa, uint64_t size, bool validated);
/* Some page of [gpa, gpa+size) is recorded validated (false when not tracked). */
bool guest_mem_any_validated(gpa_t gpa, uint64_t size);
/*
 * Pages the guest may not name (VMSAs, calling areas under csvsm's use...).
 * guest_mem_protect returns once every guest access csvsm checked before
 * it has ended (the accesses and the checks share one reader/writer lock),
 * so the caller may revoke and check the page knowing no write of csvsm's
 * own can land on it later. 0, or -1 (unaligned, table full).
 */
int guest_mem_protect(gpa_t page);
void guest_mem_unprotect(gpa_t page);
bool guest_mem_is_protected(gpa_t page);

/* 0 when [gpa, gpa+len) is validated guest RAM outside csvsm and protected pages; -1 otherwise. */
int guest_mem_check(gpa_t gpa, uint64_t len);
/* The same without the validated test: for pages csvsm PVALIDATEs, not touches as they are. */
int guest_mem_check_target(gpa_t gpa, uint64_t len);
/* Checked copies; -1 and nothing copied when the range fails guest_mem_check. */
int guest_read(gpa_t gpa, void *dst, size_t len);
int guest_write(gpa_t gpa, const void *src, size_t len);

/* A change (protect, unprotect, rescind) is waiting for accesses in flight (tests). */
bool guest_mem_change_waiting(void);

/* How csvsm reaches guest-physical memory (identity map on both platforms). */
void *guest_mem_ptr(gpa_t gpa);
/*
 * Zero [gpa, gpa+size) of guest memory csvsm holds validated (a page handed
 * to the guest by its first validation). On SEV-SNP every store is a private
 * access the CPU checks against the RMP entry of the frame mapped at the GPA
 * (assigned, validated, for that GPA: APM vol. 2 §15.36.10), so the write is
 * also the check that no frame was swapped in since csvsm validated it: a
 * swapped one raises #VC 0x404 (src/vc.c ends the VM). No bounds check here:
 * the caller has checked the range as a PVALIDATE target.
 */
void guest_mem_zero(gpa_t gpa, uint64_t size);
/* The guest range this vCPU is reading, writing or zeroing now, for the #VC
 * handler's report (*what: "read", "wrote", "zeroed"); false when none. */
bool guest_mem_touching(gpa_t *gpa, uint64_t *size, const char **what);

#endif
