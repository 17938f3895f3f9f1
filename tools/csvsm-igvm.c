/*
 * csvsm-igvm: build csvsm's SEV-SNP launch image (an IGVM file) from
 * csvsm's ELF and an OVMF flash image, then check it with the parser that
 * csvsm-measure uses and print its launch digest for one vCPU.
 *
 *   csvsm-igvm --elf build/csvsm.elf --ovmf OVMF.fd -o build/csvsm.igvm
 *              [--entry-symbol snp_entry32 | --entry ADDR] [--region-size N]
 *              [--policy N] [--sev-features N] [--append STR] [--no-madt] [-v]
 *              [--vtpm-mode ephemeral|sealed|kbs --vtpm-instance HEX32 [--vtpm-port N]
 *               [--vtpm-tcb N] [--vtpm-broker-key PEM]]
 *
 * Layout and contract: include/csvsm/igvm_boot.h, docs/igvm.md.
 * Exit status: 0; 1 when an input is unreadable or unusable; 2 on usage.
 */
#include <attest/elf_load.h>
#include <attest/igvm.h>
#include <attest/igvm_csvsm.h>
#include "vtpm_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2
#define MAX_SEGS   32

static const char *prog = "csvsm-igvm";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s --elf FILE --ovmf FILE -o OUT [options]\n"
		"  --entry-symbol NAME   32-bit entry symbol in the ELF (default %s)\n"
		"  --entry ADDR          entry address instead of a symbol\n"
		"  --region-size N       csvsm's region size (default %#llx)\n"
		"  --policy N            SNP guest policy (default %#llx)\n"
		"  --sev-features N      SEV_FEATURES of the BSP VMSA (default %#llx:\n"
		"                        SNPActive, RestrictedInjection, DebugSwap)\n"
		"  --no-debug-swap       without DebugSwap (bit 5), for a host whose KVM\n"
		"                        does not offer it (kvm_amd debug_swap=0, or a CPU\n"
		"                        without it): QEMU >= 10.1 refuses features KVM lacks\n"
		"  --append STR          csvsm command line, measured in the boot block\n"
		"  --no-madt             no MADT parameter (QEMU without the IGVM MADT handler)\n"
		"  --vtpm-mode MODE      ephemeral (default), sealed or kbs (docs/vtpm.md)\n"
		"  --vtpm-instance HEX   the VM instance, 32 hex digits (sealed, kbs)\n"
		"  --vtpm-port N         I/O base of the host channel's 16550 (default %#x)\n"
		"  --vtpm-tcb N          bind the sealed key to this TCB_VERSION (MSG_KEY_REQ)\n"
		"  --vtpm-broker-key PEM csvsm-kbs's signing public key, EC P-256 or P-384 (kbs)\n"
		"  -v, --verbose         list the launch ranges\n",
		prog, CSVSM_IGVM_ENTRY_SYMBOL, (unsigned long long)CSVSM_IGVM_REGION_SIZE,
		(unsigned long long)CSVSM_IGVM_POLICY, (unsigned long long)CSVSM_IGVM_SEV_FEATURES,
		CSVSM_IGVM_VTPM_PORT);
}

static int usage_err(const char *msg, const char *arg)
{
	fprintf(stderr, "%s: %s%s%s\n", prog, msg, arg ? " " : "", arg ? arg : "");
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

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long sz;

	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: %s: cannot size the file\n", prog, path);
		fclose(f);
		return NULL;
	}
	buf = malloc(sz ? (size_t)sz : 1);
	if (!buf || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
		fprintf(stderr, "%s: %s: read error\n", prog, path);
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t)sz;
	return buf;
}

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)rd16(p) | ((uint32_t)rd16(p + 2) << 16);
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | ((uint64_t)rd32(p + 4) << 32);
}

/*
 * The value of symbol name in the ELF's .symtab (System V gABI: Elf64_Shdr
 * 64 bytes, Elf64_Sym 24 bytes), every offset checked against the file.
 * 0 on success, -1 if absent or the tables are malformed.
 */
static int elf_symbol(const uint8_t *img, size_t len, const char *name, uint64_t *value)
{
	uint64_t shoff = rd64(img + 0x28);
	uint16_t shentsize = rd16(img + 0x3A), shnum = rd16(img + 0x3C);
	size_t nlen = strlen(name);

	if (shentsize != 64 || shoff > len || (uint64_t)shnum * 64 > len - shoff)
		return -1;
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = img + shoff + 64ULL * i, *str;
		uint64_t off = rd64(sh + 0x18), size = rd64(sh + 0x20), entsize = rd64(sh + 0x38);
		uint32_t link = rd32(sh + 0x28);
		uint64_t str_off, str_size;

		if (rd32(sh + 4) != 2 /* SHT_SYMTAB */)
			continue;
		if (entsize != 24 || off > len || size > len - off || link >= shnum)
			return -1;
		str_off = rd64(img + shoff + 64ULL * link + 0x18);
		str_size = rd64(img + shoff + 64ULL * link + 0x20);
		if (str_off > len || str_size > len - str_off)
			return -1;
		str = img + str_off;
		for (uint64_t s = 0; s + 24 <= size; s += 24) {
			const uint8_t *sym = img + off + s;
			uint32_t st_name = rd32(sym);

			if (st_name >= str_size || str_size - st_name <= nlen)
				continue;
			if (!memcmp(str + st_name, name, nlen + 1)) {
				*value = rd64(sym + 8);
				return 0;
			}
		}
	}
	return -1;
}

static int write_file(const char *path, const uint8_t *buf, size_t len)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "%s: %s: %s\n", prog, tmp, strerror(errno));
		return -1;
	}
	if (rename(tmp, path)) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		remove(tmp);
		return -1;
	}
	return 0;
}

static const char *range_kind(uint32_t kind)
{
	static const char *const names[] = {"?",	 "image",    "boot-block",
					    "parameter", "firmware", "fw-zero",
					    "secrets",	 "cpuid",    "caa"};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

enum {
	OPT_ELF = 256,
	OPT_OVMF,
	OPT_ENTRY_SYM,
	OPT_ENTRY,
	OPT_REGION,
	OPT_POLICY,
	OPT_FEAT,
	OPT_APPEND,
	OPT_NO_MADT,
	OPT_NO_DEBUG_SWAP,
	OPT_VTPM_MODE,
	OPT_VTPM_INSTANCE,
	OPT_VTPM_PORT,
	OPT_VTPM_TCB,
	OPT_VTPM_BROKER,
};

static const struct option long_opts[] = {
    {"elf", required_argument, NULL, OPT_ELF},
    {"ovmf", required_argument, NULL, OPT_OVMF},
    {"output", required_argument, NULL, 'o'},
    {"entry-symbol", required_argument, NULL, OPT_ENTRY_SYM},
    {"entry", required_argument, NULL, OPT_ENTRY},
    {"region-size", required_argument, NULL, OPT_REGION},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"sev-features", required_argument, NULL, OPT_FEAT},
    {"append", required_argument, NULL, OPT_APPEND},
    {"no-madt", no_argument, NULL, OPT_NO_MADT},
    {"no-debug-swap", no_argument, NULL, OPT_NO_DEBUG_SWAP},
    {"vtpm-mode", required_argument, NULL, OPT_VTPM_MODE},
    {"vtpm-instance", required_argument, NULL, OPT_VTPM_INSTANCE},
    {"vtpm-port", required_argument, NULL, OPT_VTPM_PORT},
    {"vtpm-tcb", required_argument, NULL, OPT_VTPM_TCB},
    {"vtpm-broker-key", required_argument, NULL, OPT_VTPM_BROKER},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
	const char *elf_path = NULL, *ovmf_path = NULL, *out_path = NULL, *sym = NULL;
	const char *append = NULL;
	uint64_t entry = 0, region = 0, policy = CSVSM_IGVM_POLICY,
		 features = CSVSM_IGVM_SEV_FEATURES;
	bool have_entry = false, madt = true, verbose = false, no_debug_swap = false;
	uint8_t *elf = NULL, *fw = NULL, digest[LD_SHA384_LEN];
	size_t elf_len = 0, fw_len = 0, n_segs = 0;
	struct ld_segment segs[MAX_SEGS];
	static struct ovmf_info info;
	static struct igvm_file file;
	struct igvm_csvsm_image img = {0};
	struct igvm_range *scratch = NULL;
	struct igvm_snp_opts mo = {.vcpus = 1};
	struct vtpm_opts vo;
	char err[256];
	int c, idx = 0, rc = 1;

	vtpm_opts_init(&vo);
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:vh", long_opts, &idx)) != -1) {
		switch (c) {
		case OPT_VTPM_MODE:
		case OPT_VTPM_INSTANCE:
		case OPT_VTPM_PORT:
		case OPT_VTPM_TCB:
		case OPT_VTPM_BROKER:
			if (vtpm_opts_parse(&vo, long_opts[idx].name, optarg, err, sizeof(err)))
				return usage_err(err, NULL);
			break;
		case OPT_ELF:
			elf_path = optarg;
			break;
		case OPT_OVMF:
			ovmf_path = optarg;
			break;
		case 'o':
			out_path = optarg;
			break;
		case OPT_ENTRY_SYM:
			sym = optarg;
			break;
		case OPT_ENTRY:
			if (parse_u64(optarg, &entry))
				return usage_err("bad --entry", optarg);
			have_entry = true;
			break;
		case OPT_REGION:
			if (parse_u64(optarg, &region) || !region)
				return usage_err("bad --region-size", optarg);
			break;
		case OPT_POLICY:
			if (parse_u64(optarg, &policy))
				return usage_err("bad --policy", optarg);
			break;
		case OPT_FEAT:
			if (parse_u64(optarg, &features))
				return usage_err("bad --sev-features", optarg);
			break;
		case OPT_APPEND:
			append = optarg;
			break;
		case OPT_NO_MADT:
			madt = false;
			break;
		case OPT_NO_DEBUG_SWAP:
			no_debug_swap = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage_err("unknown or incomplete option", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument", argv[optind]);
	if (!elf_path || !ovmf_path || !out_path)
		return usage_err("--elf, --ovmf and -o are required", NULL);
	if (have_entry && sym)
		return usage_err("give --entry or --entry-symbol, not both", NULL);
	/* DebugSwap (SEV_FEATURES bit 5) is a launch choice KVM must offer
	 * (KVM_X86_SEV_VMSA_FEATURES, kvm_amd's debug_swap parameter): QEMU
	 * >= 10.1 check_sev_features refuses a VMSA asking for more. */
	if (no_debug_swap)
		features &= ~CSVSM_IGVM_SEV_DEBUG_SWAP;
	if (vtpm_opts_finish(&vo, err, sizeof(err)))
		return usage_err(err, NULL);

	if (!(elf = read_file(elf_path, &elf_len)) || !(fw = read_file(ovmf_path, &fw_len)))
		goto out;
	rc = elf_load_segments(elf, elf_len, segs, MAX_SEGS, &n_segs);
	if (rc) {
		fprintf(stderr, "%s: %s: %s\n", prog, elf_path, elf_load_strerror(rc));
		rc = 1;
		goto out;
	}
	rc = 1;
	if (!have_entry) {
		if (!sym)
			sym = CSVSM_IGVM_ENTRY_SYMBOL;
		if (elf_symbol(elf, elf_len, sym, &entry)) {
			fprintf(stderr, "%s: %s: no symbol %s (give --entry ADDR)\n", prog,
				elf_path, sym);
			goto out;
		}
	}
	if (ovmf_info_parse(fw, fw_len, &info)) {
		fprintf(stderr, "%s: %s: no OVMF footer table / SEV metadata\n", prog, ovmf_path);
		goto out;
	}

	struct igvm_csvsm_params p = {
	    .segs = segs,
	    .n_segs = n_segs,
	    .entry = entry,
	    .fw = fw,
	    .fw_len = fw_len,
	    .fw_info = &info,
	    .region_size = region,
	    .policy = policy,
	    .sev_features = features,
	    .madt = madt,
	    .cmdline = append,
	    .vtpm = &vo.cfg,
	};
	if (igvm_csvsm_build(&p, &img, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", prog, err);
		goto out;
	}
	if (img.boot.flags & CSVSM_IGVM_F_REGION_IN_RAM)
		fprintf(stderr,
			"%s: warning: csvsm's region [%#llx, %#llx) is outside [%#llx, %#llx): "
			"QEMU may report it as guest RAM (docs/igvm.md \"Where csvsm lives\")\n",
			prog, (unsigned long long)img.boot.region_start,
			(unsigned long long)img.boot.region_end,
			(unsigned long long)CSVSM_IGVM_GAP_START,
			(unsigned long long)CSVSM_IGVM_BOOT_BLOCK_GPA);

	/* Check the result with the parser the measurement uses. */
	scratch = calloc(igvm_scratch_entries(img.file, img.len), sizeof(*scratch));
	if (!scratch) {
		fprintf(stderr, "%s: out of memory\n", prog);
		goto out;
	}
	rc = igvm_parse(&file, img.file, img.len, scratch, igvm_scratch_entries(img.file, img.len));
	if (!rc)
		rc = igvm_snp_digest(&file, &ld_hash_mbedtls, &mo, digest, NULL, NULL);
	if (rc) {
		fprintf(stderr, "%s: built file does not validate: %s: %s\n", prog,
			igvm_strerror(rc), file.err_detail ? file.err_detail : "");
		rc = 1;
		goto out;
	}
	if (write_file(out_path, img.file, img.len))
		goto out;
	printf("%s: %s: %zu bytes, %u pages, entry %#llx, launch digest (1 vCPU) ", prog, out_path,
	       img.len, img.n_pages, (unsigned long long)entry);
	for (size_t i = 0; i < sizeof(digest); i++)
		printf("%02x", digest[i]);
	putchar('\n');
	if (img.vtpm.mode != CSVSM_VTPM_MODE_EPHEMERAL)
		printf("%s: vTPM mode %s, instance %s, channel port %#x\n", prog,
		       vtpm_mode_name(img.vtpm.mode), vo.instance_hex, img.vtpm.port);
	if (verbose)
		for (uint32_t i = 0; i < img.boot.n_ranges; i++)
			printf(
			    "  %-10s [%#014llx, %#014llx)\n", range_kind(img.boot.ranges[i].kind),
			    (unsigned long long)img.boot.ranges[i].gpa,
			    (unsigned long long)(img.boot.ranges[i].gpa + img.boot.ranges[i].size));
	rc = 0;
out:
	free(scratch);
	free(img.file);
	free(elf);
	free(fw);
	return rc;
}
