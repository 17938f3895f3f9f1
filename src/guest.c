/*
 * Boot phase 5: prepare the guest firmware and hand it to the platform.
 * csvsm takes the OVMF the launch image loaded below 4 GiB, parses its SEV
 * metadata (reference §8.1) to learn where the secrets page and the calling
 * area go, places a copy of the secrets page there with the SVSM fields
 * filled and VMPCK0..VMPCK(guest VMPL - 1) cleared (reference §1.6), and
 * starts it at the guest VMPL.
 */
#include "attest/ovmf_meta.h"
#include "csvsm/boot.h"
#include "base/console.h"
#include "csvsm/igvm_boot.h"
#include "csvsm/cpu.h"
#include "base/platform.h"
#include "base/secret.h"
#include "csvsm/vcpu.h"
#include "base/string.h"
#include "mm/accept.h"
#include "mm/guest_mem.h"
#include "mm/memmap.h"
#include "mm/pool.h"
#include "snp/ghcb.h"
#include "snp/secrets.h"
#include "tpm/boot.h"
#include "src/entry.h"
#include "tpm/vtpm_svsm.h"
#include "base/svsm_call.h"
#include "attest/attest_proto.h"
#include "attest/guest_req.h"

#define FW_MAX		(4U << 20) /* the largest firmware image csvsm accepts */
#define GREQ_DATA_PAGES 4	   /* extended-request certificate table */

const struct csvsm_igvm_boot_block *snp_boot_block_copy(void);
const struct csvsm_igvm_vtpm *snp_boot_vtpm_copy(void);
static struct ovmf_info fw_info;
static struct guest_launch gl;
/*
 * csvsm's copy of the launch secrets page, only while the guest's copy and
 * the VMPCK0 channel are made; then wiped (issue 8 item 7: one copy of each
 * key). VMPCK0 lives on in the guest-request channel alone; csvsm keeps no
 * VMPCK1..3 (the guest's copy holds VMPCK(guest VMPL)..3 for it).
 */
static struct snp_secrets_page secrets __aligned(4096);

static bool key_is_zero(const uint8_t *k)
{
	uint8_t acc = 0;
	for (unsigned i = 0; i < SNP_VMPCK_SIZE; i++)
		acc |= k[i];
	return acc == 0;
}

/* Take the secrets page the PSP placed at launch once, and wipe the launch
 * copy. Without a usable one there is no key the PSP shares: stop. */
static void secrets_take(void)
{
	struct snp_secrets_page *src = (struct snp_secrets_page *)(uintptr_t)boot.launch_secrets;
	secret_register(&secrets, sizeof(secrets));
	if (!src || src->version < 2 || key_is_zero(src->vmpck[0]))
		panic("the launch secrets page has no VMPCK0 (version %u)", src ? src->version : 0);
	memcpy(&secrets, src, sizeof(secrets));
	memzero_explicit(src, sizeof(*src));
	boot_phase("secrets", "launch secrets page taken (version %u); its copy wiped",
		   secrets.version);
}

/*
 * The VMPCK0 channel to the PSP: csvsm talks to it through pages shared
 * with the hypervisor (made shared with a page-state change by
 * platform->psp_setup; csvsm never puts plaintext in them). Before the vTPM
 * starts, since a persistent vTPM's key comes through it (MSG_KEY_REQ).
 */
static bool psp_boot(void)
{
	uint8_t *req = pool_alloc(PAGE_SIZE, PAGE_SIZE), *resp = pool_alloc(PAGE_SIZE, PAGE_SIZE);
	uint8_t *data = pool_alloc(GREQ_DATA_PAGES * PAGE_SIZE, PAGE_SIZE);
	gl.vmpck = secrets.vmpck;
	gl.req_gpa = (gpa_t)(uintptr_t)req;
	gl.resp_gpa = (gpa_t)(uintptr_t)resp;
	gl.data_gpa = (gpa_t)(uintptr_t)data;
	gl.data_npages = GREQ_DATA_PAGES;
	if (platform->psp_setup && platform->psp_setup(&gl) != 0)
		return false;
	if (guest_req_init(secrets.vmpck[0], req, gl.req_gpa, resp, gl.resp_gpa, data, gl.data_gpa,
			   GREQ_DATA_PAGES) != 0)
		panic("guest request channel set-up failed");
	return true;
}

/*
 * The vTPM's persistence as the measured boot block says (igvm_boot.h): an
 * ephemeral image carries no configuration at all; a persistent one a
 * complete one. Anything else was not built by csvsm-igvm: refuse.
 */
static void vtpm_config(struct tpm_boot_persist *p)
{
	const struct csvsm_igvm_boot_block *bb = snp_boot_block_copy();
	const struct csvsm_igvm_vtpm *v = snp_boot_vtpm_copy();
	static const struct csvsm_igvm_vtpm none;

	memset(p, 0, sizeof(*p));
	if (bb->vtpm_mode == CSVSM_VTPM_MODE_EPHEMERAL) {
		if (memcmp(v, &none, sizeof(none)))
			panic("boot block: a vTPM configuration in an ephemeral image");
		return;
	}
	if (v->magic != CSVSM_IGVM_VTPM_MAGIC || v->mode != bb->vtpm_mode ||
	    (v->mode != CSVSM_VTPM_MODE_SEALED && v->mode != CSVSM_VTPM_MODE_KBS) || !v->port ||
	    (v->flags & ~CSVSM_IGVM_VTPM_F_TCB))
		panic("boot block: vTPM mode %u with a configuration csvsm-igvm does not make",
		      bb->vtpm_mode);
	p->mode = v->mode;
	p->port = v->port;
	p->mix_tcb = v->flags & CSVSM_IGVM_VTPM_F_TCB;
	p->tcb_version = v->tcb_version;
	memcpy(p->instance, v->instance, sizeof(p->instance));
	memcpy(p->broker_key, v->broker_key, sizeof(p->broker_key));
}

/* Attestation (protocol 1): registered only when the PSP channel is up. */
static void attest_boot(bool psp)
{
	if (!psp)
		return;
	const uint8_t *ek = NULL, *evlog;
	size_t ek_len = 0, evlog_len = 0;
	tpm_ek_public(&ek, &ek_len);
	evlog = tpm_event_log(&evlog_len);
	attest_set_services(ek, ek_len, evlog, evlog_len);
	svsm_attest_protocol = &attest_svsm_protocol;
	boot_phase(
	    "attest",
	    "attestation protocol ready (VMPCK0 channel, manifest: vTPM EK %zu B, event log %zu B)",
	    ek_len, evlog_len);
}

static gpa_t meta_gpa(uint32_t type)
{
	for (uint32_t i = 0; i < fw_info.meta.n_items; i++)
		if (fw_info.meta.items[i].type == type)
			return fw_info.meta.items[i].gpa;
	return 0;
}

static void place_secrets(void)
{
	struct snp_secrets_page copy;
	memcpy(&copy, &secrets, sizeof(copy));
	for (unsigned i = 0; i < gl.vmpl && i < SNP_VMPCK_COUNT; i++)
		memzero_explicit(copy.vmpck[i], SNP_VMPCK_SIZE);
	copy.svsm_base = boot.csvsm_start;
	copy.svsm_size = boot.csvsm_end - boot.csvsm_start;
	copy.svsm_caa = gl.caa;
	copy.svsm_max_version = 1;
	copy.svsm_guest_vmpl = (uint8_t)gl.vmpl;
	if (guest_write(gl.secrets_gpa, &copy, sizeof(copy)) != 0)
		panic("secrets page GPA 0x%llx is not guest RAM",
		      (unsigned long long)gl.secrets_gpa);
	memzero_explicit(&copy, sizeof(copy));
}

__noreturn void boot_guest(void)
{
	uint32_t size = 0;
	const struct csvsm_igvm_boot_block *bb = snp_boot_block_copy();
	guest_mem_init(boot.memmap);
	/*
	 * From here csvsm tracks which guest pages are validated, starting from
	 * exactly what was validated (issue 34 item 2): the launch's ranges that
	 * lie in RAM (the firmware's pre-validated sections, its secrets, CPUID
	 * and calling-area pages: validated by the PSP at SNP_LAUNCH_UPDATE) and
	 * the pages pre-acceptance validated, from its record. Not the RAM the
	 * host's map names: RAM the host refused to make private (a host map
	 * error, mm/accept.c) and the pages the firmware leaves to the host were
	 * never validated. Recorded as validated, a guest naming them would have
	 * csvsm touch them (a #VC 0x404 on SNP), and the guest's own first
	 * validation of them would look like a frame the host swapped.
	 */
	gpa_t top = MAX(boot.memmap->max_gpa, 4ULL << 30);
	size_t vbytes = guest_mem_validated_bytes(top);
	if (guest_mem_track_validated(pool_alloc(vbytes, PAGE_SIZE), vbytes, top) != 0)
		panic("validated-page record");
	struct mem_range launch[CSVSM_IGVM_MAX_RANGES];
	unsigned nlaunch = 0;
	for (unsigned k = 0; k < bb->n_ranges && k < CSVSM_IGVM_MAX_RANGES; k++)
		launch[nlaunch++] =
		    (struct mem_range){bb->ranges[k].gpa, bb->ranges[k].gpa + bb->ranges[k].size};
	accept_record_validated(boot.memmap, launch, nlaunch);
	if (!platform->launch_guest) {
		boot_phase("guest", "this platform cannot launch a guest yet; ending the VM");
		platform->terminate(true, 0, 0);
	}
	/* The launch image loaded the firmware to end at 4 GiB (docs/igvm.md). */
	if (!bb->fw_size || bb->fw_size > FW_MAX || bb->fw_gpa + bb->fw_size != 4ULL << 30)
		panic("the launch image has no firmware");
	uint8_t *fw = (uint8_t *)(uintptr_t)bb->fw_gpa;
	size = (uint32_t)bb->fw_size;
	int rc = ovmf_info_parse(fw, size, &fw_info);
	if (rc != OVMF_META_OK || !IS_ALIGNED(size, PAGE_SIZE) || !fw_info.has_sev_meta) {
		con_printf("csvsm: firmware: %s\n", ovmf_meta_strerror(rc));
		panic("the firmware has no usable SEV metadata");
	}
	gl = (struct guest_launch){.mm = boot.memmap,
				   .vmpl = boot.guest_vmpl,
				   .fw = fw,
				   .fw_size = size,
				   .fw_gpa = (4ULL << 30) - size};
	gl.secrets_gpa = meta_gpa(OVMF_SECTION_SNP_SECRETS);
	/* edk2 before 2024 has no SVSM_CAA section: then use its CPUID page's address. */
	gl.caa = meta_gpa(OVMF_SECTION_SVSM_CAA);
	if (!gl.caa)
		gl.caa = meta_gpa(OVMF_SECTION_CPUID);
	if (!gl.secrets_gpa || !gl.caa || guest_mem_check(gl.caa, PAGE_SIZE))
		panic("firmware metadata names no usable secrets page / calling area");
	/* An SVSM-aware firmware (its metadata has an SVSM calling area, edk2
	 * 2024 and later) runs as an SEV-SNP guest and gets the CPUID page the
	 * PSP would fill; an older one runs as a plain guest (the probe calls). */
	gl.snp = meta_gpa(OVMF_SECTION_SVSM_CAA) != 0;
	gl.cpuid_gpa = gl.snp ? meta_gpa(OVMF_SECTION_CPUID) : 0;
	if (gl.snp)
		/* SEV_STATUS SEV, SEV-ES, SNP (APM vol. 2 §15.34.10), no optional
		 * feature: its VMSAs carry SEV_FEATURES = SEV_STATUS >> 2. */
		vcpu_guest_sev_features = (SEV_STATUS_SEV | SEV_STATUS_ES | SEV_STATUS_SNP) >> 2;
	static const uint8_t zero_ca[8];
	guest_write(gl.caa, zero_ca, sizeof(zero_ca));
	secrets_take();
	place_secrets();
	boot_phase("guest", "OVMF %u KiB at 0x%llx; secrets page 0x%llx, CA 0x%llx", size >> 10,
		   (unsigned long long)gl.fw_gpa, (unsigned long long)gl.secrets_gpa,
		   (unsigned long long)gl.caa);
	/* Measure OVMF into the vTPM before it runs (DESIGN.md steps 3-4); a
	 * persistent vTPM gets its state first (docs/vtpm.md "Persistence"). */
	extern uint64_t boot_stack[]; /* src/boot.S: the stack this runs on */
	struct tpm_boot_persist persist;
	vtpm_config(&persist);
	bool psp = psp_boot();
	if (!psp && persist.mode)
		panic("a persistent vTPM needs the PSP channel for its key");
	if (tpm_boot(fw, size, gl.fw_gpa, boot_stack, BOOT_STACK_SIZE, &persist) != 0)
		panic("vTPM start-up or firmware measurement failed");
	svsm_vtpm_protocol = &vtpm_svsm_protocol;
	gl.fw_info = &fw_info;
	attest_boot(psp);
	/* The channel and the PSP have VMPCK0, the guest its copy: csvsm's goes. */
	memzero_explicit(&secrets, sizeof(secrets));
	gl.vmpck = NULL;
	platform->launch_guest(&gl);
}
