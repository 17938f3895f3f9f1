/*
 * Boot phase "vtpm"; see include/tpm/boot.h. Order matters: the TPM is
 * started (Startup(CLEAR) sent by csvsm) and the firmware measured before
 * the guest exists, so PCR 0 holds csvsm's measurement before anyone else
 * can touch the TPM; the EK is created now because a guest could later
 * change the endorsement auth or fill the transient slots (docs/vtpm.md).
 * Only then is protocol 2 registered with the request dispatcher.
 *
 * Image only: the dashboard reports the glibc-ABI layer's heap.
 */
#include "base/console.h"
#include "base/cpu.h"
#include "base/string.h"
#include "tpm/boot.h"
#include "tpm/event_log.h"
#include "base/libc/libc.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_svsm.h"

/* csvsm measures one firmware image: 69 + 100 + 22 bytes; room for later measurements. */
#define TPM_BOOT_LOG_SIZE 16384

static uint8_t log_buf[TPM_BOOT_LOG_SIZE];
static struct event_log event_log;
static const uint8_t *ek_pub;
static size_t ek_len;
static bool booted;

static void hex(char *out, size_t cap, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t k = 0;
	for (size_t i = 0; i < n && k + 2 < cap; i++) {
		out[k++] = digits[p[i] >> 4];
		out[k++] = digits[p[i] & 15];
	}
	out[k] = 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}

/*
 * The log csvsm just wrote: the Spec ID record, then TCG_PCR_EVENT2 records
 * with exactly SHA-256 + SHA-384 (include/tpm/event_log.h), so offsets are
 * fixed. Not a parser for foreign logs: event_log_replay() is.
 */
static void print_log(void)
{
	char h[2 * HASH_SHA384_SIZE + 1];
	size_t off = EVENT_LOG_SPEC_ID_RECORD_SIZE;
	unsigned i = 0;

	boot_phase("vtpm", "event log: %zu bytes, Spec ID event (SHA-256, SHA-384)", event_log.len);
	while (off + EVENT_LOG_EVENT2_HDR_SIZE <= event_log.len) {
		const uint8_t *e = event_log.buf + off;
		uint32_t ev_len = le32(e + EVENT_LOG_EVENT2_HDR_SIZE - 4);
		boot_phase("vtpm", "  event %u: PCR %u type 0x%08x, %u bytes of event data", i,
			   le32(e), le32(e + 4), ev_len);
		hex(h, sizeof(h), e + 14, HASH_SHA256_SIZE);
		boot_phase("vtpm", "    sha256 %s", h);
		hex(h, sizeof(h), e + 14 + HASH_SHA256_SIZE + 2, HASH_SHA384_SIZE);
		boot_phase("vtpm", "    sha384 %s", h);
		off += EVENT_LOG_EVENT2_HDR_SIZE + ev_len;
		i++;
	}
}

/* PCR 0 from the TPM in both banks must equal the log replayed (event_log_replay). */
static int read_pcr0(struct event_log_digests *pcr0)
{
	static struct event_log_pcrs replay; /* 1.9 KB: not on the boot stack */

	if (vtpm_pcr_read(0, TPM_ALG_SHA256, pcr0->sha256, HASH_SHA256_SIZE) != HASH_SHA256_SIZE ||
	    vtpm_pcr_read(0, TPM_ALG_SHA384, pcr0->sha384, HASH_SHA384_SIZE) != HASH_SHA384_SIZE)
		return -1;
	if (event_log_replay(event_log.buf, event_log.len, &replay) != 0 ||
	    memcmp(replay.sha256[0], pcr0->sha256, HASH_SHA256_SIZE) != 0 ||
	    memcmp(replay.sha384[0], pcr0->sha384, HASH_SHA384_SIZE) != 0)
		return -1;
	return 0;
}

/*
 * Stack depth of the vTPM phase (libtpms and OpenSSL on the caller's stack,
 * [stack, stack + stack_bytes)): paint the unused part below this frame,
 * find the deepest overwritten word afterwards. Request handling runs the
 * same library code on the serving vCPU's stack, so this is the number to
 * size those by.
 */
#define STACK_PAINT 0x5A5A5A5A5A5A5A5AULL

static uint64_t *stack_paint(uint64_t *base, size_t bytes)
{
	uint64_t *sp = __builtin_frame_address(0);
	uint64_t *lo = base + 64; /* leave the bottom 512 bytes alone */
	if (!base || sp <= lo || sp > base + bytes / 8)
		return NULL; /* not on that stack: do not measure */
	for (uint64_t *p = lo; p < sp - 64; p++)
		*p = STACK_PAINT;
	return sp;
}

static size_t stack_used(const uint64_t *base, size_t bytes, const uint64_t *top)
{
	const uint64_t *p = base + 64;
	if (!top)
		return 0;
	while (p < top && *p == STACK_PAINT)
		p++;
	return (size_t)((const char *)(base + bytes / 8) - (const char *)p);
}

int tpm_boot(const uint8_t *fw, size_t fw_len, uint64_t fw_gpa, uint64_t *stack, size_t stack_bytes)
{
	static const struct vtpm_options opt = {.no_startup = false};
	struct event_log_digests pcr0;
	uint64_t *stack_top = stack_paint(stack, stack_bytes);
	uint64_t t0 = timer_us();

	if (booted || vtpm_init(&opt) != 0) {
		con_printf("csvsm: vtpm: error: vtpm_init failed\n");
		return -1;
	}
	uint64_t t_init = timer_us();
	if (event_log_init(&event_log, log_buf, sizeof(log_buf)) != 0 ||
	    vtpm_measure_firmware(&event_log, "OVMF", fw_gpa, fw, fw_len) != 0) {
		con_printf("csvsm: vtpm: error: measuring the firmware failed\n");
		return -1;
	}
	uint64_t t_measure = timer_us();
	if (vtpm_ek_public(&ek_pub, &ek_len) != 0) {
		con_printf("csvsm: vtpm: error: EK creation failed\n");
		return -1;
	}
	uint64_t t_ek = timer_us();
	if (read_pcr0(&pcr0) != 0) {
		con_printf("csvsm: vtpm: error: PCR0 does not match the event log\n");
		return -1;
	}
	booted = true;

	uint16_t banks[VTPM_MAX_BANKS];
	unsigned nb = vtpm_banks(banks, VTPM_MAX_BANKS);
	uint8_t ek_sha256[HASH_SHA256_SIZE];
	char h[2 * HASH_SHA384_SIZE + 1];
	struct libc_heap_stats hs;
	size_t stack_depth = stack_used(stack, stack_bytes, stack_top);

	boot_phase("vtpm", "libtpms TPM 2.0 manufactured, %u PCR banks (%s), Startup(CLEAR) sent",
		   nb, nb == 2 ? "SHA-256, SHA-384" : "unexpected");
	hex(h, sizeof(h), pcr0.sha256, HASH_SHA256_SIZE);
	boot_phase("vtpm", "PCR0 sha256 %s", h);
	con_printf("csvsm: vtpm: pcr0_sha256=%s\n", h);
	hex(h, sizeof(h), pcr0.sha384, HASH_SHA384_SIZE);
	boot_phase("vtpm", "PCR0 sha384 %s", h);
	con_printf("csvsm: vtpm: pcr0_sha384=%s\n", h);
	print_log();
	hash_sha256(ek_pub, ek_len, ek_sha256);
	hex(h, sizeof(h), ek_sha256, sizeof(ek_sha256));
	boot_phase("vtpm", "EK RSA-2048 (template L-1), TPMT_PUBLIC %zu bytes, sha256 %s", ek_len,
		   h);
	libc_heap_stats(&hs);
	boot_phase("vtpm",
		   "heap high water %zu KiB of %zu KiB (live %zu KiB, peak live %zu KiB); "
		   "boot stack used %zu KiB",
		   hs.high_water >> 10, hs.arena_size >> 10, hs.in_use >> 10, hs.peak_in_use >> 10,
		   stack_depth >> 10);
	boot_phase("vtpm", "init %llu ms, measure %zu KiB %llu ms, EK %llu ms, total %llu ms",
		   (unsigned long long)(t_init - t0) / 1000, fw_len >> 10,
		   (unsigned long long)(t_measure - t_init) / 1000,
		   (unsigned long long)(t_ek - t_measure) / 1000,
		   (unsigned long long)(t_ek - t0) / 1000);
	con_printf("csvsm: vtpm: banks=%u log_bytes=%zu ek_bytes=%zu heap_high_water=%zu "
		   "stack_bytes=%zu init_us=%llu measure_us=%llu ek_us=%llu\n",
		   nb, event_log.len, ek_len, hs.high_water, stack_depth,
		   (unsigned long long)(t_init - t0), (unsigned long long)(t_measure - t_init),
		   (unsigned long long)(t_ek - t_measure));
	return 0;
}

const uint8_t *tpm_event_log(size_t *len)
{
	*len = booted ? event_log.len : 0;
	return booted ? event_log.buf : NULL;
}

int tpm_ek_public(const uint8_t **pub, size_t *len)
{
	if (!booted)
		return -1;
	*pub = ek_pub;
	*len = ek_len;
	return 0;
}
