/*
 * csvsm-measure: the expected SEV-SNP launch MEASUREMENT of a guest, with
 * the command-line interface of virtee/sev-snp-measure (sevsnpmeasure/cli.py)
 * so that its users can switch. Also computes the digest of an IGVM launch
 * image as QEMU loads it (--igvm FILE, with --dump to list its headers;
 * docs/igvm.md).
 *
 * Exit status: 0 with the digest alone on stdout; 2 on a usage error; 1 when
 * an input cannot be read or does not have what the mode needs.
 */
#include <attest/igvm.h>
#include <attest/launch_digest.h>
#include <attest/ovmf_meta.h>
#include <csvsm/igvm_boot.h>

#include "vtpm_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXIT_USAGE	      2
#define CSVSM_MEASURE_VERSION "0.1"

enum mode { MODE_SNP, MODE_SNP_OVMF_HASH, MODE_SNP_SVSM };

struct vcpu_type {
	const char *name;
	unsigned family, model, stepping;
};

/* QEMU CPU models (interfaces digest §8.1; sevsnpmeasure/vcpu_types.py). */
static const struct vcpu_type vcpu_types[] = {
    {"EPYC", 23, 1, 2},		 {"EPYC-v1", 23, 1, 2},	      {"EPYC-v2", 23, 1, 2},
    {"EPYC-IBPB", 23, 1, 2},	 {"EPYC-v3", 23, 1, 2},	      {"EPYC-v4", 23, 1, 2},
    {"EPYC-Rome", 23, 49, 0},	 {"EPYC-Rome-v1", 23, 49, 0}, {"EPYC-Rome-v2", 23, 49, 0},
    {"EPYC-Rome-v3", 23, 49, 0}, {"EPYC-Milan", 25, 1, 1},    {"EPYC-Milan-v1", 25, 1, 1},
    {"EPYC-Milan-v2", 25, 1, 1}, {"EPYC-Genoa", 25, 17, 0},   {"EPYC-Genoa-v1", 25, 17, 0},
};

static const char *prog = "csvsm-measure";

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s --mode snp|snp:svsm|snp:ovmf-hash --ovmf FILE [options]\n"
	    "       %s --igvm FILE [--vcpus N [--vcpu-type NAME]] [--zero-pages normal|zero]\n"
	    "       %s --igvm FILE --dump\n"
	    "  --vcpus N                 number of vCPUs (snp, snp:svsm)\n"
	    "  --vcpu-type NAME          QEMU CPU model (EPYC-v4, EPYC-Milan, ...)\n"
	    "  --vcpu-sig N              CPUID(1).EAX signature\n"
	    "  --vcpu-family/--vcpu-model/--vcpu-stepping N\n"
	    "  --vmm-type qemu           (only QEMU is supported)\n"
	    "  --kernel FILE [--initrd FILE] [--append CMDLINE]\n"
	    "  --guest-features N        SEV_FEATURES (default 0x1)\n"
	    "  --snp-ovmf-hash HEX       precomputed OVMF hash (snp mode)\n"
	    "  --svsm FILE               SVSM image (snp:svsm)\n"
	    "  --vars-size N | --vars-file FILE   OVMF vars size (snp:svsm)\n"
	    "  --output-format hex|base64\n"
	    "  --dump-vmsa               write vmsa<i>.bin to the current directory\n"
	    "  -v, --verbose             label the output line\n"
	    "  --igvm FILE               SNP launch digest of an IGVM file as QEMU loads it\n"
	    "  --dump                    with --igvm: list every header instead\n"
	    "  --vtpm-mode MODE [--vtpm-instance HEX] [--vtpm-port N] [--vtpm-tcb N]\n"
	    "  [--vtpm-broker-key PEM]  with --igvm: print the digest only if the image's "
	    "measured\n"
	    "                            vTPM configuration is exactly this (docs/vtpm.md)\n"
	    "  --zero-pages normal|zero  with --igvm: pages without data as NORMAL pages of\n"
	    "                            zeros (QEMU/KVM, default) or as the PSP ZERO page\n"
	    "                            type (a VMM issuing SNP_PAGE_TYPE_ZERO, e.g. Vanadium)\n"
	    "  --host-sev-features N     with --igvm: the SEV_FEATURES the host's KVM supports\n"
	    "                            (KVM_X86_SEV_VMSA_FEATURES: 0x8 restricted_injection,\n"
	    "                            0x20 debug_swap); exit 1, as QEMU >= 10.1 refuses the\n"
	    "                            launch, if the image's VMSA asks for more\n"
	    "  --version\n",
	    prog, prog, prog);
}

static int usage_err(const char *fmt, const char *arg)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, arg ? arg : "");
	fputc('\n', stderr);
	usage(stderr);
	return EXIT_USAGE;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 0);
	return (errno || *end) ? -1 : 0;
}

static int parse_hex(const char *s, uint8_t *out, size_t n)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (strlen(s) != 2 * n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		char b[3] = {s[2 * i], s[2 * i + 1], 0};
		char *end;

		if (!strchr("0123456789abcdefABCDEF", b[0]) ||
		    !strchr("0123456789abcdefABCDEF", b[1]))
			return -1;
		v = (unsigned)strtoul(b, &end, 16);
		out[i] = (uint8_t)v;
	}
	return 0;
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb;

			cap = cap ? cap * 2 : 1 << 20;
			nb = realloc(buf, cap);
			if (!nb) {
				fprintf(stderr, "%s: %s: out of memory\n", prog, path);
				goto fail;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n, f);

		n += r;
		if (r == 0) {
			if (ferror(f)) {
				fprintf(stderr, "%s: %s: read error\n", prog, path);
				goto fail;
			}
			break;
		}
	}
	fclose(f);
	*len = n;
	return buf ? buf : calloc(1, 1);
fail:
	free(buf);
	fclose(f);
	return NULL;
}

static uint32_t cpu_sig(uint64_t family, uint64_t model, uint64_t stepping)
{
	uint32_t fam_lo = family > 0xF ? 0xF : (uint32_t)family;
	uint32_t fam_hi = family > 0xF ? (uint32_t)(family - 0xF) & 0xFF : 0;

	return (fam_hi << 20) | ((uint32_t)(model >> 4) & 0xF) << 16 | (fam_lo << 8) |
	       ((uint32_t)model & 0xF) << 4 | ((uint32_t)stepping & 0xF);
}

static void print_digest(const uint8_t *d, size_t n, bool base64)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	if (!base64) {
		for (size_t i = 0; i < n; i++)
			printf("%02x", d[i]);
		putchar('\n');
		return;
	}
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)d[i] << 16;
		size_t left = n - i;

		if (left > 1)
			v |= (uint32_t)d[i + 1] << 8;
		if (left > 2)
			v |= d[i + 2];
		putchar(b64[(v >> 18) & 63]);
		putchar(b64[(v >> 12) & 63]);
		putchar(left > 1 ? b64[(v >> 6) & 63] : '=');
		putchar(left > 2 ? b64[v & 63] : '=');
	}
	putchar('\n');
}

static int load_firmware(const char *path, uint8_t **img, size_t *len, struct ovmf_info *info,
			 bool need_meta)
{
	int rc;

	*img = read_file(path, len);
	if (!*img)
		return 1;
	if (*len == 0 || *len % PAGE_SIZE || *len > LD_FOUR_GB) {
		fprintf(stderr, "%s: %s: size %zu is not a non-zero multiple of 4096 below 4 GiB\n",
			prog, path, *len);
		return 1;
	}
	rc = ovmf_info_parse(*img, *len, info);
	if (rc && (need_meta || rc != OVMF_META_ERR_NO_FOOTER)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, ovmf_meta_strerror(rc));
		return 1;
	}
	return 0;
}

/*
 * --dump-vmsa: write vmsa<i>.bin in the current directory, the pages the
 * digest measured (guest.py dump_vmsa).
 */
static int write_vmsas(enum mode mode, uint32_t vcpus, uint32_t sig, uint64_t features,
		       const struct ovmf_info *info, size_t ovmf_len, size_t svsm_len,
		       uint64_t vars_size)
{
	static uint8_t page[PAGE_SIZE];

	for (uint32_t i = 0; i < vcpus; i++) {
		char name[32];
		FILE *f;

		if (mode == MODE_SNP_SVSM)
			launch_digest_build_vmsa_svsm(page,
						      LD_FOUR_GB - ovmf_len - vars_size - svsm_len +
							  info->svsm_entry_off,
						      features, sig);
		else
			launch_digest_build_vmsa(page, i == 0 ? LD_BSP_EIP : info->reset_eip,
						 features, sig);
		snprintf(name, sizeof(name), "vmsa%u.bin", i);
		f = fopen(name, "wb");
		if (!f || fwrite(page, 1, PAGE_SIZE, f) != PAGE_SIZE || fclose(f)) {
			fprintf(stderr, "%s: %s: %s\n", prog, name, strerror(errno));
			return 1;
		}
	}
	return 0;
}

/* ---- --igvm: an IGVM launch image (attest/igvm.c, docs/igvm.md) ---- */

static void print_hex(const uint8_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", d[i]);
}

static const char *snp_page_name(uint8_t t)
{
	switch (t) {
	case LD_PAGE_NORMAL:
		return "NORMAL";
	case LD_PAGE_VMSA:
		return "VMSA";
	case LD_PAGE_ZERO:
		return "ZERO";
	case LD_PAGE_UNMEASURED:
		return "UNMEASURED";
	case LD_PAGE_SECRETS:
		return "SECRETS";
	case LD_PAGE_CPUID:
		return "CPUID";
	}
	return "?";
}

static const char *page_data_name(uint16_t t)
{
	static const char *const names[] = {"NORMAL", "SECRETS", "CPUID_DATA", "CPUID_XF"};

	return t < ARRAY_SIZE(names) ? names[t] : "?";
}

static const char *section_name(enum igvm_section s)
{
	return s == IGVM_SECTION_PLATFORM ? "platform"
	       : s == IGVM_SECTION_INIT	  ? "init"
					  : "directive";
}

static uint64_t area_size(const struct igvm_file *f, uint32_t index)
{
	for (uint32_t i = 0; i < f->n_areas; i++)
		if (f->areas[i].index == index)
			return f->areas[i].size;
	return 0;
}

/* One line per header: type, GPA, flags, data type, size, SHA-384 of its data. */
/*
 * Whether a VMSA has zero in the fields the COCONUT QEMU 9-era branches'
 * check_vmsa_supported() neither copies nor clears (coconut-svsm/qemu
 * target/i386/sev.c at f5b85a5a): GDTR, LDTR, IDTR, TR (0x060..0x09F),
 * MXCSR (0x408) and the x87 FCW (0x410). QEMU >= 10.0 copies them.
 */
static bool vmsa_pre10_fields_zero(const uint8_t *v)
{
	static const uint8_t zero[0x40];

	return !memcmp(v + 0x60, zero, 0x40) && !memcmp(v + 0x408, zero, 4) &&
	       !memcmp(v + 0x410, zero, 2);
}

static void igvm_dump_file(const struct igvm_file *f, bool native_zero)
{
	struct igvm_iter it;
	struct igvm_header h;
	uint8_t d[LD_SHA384_LEN];

	printf("# %zu bytes, %u headers (%u platform, %u init, %u directive), file data at %#x\n",
	       f->len, f->n_headers, f->n_platform_headers, f->n_init_headers, f->n_directives,
	       f->data_off);
	igvm_iter_init(&it, f);
	while (igvm_iter_next(&it, &h)) {
		printf("#%-6u %-9s %-26s", h.index, section_name(h.section),
		       igvm_header_name(h.type));
		switch (h.type) {
		case IGVM_VHT_SUPPORTED_PLATFORM:
			printf(" mask=%#x platform=%s highest_vtl=%u version=%u "
			       "shared_gpa_boundary=%#llx",
			       h.u.platform.compatibility_mask,
			       igvm_platform_name(h.u.platform.platform_type),
			       h.u.platform.highest_vtl, h.u.platform.platform_version,
			       (unsigned long long)h.u.platform.shared_gpa_boundary);
			break;
		case IGVM_VHT_GUEST_POLICY: {
			uint64_t pol = h.u.policy.policy;

			printf(" mask=%#x policy=%#llx abi=%llu.%llu smt=%d migrate_ma=%d debug=%d "
			       "single_socket=%d",
			       h.u.policy.compatibility_mask, (unsigned long long)pol,
			       (unsigned long long)((pol >> SNP_POLICY_ABI_MAJOR_SHIFT) & 0xFF),
			       (unsigned long long)(pol & SNP_POLICY_ABI_MINOR_MASK),
			       !!(pol & SNP_POLICY_SMT), !!(pol & SNP_POLICY_MIGRATE_MA),
			       !!(pol & SNP_POLICY_DEBUG), !!(pol & SNP_POLICY_SINGLE_SOCKET));
			break;
		}
		case IGVM_VHT_PARAMETER_AREA:
			printf(" index=%u size=%#llx", h.u.area.parameter_area_index,
			       (unsigned long long)h.u.area.number_of_bytes);
			break;
		case IGVM_VHT_PARAMETER_INSERT:
			printf(" gpa=%#llx mask=%#x index=%u size=%#llx snp=UNMEASURED",
			       (unsigned long long)h.u.insert.gpa, h.u.insert.compatibility_mask,
			       h.u.insert.parameter_area_index,
			       (unsigned long long)area_size(f, h.u.insert.parameter_area_index));
			break;
		case IGVM_VHT_VP_COUNT_PARAMETER:
		case IGVM_VHT_MADT:
		case IGVM_VHT_MEMORY_MAP:
		case IGVM_VHT_ENVIRONMENT_INFO_PARAMETER:
			printf(" index=%u byte_offset=%#x", h.u.param.parameter_area_index,
			       h.u.param.byte_offset);
			break;
		case IGVM_VHT_PAGE_DATA: {
			const struct igvm_vhs_page_data *pg = &h.u.page;
			bool snp = f->snp_mask & pg->compatibility_mask;

			printf(
			    " gpa=%#llx mask=%#x flags=%#x data_type=%s size=%#x snp=%s",
			    (unsigned long long)pg->gpa, pg->compatibility_mask, pg->flags,
			    page_data_name(pg->data_type),
			    (pg->flags & IGVM_PAGE_FLAG_2MB) ? IGVM_PAGE_SIZE_2M : IGVM_PAGE_SIZE,
			    snp ? snp_page_name(igvm_snp_page_type(pg, h.data != NULL, native_zero))
				: "-");
			if (h.data) {
				ld_hash_mbedtls.sha384(h.data, h.data_len, d);
				printf(" sha384=");
				print_hex(d, sizeof(d));
			} else {
				printf(" sha384=-");
			}
			break;
		}
		case IGVM_VHT_VP_CONTEXT: {
			uint64_t rip, features;

			memcpy(&rip, h.data + 0x178, sizeof(rip)); /* VMSA RIP, little-endian */
			memcpy(&features, h.data + 0x3B0, sizeof(features));
			ld_hash_mbedtls.sha384(h.data, h.data_len, d);
			printf(" gpa=%#llx mask=%#x vp_index=%u size=%#zx rip=%#llx "
			       "sev_features=%#llx qemu9-fields=%s "
			       "snp=VMSA sha384=",
			       (unsigned long long)h.u.vp.gpa, h.u.vp.compatibility_mask,
			       h.u.vp.vp_index, h.data_len, (unsigned long long)rip,
			       (unsigned long long)features,
			       vmsa_pre10_fields_zero(h.data) ? "zero" : "nonzero");
			print_hex(d, sizeof(d));
			break;
		}
		case IGVM_VHT_REQUIRED_MEMORY:
			printf(" gpa=%#llx mask=%#x size=%#x flags=%#x",
			       (unsigned long long)h.u.mem.gpa, h.u.mem.compatibility_mask,
			       h.u.mem.number_of_bytes, h.u.mem.flags);
			break;
		case IGVM_VHT_SNP_ID_BLOCK:
			printf(
			    " mask=%#x author_key=%u guest_svn=%u ld=", h.u.id.compatibility_mask,
			    h.u.id.author_key_enabled, h.u.id.guest_svn);
			print_hex(h.u.id.ld, sizeof(h.u.id.ld));
			break;
		}
		putchar('\n');
	}
}

/*
 * SEV_FEATURES of the file's SEV-SNP VMSAs that the host's KVM does not
 * support, as QEMU >= 10.1 checks them (target/i386/sev.c check_sev_features
 * against KVM_X86_SEV_VMSA_FEATURES, from sev_common_kvm_init): 0 if none.
 */
static uint64_t unsupported_features(const struct igvm_file *f, uint64_t host)
{
	uint64_t bad = 0;

	for (uint32_t i = 0; i < f->n_vp; i++) {
		uint64_t features;

		memcpy(&features, f->data + f->vp_data[i] + 0x3B0, sizeof(features));
		bad |= features & ~host;
	}
	return bad;
}

/* --vtpm-*: the persistence configuration the image must carry (tools/vtpm_opts.h). */
static struct vtpm_opts vtpm_want;
static bool vtpm_check;

/*
 * The measured boot block page (include/csvsm/igvm_boot.h) must hold the
 * wanted vTPM mode and configuration, so that the digest printed is the
 * digest of an image in that mode: 0, or 1 with the difference on stderr.
 */
static int vtpm_config_check(const struct igvm_file *f, const char *path)
{
	struct igvm_iter it;
	struct igvm_header h;
	const uint8_t *page = NULL;
	struct csvsm_igvm_vtpm want = vtpm_want.cfg, have;
	uint32_t mode;

	igvm_iter_init(&it, f);
	while (igvm_iter_next(&it, &h))
		if (h.type == IGVM_VHT_PAGE_DATA && h.u.page.gpa == CSVSM_IGVM_BOOT_BLOCK_GPA &&
		    h.data && h.data_len >= IGVM_PAGE_SIZE)
			page = h.data;
	if (!page) {
		fprintf(stderr, "%s: %s: no csvsm boot block at %#llx\n", prog, path,
			(unsigned long long)CSVSM_IGVM_BOOT_BLOCK_GPA);
		return 1;
	}
	memcpy(&mode, page + offsetof(struct csvsm_igvm_boot_block, vtpm_mode), sizeof(mode));
	memcpy(&have, page + CSVSM_IGVM_VTPM_OFF, sizeof(have));
	if (want.mode == CSVSM_VTPM_MODE_EPHEMERAL)
		memset(&want, 0, sizeof(want));
	else
		want.magic = CSVSM_IGVM_VTPM_MAGIC;
	if (mode != want.mode || memcmp(&have, &want, sizeof(want))) {
		fprintf(
		    stderr,
		    "%s: %s: the image's vTPM configuration is not the one asked for (its mode: "
		    "%s%s)\n",
		    prog, path, vtpm_mode_name(mode),
		    mode == want.mode ? "; instance, port, TCB or broker key differ" : "");
		return 1;
	}
	return 0;
}

static int igvm_main(const char *path, bool dump, uint32_t vcpus, uint32_t sig, bool have_sig,
		     bool native_zero, bool base64, bool verbose, bool have_host_features,
		     uint64_t host_features)
{
	static struct igvm_file f;
	struct igvm_snp_opts o = {
	    .vcpus = vcpus, .vcpu_sig = sig, .have_sig = have_sig, .native_zero = native_zero};
	struct igvm_range *scratch = NULL;
	uint8_t digest[LD_SHA384_LEN], *buf;
	size_t len, n;
	int rc;

	if (!(buf = read_file(path, &len)))
		return 1;
	n = igvm_scratch_entries(buf, len);
	scratch = calloc(n ? n : 1, sizeof(*scratch));
	if (!scratch) {
		fprintf(stderr, "%s: %s: out of memory\n", prog, path);
		free(buf);
		return 1;
	}
	rc = igvm_parse(&f, buf, len, scratch, n);
	if (rc) {
		fprintf(stderr, "%s: %s: %s: %s (header #%u, file offset %#zx)\n", prog, path,
			igvm_strerror(rc), f.err_detail ? f.err_detail : "", f.err_index,
			f.err_offset);
		rc = 1;
		goto out;
	}
	if (dump) {
		igvm_dump_file(&f, native_zero);
		goto out;
	}
	if (have_host_features && unsupported_features(&f, host_features | 1)) {
		uint64_t features;

		memcpy(&features, f.data + f.vp_data[0] + 0x3B0, sizeof(features));
		/* QEMU's words: the launch ends there (check_sev_features). */
		fprintf(stderr,
			"%s: %s: a host with KVM SEV_FEATURES %#llx refuses this image: \"VMSA "
			"contains unsupported sev_features: %llX, supported features: %llX\" "
			"(QEMU >= 10.1 check_sev_features)\n",
			prog, path, (unsigned long long)host_features, (unsigned long long)features,
			(unsigned long long)host_features);
		rc = 1;
		goto out;
	}
	if (vtpm_check && (rc = vtpm_config_check(&f, path)))
		goto out;
	rc = igvm_snp_digest(&f, &ld_hash_mbedtls, &o, digest, NULL, NULL);
	if (rc) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, igvm_strerror(rc));
		rc = 1;
		goto out;
	}
	if (f.has_id_block && memcmp(f.id_block_ld, digest, sizeof(digest)))
		fprintf(stderr, "%s: warning: the ID block's LD differs from this digest\n", prog);
	if (verbose)
		printf("Calculated IGVM SEV_SNP guest measurement: ");
	print_digest(digest, sizeof(digest), base64);
out:
	free(scratch);
	free(buf);
	return rc;
}

enum {
	OPT_MODE = 256,
	OPT_VCPUS,
	OPT_VCPU_TYPE,
	OPT_VCPU_SIG,
	OPT_VCPU_FAMILY,
	OPT_VCPU_MODEL,
	OPT_VCPU_STEPPING,
	OPT_VMM_TYPE,
	OPT_OVMF,
	OPT_KERNEL,
	OPT_INITRD,
	OPT_APPEND,
	OPT_GUEST_FEATURES,
	OPT_SNP_OVMF_HASH,
	OPT_SVSM,
	OPT_VARS_SIZE,
	OPT_VARS_FILE,
	OPT_OUTPUT_FORMAT,
	OPT_DUMP_VMSA,
	OPT_VERSION,
	OPT_IGVM,
	OPT_DUMP,
	OPT_ZERO_PAGES,
	OPT_HOST_FEATURES,
	OPT_VTPM_MODE,
	OPT_VTPM_INSTANCE,
	OPT_VTPM_PORT,
	OPT_VTPM_TCB,
	OPT_VTPM_BROKER,
};

static const struct option long_opts[] = {
    {"mode", required_argument, NULL, OPT_MODE},
    {"vcpus", required_argument, NULL, OPT_VCPUS},
    {"vcpu-type", required_argument, NULL, OPT_VCPU_TYPE},
    {"vcpu-sig", required_argument, NULL, OPT_VCPU_SIG},
    {"vcpu-family", required_argument, NULL, OPT_VCPU_FAMILY},
    {"vcpu-model", required_argument, NULL, OPT_VCPU_MODEL},
    {"vcpu-stepping", required_argument, NULL, OPT_VCPU_STEPPING},
    {"vmm-type", required_argument, NULL, OPT_VMM_TYPE},
    {"ovmf", required_argument, NULL, OPT_OVMF},
    {"kernel", required_argument, NULL, OPT_KERNEL},
    {"initrd", required_argument, NULL, OPT_INITRD},
    {"append", required_argument, NULL, OPT_APPEND},
    {"guest-features", required_argument, NULL, OPT_GUEST_FEATURES},
    {"snp-ovmf-hash", required_argument, NULL, OPT_SNP_OVMF_HASH},
    {"svsm", required_argument, NULL, OPT_SVSM},
    {"vars-size", required_argument, NULL, OPT_VARS_SIZE},
    {"vars-file", required_argument, NULL, OPT_VARS_FILE},
    {"output-format", required_argument, NULL, OPT_OUTPUT_FORMAT},
    {"dump-vmsa", no_argument, NULL, OPT_DUMP_VMSA},
    {"igvm", required_argument, NULL, OPT_IGVM},
    {"dump", no_argument, NULL, OPT_DUMP},
    {"zero-pages", required_argument, NULL, OPT_ZERO_PAGES},
    {"host-sev-features", required_argument, NULL, OPT_HOST_FEATURES},
    {"vtpm-mode", required_argument, NULL, OPT_VTPM_MODE},
    {"vtpm-instance", required_argument, NULL, OPT_VTPM_INSTANCE},
    {"vtpm-port", required_argument, NULL, OPT_VTPM_PORT},
    {"vtpm-tcb", required_argument, NULL, OPT_VTPM_TCB},
    {"vtpm-broker-key", required_argument, NULL, OPT_VTPM_BROKER},
    {"verbose", no_argument, NULL, 'v'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	const char *mode_s = NULL, *vcpu_type = NULL, *ovmf_path = NULL, *kernel = NULL;
	const char *initrd = NULL, *append = NULL, *svsm_path = NULL, *vars_file = NULL;
	const char *seed_s = NULL, *igvm_path = NULL;
	bool igvm_dump = false, native_zero = false;
	uint64_t vcpus = 0, sig = 0, fam = 0, model = 0, step = 0, features = 0x1, vars_size = 0;
	bool have_vcpus = false, have_sig = false, have_fam = false, have_model = false;
	bool have_step = false, have_vars_size = false, base64 = false;
	bool verbose = false, dump_vmsa = false, have_host_features = false;
	uint64_t host_features = 0;
	uint8_t seed[LD_SHA384_LEN], digest[LD_SHA384_LEN];
	uint8_t *ovmf = NULL, *svsm = NULL;
	size_t ovmf_len = 0, svsm_len = 0;
	static struct ovmf_info ovmf_info, svsm_info;
	enum mode mode;
	int c, idx = 0, rc = 1;
	char verr[256];

	vtpm_opts_init(&vtpm_want);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hv", long_opts, &idx)) != -1) {
		uint64_t *num = NULL;
		bool *flag = NULL;

		switch (c) {
		case OPT_VTPM_MODE:
		case OPT_VTPM_INSTANCE:
		case OPT_VTPM_PORT:
		case OPT_VTPM_TCB:
		case OPT_VTPM_BROKER:
			if (vtpm_opts_parse(&vtpm_want, long_opts[idx].name, optarg, verr,
					    sizeof(verr)))
				return usage_err("%s", verr);
			vtpm_check = true;
			break;
		case OPT_MODE:
			mode_s = optarg;
			break;
		case OPT_VCPUS:
			num = &vcpus;
			flag = &have_vcpus;
			break;
		case OPT_VCPU_TYPE:
			vcpu_type = optarg;
			break;
		case OPT_VCPU_SIG:
			num = &sig;
			flag = &have_sig;
			break;
		case OPT_VCPU_FAMILY:
			num = &fam;
			flag = &have_fam;
			break;
		case OPT_VCPU_MODEL:
			num = &model;
			flag = &have_model;
			break;
		case OPT_VCPU_STEPPING:
			num = &step;
			flag = &have_step;
			break;
		case OPT_VMM_TYPE:
			if (strcasecmp(optarg, "qemu"))
				return usage_err("unsupported --vmm-type '%s' (only qemu)", optarg);
			break;
		case OPT_OVMF:
			ovmf_path = optarg;
			break;
		case OPT_KERNEL:
			kernel = optarg;
			break;
		case OPT_INITRD:
			initrd = optarg;
			break;
		case OPT_APPEND:
			append = optarg;
			break;
		case OPT_GUEST_FEATURES:
			if (parse_u64(optarg, &features))
				return usage_err("bad --guest-features '%s'", optarg);
			break;
		case OPT_SNP_OVMF_HASH:
			seed_s = optarg;
			break;
		case OPT_SVSM:
			svsm_path = optarg;
			break;
		case OPT_VARS_SIZE:
			num = &vars_size;
			flag = &have_vars_size;
			break;
		case OPT_VARS_FILE:
			vars_file = optarg;
			break;
		case OPT_OUTPUT_FORMAT:
			if (!strcmp(optarg, "base64"))
				base64 = true;
			else if (strcmp(optarg, "hex"))
				return usage_err("bad --output-format '%s' (hex|base64)", optarg);
			break;
		case OPT_DUMP_VMSA:
			dump_vmsa = true;
			break;
		case OPT_IGVM:
			igvm_path = optarg;
			break;
		case OPT_DUMP:
			igvm_dump = true;
			break;
		case OPT_HOST_FEATURES:
			num = &host_features;
			flag = &have_host_features;
			break;
		case OPT_ZERO_PAGES:
			if (!strcmp(optarg, "zero"))
				native_zero = true;
			else if (!strcmp(optarg, "normal"))
				native_zero = false;
			else
				return usage_err("bad --zero-pages '%s' (normal|zero)", optarg);
			break;
		case 'v':
			verbose = true;
			break;
		case OPT_VERSION:
			printf("%s %s\n", prog, CSVSM_MEASURE_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage_err("unknown or incomplete option '%s'", argv[optind - 1]);
		}
		if (num && parse_u64(optarg, num))
			return usage_err("bad number '%s'", optarg);
		if (flag)
			*flag = true;
	}
	if (optind < argc)
		return usage_err("unexpected argument '%s'", argv[optind]);

	if (igvm_dump && !igvm_path)
		return usage_err("--dump needs --igvm FILE%s", NULL);
	if (have_host_features && !igvm_path)
		return usage_err("--host-sev-features needs --igvm FILE%s", NULL);
	if (vtpm_check && !igvm_path)
		return usage_err("--vtpm-* checks an IGVM image: give --igvm FILE%s", NULL);
	if (vtpm_check && vtpm_opts_finish(&vtpm_want, verr, sizeof(verr)))
		return usage_err("%s", verr);
	if (igvm_path) {
		const struct vcpu_type *vt = NULL;

		if (mode_s || ovmf_path || svsm_path || kernel || seed_s || dump_vmsa)
			return usage_err("--igvm takes none of --mode, --ovmf, --svsm, --kernel, "
					 "--snp-ovmf-hash, --dump-vmsa%s",
					 NULL);
		if (!have_vcpus)
			vcpus = 1;
		if (vcpus == 0 || vcpus > 512)
			return usage_err("--vcpus N must be 1..512%s", NULL);
		if (vcpu_type) {
			for (size_t i = 0; i < ARRAY_SIZE(vcpu_types); i++)
				if (!strcasecmp(vcpu_types[i].name, vcpu_type))
					vt = &vcpu_types[i];
			if (!vt)
				return usage_err("unknown --vcpu-type '%s'", vcpu_type);
		}
		if (have_fam || have_model || have_step) {
			if (!have_fam || !have_model || !have_step)
				return usage_err(
				    "--vcpu-family, --vcpu-model and --vcpu-stepping go together%s",
				    NULL);
			if (fam > 0xFF + 0xF || model > 0xFF || step > 0xF)
				return usage_err("vCPU family/model/stepping out of range%s", NULL);
			sig = cpu_sig(fam, model, step);
			have_sig = true;
		} else if (have_sig) {
			if (sig > 0xFFFFFFFFULL)
				return usage_err("--vcpu-sig does not fit 32 bits%s", NULL);
		} else if (vt) {
			sig = cpu_sig(vt->family, vt->model, vt->stepping);
			have_sig = true;
		}
		return igvm_main(igvm_path, igvm_dump, (uint32_t)vcpus, (uint32_t)sig, have_sig,
				 native_zero, base64, verbose, have_host_features, host_features);
	}

	if (!mode_s)
		return usage_err("--mode is required%s", NULL);
	if (!strcmp(mode_s, "snp"))
		mode = MODE_SNP;
	else if (!strcmp(mode_s, "snp:ovmf-hash"))
		mode = MODE_SNP_OVMF_HASH;
	else if (!strcmp(mode_s, "snp:svsm"))
		mode = MODE_SNP_SVSM;
	else
		return usage_err("unsupported --mode '%s'", mode_s);
	if (!ovmf_path)
		return usage_err("--ovmf is required%s", NULL);

	if (mode != MODE_SNP_OVMF_HASH) {
		const struct vcpu_type *vt = NULL;

		if (!have_vcpus || vcpus == 0 || vcpus > 512)
			return usage_err("--vcpus N (1..512) is required%s", NULL);
		if (vcpu_type) {
			for (size_t i = 0; i < ARRAY_SIZE(vcpu_types); i++)
				if (!strcasecmp(vcpu_types[i].name, vcpu_type))
					vt = &vcpu_types[i];
			if (!vt)
				return usage_err("unknown --vcpu-type '%s'", vcpu_type);
		}
		/* sev-snp-measure cli.py precedence: family/model/stepping, then
		 * --vcpu-sig, then --vcpu-type. */
		if (have_fam || have_model || have_step) {
			if (!have_fam || !have_model || !have_step)
				return usage_err(
				    "--vcpu-family, --vcpu-model and --vcpu-stepping go together%s",
				    NULL);
			if (fam > 0xFF + 0xF || model > 0xFF || step > 0xF)
				return usage_err("vCPU family/model/stepping out of range%s", NULL);
			sig = cpu_sig(fam, model, step);
		} else if (have_sig) {
			if (sig > 0xFFFFFFFFULL)
				return usage_err("--vcpu-sig does not fit 32 bits%s", NULL);
		} else if (vt) {
			sig = cpu_sig(vt->family, vt->model, vt->stepping);
		} else {
			return usage_err("one of --vcpu-type, --vcpu-sig, "
					 "--vcpu-family/model/stepping is required%s",
					 NULL);
		}
	}
	/* Python tests these arguments' truthiness: an empty string is absent. */
	if (kernel && !*kernel)
		kernel = NULL;
	if (initrd && !*initrd)
		initrd = NULL;
	if (append && !*append)
		append = NULL;
	if ((initrd || append) && !kernel) {
		/* sev-snp-measure ignores them too; say so. */
		fprintf(stderr, "%s: warning: --initrd/--append ignored without --kernel\n", prog);
		initrd = append = NULL;
	}
	if (kernel && mode != MODE_SNP)
		return usage_err("--kernel is only supported in snp mode%s", NULL);
	if (seed_s) {
		if (mode != MODE_SNP)
			return usage_err("--snp-ovmf-hash works only with --mode snp%s", NULL);
		if (parse_hex(seed_s, seed, sizeof(seed)))
			return usage_err("bad --snp-ovmf-hash '%s' (96 hex digits)", seed_s);
	}
	if (mode == MODE_SNP_SVSM && !svsm_path)
		return usage_err("--svsm is required in this mode%s", NULL);
	if (mode == MODE_SNP_SVSM && !have_vars_size && !vars_file)
		return usage_err("--vars-size or --vars-file is required in snp:svsm mode%s", NULL);
	if (have_vars_size && vars_file)
		return usage_err("give --vars-size or --vars-file, not both%s", NULL);

	if (load_firmware(ovmf_path, &ovmf, &ovmf_len, &ovmf_info, mode == MODE_SNP))
		goto out;

	switch (mode) {
	case MODE_SNP_OVMF_HASH:
		rc = launch_digest_ovmf_hash(&ld_hash_mbedtls, ovmf, ovmf_len, digest);
		break;
	case MODE_SNP: {
		static uint8_t hpage[PAGE_SIZE];
		struct ld_snp_launch p = {
		    .ovmf = ovmf,
		    .ovmf_len = ovmf_len,
		    .info = &ovmf_info,
		    .seed = seed_s ? seed : NULL,
		    .vcpus = (uint32_t)vcpus,
		    .vcpu_sig = (uint32_t)sig,
		    .guest_features = features,
		};

		if (kernel) {
			uint8_t hk[LD_SHA256_LEN], hi[LD_SHA256_LEN], hc[LD_SHA256_LEN];
			uint8_t *buf;
			size_t n;

			if (!ovmf_info.has_hash_table) {
				fprintf(stderr,
					"%s: %s: no SEV hash table entry in the footer table\n",
					prog, ovmf_path);
				goto out;
			}
			if (!ovmf_info_has_section(&ovmf_info, OVMF_SECTION_SNP_KERNEL_HASHES)) {
				fprintf(stderr, "%s: %s: %s\n", prog, ovmf_path,
					launch_digest_strerror(LD_ERR_NO_HASHES));
				goto out;
			}
			if (!(buf = read_file(kernel, &n)))
				goto out;
			ld_sha256_mbedtls(buf, n, hk);
			free(buf);
			if (initrd) {
				if (!(buf = read_file(initrd, &n)))
					goto out;
				ld_sha256_mbedtls(buf, n, hi);
				free(buf);
			} else {
				ld_sha256_mbedtls("", 0, hi);
			}
			/* The command line is hashed with its terminating NUL. */
			ld_sha256_mbedtls(append ? append : "", append ? strlen(append) + 1 : 1,
					  hc);
			if (launch_digest_hashes_page(hpage, ovmf_info.hash_table_gpa & 0xFFF, hk,
						      hi, hc)) {
				fprintf(stderr, "%s: %s: SEV hash table does not fit its page\n",
					prog, ovmf_path);
				goto out;
			}
			p.hashes_page = hpage;
		}
		rc = launch_digest_snp(&ld_hash_mbedtls, &p, digest);
		break;
	}
	case MODE_SNP_SVSM: {
		struct ld_svsm_launch p = {
		    .ovmf = ovmf,
		    .ovmf_len = ovmf_len,
		    .vcpus = (uint32_t)vcpus,
		    .vcpu_sig = (uint32_t)sig,
		    /* guest.py svsm_calc_launch_digest ignores --guest-features:
		     * VMSA_SVSM always has SEV_FEATURES = SNPActive. */
		    .guest_features = 0x1,
		};

		if (vars_file) {
			uint8_t *buf = read_file(vars_file, &svsm_len);

			if (!buf)
				goto out;
			free(buf);
			vars_size = svsm_len;
		}
		if (load_firmware(svsm_path, &svsm, &svsm_len, &svsm_info, true))
			goto out;
		p.svsm = svsm;
		p.svsm_len = svsm_len;
		p.svsm_info = &svsm_info;
		p.vars_size = vars_size;
		rc = launch_digest_svsm(&ld_hash_mbedtls, &p, digest);
		break;
	}
	}
	if (rc) {
		fprintf(stderr, "%s: %s\n", prog, launch_digest_strerror(rc));
		rc = 1;
		goto out;
	}
	if (verbose && mode != MODE_SNP_OVMF_HASH)
		printf("Calculated %s guest measurement: ",
		       mode == MODE_SNP_SVSM ? "SEV_SNP_SVSM" : "SEV_SNP");
	print_digest(digest, sizeof(digest), base64);
	rc = 0;
	if (dump_vmsa && mode != MODE_SNP_OVMF_HASH)
		rc = write_vmsas(
		    mode, (uint32_t)vcpus, (uint32_t)sig, mode == MODE_SNP_SVSM ? 0x1 : features,
		    mode == MODE_SNP_SVSM ? &svsm_info : &ovmf_info, ovmf_len, svsm_len, vars_size);
out:
	free(ovmf);
	free(svsm);
	return rc;
}
