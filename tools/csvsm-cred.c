/*
 * csvsm-cred: a remote verifier's side of TPM 2.0 credential activation,
 * the step that ties a guest's attestation key (AK) to the vTPM's
 * endorsement key (EK) that csvsm's SNP report binds through the SVSM
 * manifest (docs/vtpm.md "From the SNP report to the quote"):
 *
 *   csvsm-cred make --ek EK --ak AK --state STATE --out CRED
 *       EK: the EK's public area (the manifest's vTPM entry, TPMT_PUBLIC, as
 *       `csvsm-verify --manifest-ek` writes it, or a TPM2B_PUBLIC); AK: the
 *       AK's TPM2B_PUBLIC (tpm2_readpublic -o). Checks that the EK is an
 *       RSA-2048 restricted decryption key and the AK a restricted signing
 *       key the TPM made, draws a 32-byte secret, and writes the credential
 *       for tpm2_activatecredential -i (CRED) and the verifier's record of
 *       the exchange (STATE, mode 0600: the EK's and AK's Names, the secret).
 *   csvsm-cred check --state STATE --ak AK --secret FILE
 *       The secret the guest recovered with tpm2_activatecredential equals
 *       the one made for this AK: so the AK is resident in the TPM that
 *       holds the EK's private key. Use the same AK file for the quote
 *       (csvsm-verify --ak-public).
 *
 * Exit status: 0 done / verified, 1 a key or the secret refused,
 * 2 usage error or unreadable input.
 */
#include <attest/tpm_cred.h>

#include <mbedtls/platform_util.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define CRED_MAX_INPUT 4096
#define STATE_MAGIC    "csvsm-cred 1\n"

static void die(int rc, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void die(int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "csvsm-cred: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(rc);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: csvsm-cred make --ek EK --ak AK --state STATE --out CRED\n"
		   "       csvsm-cred check --state STATE --ak AK --secret FILE\n");
}

static size_t read_file(const char *path, uint8_t *buf, size_t cap)
{
	FILE *f = fopen(path, "rb");
	size_t n;
	if (!f)
		die(2, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, cap, f);
	if (ferror(f) || (n == cap && fgetc(f) != EOF))
		die(2, "%s: unreadable or larger than %zu bytes", path, cap - 1);
	fclose(f);
	return n;
}

static void write_file(const char *path, const void *p, size_t n, int mode)
{
	/* A fresh file of this mode: an existing one (perhaps world-readable, or
	 * a symlink) is replaced, not reused. */
	if (unlink(path) && errno != ENOENT)
		die(2, "%s: %s", path, strerror(errno));
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
	if (fd < 0 || write(fd, p, n) != (ssize_t)n || close(fd))
		die(2, "%s: %s", path, strerror(errno));
}

static int sys_rng(void *ctx, unsigned char *out, size_t n)
{
	(void)ctx;
	while (n) {
		ssize_t r = getrandom(out, n, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		out += r;
		n -= (size_t)r;
	}
	return 0;
}

static void hex(FILE *f, const char *tag, const uint8_t *p, size_t n)
{
	fprintf(f, "%s ", tag);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
	fprintf(f, "\n");
}

static void put_hex(char *s, const char *tag, const uint8_t *p, size_t n)
{
	s += sprintf(s, "%s ", tag);
	for (size_t i = 0; i < n; i++)
		s += sprintf(s, "%02x", p[i]);
	sprintf(s, "\n");
}

static int nibble(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "tag <2n lowercase hex digits>\n" at *s; advances *s. */
static bool get_hex(const char **s, const char *tag, uint8_t *out, size_t n)
{
	size_t tl = strlen(tag);
	const char *p = *s;
	if (strncmp(p, tag, tl) || p[tl] != ' ')
		return false;
	p += tl + 1;
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(p[2 * i]), lo = hi < 0 ? -1 : nibble(p[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	if (p[2 * n] != '\n')
		return false;
	*s = p + 2 * n + 1;
	return true;
}

struct state {
	uint8_t ek_name[TPM_NAME_MAX], ak_name[TPM_NAME_MAX], secret[TPM_CRED_SECRET_LEN];
};

static void load_ak(const char *path, uint8_t *buf, struct tpm_public *ak,
		    uint8_t name[TPM_NAME_MAX])
{
	char d[256];
	size_t n = read_file(path, buf, CRED_MAX_INPUT);
	if (!tpm_public_parse(buf, n, true, ak, d, sizeof(d)))
		die(1, "%s: the AK (TPM2B_PUBLIC, tpm2_readpublic -o): %s", path, d);
	if (!tpm_ak_check(ak, d, sizeof(d)))
		die(1, "%s: %s", path, d);
	if (!tpm_public_name(ak, name))
		die(1, "%s: AK name not computable", path);
}

int main(int argc, char **argv)
{
	const char *ek_path = NULL, *ak_path = NULL, *state_path = NULL, *out_path = NULL,
		   *secret_path = NULL;
	static uint8_t ekb[CRED_MAX_INPUT], akb[CRED_MAX_INPUT], cred[TPM_CRED_MAX];
	struct tpm_public ek, ak;
	struct state st;
	char d[256];

	if (argc < 2 || (strcmp(argv[1], "make") && strcmp(argv[1], "check"))) {
		usage(argc >= 2 && !strcmp(argv[1], "--help") ? stdout : stderr);
		return argc >= 2 && !strcmp(argv[1], "--help") ? 0 : 2;
	}
	bool make = !strcmp(argv[1], "make");
	for (int i = 2; i < argc; i++) {
		const char **slot = !strcmp(argv[i], "--ek")	   ? &ek_path
				    : !strcmp(argv[i], "--ak")	   ? &ak_path
				    : !strcmp(argv[i], "--state")  ? &state_path
				    : !strcmp(argv[i], "--out")	   ? &out_path
				    : !strcmp(argv[i], "--secret") ? &secret_path
								   : NULL;
		if (!slot || i + 1 >= argc) {
			usage(stderr);
			die(2, "bad argument '%s'", argv[i]);
		}
		*slot = argv[++i];
	}

	if (make) {
		if (!ek_path || !ak_path || !state_path || !out_path || secret_path) {
			usage(stderr);
			return 2;
		}
		size_t n = read_file(ek_path, ekb, sizeof(ekb));
		if (!tpm_public_parse_any(ekb, n, &ek, d, sizeof(d)))
			die(1, "%s: the EK: %s", ek_path, d);
		if (!tpm_ek_check(&ek, d, sizeof(d)))
			die(1, "%s: %s", ek_path, d);
		tpm_public_name(&ek, st.ek_name);
		load_ak(ak_path, akb, &ak, st.ak_name);
		if (sys_rng(NULL, st.secret, sizeof(st.secret)))
			die(2, "getrandom failed");
		size_t cl =
		    tpm_make_credential(&ek, st.ak_name, sizeof(st.ak_name), st.secret,
					sizeof(st.secret), sys_rng, NULL, cred, sizeof(cred));
		if (!cl)
			die(2, "making the credential failed");
		char text[sizeof(STATE_MAGIC) + 3 * (16 + 2 * TPM_NAME_MAX)];
		size_t tl = strlen(strcpy(text, STATE_MAGIC));
		put_hex(text + tl, "ek-name", st.ek_name, sizeof(st.ek_name));
		put_hex(text + strlen(text), "ak-name", st.ak_name, sizeof(st.ak_name));
		put_hex(text + strlen(text), "secret", st.secret, sizeof(st.secret));
		write_file(state_path, text, strlen(text), 0600);
		write_file(out_path, cred, cl, 0644);
		mbedtls_platform_zeroize(text, sizeof(text));
		mbedtls_platform_zeroize(&st.secret, sizeof(st.secret));
		hex(stdout, "ek-name", st.ek_name, sizeof(st.ek_name));
		hex(stdout, "ak-name", st.ak_name, sizeof(st.ak_name));
		printf("credential %s: %zu bytes for tpm2_activatecredential -i\n", out_path, cl);
		return 0;
	}

	if (!state_path || !ak_path || !secret_path || ek_path || out_path) {
		usage(stderr);
		return 2;
	}
	char text[512];
	uint8_t got[TPM_CRED_SECRET_LEN + 1] = {0}, ak_name[TPM_NAME_MAX];
	size_t tl = read_file(state_path, (uint8_t *)text, sizeof(text) - 1);
	text[tl] = 0;
	if (memchr(text, 0, tl))
		die(2, "%s: malformed state file", state_path);
	const char *s = text;
	if (strncmp(s, STATE_MAGIC, strlen(STATE_MAGIC)))
		die(2, "%s: not a csvsm-cred state file", state_path);
	s += strlen(STATE_MAGIC);
	if (!get_hex(&s, "ek-name", st.ek_name, sizeof(st.ek_name)) ||
	    !get_hex(&s, "ak-name", st.ak_name, sizeof(st.ak_name)) ||
	    !get_hex(&s, "secret", st.secret, sizeof(st.secret)) || *s)
		die(2, "%s: malformed state file", state_path);
	mbedtls_platform_zeroize(text, sizeof(text));
	load_ak(ak_path, akb, &ak, ak_name);
	if (memcmp(ak_name, st.ak_name, sizeof(ak_name)))
		die(1, "%s: not the AK the credential was made for", ak_path);
	size_t gl = read_file(secret_path, got, sizeof(got));
	unsigned diff = gl != sizeof(st.secret);
	for (size_t i = 0; i < sizeof(st.secret); i++)
		diff |= (unsigned)(got[i % sizeof(got)] ^ st.secret[i]);
	mbedtls_platform_zeroize(&st.secret, sizeof(st.secret));
	mbedtls_platform_zeroize(got, sizeof(got));
	if (diff)
		die(1,
		    "%s: the activated secret (%zu bytes) is not the credential's: the AK is not "
		    "resident in the TPM of that EK",
		    secret_path, gl);
	hex(stdout, "ak-name", ak_name, sizeof(ak_name));
	printf("activated: the AK is resident in the TPM that holds the EK (name ");
	for (size_t i = 0; i < sizeof(st.ek_name); i++)
		printf("%02x", st.ek_name[i]);
	printf(")\n");
	return 0;
}
