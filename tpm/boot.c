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
#include "attest/guest_req.h"
#include "base/console.h"
#include "base/cpu.h"
#include "base/percpu.h"
#include "base/secret.h"
#include "base/string.h"
#include "base/uart_chan.h"
#include "tpm/boot.h"
#include "tpm/event_log.h"
#include "base/libc/libc.h"
#include "tpm/vtpm.h"
#include "tpm/vtpm_chan.h"
#include "tpm/vtpm_kbs.h"
#include "tpm/vtpm_persist.h"
#include "tpm/vtpm_svsm.h"

/* csvsm measures one firmware image: 69 + 100 + 22 bytes; room for later measurements. */
#define TPM_BOOT_LOG_SIZE 16384

static uint8_t log_buf[TPM_BOOT_LOG_SIZE];
static struct event_log event_log;
static const uint8_t *ek_pub;
static size_t ek_len;
static bool booted;

/* ---- persistence (docs/vtpm.md "Persistence") ---- */

/* The channel's answers: a sealed state at most (never plaintext). */
static uint8_t chan_buf[VCHAN_MAX_PAYLOAD];
static struct vchan chan;
/* A write-through waits this long per attempt for the host's confirmation. */
#define CHAN_TIMEOUT_US (30ULL * 1000 * 1000)
#define CHAN_ATTEMPTS	3u
static const char *const mode_names[] = {"ephemeral", "sealed", "kbs"};

static int chan_write(void *ctx, const uint8_t *p, size_t n)
{
	return uart_chan_write(p, n);
}
static long chan_read(void *ctx, uint8_t *p, size_t cap, uint64_t timeout_us)
{
	return uart_chan_read(p, cap, timeout_us);
}
static uint64_t chan_now(void *ctx)
{
	return timer_us();
}
static const struct vchan_io chan_io = {.write = chan_write, .read = chan_read, .now_us = chan_now};

static int rng(void *ctx, unsigned char *buf, size_t n)
{
	return random_bytes(buf, n) ? 0 : -1;
}

static int refuse(const char *step, const char *why)
{
	con_printf("csvsm: vtpm: refused at step '%s': %s; the guest does not start\n", step, why);
	return -1;
}

/*
 * The sealed mode's root key: MSG_KEY_REQ (SEV-SNP firmware ABI 56860
 * §7.2, MSG_KEY_REQ; the request layout of include/attest/guest_req.h):
 * the VCEK as root (ROOT_KEY_SELECT 0, KEY_SEL 1 so that a VLEK installed
 * later does not change the key), VMPL 0 (a guest at VMPL 1-3 can ask only
 * for its own VMPL or a less privileged one, so never for this key), and
 * GUEST_FIELD_SELECT policy and measurement: another launch image (csvsm,
 * OVMF, the boot block with this mode and instance) or policy gives another
 * key. TCB_VERSION only when the image asks for it (--vtpm-tcb): it keeps an
 * older, vulnerable firmware from deriving the key, at the price of losing
 * the state when the platform's TCB changes. snpguest's key.rs documents
 * the same fields (virtee/snpguest src/key.rs).
 */
static int sealed_root(const struct tpm_boot_persist *p, uint8_t root[SNP_DERIVED_KEY_LEN])
{
	struct snp_key_req req = {
	    .root_key_select = 1u << SNP_KEY_SEL_SHIFT,
	    .guest_field_select =
		SNP_GFS_POLICY | SNP_GFS_MEASUREMENT | (p->mix_tcb ? SNP_GFS_TCB_VERSION : 0),
	    .vmpl = 0,
	    .guest_svn = 0,
	    .tcb_version = p->mix_tcb ? p->tcb_version : 0,
	};
	int rc = guest_req_key(this_cpu(), &req, root);
	if (rc) {
		char why[96];
		fmt_snprintf(why, sizeof(why), "MSG_KEY_REQ failed: %s", guest_req_strerror(rc));
		return refuse("key", why);
	}
	return 0;
}

/* Machine-readable counters of the persistence path (bench/vtpm_bench.sh reads them). */
static void tpm_boot_persist_line(const char *when)
{
	struct vtpm_persist_stats ps;
	struct uart_chan_stats us;
	vtpm_persist_stats(&ps);
	uart_chan_stats(&us);
	con_printf("csvsm: vtpm: persist when=%s version=%llu state_bytes=%zu sealed_bytes=%zu "
		   "commits=%llu renewals=%llu skipped=%llu calls=%llu retries=%llu tx_wire=%llu "
		   "rx_wire=%llu "
		   "chan_us=%llu seal_us=%llu exits=%llu string_out=%llu string_in=%llu\n",
		   when, (unsigned long long)ps.version, ps.state_bytes, ps.sealed_bytes,
		   (unsigned long long)ps.commits, (unsigned long long)ps.renewals,
		   (unsigned long long)ps.skipped, (unsigned long long)chan.st.calls,
		   (unsigned long long)chan.st.retries, (unsigned long long)chan.st.tx_wire,
		   (unsigned long long)chan.st.rx_wire, (unsigned long long)chan.st.us,
		   (unsigned long long)ps.seal_us, (unsigned long long)us.exits,
		   (unsigned long long)us.string_out, (unsigned long long)us.string_in);
}

static int kbs_report(void *ctx, const uint8_t report_data[64], uint8_t report[KBS_REPORT_BYTES])
{
	return guest_req_report(this_cpu(), report_data, 0, report, NULL, 0, NULL) ? -1 : 0;
}

/*
 * The kbs mode (tpm/vtpm_kbs.c, docs/vtpm.md "Persistence"): csvsm-kbs
 * appraises csvsm's VMPL-0 evidence and releases the root key, signed by
 * the broker key the image names, with the registry's version, digest and
 * lease; every write-through is then committed to the registry before the
 * command's response, the lease renewed when due before a command, and a
 * first manufacture gets its EK certificate (tpm/vtpm_kbs_persist.c). The
 * TEE key (kbs.grant) stays for the VM's life, registered for the
 * termination wipe.
 */
static struct vtpm_kbs_session kbs;

static int kbs_root(const struct tpm_boot_persist *p, uint8_t root[32],
		    struct vtpm_persist_cfg *cfg)
{
	char why[256];

	if (secret_register(&kbs.grant, sizeof(kbs.grant)))
		return refuse("key", "the secrets table is full");
	kbs.cfg = (struct vtpm_kbs_cfg){.chan = &chan, .report = kbs_report, .rng = rng};
	memcpy(kbs.cfg.instance, p->instance, sizeof(kbs.cfg.instance));
	memcpy(kbs.cfg.broker, p->broker_key, sizeof(kbs.cfg.broker));
	if (vtpm_kbs_unlock(&kbs.cfg, root, &kbs.grant, why, sizeof(why)))
		return refuse("key", why);
	vtpm_kbs_persist(&kbs, cfg);
	boot_phase(
	    "vtpm", "kbs: csvsm-kbs released the state key: registry version %llu, lease %llu s%s",
	    (unsigned long long)kbs.grant.version, (unsigned long long)kbs.grant.lease_seconds,
	    kbs.grant.manufacture ? ", consent to the first manufacture" : "");
	return 0;
}

/* Power on a persistent vTPM: key, fetch, open, restore or manufacture, store. */
static int persist_boot(const struct tpm_boot_persist *p, const struct vtpm_options *opt)
{
	static uint8_t root[VTPM_SEAL_KEY];
	struct vtpm_persist_report rep;
	char why[96];
	void *sec;
	size_t sec_len;

	vtpm_persist_secret(&sec, &sec_len);
	if (secret_register(sec, sec_len) || secret_register(root, sizeof(root)))
		return refuse("key", "the secrets table is full");
	if (uart_chan_init(p->port)) {
		fmt_snprintf(why, sizeof(why), "no channel device answers at port %#x", p->port);
		return refuse("fetch", why);
	}
	vchan_init(&chan, &chan_io, NULL, chan_buf, sizeof(chan_buf), CHAN_TIMEOUT_US,
		   CHAN_ATTEMPTS);
	struct vtpm_persist_cfg cfg = {.id = {.mode = p->mode}, .chan = &chan, .rng = rng};
	if (p->mode == 1 ? sealed_root(p, root) : kbs_root(p, root, &cfg))
		return -1;
	memcpy(cfg.id.instance, p->instance, sizeof(cfg.id.instance));
	int rc = vtpm_persist_boot(&cfg, root, opt, &rep);
	memzero_explicit(root, sizeof(root));
	if (rc)
		return refuse(vtpm_persist_step_name(rep.step), rep.why);
	boot_phase("vtpm", "%s state: %s, version %llu written through (%zu bytes, %zu sealed)",
		   mode_names[p->mode],
		   rep.manufactured ? "none kept: manufactured (first boot)"
				    : "opened and restored",
		   (unsigned long long)rep.version, rep.state_bytes, rep.sealed_bytes);
	return 0;
}

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

/*
 * Not inlined: inlined into tpm_boot, __builtin_frame_address(0) is the top
 * of tpm_boot's frame, and once that frame held more than 64 bytes of
 * locals and saved registers (the persistent mode's), the paint overwrote
 * them (a #GP in the SNP machine with 0x5A5A... in rbx, rbp and r15). Here
 * it is this function's own frame, below all of tpm_boot's.
 */
static __attribute__((noinline)) uint64_t *stack_paint(uint64_t *base, size_t bytes)
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

int tpm_boot(const uint8_t *fw, size_t fw_len, uint64_t fw_gpa, uint64_t *stack, size_t stack_bytes,
	     const struct tpm_boot_persist *persist)
{
	static const struct vtpm_options opt = {.no_startup = false};
	struct event_log_digests pcr0;
	uint64_t *stack_top = stack_paint(stack, stack_bytes);
	uint64_t t0 = timer_us();
	uint32_t mode = persist ? persist->mode : 0;

	if (booted || mode >= ARRAY_SIZE(mode_names))
		return refuse("key", "unknown vTPM mode");
	if (mode) {
		if (persist_boot(persist, &opt))
			return -1;
	} else if (vtpm_init(&opt) != 0) {
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
	/* The EK certificate, when the state has one (kbs mode: csvsm-kbs issued it
	 * at the first manufacture), as the guest will read it. */
	static uint8_t cert[VTPM_EK_CERT_MAX];
	size_t cert_len = 0;
	if (mode == 2 && vtpm_ek_cert_read(cert, sizeof(cert), &cert_len))
		return refuse("store", "the state has no EK certificate at NV 0x01C00002");
	/* Last of csvsm's own setup: the guest gets no platform hierarchy (its auth
	 * is empty). OVMF's Tcg2PlatformDxe tries to randomize the platform auth
	 * and only logs the failure (edk2 SecurityPkg/Library/
	 * PeiDxeTpmPlatformHierarchyLib RandomizePlatformAuth); Linux and
	 * tpm2-tools use the owner and endorsement hierarchies. */
	if (vtpm_platform_disable()) {
		con_printf("csvsm: vtpm: error: TPM2_HierarchyControl(platform, NO) failed\n");
		return -1;
	}
	/* Nothing above changes the permanent state today; if it ever does, the
	 * guest must not see a TPM the host does not have. */
	if (mode && vtpm_persist_commit())
		return refuse("store", "the state after the measurements could not be written");
	booted = true;

	uint16_t banks[VTPM_MAX_BANKS];
	unsigned nb = vtpm_banks(banks, VTPM_MAX_BANKS);
	uint8_t ek_sha256[HASH_SHA256_SIZE];
	char h[2 * HASH_SHA384_SIZE + 1];
	struct libc_heap_stats hs;
	size_t stack_depth = stack_used(stack, stack_bytes, stack_top);

	boot_phase("vtpm", "libtpms TPM 2.0 %s, %u PCR banks (%s), Startup(CLEAR) sent",
		   mode ? "in persistent mode" : "manufactured", nb,
		   nb == 2 ? "SHA-256, SHA-384" : "unexpected");
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
	con_printf("csvsm: vtpm: mode=%s ek_sha256=%s\n", mode_names[mode], h);
	if (cert_len) {
		uint8_t cs[HASH_SHA256_SIZE];
		hash_sha256(cert, cert_len, cs);
		hex(h, sizeof(h), cs, sizeof(cs));
		boot_phase("vtpm", "EK certificate at NV 0x01C00002: %zu bytes, sha256 %s",
			   cert_len, h);
		con_printf("csvsm: vtpm: ek_cert_bytes=%zu ek_cert_sha256=%s\n", cert_len, h);
	}
	if (mode)
		tpm_boot_persist_line("boot");
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
