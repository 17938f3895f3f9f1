/*
 * csvsm's IGVM launch image (include/attest/igvm_csvsm.h). Directive order
 * is chosen so that QEMU's issue order equals file order: the parameter
 * areas and their inserts first (QEMU issues an insert at once but holds
 * back a run of pages until the next page breaks it, backends/igvm.c), then
 * every page, then the VMSA, which KVM measures at launch finish anyway
 * (COCONUT's igvmmeasure --check-kvm requires it last). docs/igvm.md.
 */
#include <attest/igvm_build.h>
#include <attest/igvm_csvsm.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FW_LOWEST_GPA 0xFF000000ULL /* above LAPIC/HPET/IOAPIC; 16 MiB of flash at most */

struct launch_range {
	uint64_t gpa, size;
	uint32_t kind;
};

struct plan {
	struct launch_range r[CSVSM_IGVM_MAX_RANGES];
	uint32_t n;
};

static const char *kind_name(uint32_t kind)
{
	static const char *const names[] = {"?",	"image",   "boot block", "parameter area",
					    "firmware", "fw zero", "secrets",	 "cpuid",
					    "caa"};

	return kind < ARRAY_SIZE(names) ? names[kind] : "?";
}

static int plan_add(struct plan *pl, uint64_t gpa, uint64_t size, uint32_t kind, char *err,
		    size_t n)
{
	if (pl->n == CSVSM_IGVM_MAX_RANGES) {
		snprintf(err, n, "more than %d launch ranges", CSVSM_IGVM_MAX_RANGES);
		return -1;
	}
	for (uint32_t i = 0; i < pl->n; i++) {
		const struct launch_range *o = &pl->r[i];

		if (gpa < o->gpa + o->size && o->gpa < gpa + size) {
			snprintf(err, n, "%s [%#llx, %#llx) overlaps %s [%#llx, %#llx)",
				 kind_name(kind), (unsigned long long)gpa,
				 (unsigned long long)(gpa + size), kind_name(o->kind),
				 (unsigned long long)o->gpa,
				 (unsigned long long)(o->gpa + o->size));
			return -1;
		}
	}
	pl->r[pl->n++] = (struct launch_range){gpa, size, kind};
	return 0;
}

void igvm_csvsm_vmsa(struct vmsa *v, uint64_t entry, uint64_t sev_features)
{
	const struct vmsa_seg code = {
	    0x08, VMSA_SEG_P | VMSA_SEG_S | 0xB | VMSA_SEG_DB | VMSA_SEG_G, 0xFFFFFFFFu, 0};
	const struct vmsa_seg data = {0x10, VMSA_ATTR_DATA, 0xFFFFFFFFu, 0};

	memset(v, 0, sizeof(*v));
	v->cs = code; /* 0xC9B: 32-bit code */
	v->ds = v->es = v->fs = v->gs = v->ss = data;
	/*
	 * GDTR, IDTR, LDTR, TR, the x87 FCW and MXCSR stay zero (issue 35 item
	 * 3). The COCONUT QEMU 9-era branches' check_vmsa_supported()
	 * (coconut-svsm/qemu target/i386/sev.c at f5b85a5a) zeroes only the
	 * fields they copy into the vCPU and refuse a VMSA with anything else
	 * non-zero; QEMU >= 10.0 copies these too ("i386/sev: Implement
	 * ConfidentialGuestSupport functions for SEV" v7, sev_apply_cpu_context,
	 * which also takes TR's base from LDTR's: zero makes that moot) and so
	 * measures the zeros written here. csvsm's entry needs none of them:
	 * src/boot.S enter_long_mode32 loads its GDT before it reloads a
	 * segment register, cpu_enable_fpu sets FCW (FNINIT) and MXCSR
	 * (LDMXCSR), snp_boot_main loads the IDT, and a TSS is csvsm's own,
	 * loaded with LTR: until then no interrupt at CPL0 without an IST
	 * stack reads TR (APM vol. 2 §8.9.3).
	 * An exception or #HV before the IDT is loaded now meets IDTR limit 0
	 * and shuts the vCPU down instead of vectoring through guest memory at
	 * GPA 0 (the old limit 0xFFFF, base 0).
	 */
	v->efer = VMSA_EFER_SVME; /* KVM svm_set_efer() sets it */
	v->cr4 = 1ULL << 6;	  /* MCE: KVM svm_set_cr4() ORs in the host's */
	v->cr0 = 0x31;		  /* PE | ET | NE, paging off */
	v->dr7 = 0x400;
	v->dr6 = 0xFFFF0FF0;
	v->rflags = 0x2;
	v->rip = entry;
	v->rsi = CSVSM_IGVM_BOOT_BLOCK_GPA;
	v->g_pat = 0x0007040600070406ULL;
	v->xcr0 = 1;
	v->sev_features = sev_features;
}

/* The loaded bytes of page pg: file bytes of every segment that has some. */
static bool image_page(const struct igvm_csvsm_params *p, uint64_t pg, uint8_t *page, bool *covered)
{
	bool has_data = false;

	memset(page, 0, IGVM_PAGE_SIZE);
	*covered = false;
	for (size_t i = 0; i < p->n_segs; i++) {
		const struct ld_segment *s = &p->segs[i];
		uint64_t lo = MAX(s->paddr, pg),
			 hi = MIN(s->paddr + s->filesz, pg + IGVM_PAGE_SIZE);

		if (s->paddr < pg + IGVM_PAGE_SIZE && pg < s->paddr + s->memsz)
			*covered = true;
		if (lo < hi) {
			memcpy(page + (lo - pg), s->data + (lo - s->paddr), hi - lo);
			has_data = true;
		}
	}
	return has_data;
}

static int check_segments(const struct igvm_csvsm_params *p, uint64_t *lo, uint64_t *hi, char *err,
			  size_t n)
{
	*lo = ~0ULL;
	*hi = 0;
	if (!p->n_segs) {
		snprintf(err, n, "no PT_LOAD segment");
		return -1;
	}
	for (size_t i = 0; i < p->n_segs; i++) {
		const struct ld_segment *a = &p->segs[i];
		uint64_t end;

		/* Paging is off at entry: all of csvsm must sit below 4 GiB. */
		if (a->filesz > a->memsz || ADD_OVERFLOW(a->paddr, a->memsz, &end) ||
		    end > (4ULL << 30)) {
			snprintf(err, n, "PT_LOAD segment %zu: bad sizes, or not below 4 GiB", i);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			const struct ld_segment *b = &p->segs[j];

			if (a->paddr < b->paddr + b->memsz && b->paddr < end) {
				snprintf(err, n, "PT_LOAD segments %zu and %zu overlap", j, i);
				return -1;
			}
		}
		*lo = MIN(*lo, ALIGN_DOWN(a->paddr, IGVM_PAGE_SIZE));
		*hi = MAX(*hi, ALIGN_UP(end, IGVM_PAGE_SIZE));
	}
	return 0;
}

static int add_image(struct igvm_builder *b, const struct igvm_csvsm_params *p, struct plan *pl,
		     uint32_t *pages, char *err, size_t n)
{
	static uint8_t page[IGVM_PAGE_SIZE];
	uint64_t lo, hi, run = 0;
	bool in_run = false;

	if (check_segments(p, &lo, &hi, err, n))
		return -1;
	for (uint64_t pg = lo; pg <= hi; pg += IGVM_PAGE_SIZE) {
		bool covered = false, data = pg < hi && image_page(p, pg, page, &covered);

		if (covered) {
			if (!in_run)
				run = pg;
			in_run = true;
			if (igvm_builder_page(b, pg, 1, 0, IGVM_PAGE_DATA_NORMAL,
					      data ? page : NULL))
				goto oom;
			(*pages)++;
		} else if (in_run) {
			if (plan_add(pl, run, pg - run, CSVSM_IGVM_RANGE_IMAGE, err, n))
				return -1;
			in_run = false;
		}
	}
	return 0;
oom:
	snprintf(err, n, "out of memory");
	return -1;
}

static int add_zero(struct igvm_builder *b, struct plan *pl, uint64_t gpa, uint64_t size,
		    uint32_t kind, uint16_t data_type, uint32_t *pages, char *err, size_t n)
{
	if (!IS_ALIGNED(gpa, IGVM_PAGE_SIZE) || !IS_ALIGNED(size, IGVM_PAGE_SIZE) || !size) {
		snprintf(err, n, "firmware %s section [%#llx, +%#llx) not 4 KiB aligned",
			 kind_name(kind), (unsigned long long)gpa, (unsigned long long)size);
		return -1;
	}
	if (plan_add(pl, gpa, size, kind, err, n))
		return -1;
	for (uint64_t off = 0; off < size; off += IGVM_PAGE_SIZE, (*pages)++)
		if (igvm_builder_page(b, gpa + off, 1, 0, data_type, NULL)) {
			snprintf(err, n, "out of memory");
			return -1;
		}
	return 0;
}

/* OVMF's SNP metadata sections as the pages an OVMF-only QEMU launch gives
 * them (sev.c snp_metadata_desc_to_page_type; sev-snp-measure guest.py). */
static int add_fw_meta(struct igvm_builder *b, const struct ovmf_info *info, struct plan *pl,
		       struct csvsm_igvm_boot_block *bb, uint32_t *pages, char *err, size_t n)
{
	for (uint32_t i = 0; i < info->meta.n_items && i < OVMF_SEV_META_MAX_ITEMS; i++) {
		const struct ovmf_sev_meta_item *it = &info->meta.items[i];
		uint64_t gpa = it->gpa, size = it->size;
		int rc;

		switch (it->type) {
		case OVMF_SECTION_SNP_SEC_MEM:
		case OVMF_SECTION_SNP_KERNEL_HASHES:
			rc = add_zero(b, pl, gpa, size, CSVSM_IGVM_RANGE_FW_ZERO,
				      IGVM_PAGE_DATA_NORMAL, pages, err, n);
			break;
		case OVMF_SECTION_SVSM_CAA:
			rc = add_zero(b, pl, gpa, size, CSVSM_IGVM_RANGE_CAA, IGVM_PAGE_DATA_NORMAL,
				      pages, err, n);
			bb->caa_gpa = gpa;
			break;
		case OVMF_SECTION_SNP_SECRETS:
		case OVMF_SECTION_CPUID: {
			bool secrets = it->type == OVMF_SECTION_SNP_SECRETS;
			uint32_t flag =
			    secrets ? CSVSM_IGVM_F_SECRETS_IN_FW : CSVSM_IGVM_F_CPUID_IN_FW;

			if (bb->flags & flag) {
				snprintf(err, n, "firmware names two %s pages",
					 secrets ? "secrets" : "CPUID");
				return -1;
			}
			/* One page, as the PSP fills one (sev-snp-measure does the same). */
			rc = add_zero(b, pl, gpa, IGVM_PAGE_SIZE,
				      secrets ? CSVSM_IGVM_RANGE_SECRETS : CSVSM_IGVM_RANGE_CPUID,
				      secrets ? IGVM_PAGE_DATA_SECRETS : IGVM_PAGE_DATA_CPUID_DATA,
				      pages, err, n);
			bb->flags |= flag;
			if (secrets)
				bb->secrets_gpa = gpa;
			else
				bb->cpuid_gpa = gpa;
			break;
		}
		default:
			snprintf(err, n, "firmware SEV metadata section type %#x unknown",
				 it->type);
			return -1;
		}
		if (rc)
			return -1;
	}
	return 0;
}

static int add_params(struct igvm_builder *b, const struct igvm_csvsm_params *p, struct plan *pl,
		      struct csvsm_igvm_boot_block *bb, char *err, size_t n)
{
	const struct {
		uint32_t index, type, size;
		uint64_t gpa;
		struct csvsm_igvm_param *slot;
	} areas[] = {
	    {CSVSM_IGVM_PA_GENERAL, IGVM_VHT_VP_COUNT_PARAMETER, CSVSM_IGVM_GENERAL_SIZE,
	     CSVSM_IGVM_GENERAL_GPA, &bb->vp_count},
	    {CSVSM_IGVM_PA_MEMMAP, IGVM_VHT_MEMORY_MAP, CSVSM_IGVM_MEMMAP_SIZE,
	     CSVSM_IGVM_MEMMAP_GPA, &bb->memory_map},
	    {CSVSM_IGVM_PA_MADT, IGVM_VHT_MADT, CSVSM_IGVM_MADT_SIZE, CSVSM_IGVM_MADT_GPA,
	     &bb->madt},
	};

	for (size_t i = 0; i < ARRAY_SIZE(areas); i++) {
		if (areas[i].index == CSVSM_IGVM_PA_MADT && !p->madt)
			continue;
		if (igvm_builder_param_area(b, areas[i].index, areas[i].size) ||
		    igvm_builder_param(b, areas[i].type, areas[i].index, 0) ||
		    igvm_builder_insert(b, areas[i].gpa, 1, areas[i].index)) {
			snprintf(err, n, "out of memory");
			return -1;
		}
		if (plan_add(pl, areas[i].gpa, areas[i].size, CSVSM_IGVM_RANGE_PARAM, err, n))
			return -1;
		*areas[i].slot = (struct csvsm_igvm_param){areas[i].gpa, areas[i].size, 0};
	}
	if (p->madt)
		bb->flags |= CSVSM_IGVM_F_MADT;
	/* The vCPU count is the u32 at offset 0 of the general area. */
	bb->vp_count.size = 4;
	return 0;
}

/*
 * The vTPM configuration the boot block's page carries (igvm_boot.h): none
 * for an ephemeral image, so that its page is what it was before persistence
 * existed. A persistent mode needs a channel port and an instance; kbs also
 * the broker's key identity (without it any broker, the host's own included,
 * could release a key of its choosing: docs/vtpm.md "Persistence").
 */
static int vtpm_config(const struct igvm_csvsm_params *p, struct igvm_csvsm_image *img, char *err,
		       size_t n)
{
	static const uint8_t zero[CSVSM_IGVM_VTPM_BROKER_ID];
	const struct csvsm_igvm_vtpm *v = p->vtpm;

	if (!v || v->mode == CSVSM_VTPM_MODE_EPHEMERAL)
		return 0;
	if (v->mode != CSVSM_VTPM_MODE_SEALED && v->mode != CSVSM_VTPM_MODE_KBS) {
		snprintf(err, n, "unknown vTPM mode %u", v->mode);
		return -1;
	}
	if (!v->port || v->port > 0xFFF8 || (v->flags & ~CSVSM_IGVM_VTPM_F_TCB) ||
	    (!(v->flags & CSVSM_IGVM_VTPM_F_TCB) && v->tcb_version)) {
		snprintf(err, n, "vTPM channel port %#x or flags %#x unusable", v->port, v->flags);
		return -1;
	}
	if (!memcmp(v->instance, zero, sizeof(v->instance))) {
		snprintf(err, n, "a persistent vTPM needs an instance identity");
		return -1;
	}
	if ((v->mode == CSVSM_VTPM_MODE_KBS) != !!memcmp(v->broker_key, zero, sizeof(zero))) {
		snprintf(err, n,
			 "the broker key identity goes with vTPM mode kbs, and only with it");
		return -1;
	}
	img->vtpm = *v;
	img->vtpm.magic = CSVSM_IGVM_VTPM_MAGIC;
	memset(img->vtpm.rsvd, 0, sizeof(img->vtpm.rsvd));
	return 0;
}

int igvm_csvsm_build(const struct igvm_csvsm_params *p, struct igvm_csvsm_image *img, char *err,
		     size_t n)
{
	static uint8_t page[IGVM_PAGE_SIZE];
	struct csvsm_igvm_boot_block *bb = &img->boot;
	struct igvm_builder b;
	struct plan pl = {0};
	uint64_t lo, hi, region_size = p->region_size ? p->region_size : CSVSM_IGVM_REGION_SIZE;
	uint64_t fw_gpa;
	struct vmsa vmsa;

	memset(img, 0, sizeof(*img));
	if (!p->fw || !p->fw_info || !p->fw_len || !IS_ALIGNED(p->fw_len, IGVM_PAGE_SIZE) ||
	    p->fw_len > (4ULL << 30) - FW_LOWEST_GPA) {
		snprintf(err, n, "firmware size %zu: not a multiple of 4 KiB in (0, 16 MiB]",
			 p->fw_len);
		return -1;
	}
	if (!p->fw_info->has_sev_meta) {
		snprintf(err, n, "firmware has no SEV metadata: not an SNP-capable OVMF");
		return -1;
	}
	if (p->entry >= (4ULL << 30)) {
		snprintf(err, n, "entry %#llx is not a 32-bit address",
			 (unsigned long long)p->entry);
		return -1;
	}
	if (p->cmdline && strlen(p->cmdline) >= CSVSM_IGVM_CMDLINE_SIZE) {
		snprintf(err, n, "command line longer than %d bytes", CSVSM_IGVM_CMDLINE_SIZE - 1);
		return -1;
	}
	if (check_segments(p, &lo, &hi, err, n) || vtpm_config(p, img, err, n))
		return -1;
	fw_gpa = (4ULL << 30) - p->fw_len;

	bb->magic = CSVSM_IGVM_BOOT_MAGIC;
	bb->version = CSVSM_IGVM_BOOT_VERSION;
	bb->size = sizeof(*bb);
	bb->region_start = ALIGN_DOWN(lo, PAGE_SIZE_2M);
	bb->region_end = bb->region_start + region_size;
	bb->image_start = lo;
	bb->image_end = hi;
	bb->entry = p->entry;
	bb->sev_features = p->sev_features;
	bb->policy = p->policy;
	bb->fw_gpa = fw_gpa;
	bb->fw_size = p->fw_len;
	bb->fw_ap_reset_eip = p->fw_info->has_reset_eip ? p->fw_info->reset_eip : 0;
	bb->vtpm_mode = img->vtpm.mode;
	if (p->cmdline)
		memcpy(bb->cmdline, p->cmdline, strlen(p->cmdline));
	if (hi > bb->region_end || region_size > (1ULL << 32) ||
	    !IS_ALIGNED(region_size, PAGE_SIZE)) {
		snprintf(err, n, "csvsm's image [%#llx, %#llx) does not fit its %#llx-byte region",
			 (unsigned long long)lo, (unsigned long long)hi,
			 (unsigned long long)region_size);
		return -1;
	}
	if (p->entry < lo || p->entry >= hi) {
		snprintf(err, n, "entry %#llx outside csvsm's image", (unsigned long long)p->entry);
		return -1;
	}
	if (bb->region_start < CSVSM_IGVM_GAP_START || bb->region_end > CSVSM_IGVM_BOOT_BLOCK_GPA)
		bb->flags |= CSVSM_IGVM_F_REGION_IN_RAM;

	igvm_builder_init(&b);
	/* Platform: SEV-SNP, VTL2 = VMPL0 highest; no vTOM. Policy for it. */
	if (igvm_builder_platform(&b, 1, IGVM_PLATFORM_SEV_SNP, CSVSM_IGVM_HIGHEST_VTL, 0) ||
	    igvm_builder_policy(&b, p->policy, 1))
		goto oom;
	/* The region and the boot area reserve their GPAs before anything lands. */
	if (plan_add(&pl, CSVSM_IGVM_BOOT_BLOCK_GPA, IGVM_PAGE_SIZE, CSVSM_IGVM_RANGE_BOOT, err,
		     n) ||
	    add_params(&b, p, &pl, bb, err, n))
		goto fail;
	if (bb->region_end > hi &&
	    igvm_builder_required(&b, hi, 1, (uint32_t)(bb->region_end - hi), 0))
		goto oom;
	if (add_image(&b, p, &pl, &img->n_pages, err, n) ||
	    plan_add(&pl, fw_gpa, p->fw_len, CSVSM_IGVM_RANGE_FIRMWARE, err, n))
		goto fail;
	if (fw_gpa < CSVSM_IGVM_BOOT_END) {
		snprintf(err, n, "firmware too large: it would reach below %#llx",
			 (unsigned long long)CSVSM_IGVM_BOOT_END);
		goto fail;
	}
	if (add_fw_meta(&b, p->fw_info, &pl, bb, &img->n_pages, err, n))
		goto fail;
	if (!(bb->flags & CSVSM_IGVM_F_SECRETS_IN_FW)) {
		bb->secrets_gpa = CSVSM_IGVM_SECRETS_FALLBACK;
		if (add_zero(&b, &pl, bb->secrets_gpa, IGVM_PAGE_SIZE, CSVSM_IGVM_RANGE_SECRETS,
			     IGVM_PAGE_DATA_SECRETS, &img->n_pages, err, n))
			goto fail;
	}
	if (!(bb->flags & CSVSM_IGVM_F_CPUID_IN_FW)) {
		bb->cpuid_gpa = CSVSM_IGVM_CPUID_FALLBACK;
		if (add_zero(&b, &pl, bb->cpuid_gpa, IGVM_PAGE_SIZE, CSVSM_IGVM_RANGE_CPUID,
			     IGVM_PAGE_DATA_CPUID_DATA, &img->n_pages, err, n))
			goto fail;
	}

	/* Nothing but csvsm's image may sit in its region (the rest is REQUIRED_MEMORY). */
	for (uint32_t i = 0; i < pl.n; i++) {
		const struct launch_range *r = &pl.r[i];

		if (r->kind != CSVSM_IGVM_RANGE_IMAGE && r->gpa < bb->region_end &&
		    bb->region_start < r->gpa + r->size) {
			snprintf(err, n, "%s [%#llx, +%#llx) inside csvsm's region",
				 kind_name(r->kind), (unsigned long long)r->gpa,
				 (unsigned long long)r->size);
			goto fail;
		}
	}
	/* Every range is known: the boot block lists them; it and the firmware
	 * image are the last pages, the VMSA the last directive. */
	bb->n_ranges = pl.n;
	for (uint32_t i = 0; i < pl.n; i++)
		bb->ranges[i] =
		    (struct csvsm_igvm_range){pl.r[i].gpa, pl.r[i].size, pl.r[i].kind, 0};
	memset(page, 0, sizeof(page));
	memcpy(page, bb, sizeof(*bb));
	if (img->vtpm.mode != CSVSM_VTPM_MODE_EPHEMERAL)
		memcpy(page + CSVSM_IGVM_VTPM_OFF, &img->vtpm, sizeof(img->vtpm));
	if (igvm_builder_page(&b, CSVSM_IGVM_BOOT_BLOCK_GPA, 1, 0, IGVM_PAGE_DATA_NORMAL, page))
		goto oom;
	img->n_pages++;
	for (uint64_t off = 0; off < p->fw_len; off += IGVM_PAGE_SIZE, img->n_pages++)
		if (igvm_builder_page(&b, fw_gpa + off, 1, 0, IGVM_PAGE_DATA_NORMAL, p->fw + off))
			goto oom;
	igvm_csvsm_vmsa(&vmsa, p->entry, p->sev_features);
	if (igvm_builder_vp_context(&b, IGVM_VMSA_GPA, 1, 0, (const uint8_t *)&vmsa))
		goto oom;
	if (igvm_builder_finish(&b, &img->file, &img->len)) {
		snprintf(err, n, "out of memory or file over 4 GiB");
		return -1;
	}
	return 0;
oom:
	snprintf(err, n, "out of memory");
fail:
	igvm_builder_free(&b);
	return -1;
}
