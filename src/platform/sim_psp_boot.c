/*
 * sim platform: start the simulated PSP (attest/sim_psp.c) before the guest.
 * Its launch MEASUREMENT is the csvsm-sim launch digest (docs/measure.md)
 * over what was actually loaded: csvsm's PT_LOAD segments as the PVH loader
 * placed them (text unchanged since; .data as boot.S saved it before its
 * first write; .bss zero), the OVMF image csvsm loaded, one VMSA per vCPU.
 * Its keys (test VCEK and certificate table) are placed in csvsm's memory
 * by the launch (the test harness with QEMU's loader device; linker.ld
 * .launch_in), never through a device the guest can reach: csvsm copies
 * them into the PSP model once and wipes the launch copy.
 */
#include "arch/x86/insn.h"
#include "attest/launch_digest.h"
#include "attest/sim_psp.h"
#include "csvsm/boot.h"
#include "csvsm/console.h"
#include "csvsm/cpu.h"
#include "csvsm/string.h"
#include "mm/pool.h"

#define SIM_GUEST_FEATURES 0x1 /* sev-snp-measure's default SEV_FEATURES */

extern const uint8_t __image_start[], __text_end[], __data_start[], __data_end[], __bss_end[];
extern const uint8_t launch_data_snapshot[];

static int psp_rng(void *ctx, unsigned char *buf, size_t len)
{
	return random_bytes(buf, len) ? 0 : -1;
}

int sim_psp_setup(const struct guest_launch *gl)
{
	struct sim_psp_keys keys;
	struct ld_segment segs[16];
	size_t nsegs;
	uint8_t measurement[LD_SHA384_LEN];
	struct cpuid_regs r;

	uint8_t *keys_blob = (uint8_t *)(uintptr_t)boot.launch_psp_keys;
	size_t keys_len = boot.launch_psp_keys_max;
	if (!keys_blob || !keys_len || memcmp(keys_blob, SIM_PSP_KEYS_MAGIC, 8) != 0) {
		boot_phase("attest", "no simulated PSP keys in the launch: attestation off");
		return -1;
	}
	if (sim_psp_keys_parse(keys_blob, keys_len, &keys) != 0) {
		memzero_explicit(keys_blob, keys_len);
		con_printf("csvsm: sim PSP: malformed launch keys\n");
		return -1;
	}
	/* csvsm's two PT_LOAD segments as loaded: text is never written; .data
	 * was copied by boot.S before its first write; .bss was zero. */
	segs[0] = (struct ld_segment){.paddr = (uint64_t)(uintptr_t)__image_start,
				      .data = __image_start,
				      .filesz = (uint64_t)(__text_end - __image_start),
				      .memsz = (uint64_t)(__text_end - __image_start)};
	segs[1] = (struct ld_segment){.paddr = (uint64_t)(uintptr_t)__data_start,
				      .data = launch_data_snapshot,
				      .filesz = (uint64_t)(__data_end - __data_start),
				      .memsz = (uint64_t)(__bss_end - __data_start)};
	nsegs = 2;
	int rc;
	cpuid(1, &r);
	struct ld_sim_launch l = {.segs = segs,
				  .n_segs = nsegs,
				  .ovmf = gl->fw,
				  .ovmf_len = gl->fw_size,
				  .info = gl->fw_info,
				  .vcpus = cpu_count,
				  .vcpu_sig = r.eax,
				  .guest_features = SIM_GUEST_FEATURES};
	uint64_t t0 = timer_us();
	rc = launch_digest_csvsm_sim(&ld_hash_mbedtls, &l, measurement);
	if (rc != LD_OK) {
		memzero_explicit(keys_blob, keys_len);
		con_printf("csvsm: sim PSP: launch digest: %s\n", launch_digest_strerror(rc));
		return -1;
	}
	rc = sim_psp_init(gl->vmpck[0], &keys, measurement, SIM_PSP_DEFAULT_POLICY, psp_rng, NULL);
	for (unsigned i = 1; i < 4 && rc == 0;
	     i++) /* the PSP holds every VMPCK (the guest's too) */
		rc = sim_psp_set_vmpck(i, gl->vmpck[i]);
	memzero_explicit(&keys, sizeof(keys));
	memzero_explicit(keys_blob, keys_len); /* the PSP model has its copy */
	if (rc != 0) {
		con_printf("csvsm: sim PSP: bad keys\n");
		return -1;
	}
	sim_psp_set_shared_pages(gl->req_gpa, gl->resp_gpa, gl->data_gpa, gl->data_npages);
	char hex[2 * LD_SHA384_LEN + 1];
	for (unsigned i = 0; i < LD_SHA384_LEN; i++)
		fmt_snprintf(hex + 2 * i, 3, "%02x", measurement[i]);
	con_printf("csvsm: sim-psp: measurement=%s vcpus=%u vcpu_sig=0x%x\n", hex, cpu_count,
		   r.eax);
	boot_phase(
	    "attest",
	    "simulated PSP ready: launch digest over %zu ELF segments, OVMF, %u VMSAs (%llu ms)",
	    nsegs, cpu_count, (unsigned long long)((timer_us() - t0) / 1000));
	return 0;
}
