/*
 * csvsm-verify: verify SEV-SNP attestation evidence (a report and the
 * VCEK/VLEK -> ASK/ASVK -> ARK chain) and print each check by name, as a
 * human summary or JSON. The checks live in attest/snp_verify.c and
 * attest/report.c; this file reads inputs, assembles the chain and prints.
 *
 * Exit status: 0 every check passed, 1 a check failed, 2 usage error or
 * unreadable input (including a report that is not 1184 bytes).
 * See docs/verify.md.
 */
#include <attest/attest_proto.h>
#include <base/hex.h>
#include <attest/certtable.h>
#include <attest/policy.h>
#include <attest/report.h>
#include <attest/snp_verify.h>
#include <attest/tpm_cred.h>

#include <mbedtls/sha512.h>

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define VERIFY_MAX_INPUT (16u << 20)

static void die2(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die2(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "csvsm-verify: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: csvsm-verify --report FILE [chain] [policy] [--json]\n"
		"                    [--repeat N [--threads T]]\n"
		"chain (any of; explicit options win over --certs, --cert-table, --roots):\n"
		"  --vcek FILE | --vlek FILE   signing-key certificate (DER or PEM)\n"
		"  --ask FILE | --asvk FILE    intermediate (ASK for VCEK, ASVK for VLEK)\n"
		"  --ark FILE                  AMD root (must match a pinned fingerprint)\n"
		"  --certs DIR                 snpguest layout: ark.pem, ask.pem|asvk.pem,\n"
		"                              vcek.der|vcek.pem|vlek.der|vlek.pem\n"
		"  --cert-table FILE           extended-report certificate table (auxblob)\n"
		"  --roots DIR [--product P]   DIR/<p>_ark.pem, DIR/<p>_ask.pem|_asvk.pem;\n"
		"                              P = milan|genoa|turin (default: from the report)\n"
		"  --trust-ark FILE            admit this non-AMD root (test chains)\n"
		"  --time YYYY-MM-DD           validity time (default: now)\n"
		"  --crl FILE                  a CRL (DER or PEM; repeatable): the ARK's revokes\n"
		"                              the ASK/ASVK, an ASK's the VCEK (check chain.crl)\n"
		"policy:\n"
		"  --allow-debug               accept a guest policy with DEBUG\n"
		"  --allow-migrate-ma          accept a guest policy with MIGRATE_MA\n"
		"  --vmpl N                    required VMPL (default 0)\n"
		"  --min-tcb bl=N,tee=N,snp=N,ucode=N[,fmc=N]\n"
		"  --measurement HEX           expected MEASUREMENT (48 bytes)\n"
		"  --report-data HEX           expected REPORT_DATA (<= 64 bytes, zero-padded)\n"
		"  --nonce HEX --manifest FILE REPORT_DATA = SHA-512(nonce || manifest)\n"
		"without --measurement and --report-data/--nonce only the signature, chain\n"
		"and policy are checked: any guest on a genuine AMD chip passes, and the\n"
		"summary says so (VERIFIED (signature and chain only: ...)).\n"
		"TPM quote (as tpm2_checkquote; files from tpm2_quote -m/-s/-o):\n"
		"  --quote-msg F --quote-sig F --quote-pcrs F --ak PEM --quote-nonce HEX\n"
		"  --ak-public F instead of --ak: the AK's TPM2B_PUBLIC (tpm2_readpublic -o),\n"
		"                which must be a restricted signing key (the one csvsm-cred\n"
		"                made the credential for)\n"
		"  --ak-name HEX with --ak-public: the AK's Name must be this (csvsm-cred's\n"
		"                ak-name: the activated AK)\n"
		"vTPM EK (with --nonce/--manifest):\n"
		"  --manifest-ek F write the EK (TPMT_PUBLIC) from the manifest's vTPM entry\n"
		"                to F, only if every check passed (check 'manifest.ek')\n"
		"appraisal (docs/kbs.md \"Policy reference\"; the verdict csvsm-kbs gives):\n"
		"  --policy FILE  appraise against the policy file instead of the policy options;\n"
		"                 prints the EAR status and each claim's reason; exit 0 only if\n"
		"                 affirming\n");
}

/*
 * Every input file is read once, into memory, and every use takes it from
 * there (issue 34 item 4): a file named twice (--ark and --trust-ark, a
 * link to it, the manifest that is both hashed into REPORT_DATA and searched
 * for the vTPM EK) is not read again, so what is checked is what is used
 * even when the file changes underneath, and a pipe (--manifest <(...)) or
 * a FIFO can be given. Files are the same when their names are, or their
 * device and inode (fstat of the open file) are.
 */
struct input_file {
	char *path;
	dev_t dev;
	ino_t ino;
	uint8_t *buf;
	size_t len;
};
#define VERIFY_MAX_FILES 64
static struct input_file input_files[VERIFY_MAX_FILES];
static size_t n_input_files;

static const uint8_t *read_input(const char *path, size_t *len)
{
	struct input_file *e;
	struct stat st;
	uint8_t *buf;
	size_t n = 0, cap = 4096;
	FILE *f;

	for (size_t i = 0; i < n_input_files; i++)
		if (!strcmp(input_files[i].path, path)) {
			*len = input_files[i].len;
			return input_files[i].buf;
		}
	f = fopen(path, "rb");
	if (!f)
		die2("%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st))
		die2("%s: %s", path, strerror(errno));
	for (size_t i = 0; i < n_input_files; i++)
		if (input_files[i].dev == st.st_dev && input_files[i].ino == st.st_ino) {
			fclose(f);
			*len = input_files[i].len;
			return input_files[i].buf;
		}
	if (n_input_files == VERIFY_MAX_FILES)
		die2("more than %d input files", VERIFY_MAX_FILES);
	buf = malloc(cap);
	if (!buf)
		die2("out of memory");
	for (;;) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		if (cap >= VERIFY_MAX_INPUT)
			die2("%s: larger than %u bytes", path, VERIFY_MAX_INPUT);
		cap *= 2;
		buf = realloc(buf, cap);
		if (!buf)
			die2("out of memory");
	}
	if (ferror(f))
		die2("%s: read error", path);
	fclose(f);
	e = &input_files[n_input_files++];
	*e = (struct input_file){strdup(path), st.st_dev, st.st_ino, buf, n};
	if (!e->path)
		die2("out of memory");
	*len = n;
	return buf;
}

static void free_inputs(void)
{
	for (size_t i = 0; i < n_input_files; i++) {
		free(input_files[i].buf);
		free(input_files[i].path);
	}
	n_input_files = 0;
}

static bool exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Parse hex (optional 0x) into out (cap bytes); returns the byte count. */
static size_t parse_hex(const char *opt, const char *s, uint8_t *out, size_t cap)
{
	size_t l, n;
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		s += 2;
	l = strlen(s);
	if (l % 2 || l / 2 > cap)
		die2("%s: need an even number of hex digits, at most %zu bytes", opt, cap);
	for (n = 0; n < l / 2; n++) {
		int hi = hex_digit(s[2 * n]), lo = hex_digit(s[2 * n + 1]);
		if (hi < 0 || lo < 0)
			die2("%s: not hex", opt);
		out[n] = (uint8_t)(hi << 4 | lo);
	}
	return n;
}

static void load_cert(mbedtls_x509_crt *crt, bool *have, const uint8_t *buf, size_t len,
		      const char *what)
{
	mbedtls_x509_crt_free(crt);
	mbedtls_x509_crt_init(crt);
	if (snp_cert_parse(crt, buf, len))
		die2("%s: not a single X.509 certificate (DER or PEM)", what);
	*have = true;
}

static void load_cert_file(mbedtls_x509_crt *crt, bool *have, const char *path)
{
	size_t len;
	const uint8_t *b = read_input(path, &len);
	load_cert(crt, have, b, len, path);
}

static enum snp_product parse_product(const char *s)
{
	if (!strcasecmp(s, "milan"))
		return SNP_PRODUCT_MILAN;
	if (!strcasecmp(s, "genoa") || !strcasecmp(s, "siena"))
		return SNP_PRODUCT_GENOA;
	if (!strcasecmp(s, "turin"))
		return SNP_PRODUCT_TURIN;
	die2("--product: milan, genoa or turin");
}

static void parse_time(const char *s, struct snp_time *t)
{
	int y, m, d;
	char extra;
	if (sscanf(s, "%4d-%2d-%2d%c", &y, &m, &d, &extra) != 3 || y < 1950 || y > 9999 || m < 1 ||
	    m > 12 || d < 1 || d > 31)
		die2("--time: expected YYYY-MM-DD");
	memset(t, 0, sizeof(*t));
	t->year = y;
	t->mon = m;
	t->day = d;
}

/* ---- output ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_hex(const char *key, const uint8_t *b, size_t n, bool comma)
{
	printf("    \"%s\": \"", key);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\"%s\n", comma ? "," : "");
}

static void json_tcb(const char *key, uint64_t raw, enum snp_product p, bool comma)
{
	struct snp_tcb t;
	snp_tcb_decode(raw, p, &t);
	printf("    \"%s\": {\"raw\": \"0x%016llx\", \"bl\": %u, \"tee\": %u, \"snp\": %u, "
	       "\"ucode\": %u",
	       key, (unsigned long long)raw, t.bl, t.tee, t.snp, t.ucode);
	if (t.has_fmc)
		printf(", \"fmc\": %u", t.fmc);
	printf("}%s\n", comma ? "," : "");
}

static const char *signing_key_name(uint8_t k)
{
	return k == SNP_SIGNING_KEY_VCEK   ? "vcek"
	       : k == SNP_SIGNING_KEY_VLEK ? "vlek"
	       : k == SNP_SIGNING_KEY_NONE ? "none"
					   : "reserved";
}

static const char *state_name(enum snp_check_state s)
{
	return s == SNP_CHECK_PASS ? "PASS" : s == SNP_CHECK_SKIP ? "SKIP" : "FAIL";
}

/*
 * What a pass did not bind: with neither an expected MEASUREMENT nor an
 * expected REPORT_DATA, a genuine report of *any* guest verifies. Said on the
 * summary line and in the JSON (docs/verify.md "Output and exit status").
 */
static const char *scope_note(const struct snp_verify_result *res)
{
	if (!res->measurement_checked && !res->report_data_checked)
		return "signature and chain only: no --measurement, no --report-data given";
	if (!res->measurement_checked)
		return "MEASUREMENT not checked: no --measurement given";
	if (!res->report_data_checked)
		return "REPORT_DATA not checked: no --report-data or --nonce/--manifest given";
	return NULL;
}

static void print_policy_flags(const struct snp_policy *p)
{
	static const struct {
		size_t off;
		const char *name;
	} f[] = {
	    {offsetof(struct snp_policy, smt), "SMT"},
	    {offsetof(struct snp_policy, migrate_ma), "MIGRATE_MA"},
	    {offsetof(struct snp_policy, debug), "DEBUG"},
	    {offsetof(struct snp_policy, single_socket), "SINGLE_SOCKET"},
	    {offsetof(struct snp_policy, cxl_allow), "CXL_ALLOW"},
	    {offsetof(struct snp_policy, mem_aes_256_xts), "MEM_AES_256_XTS"},
	    {offsetof(struct snp_policy, rapl_dis), "RAPL_DIS"},
	    {offsetof(struct snp_policy, ciphertext_hiding), "CIPHERTEXT_HIDING"},
	    {offsetof(struct snp_policy, page_swap_disable), "PAGE_SWAP_DISABLE"},
	};
	const char *sep = " (";
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		if (*(const bool *)((const char *)p + f[i].off)) {
			printf("%s%s", sep, f[i].name);
			sep = " ";
		}
	printf("%sABI >= %u.%u)", sep, p->abi_major, p->abi_minor);
}

static void print_json(const struct snp_report *r, const struct snp_verify_result *res)
{
	const struct snp_report_raw *w = &r->raw;
	const struct snp_policy *p = &r->policy;

	const char *note = scope_note(res);

	printf("{\n  \"verified\": %s,\n", res->verified ? "true" : "false");
	printf("  \"signature_and_chain_only\": %s,\n  \"measurement_checked\": %s,\n"
	       "  \"report_data_checked\": %s,\n",
	       !res->measurement_checked && !res->report_data_checked ? "true" : "false",
	       res->measurement_checked ? "true" : "false",
	       res->report_data_checked ? "true" : "false");
	if (note) {
		printf("  \"note\": ");
		json_str(note);
		printf(",\n");
	}
	printf("  \"product\": \"%s\",\n  \"checks\": [\n", snp_product_name(res->product));
	for (size_t i = 0; i < res->n; i++) {
		const struct snp_check *c = &res->checks[i];
		printf("    {\"name\": ");
		json_str(c->name);
		printf(", \"ok\": %s, \"skipped\": %s, \"detail\": ",
		       c->state != SNP_CHECK_FAIL ? "true" : "false",
		       c->state == SNP_CHECK_SKIP ? "true" : "false");
		json_str(c->detail);
		printf("}%s\n", i + 1 < res->n ? "," : "");
	}
	printf("  ],\n  \"report\": {\n");
	printf("    \"version\": %u,\n    \"guest_svn\": %u,\n", w->version, w->guest_svn);
	printf("    \"policy\": \"0x%016llx\",\n", (unsigned long long)w->policy);
	printf("    \"policy_flags\": {\"abi_major\": %u, \"abi_minor\": %u, \"smt\": %s, "
	       "\"migrate_ma\": %s, \"debug\": %s, \"single_socket\": %s, \"cxl_allow\": %s, "
	       "\"mem_aes_256_xts\": %s, \"rapl_dis\": %s, \"ciphertext_hiding\": %s, "
	       "\"page_swap_disable\": %s},\n",
	       p->abi_major, p->abi_minor, p->smt ? "true" : "false",
	       p->migrate_ma ? "true" : "false", p->debug ? "true" : "false",
	       p->single_socket ? "true" : "false", p->cxl_allow ? "true" : "false",
	       p->mem_aes_256_xts ? "true" : "false", p->rapl_dis ? "true" : "false",
	       p->ciphertext_hiding ? "true" : "false", p->page_swap_disable ? "true" : "false");
	printf("    \"vmpl\": %u,\n    \"signature_algo\": %u,\n", w->vmpl, w->signature_algo);
	printf("    \"signing_key\": \"%s\",\n    \"author_key_en\": %s,\n    \"mask_chip_key\": "
	       "%s,\n",
	       signing_key_name(r->signer.signing_key), r->signer.author_key_en ? "true" : "false",
	       r->signer.mask_chip_key ? "true" : "false");
	printf("    \"platform_info\": \"0x%016llx\",\n", (unsigned long long)w->platform_info);
	json_hex("family_id", w->family_id, 16, true);
	json_hex("image_id", w->image_id, 16, true);
	json_hex("measurement", w->measurement, 48, true);
	json_hex("report_data", w->report_data, 64, true);
	json_hex("host_data", w->host_data, 32, true);
	json_hex("id_key_digest", w->id_key_digest, 48, true);
	json_hex("author_key_digest", w->author_key_digest, 48, true);
	json_hex("report_id", w->report_id, 32, true);
	json_hex("report_id_ma", w->report_id_ma, 32, true);
	json_hex("chip_id", w->chip_id, 64, true);
	if (w->version >= 3)
		printf("    \"cpuid\": {\"family\": \"0x%02x\", \"model\": \"0x%02x\", "
		       "\"stepping\": \"0x%02x\"},\n",
		       w->cpuid_fam_id, w->cpuid_mod_id, w->cpuid_step);
	printf("    \"current_version\": \"%u.%u.%u\",\n    \"committed_version\": \"%u.%u.%u\",\n",
	       w->current_major, w->current_minor, w->current_build, w->committed_major,
	       w->committed_minor, w->committed_build);
	if (w->version >= 5)
		printf("    \"launch_mit_vector\": \"0x%016llx\",\n    \"current_mit_vector\": "
		       "\"0x%016llx\",\n",
		       (unsigned long long)w->launch_mit_vector,
		       (unsigned long long)w->current_mit_vector);
	json_tcb("current_tcb", w->current_tcb, res->product, true);
	json_tcb("reported_tcb", w->reported_tcb, res->product, true);
	json_tcb("committed_tcb", w->committed_tcb, res->product, true);
	json_tcb("launch_tcb", w->launch_tcb, res->product, false);
	printf("  }\n}\n");
}

static void print_human(const struct snp_report *r, const struct snp_verify_result *res)
{
	struct snp_tcb t;
	printf("SEV-SNP report version %u, %s, VMPL %u, signed by %s\n", r->raw.version,
	       snp_product_name(res->product), r->raw.vmpl,
	       signing_key_name(r->signer.signing_key));
	printf("  measurement ");
	for (int i = 0; i < 48; i++)
		printf("%02x", r->raw.measurement[i]);
	snp_tcb_decode(r->raw.reported_tcb, res->product, &t);
	printf("\n  reported TCB bl=%u tee=%u snp=%u ucode=%u", t.bl, t.tee, t.snp, t.ucode);
	if (t.has_fmc)
		printf(" fmc=%u", t.fmc);
	printf(", policy 0x%llx", (unsigned long long)r->raw.policy);
	print_policy_flags(&r->policy);
	printf("\n");
	for (size_t i = 0; i < res->n; i++)
		printf("  [%s] %-17s %s\n", state_name(res->checks[i].state), res->checks[i].name,
		       res->checks[i].detail);
	if (!res->verified)
		printf("NOT VERIFIED\n");
	else if (scope_note(res))
		printf("VERIFIED (%s)\n", scope_note(res));
	else
		printf("VERIFIED\n");
}

/* ---- chain assembly ---- */

struct inputs {
	const char *vcek, *vlek, *ask, *asvk, *ark, *certs, *table, *roots;
	const char *trust_ark[SNP_MAX_TRUSTED_ARKS];
	size_t n_trust;
};

static void from_certs_dir(struct snp_chain *c, const char *dir, bool want_vlek)
{
	char p[4096];
	const char *leaves_vcek[] = {"vcek.der", "vcek.pem", "vcek.crt"};
	const char *leaves_vlek[] = {"vlek.der", "vlek.pem", "vlek.crt"};
	const char **first = want_vlek ? leaves_vlek : leaves_vcek;
	const char **second = want_vlek ? leaves_vcek : leaves_vlek;

	for (int pass = 0; pass < 2 && !c->have_leaf; pass++)
		for (int i = 0; i < 3 && !c->have_leaf; i++) {
			snprintf(p, sizeof(p), "%s/%s", dir, (pass ? second : first)[i]);
			if (exists(p))
				load_cert_file(&c->leaf, &c->have_leaf, p);
		}
	bool vlek = c->have_leaf ? snp_cert_is_vlek(&c->leaf) : want_vlek;
	const char *mids[] = {vlek ? "asvk.pem" : "ask.pem", vlek ? "asvk.der" : "ask.der"};
	for (int i = 0; i < 2 && !c->have_ask; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, mids[i]);
		if (exists(p))
			load_cert_file(&c->ask, &c->have_ask, p);
	}
	const char *arks[] = {"ark.pem", "ark.der"};
	for (int i = 0; i < 2 && !c->have_ark; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, arks[i]);
		if (exists(p))
			load_cert_file(&c->ark, &c->have_ark, p);
	}
}

static void from_table(struct snp_chain *c, const char *path)
{
	size_t len, count;
	const uint8_t *b = read_input(path, &len);
	struct certtable_entry e[CERTTABLE_MAX_ENTRIES];
	int err = certtable_parse(b, len, e, CERTTABLE_MAX_ENTRIES, &count);
	if (err)
		die2("%s: certificate table: %s", path, certtable_strerror(err));
	for (size_t i = 0; i < count; i++) {
		switch (e[i].kind) {
		case CERTTABLE_VCEK:
		case CERTTABLE_VLEK:
			if (!c->have_leaf)
				load_cert(&c->leaf, &c->have_leaf, e[i].data, e[i].length,
					  "cert table VCEK/VLEK");
			break;
		case CERTTABLE_ASK:
			if (!c->have_ask)
				load_cert(&c->ask, &c->have_ask, e[i].data, e[i].length,
					  "cert table ASK");
			break;
		case CERTTABLE_ARK:
			if (!c->have_ark)
				load_cert(&c->ark, &c->have_ark, e[i].data, e[i].length,
					  "cert table ARK");
			break;
		default:
			break;
		}
	}
}

static void from_roots(struct snp_chain *c, const char *dir, enum snp_product p, bool vlek)
{
	char path[4096];
	enum snp_product order[3] = {SNP_PRODUCT_MILAN, SNP_PRODUCT_GENOA, SNP_PRODUCT_TURIN};
	for (int i = 0; i < 3 && (!c->have_ark || !c->have_ask); i++) {
		enum snp_product q = p ? p : order[i];
		char lc[8];
		snprintf(lc, sizeof(lc), "%s", snp_product_name(q));
		lc[0] = (char)(lc[0] - 'A' + 'a');
		struct snp_chain t;
		snp_chain_init(&t);
		snprintf(path, sizeof(path), "%s/%s_%s.pem", dir, lc, vlek ? "asvk" : "ask");
		if (exists(path))
			load_cert_file(&t.ask, &t.have_ask, path);
		snprintf(path, sizeof(path), "%s/%s_ark.pem", dir, lc);
		if (exists(path))
			load_cert_file(&t.ark, &t.have_ark, path);
		/* Without a product, take the line whose intermediate issued the leaf. */
		bool match = p || (t.have_ask && c->have_leaf &&
				   t.ask.subject_raw.len == c->leaf.issuer_raw.len &&
				   !memcmp(t.ask.subject_raw.p, c->leaf.issuer_raw.p,
					   t.ask.subject_raw.len));
		if (match) {
			if (!c->have_ask && t.have_ask) {
				c->ask = t.ask;
				c->have_ask = true;
				mbedtls_x509_crt_init(&t.ask);
			}
			if (!c->have_ark && t.have_ark) {
				c->ark = t.ark;
				c->have_ark = true;
				mbedtls_x509_crt_init(&t.ark);
			}
		}
		snp_chain_free(&t);
		if (p)
			break;
	}
}

/* c476f1eb-0123-45a5-9641-b4e7dde5bfe3 (vTPM service), EFI byte order:
 * attest/manifest.c, COCONUT kernel/src/protocols/attest.rs. */
static const uint8_t vtpm_guid[16] = {0xeb, 0xf1, 0x76, 0xc4, 0x23, 0x01, 0xa5, 0x45,
				      0x96, 0x41, 0xb4, 0xe7, 0xdd, 0xe5, 0xbf, 0xe3};

static uint8_t checked_ek[4096];
static size_t checked_ek_len;

/* m, ml: the manifest as read once, the bytes REPORT_DATA was checked against. */
static void manifest_ek_check(const uint8_t *m, size_t ml, struct snp_verify_result *res)
{
	size_t el;
	const uint8_t *ek;
	struct tpm_public pub;
	struct snp_check *c = &res->checks[res->n < SNP_MAX_CHECKS ? res->n++ : SNP_MAX_CHECKS - 1];
	uint8_t name[TPM_NAME_MAX];

	c->name = "manifest.ek";
	c->state = SNP_CHECK_FAIL;
	if (svsm_manifest_find(m, ml, vtpm_guid, &ek, &el, c->detail, SNP_DETAIL_LEN) &&
	    el <= sizeof(checked_ek) &&
	    tpm_public_parse(ek, el, false, &pub, c->detail, SNP_DETAIL_LEN) &&
	    tpm_ek_check(&pub, c->detail, SNP_DETAIL_LEN) && tpm_public_name(&pub, name)) {
		c->state = SNP_CHECK_PASS;
		/* what is written is what was checked: no second read of the file */
		memcpy(checked_ek, ek, el);
		checked_ek_len = el;
		int k = snprintf(c->detail, SNP_DETAIL_LEN, "RSA-2048 EK, name ");
		for (size_t i = 0; i < sizeof(name) && k + 3 < SNP_DETAIL_LEN; i++)
			k += snprintf(c->detail + k, SNP_DETAIL_LEN - (size_t)k, "%02x", name[i]);
	}
	if (c->state != SNP_CHECK_PASS)
		res->verified = false;
}

/* --repeat: rounds of one report against the shared warm chain cache. */
#define VERIFY_MAX_THREADS 64
struct repeat_job {
	const uint8_t *rbuf;
	size_t rlen;
	const struct snp_chain_cache *cc;
	const struct snp_verify_opts *o;
	unsigned long n;
	struct snp_report rep;
	struct snp_verify_result res;
};

static void *repeat_worker(void *p)
{
	struct repeat_job *j = p;
	for (unsigned long i = 0; i < j->n; i++) {
		snp_report_decode(j->rbuf, j->rlen, &j->rep);
		snp_verify_run_cached(&j->rep, snp_report_check(&j->rep), j->cc, j->o, &j->res);
	}
	return NULL;
}

static void write_manifest_ek(const char *out)
{
	FILE *f = fopen(out, "wbx");

	if (!f || fwrite(checked_ek, 1, checked_ek_len, f) != checked_ek_len || fclose(f)) {
		remove(out);
		die2("%s: %s", out, strerror(errno));
	}
}

/*
 * --policy: the appraisal csvsm-kbs makes (attest/policy.c), offline. The
 * REPORT_DATA binding and the quote come from the options as without it.
 */
static int policy_verdict(const char *path, const struct snp_verify_opts *o, const uint8_t *rbuf,
			  size_t rlen, const struct snp_chain *ch, const uint8_t *manifest,
			  size_t manifest_len, const struct appraisal_crl *crl, bool json)
{
	static struct appraisal_policy pol;
	static struct appraisal_result ar;
	struct appraisal_input in = {0};
	char err[256];

	if (o->allow_debug || o->allow_migrate_ma || o->vmpl || o->have_min_tcb ||
	    o->have_measurement)
		die2("--policy replaces --allow-debug, --allow-migrate-ma, --vmpl, --min-tcb and "
		     "--measurement");
	if (appraisal_policy_load(path, &pol, err, sizeof(err)))
		die2("%s", err);
	in.report = rbuf;
	in.report_len = rlen;
	in.chain = ch;
	in.at = o->at;
	in.trusted_ark = o->trusted_ark;
	in.n_trusted_ark = o->n_trusted_ark;
	in.have_report_data = o->have_report_data;
	memcpy(in.report_data, o->report_data, 64);
	in.manifest = manifest;
	in.manifest_len = manifest_len;
	in.quote = o->quote;
	in.crl = crl;
	appraise(&pol, &in, &ar);
	if (json)
		appraisal_print_json(stdout, &ar);
	else
		appraisal_print_human(stdout, &ar);
	return ar.status == EAR_STATUS_AFFIRMING ? 0 : 1;
}

int main(int argc, char **argv)
{
	enum {
		O_REPORT = 256,
		O_VCEK,
		O_VLEK,
		O_ASK,
		O_ASVK,
		O_ARK,
		O_CERTS,
		O_TABLE,
		O_ROOTS,
		O_PRODUCT,
		O_TRUST,
		O_TIME,
		O_DEBUG,
		O_MIGRATE_MA,
		O_VMPL,
		O_MINTCB,
		O_MEAS,
		O_RDATA,
		O_NONCE,
		O_MANIFEST,
		O_JSON,
		O_REPEAT,
		O_THREADS,
		O_HELP,
		O_QMSG,
		O_QSIG,
		O_QPCRS,
		O_AK,
		O_QNONCE,
		O_AKPUB,
		O_AKNAME,
		O_MANIFEST_EK,
		O_POLICY,
		O_CRL,
	};
	static const struct option lo[] = {
	    {"report", 1, 0, O_REPORT},
	    {"vcek", 1, 0, O_VCEK},
	    {"vlek", 1, 0, O_VLEK},
	    {"ask", 1, 0, O_ASK},
	    {"asvk", 1, 0, O_ASVK},
	    {"ark", 1, 0, O_ARK},
	    {"certs", 1, 0, O_CERTS},
	    {"cert-table", 1, 0, O_TABLE},
	    {"roots", 1, 0, O_ROOTS},
	    {"product", 1, 0, O_PRODUCT},
	    {"trust-ark", 1, 0, O_TRUST},
	    {"time", 1, 0, O_TIME},
	    {"allow-debug", 0, 0, O_DEBUG},
	    {"vmpl", 1, 0, O_VMPL},
	    {"min-tcb", 1, 0, O_MINTCB},
	    {"measurement", 1, 0, O_MEAS},
	    {"report-data", 1, 0, O_RDATA},
	    {"nonce", 1, 0, O_NONCE},
	    {"manifest", 1, 0, O_MANIFEST},
	    {"json", 0, 0, O_JSON},
	    {"repeat", 1, 0, O_REPEAT},
	    {"threads", 1, 0, O_THREADS},
	    {"help", 0, 0, O_HELP},
	    {"quote-msg", 1, 0, O_QMSG},
	    {"quote-sig", 1, 0, O_QSIG},
	    {"quote-pcrs", 1, 0, O_QPCRS},
	    {"ak", 1, 0, O_AK},
	    {"quote-nonce", 1, 0, O_QNONCE},
	    {"ak-public", 1, 0, O_AKPUB},
	    {"ak-name", 1, 0, O_AKNAME},
	    {"manifest-ek", 1, 0, O_MANIFEST_EK},
	    {"allow-migrate-ma", 0, 0, O_MIGRATE_MA},
	    {"policy", 1, 0, O_POLICY},
	    {"crl", 1, 0, O_CRL},
	    {0, 0, 0, 0},
	};
	struct inputs in = {0};
	struct snp_verify_opts o;
	const char *report_path = NULL, *nonce_hex = NULL, *manifest = NULL, *rdata_hex = NULL;
	const char *qmsg = NULL, *qsig = NULL, *qpcrs = NULL, *qak = NULL, *qnonce = NULL;
	const char *qakpub = NULL, *manifest_ek = NULL, *akname_hex = NULL, *policy_path = NULL;
	const char *crl_path[8];
	size_t n_crl = 0;
	bool json = false, have_time = false;
	unsigned long repeat = 0;
	unsigned threads = 1;
	int opt;

	memset(&o, 0, sizeof(o));
	while ((opt = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		char *end;
		switch (opt) {
		case O_REPORT:
			report_path = optarg;
			break;
		case O_VCEK:
			in.vcek = optarg;
			break;
		case O_VLEK:
			in.vlek = optarg;
			break;
		case O_ASK:
			in.ask = optarg;
			break;
		case O_ASVK:
			in.asvk = optarg;
			break;
		case O_ARK:
			in.ark = optarg;
			break;
		case O_CERTS:
			in.certs = optarg;
			break;
		case O_TABLE:
			in.table = optarg;
			break;
		case O_ROOTS:
			in.roots = optarg;
			break;
		case O_PRODUCT:
			o.product_hint = parse_product(optarg);
			break;
		case O_TRUST:
			if (in.n_trust >= SNP_MAX_TRUSTED_ARKS)
				die2("too many --trust-ark");
			in.trust_ark[in.n_trust++] = optarg;
			break;
		case O_TIME:
			parse_time(optarg, &o.at);
			have_time = true;
			break;
		case O_DEBUG:
			o.allow_debug = true;
			break;
		case O_MIGRATE_MA:
			o.allow_migrate_ma = true;
			break;
		case O_VMPL:
			errno = 0;
			o.vmpl = (uint32_t)strtoul(optarg, &end, 0);
			if (errno || *end || !*optarg || o.vmpl > 3)
				die2("--vmpl: 0..3");
			break;
		case O_MINTCB: {
			char err[160];
			if (appraisal_tcb_parse(optarg, &o.min_tcb, err, sizeof(err)))
				die2("--min-tcb: %s", err);
			o.have_min_tcb = true;
			break;
		}
		case O_CRL:
			if (n_crl >= sizeof(crl_path) / sizeof(crl_path[0]))
				die2("at most 8 --crl");
			crl_path[n_crl++] = optarg;
			break;
		case O_MEAS:
			if (parse_hex("--measurement", optarg, o.measurement, 48) != 48)
				die2("--measurement: need 48 bytes (96 hex digits)");
			o.have_measurement = true;
			break;
		case O_RDATA:
			rdata_hex = optarg;
			break;
		case O_NONCE:
			nonce_hex = optarg;
			break;
		case O_MANIFEST:
			manifest = optarg;
			break;
		case O_JSON:
			json = true;
			break;
		case O_THREADS:
			errno = 0;
			threads = (unsigned)strtoul(optarg, &end, 0);
			if (errno || *end || threads == 0 || threads > VERIFY_MAX_THREADS)
				die2("--threads: 1..%d", VERIFY_MAX_THREADS);
			break;
		case O_REPEAT:
			errno = 0;
			repeat = strtoul(optarg, &end, 0);
			if (errno || *end || repeat == 0 || repeat > 100000000)
				die2("--repeat: 1..100000000");
			break;
		case O_HELP:
			usage(stdout);
			return 0;
		case O_QMSG:
			qmsg = optarg;
			break;
		case O_QSIG:
			qsig = optarg;
			break;
		case O_QPCRS:
			qpcrs = optarg;
			break;
		case O_AK:
			qak = optarg;
			break;
		case O_QNONCE:
			qnonce = optarg;
			break;
		case O_AKPUB:
			qakpub = optarg;
			break;
		case O_AKNAME:
			akname_hex = optarg;
			break;
		case O_MANIFEST_EK:
			manifest_ek = optarg;
			break;
		case O_POLICY:
			policy_path = optarg;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (threads > 1 && !repeat)
		die2("--threads goes with --repeat");
	if (optind != argc || !report_path) {
		usage(stderr);
		return 2;
	}
	if ((in.vcek && in.vlek) || (in.ask && in.asvk))
		die2("give one of --vcek/--vlek and one of --ask/--asvk");
	if (rdata_hex && (nonce_hex || manifest))
		die2("--report-data and --nonce/--manifest are exclusive");
	if (!!nonce_hex != !!manifest)
		die2("--nonce and --manifest go together");

	if (!have_time) {
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		o.at = (struct snp_time){tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
					 tm.tm_hour,	    tm.tm_min,	   tm.tm_sec};
	}
	if (rdata_hex) {
		parse_hex("--report-data", rdata_hex, o.report_data, 64);
		o.have_report_data = true;
	}
	const uint8_t *mbuf = NULL; /* the manifest, read once: hashed here, searched for the EK */
	size_t mlen = 0;
	if (nonce_hex) {
		/*
		 * The SVSM attestation binding: REPORT_DATA = SHA-512(nonce ||
		 * manifest), the nonce exactly 64 bytes: SVSM_ATTEST_SERVICES and
		 * SVSM_ATTEST_SINGLE_SERVICE take no other size (csvsm's
		 * attest_decode, ATTEST_NONCE_LEN in include/attest/attest_proto.h;
		 * Linux's SNP_REPORT_USER_DATA_SIZE; COCONUT
		 * kernel/src/protocols/attest.rs). Any other length cannot be the
		 * nonce of a report csvsm made: a usage error, not a failed check.
		 */
		uint8_t nonce[ATTEST_NONCE_LEN];
		size_t nl = strlen(nonce_hex) - (strncasecmp(nonce_hex, "0x", 2) ? 0 : 2);
		if (nl != 2 * ATTEST_NONCE_LEN)
			die2("--nonce: need exactly %u bytes (%u hex digits), the size the SVSM "
			     "attestation calls take; got %zu hex digits",
			     ATTEST_NONCE_LEN, 2 * ATTEST_NONCE_LEN, nl);
		parse_hex("--nonce", nonce_hex, nonce, sizeof(nonce));
		mbuf = read_input(manifest, &mlen);
		mbedtls_sha512_context ctx;
		mbedtls_sha512_init(&ctx);
		mbedtls_sha512_starts_ret(&ctx, 0);
		mbedtls_sha512_update_ret(&ctx, nonce, sizeof(nonce));
		mbedtls_sha512_update_ret(&ctx, mbuf, mlen);
		mbedtls_sha512_finish_ret(&ctx, o.report_data);
		mbedtls_sha512_free(&ctx);
		o.have_report_data = true;
	}

	/* Optional TPM quote: all five inputs or none. */
	struct snp_quote_in quote = {0};
	uint8_t qn[1024], akname[TPM_NAME_MAX];
	if (akname_hex && !qakpub)
		die2("--ak-name goes with --ak-public");
	if (qak && qakpub)
		die2("give one of --ak and --ak-public");
	if (manifest_ek && !nonce_hex)
		die2("--manifest-ek needs --nonce and --manifest (the manifest REPORT_DATA binds)");
	/* Any guest on a genuine chip can bind a manifest of its own: the EK is
	 * csvsm's only when the launch is (MEASUREMENT) and the report is
	 * VMPL0's (csvsm's own, not one a guest kernel asked for). */
	if (manifest_ek && (!o.have_measurement || o.vmpl != 0))
		die2("--manifest-ek needs --measurement and --vmpl 0: without them any SNP guest's "
		     "manifest would pass");
	if (manifest_ek && unlink(manifest_ek) && errno != ENOENT)
		die2("%s: %s", manifest_ek, strerror(errno)); /* nothing stale survives a failure */
	if (qakpub) {
		qak = qakpub;
		quote.ak_tpm_public = true;
	}
	if (qmsg || qsig || qpcrs || qak || qnonce) {
		if (!qmsg || !qsig || !qpcrs || !qak || !qnonce)
			die2("the quote check needs --quote-msg, --quote-sig, --quote-pcrs, --ak "
			     "(or --ak-public) and --quote-nonce");
		bool tpm_public = quote.ak_tpm_public;
		memset(&quote, 0, sizeof(quote));
		quote.ak_tpm_public = tpm_public;
		if (akname_hex) {
			if (!tpm_public)
				die2("--ak-name goes with --ak-public");
			quote.ak_name_len =
			    parse_hex("--ak-name", akname_hex, akname, sizeof(akname));
			quote.ak_name = akname;
		}
		quote.msg = read_input(qmsg, &quote.msg_len);
		quote.sig = read_input(qsig, &quote.sig_len);
		quote.pcrs = read_input(qpcrs, &quote.pcrs_len);
		quote.ak = read_input(qak, &quote.ak_len);
		quote.nonce_len = parse_hex("--quote-nonce", qnonce, qn, sizeof(qn));
		quote.nonce = qn;
		o.quote = &quote;
	}

	/* The report: exactly 1184 bytes, or the input is unusable (exit 2). */
	size_t rlen;
	const uint8_t *rbuf = read_input(report_path, &rlen);
	struct snp_report rep;
	if (snp_report_decode(rbuf, rlen, &rep)) {
		if (json)
			printf("{\"verified\": false, \"checks\": [{\"name\": \"parse\", \"ok\": "
			       "false, "
			       "\"detail\": \"report is %zu bytes, not 1184\"}]}\n",
			       rlen);
		die2("%s: report is %zu bytes, not 1184", report_path, rlen);
	}
	int perr = snp_report_check(&rep);

	/* The chain: explicit files, then --certs, the table, --roots. */
	struct snp_chain ch;
	snp_chain_init(&ch);
	if (in.vcek || in.vlek)
		load_cert_file(&ch.leaf, &ch.have_leaf, in.vcek ? in.vcek : in.vlek);
	if (in.ask || in.asvk)
		load_cert_file(&ch.ask, &ch.have_ask, in.ask ? in.ask : in.asvk);
	if (in.ark)
		load_cert_file(&ch.ark, &ch.have_ark, in.ark);
	bool want_vlek = in.vlek || in.asvk || rep.signer.signing_key == SNP_SIGNING_KEY_VLEK;
	if (in.certs)
		from_certs_dir(&ch, in.certs, want_vlek);
	if (in.table)
		from_table(&ch, in.table);
	for (size_t i = 0; i < in.n_trust; i++) {
		mbedtls_x509_crt t;
		bool have = false;
		mbedtls_x509_crt_init(&t);
		load_cert_file(&t, &have, in.trust_ark[i]);
		snp_cert_fingerprint(&t, o.trusted_ark[o.n_trusted_ark++]);
		if (!ch.have_ark && i == 0) {
			ch.ark = t; /* the trusted root doubles as the ARK when none is given */
			ch.have_ark = true;
		} else {
			mbedtls_x509_crt_free(&t);
		}
	}
	if (in.roots) {
		if (ch.have_leaf)
			want_vlek = snp_cert_is_vlek(&ch.leaf);
		enum snp_product p = o.product_hint ? o.product_hint : rep.product;
		from_roots(&ch, in.roots, p, want_vlek);
	}
	if (!ch.have_leaf)
		die2("no VCEK/VLEK certificate (--vcek, --vlek, --certs or --cert-table)");
	if (!ch.have_ask || !ch.have_ark)
		die2("the ARK and ASK/ASVK are required (--ark/--ask, --certs, --cert-table, "
		     "--roots or --trust-ark); csvsm-verify embeds only AMD's ARK fingerprints");

	/* --crl: the CRLs' verdict on this chain, the check csvsm-kbs makes */
	static mbedtls_x509_crl crls;
	struct appraisal_crl crl_verdict;
	mbedtls_x509_crl_init(&crls);
	for (size_t i = 0; i < n_crl; i++) {
		size_t cl;
		const uint8_t *cb = read_input(crl_path[i], &cl);
		uint8_t *z = malloc(cl + 1); /* PEM: mbedTLS wants a terminating NUL, counted */
		if (!z)
			die2("out of memory");
		memcpy(z, cb, cl);
		z[cl] = 0;
		int bad = !cl || mbedtls_x509_crl_parse(&crls, z, cl + (z[0] == '-'));
		free(z);
		if (bad)
			die2("%s: not a CRL (DER or PEM)", crl_path[i]);
	}
	if (n_crl)
		appraisal_crl_judge(&ch, &crls, &crl_verdict);

	if (policy_path)
		return policy_verdict(policy_path, &o, rbuf, rlen, &ch, mbuf, mlen,
				      n_crl ? &crl_verdict : NULL, json);

	struct snp_verify_result res;
	if (repeat) {
		/* A service's path, for benchmarks: the chain verified once into
		 * the warm cache (timed with the rounds), then each round decodes
		 * the report bytes and runs every check against the cache, on
		 * --threads threads sharing the one cache. */
		struct snp_chain_cache cc;
		struct repeat_job jobs[VERIFY_MAX_THREADS];
		pthread_t tid[VERIFY_MAX_THREADS];
		struct timespec t0, t1, c0, c1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
		snp_chain_cache_init(&cc, &ch);
		for (unsigned i = 0; i < threads; i++) {
			jobs[i] = (struct repeat_job){
			    .rbuf = rbuf,
			    .rlen = rlen,
			    .cc = &cc,
			    .o = &o,
			    .n = repeat / threads + (i < repeat % threads),
			};
			if (i && pthread_create(&tid[i], NULL, repeat_worker, &jobs[i]))
				die2("--threads: cannot start a thread");
		}
		repeat_worker(&jobs[0]);
		for (unsigned i = 1; i < threads; i++)
			pthread_join(tid[i], NULL);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		snp_chain_cache_free(&cc);
		/* Every thread's last result must be the one a single run gives. */
		for (unsigned i = 1; i < threads; i++)
			if (jobs[i].n && memcmp(&jobs[i].res, &jobs[0].res, sizeof(res)))
				die2("--threads: thread %u's result differs from thread 0's", i);
		res = jobs[0].res;
		rep = jobs[0].rep;
		double s =
		    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		double cpu =
		    (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
		/* Wall clock, and CPU time (per core: what `openssl speed` divides
		 * by, its user time, and what a loaded machine does not blur). */
		fprintf(stderr,
			"repeat: %lu verifications in %.3f s, %.1f reports/s; %.3f s CPU, %.1f "
			"reports/s per CPU-second; %u thread%s\n",
			repeat, s, s > 0 ? (double)repeat / s : 0.0, cpu,
			cpu > 0 ? (double)repeat / cpu : 0.0, threads, threads > 1 ? "s" : "");
	} else {
		snp_verify_run(&rep, perr, &ch, &o, &res);
	}

	/* The vTPM's EK from the manifest REPORT_DATA binds (docs/vtpm.md): judged
	 * as a check of its own, written out only when every check passed. */
	if (manifest_ek)
		manifest_ek_check(mbuf, mlen, &res);
	if (n_crl && res.n < SNP_MAX_CHECKS) {
		struct snp_check *c = &res.checks[res.n++];
		c->name = "chain.crl";
		c->state = crl_verdict.ok ? SNP_CHECK_PASS : SNP_CHECK_FAIL;
		snprintf(c->detail, SNP_DETAIL_LEN, "%s", crl_verdict.detail);
		res.verified &= crl_verdict.ok;
	} else if (n_crl) {
		die2("--crl: no room for the check");
	}

	if (json)
		print_json(&rep, &res);
	else
		print_human(&rep, &res);
	snp_chain_free(&ch);
	free_inputs();
	if (manifest_ek && res.verified && checked_ek_len)
		write_manifest_ek(manifest_ek);
	else if (manifest_ek)
		remove(manifest_ek); /* no EK from an earlier run is left for a script to take */
	return res.verified ? 0 : 1;
}
