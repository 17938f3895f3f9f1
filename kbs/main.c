/*
 * csvsm-kbs: the relying party's service (docs/kbs.md). `serve` runs the
 * KBS protocol (kbs/service.c) behind Debian's libmicrohttpd: HTTPS with
 * the given key and certificate, or plain HTTP only with --insecure-http
 * and only on a loopback address. The owners' commands work on the same
 * registry: validate-policy, put-secret, list-instances.
 *
 * Limits: a request body of KBS_BODY_MAX (then 413, the rest is read and
 * dropped), the connection's memory (headers) 64 KiB (libmicrohttpd
 * answers 431/413 itself), 10 s idle per connection (--idle-timeout: silent
 * and half-open clients are dropped), 30 s for a whole request
 * (--request-timeout: a client that trickles a byte within every idle
 * timeout is dropped too, see reaper below), at most 512 connections, 64
 * from one address (--max-conn-per-ip), 100000 outstanding sessions
 * (--max-sessions, kbs/service.c session_room).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <microhttpd.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kbs/jose.h"
#include "kbs/kbs.h"

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "csvsm-kbs: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage:\n"
		"  csvsm-kbs serve --policy FILE --db URL [--listen ADDR:PORT]\n"
		"                  (--tls-cert PEM --tls-key PEM | --insecure-http)\n"
		"                  [--token-key PEM] [--trust-ark PEM]... [--kds-dir DIR] [--crl "
		"FILE]\n"
		"                  [--nonce-ttl S] [--token-ttl S] [--threads N] [--port-file F]\n"
		"                  [--max-seconds S] [--idle-timeout S] [--request-timeout S]\n"
		"                  [--max-conn-per-ip N] [--max-sessions N]\n"
		"                  [--ek-ca-cert PEM --ek-ca-key PEM]\n"
		"  (--crl FILE may be given several times: the ARKs' CRLs, an ASK's CRL)\n"
		"  csvsm-kbs validate-policy FILE\n"
		"  csvsm-kbs put-secret --db URL REPOSITORY/TYPE/TAG --rule affirming|warning "
		"--file F\n"
		"  csvsm-kbs list-instances --db URL [--json]\n"
		"  csvsm-kbs vtpm-register --db URL INSTANCE [--lease-seconds S] [--reset]\n"
		"  csvsm-kbs vtpm-release --db URL INSTANCE\n"
		"  (INSTANCE: the 32 hex digits of csvsm-igvm --vtpm-instance)\n"
		"URL: sqlite:PATH (default backend) or postgresql://... (replicas share it)\n"
		"--insecure-http serves plain HTTP, and only on 127.0.0.0/8 or ::1.\n");
}

static uint8_t *slurp(const char *path, size_t max, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	if (!f)
		die("%s: %s", path, strerror(errno));
	b = malloc(max + 1);
	*len = b ? fread(b, 1, max + 1, f) : 0;
	fclose(f);
	if (!b || *len > max)
		die("%s: larger than %zu bytes", path, max);
	b[*len] = 0;
	return b;
}

/* ---- HTTP glue ---- */

struct conn {
	uint8_t *body;
	size_t len;
	bool too_large;
};

static struct kbs K;
static volatile sig_atomic_t stop;

/*
 * The reaper: libmicrohttpd 0.9.75 drops a connection only after
 * MHD_OPTION_CONNECTION_TIMEOUT seconds *without* traffic, so a client that
 * sends one byte of its headers or body within every idle timeout keeps its
 * connection (and its slot of 512, 64 per address) for ever: a handful of
 * addresses shut every other client out ("slowloris"). The service's own
 * loop therefore shuts down, with shutdown(2), any connection whose current
 * request has taken longer than --request-timeout; libmicrohttpd then sees
 * the socket end and closes it itself. The table follows libmicrohttpd's
 * connection notifications (MHD_OPTION_NOTIFY_CONNECTION), whose CLOSED
 * call comes before the socket is closed (daemon.c MHD_cleanup_connections),
 * and both sides take the lock, so the reaper never touches a socket number
 * that was closed and reused.
 */
#define KBS_CONN_MAX 512u
struct conn_slot {
	bool used, shut;
	MHD_socket fd;
	struct timespec start; /* the current request's first byte (or the connection's) */
};
static struct conn_slot slots[KBS_CONN_MAX];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static long request_timeout = 30;

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	(void)cls;
	pthread_mutex_lock(&slots_lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci =
		    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = NULL;
		for (unsigned i = 0; ci && i < KBS_CONN_MAX; i++)
			if (!slots[i].used) {
				slots[i] = (struct conn_slot){.used = true, .fd = ci->connect_fd};
				clock_gettime(CLOCK_MONOTONIC, &slots[i].start);
				*socket_context = &slots[i];
				break;
			}
	} else if (*socket_context) {
		((struct conn_slot *)*socket_context)->used = false;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&slots_lock);
}

/* A request answered: the next one on this connection gets its own time. */
static void request_done(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	struct conn_slot *sl = ci ? ci->socket_context : NULL;
	if (!sl)
		return;
	pthread_mutex_lock(&slots_lock);
	if (sl->used)
		clock_gettime(CLOCK_MONOTONIC, &sl->start);
	pthread_mutex_unlock(&slots_lock);
}

static void reap(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&slots_lock);
	for (unsigned i = 0; i < KBS_CONN_MAX; i++)
		if (slots[i].used && !slots[i].shut &&
		    now.tv_sec - slots[i].start.tv_sec > request_timeout) {
			shutdown(slots[i].fd, SHUT_RDWR);
			slots[i].shut = true;
		}
	pthread_mutex_unlock(&slots_lock);
}

static void on_signal(int s)
{
	(void)s;
	stop = 1;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	struct conn *st = *con_cls;
	if (!st) {
		if (!(st = calloc(1, sizeof(*st))))
			return MHD_NO;
		*con_cls = st;
		return MHD_YES;
	}
	if (*upload_size) {
		/* copy once, bounded; past the limit the rest is dropped */
		if (!st->too_large && *upload_size <= KBS_BODY_MAX - st->len) {
			uint8_t *nb = realloc(st->body, st->len + *upload_size);
			if (!nb)
				return MHD_NO;
			st->body = nb;
			memcpy(st->body + st->len, upload, *upload_size);
			st->len += *upload_size;
		} else {
			st->too_large = true;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	struct kbs_request rq = {
	    .method = method,
	    .url = url,
	    .content_type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type"),
	    .cookie = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Cookie"),
	    .authorization = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization"),
	    .body = st->body,
	    .body_len = st->len,
	    .body_too_large = st->too_large,
	};
	struct kbs_response rs;
	kbs_handle(&K, &rq, &rs);
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(rs.len, rs.body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		kbs_response_free(&rs);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type",
				rs.content_type ? rs.content_type : "text/plain");
	MHD_add_response_header(r, "Cache-Control", "no-store");
	if (rs.set_cookie[0])
		MHD_add_response_header(r, "Set-Cookie", rs.set_cookie);
	if (rs.allow)
		MHD_add_response_header(r, "Allow", rs.allow);
	enum MHD_Result ret = MHD_queue_response(c, (unsigned)rs.status, r);
	MHD_destroy_response(r);
	return ret;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct conn *st = *con_cls;
	request_done(c);
	if (st) {
		if (st->body)
			OPENSSL_cleanse(st->body, st->len);
		free(st->body);
		free(st);
	}
	*con_cls = NULL;
}

static bool loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return false;
}

static void parse_listen(const char *s, struct sockaddr_storage *ss)
{
	char host[128];
	const char *colon = strrchr(s, ':');
	memset(ss, 0, sizeof(*ss));
	if (!colon || (size_t)(colon - s) >= sizeof(host))
		die("--listen: ADDR:PORT ([::1]:PORT for IPv6)");
	char *end;
	unsigned long port = strtoul(colon + 1, &end, 10);
	if (*end || port > 65535)
		die("--listen: port 0..65535");
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		host[strlen(host) - 1] = 0;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, host + 1, &a->sin6_addr) != 1)
			die("--listen: not an IPv6 address");
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
			die("--listen: not an IPv4 address");
	}
}

static EVP_PKEY *token_key(const char *path)
{
	EVP_PKEY *k = NULL;
	if (!path)
		return EVP_EC_gen("prime256v1"); /* tokens die with the process */
	FILE *f = fopen(path, "r");
	if (!f)
		die("%s: %s", path, strerror(errno));
	k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	char grp[32];
	size_t gl;
	if (!k || !EVP_PKEY_is_a(k, "EC") ||
	    !EVP_PKEY_get_utf8_string_param(k, "group", grp, sizeof(grp), &gl) ||
	    strcmp(grp, "prime256v1"))
		die("%s: the token key must be an EC P-256 private key (ES256), PEM", path);
	return k;
}

static int serve(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"policy", 1, 0, 'p'},	    {"db", 1, 0, 'd'},
	    {"listen", 1, 0, 'l'},	    {"tls-cert", 1, 0, 'c'},
	    {"tls-key", 1, 0, 'k'},	    {"insecure-http", 0, 0, 'i'},
	    {"token-key", 1, 0, 't'},	    {"trust-ark", 1, 0, 'a'},
	    {"kds-dir", 1, 0, 'K'},	    {"crl", 1, 0, 'r'},
	    {"nonce-ttl", 1, 0, 'n'},	    {"token-ttl", 1, 0, 'T'},
	    {"threads", 1, 0, 'j'},	    {"port-file", 1, 0, 'P'},
	    {"max-seconds", 1, 0, 'm'},	    {"idle-timeout", 1, 0, 'I'},
	    {"request-timeout", 1, 0, 'Q'}, {"max-conn-per-ip", 1, 0, 'C'},
	    {"max-sessions", 1, 0, 'S'},    {"ek-ca-cert", 1, 0, 'E'},
	    {"ek-ca-key", 1, 0, 'F'},	    {0, 0, 0, 0},
	};
	const char *policy = NULL, *db = NULL, *listen = "127.0.0.1:8080", *cert = NULL,
		   *keyf = NULL, *tokf = NULL, *kds = NULL, *portf = NULL, *ekca = NULL,
		   *ekkey = NULL;
	const char *arks[SNP_MAX_TRUSTED_ARKS], *crlf[8];
	size_t n_arks = 0, n_crl = 0;
	bool insecure = false;
	long nonce_ttl = 300, token_ttl = 300, threads = 4, max_seconds = 0, idle = 10;
	long per_ip = 64, max_sessions = KBS_MAX_SESSIONS;
	int o;

	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'p':
			policy = optarg;
			break;
		case 'd':
			db = optarg;
			break;
		case 'l':
			listen = optarg;
			break;
		case 'c':
			cert = optarg;
			break;
		case 'k':
			keyf = optarg;
			break;
		case 'i':
			insecure = true;
			break;
		case 't':
			tokf = optarg;
			break;
		case 'a':
			if (n_arks >= SNP_MAX_TRUSTED_ARKS)
				die("too many --trust-ark");
			arks[n_arks++] = optarg;
			break;
		case 'K':
			kds = optarg;
			break;
		case 'r':
			if (n_crl >= sizeof(crlf) / sizeof(crlf[0]))
				die("at most 8 --crl");
			crlf[n_crl++] = optarg;
			break;
		case 'P':
			portf = optarg;
			break;
		case 'E':
			ekca = optarg;
			break;
		case 'F':
			ekkey = optarg;
			break;
		default: {
			/* the numeric options: a whole decimal number, or usage */
			const struct {
				int opt;
				long *dst;
			} num[] = {{'n', &nonce_ttl}, {'T', &token_ttl},
				   {'j', &threads},   {'m', &max_seconds},
				   {'I', &idle},      {'Q', &request_timeout},
				   {'C', &per_ip},    {'S', &max_sessions}};
			size_t i = 0;
			char *end = NULL;
			while (i < sizeof(num) / sizeof(num[0]) && num[i].opt != o)
				i++;
			if (i == sizeof(num) / sizeof(num[0]) ||
			    (*num[i].dst = strtol(optarg, &end, 10), !*optarg || *end)) {
				usage(stderr);
				return 2;
			}
		}
		}
	}
	if (!policy || !db || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (nonce_ttl < 1 || nonce_ttl > 86400 || token_ttl < 1 || token_ttl > 86400)
		die("--nonce-ttl and --token-ttl: 1..86400 seconds");
	if (threads < 1 || threads > 64)
		die("--threads: 1..64");
	if (idle < 1 || idle > 300)
		die("--idle-timeout: 1..300 seconds");
	if (request_timeout < 1 || request_timeout > 3600)
		die("--request-timeout: 1..3600 seconds");
	if (per_ip < 1 || per_ip > (long)KBS_CONN_MAX)
		die("--max-conn-per-ip: 1..%u", KBS_CONN_MAX);
	if (max_sessions < 1 || max_sessions > 100000000)
		die("--max-sessions: 1..100000000");
	if (!!cert != !!keyf)
		die("--tls-cert and --tls-key go together");
	if (!!ekca != !!ekkey)
		die("--ek-ca-cert and --ek-ca-key go together");
	if (!cert && !insecure)
		die("HTTPS needs --tls-cert and --tls-key; plain HTTP needs --insecure-http "
		    "(loopback only)");
	if (cert && insecure)
		die("--insecure-http and --tls-cert exclude each other");
	struct sockaddr_storage ss;
	parse_listen(listen, &ss);
	if (insecure && !loopback(&ss))
		die("--insecure-http listens on a loopback address only (127.0.0.0/8, ::1), not %s",
		    listen);

	struct appraisal_policy pol;
	char err[512];
	if (appraisal_policy_load(policy, &pol, err, sizeof(err)))
		die("%s", err);
	if (pol.have_report_data)
		die("%s: snp.report_data is set per exchange from the nonce and the TEE key; "
		    "remove it",
		    policy);
	struct registry *reg;
	if (registry_open(db, &reg, err, sizeof(err)))
		die("%s", err);
	EVP_PKEY *tk = token_key(tokf);
	if (!tk)
		die("cannot make a token key");
	kbs_init(&K, reg, &pol, tk);
	K.nonce_ttl = nonce_ttl;
	K.token_ttl = token_ttl;
	K.kds_dir = kds;
	K.secure_cookie = cert != NULL;
	K.max_sessions = max_sessions;
	if (ekca) {
		/* the persistent vTPM's EK CA (kbs/vtpm.c ek_certificate) */
		FILE *f = fopen(ekca, "r");
		K.ek_ca = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
		if (f)
			fclose(f);
		f = fopen(ekkey, "r");
		K.ek_ca_key = f ? PEM_read_PrivateKey(f, NULL, NULL, NULL) : NULL;
		if (f)
			fclose(f);
		if (!K.ek_ca || !K.ek_ca_key || X509_check_private_key(K.ek_ca, K.ek_ca_key) != 1)
			die("%s, %s: an EK CA certificate and its private key (PEM)", ekca, ekkey);
	}
	for (size_t i = 0; i < n_arks; i++) {
		size_t l;
		uint8_t *b = slurp(arks[i], 65536, &l);
		mbedtls_x509_crt c;
		mbedtls_x509_crt_init(&c);
		if (snp_cert_parse(&c, b, l + (b[0] == '-')))
			die("%s: not a certificate", arks[i]);
		snp_cert_fingerprint(&c, K.trusted_ark[K.n_trusted_ark++]);
		if (i == 0) {
			K.trust_ark_der = b;
			K.trust_ark_len = l + (b[0] == '-');
		} else {
			free(b);
		}
		mbedtls_x509_crt_free(&c);
	}
	/* the CRLs, one list (mbedtls_x509_crl_parse appends): appraisal_crl_judge */
	static mbedtls_x509_crl crl;
	mbedtls_x509_crl_init(&crl);
	for (size_t i = 0; i < n_crl; i++) {
		size_t l;
		uint8_t *b = slurp(crlf[i], 1 << 20, &l);
		if (!l || mbedtls_x509_crl_parse(&crl, b, l + (b[0] == '-')))
			die("%s: not a CRL (DER or PEM)", crlf[i]);
		free(b);
		K.crls = &crl;
	}

	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL_LINUX_ONLY |
			 (ss.ss_family == AF_INET6 ? MHD_USE_IPv6 : 0) | (cert ? MHD_USE_TLS : 0);
	size_t cl = 0, kl = 0;
	char *certpem = cert ? (char *)slurp(cert, 1 << 20, &cl) : NULL;
	char *keypem = keyf ? (char *)slurp(keyf, 1 << 20, &kl) : NULL;
	/* the options of both HTTP and HTTPS; the TLS key and certificate at the end */
	struct MHD_OptionItem mo[] = {
	    {MHD_OPTION_THREAD_POOL_SIZE, threads, NULL},
	    {MHD_OPTION_CONNECTION_LIMIT, KBS_CONN_MAX, NULL},
	    {MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip, NULL},
	    {MHD_OPTION_CONNECTION_TIMEOUT, idle, NULL},
	    {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 65536, NULL},
	    {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)completed, NULL},
	    {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, NULL},
	    {cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, certpem},
	    {MHD_OPTION_HTTPS_MEM_KEY, 0, keypem},
	    {MHD_OPTION_END, 0, NULL},
	};
	struct MHD_Daemon *d =
	    MHD_start_daemon(flags, 0, NULL, NULL, answer, NULL, MHD_OPTION_SOCK_ADDR,
			     (struct sockaddr *)&ss, MHD_OPTION_ARRAY, mo, MHD_OPTION_END);
	if (!d)
		die("cannot listen on %s%s", listen,
		    cert ? " (HTTPS: check the key and certificate)" : "");
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	unsigned port = info ? info->port : 0;
	if (portf) {
		char tmp[4096];
		snprintf(tmp, sizeof(tmp), "%s.tmp", portf);
		FILE *f = fopen(tmp, "w");
		if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) || rename(tmp, portf))
			die("%s: cannot write", portf);
	}
	fprintf(stderr, "csvsm-kbs: %s on %s port %u, registry %s, policy %s (%s), %ld threads\n",
		cert ? "HTTPS" : "HTTP (loopback, --insecure-http)", listen, port,
		registry_backend(reg), policy, pol.id, threads);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	time_t t0 = time(NULL);
	while (!stop && (!max_seconds || time(NULL) - t0 < max_seconds)) {
		usleep(100 * 1000);
		reap();
	}
	MHD_stop_daemon(d);
	fprintf(stderr,
		"csvsm-kbs: stopped (chain cache: %llu hits, %llu chains verified; %llu "
		"appraisals, %.1f us of thread CPU each)\n",
		(unsigned long long)K.chains.hits, (unsigned long long)K.chains.misses,
		(unsigned long long)K.appraisals,
		K.appraisals ? (double)K.appraise_ns / 1e3 / (double)K.appraisals : 0.0);
	kbs_fini(&K);
	X509_free(K.ek_ca);
	EVP_PKEY_free(K.ek_ca_key);
	mbedtls_x509_crl_free(&crl);
	registry_close(reg);
	EVP_PKEY_free(tk);
	free(certpem);
	free(keypem);
	return 0;
}

/* ---- owners' commands ---- */

static int validate_policy(int argc, char **argv)
{
	struct appraisal_policy p;
	char err[512];
	if (argc != 2) {
		usage(stderr);
		return 2;
	}
	if (appraisal_policy_load(argv[1], &p, err, sizeof(err))) {
		fprintf(stderr, "csvsm-kbs: %s\n", err);
		return 1;
	}
	printf("%s: valid, id %s; %zu measurement(s), %zu reference PCR value(s)%s%s\n", argv[1],
	       p.id, p.n_meas, p.n_pcrs, p.require_svsm ? ", csvsm's SVSM evidence required" : "",
	       p.have_report_data ? "; report_data is csvsm-verify's only (csvsm-kbs refuses it)"
				  : "");
	return 0;
}

static int put_secret(int argc, char **argv)
{
	static const struct option lo[] = {
	    {"db", 1, 0, 'd'}, {"rule", 1, 0, 'r'}, {"file", 1, 0, 'f'}, {0, 0, 0, 0}};
	const char *db = NULL, *rule = NULL, *file = NULL;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (o == 'd')
			db = optarg;
		else if (o == 'r')
			rule = optarg;
		else if (o == 'f')
			file = optarg;
		else
			return 2;
	}
	if (!db || !rule || !file || optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(rule, "affirming") && strcmp(rule, "warning"))
		die("--rule: affirming (released only on an affirming appraisal) or warning "
		    "(affirming or warning)");
	char seg[3][KBS_RESOURCE_SEG + 1];
	const char *p = argv[optind];
	for (int i = 0; i < 3; i++) {
		size_t l = strcspn(p, "/");
		if (l == 0 || l > KBS_RESOURCE_SEG ||
		    strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
			      "klmnopqrstuvwxyz0123456789._-") < l ||
		    (i < 2 && p[l] != '/') || (i == 2 && p[l]) || !strncmp(p, "..", l) ||
		    !strncmp(p, ".", l))
			die("REPOSITORY/TYPE/TAG, each [A-Za-z0-9._-]{1,%d}", KBS_RESOURCE_SEG);
		memcpy(seg[i], p, l);
		seg[i][l] = 0;
		p += l + 1;
	}
	size_t len;
	uint8_t *val = slurp(file, REG_VALUE_MAX, &len);
	struct registry *reg;
	char err[512];
	if (registry_open(db, &reg, err, sizeof(err)))
		die("%s", err);
	int rc = registry_resource_put(reg, seg[0], seg[1], seg[2], rule, val, len);
	OPENSSL_cleanse(val, len);
	free(val);
	registry_close(reg);
	if (rc != REG_OK)
		die("registry: cannot store the resource");
	printf("%s/%s/%s: %zu bytes, released on an %s appraisal\n", seg[0], seg[1], seg[2], len,
	       !strcmp(rule, "affirming") ? "affirming" : "affirming or warning");
	return 0;
}

static void print_instance(const struct reg_instance *in, void *ctx)
{
	bool json = *(bool *)ctx;
	if (json)
		printf(
		    "{\"id\": \"%s\", \"chip_id\": \"%s\", \"measurement\": \"%s\", "
		    "\"first_attested\": %lld, \"last_attested\": %lld, \"attestations\": %lld, "
		    "\"last_status\": \"%s\", \"state_version\": %llu, \"lease_holder\": \"%s\", "
		    "\"lease_expires\": %lld}\n",
		    in->id, in->chip_id, in->measurement, (long long)in->first_attested,
		    (long long)in->last_attested, (long long)in->attestations, in->last_status,
		    (unsigned long long)in->state_version, in->lease_holder,
		    (long long)in->lease_expires);
	else
		printf(
		    "%s  %s  attested %lld times (first %lld, last %lld)  state %llu  lease %s\n",
		    in->id, in->last_status, (long long)in->attestations,
		    (long long)in->first_attested, (long long)in->last_attested,
		    (unsigned long long)in->state_version,
		    in->lease_holder[0] ? in->lease_holder : "-");
}

static int list_instances(int argc, char **argv)
{
	static const struct option lo[] = {{"db", 1, 0, 'd'}, {"json", 0, 0, 'j'}, {0, 0, 0, 0}};
	const char *db = NULL;
	bool json = false;
	int o;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (o == 'd')
			db = optarg;
		else if (o == 'j')
			json = true;
		else
			return 2;
	}
	if (!db || optind != argc) {
		usage(stderr);
		return 2;
	}
	struct registry *reg;
	char err[512];
	if (registry_open(db, &reg, err, sizeof(err)))
		die("%s", err);
	int rc = registry_instance_list(reg, print_instance, &json);
	registry_close(reg);
	return rc == REG_OK ? 0 : 1;
}

/* INSTANCE (32 hex digits, csvsm-igvm --vtpm-instance) -> "csvsm_vtpm:<hex>" */
static void vtpm_id(const char *hex, char id[REG_ID_MAX])
{
	size_t l = strlen(hex);
	if (l != 32 || strspn(hex, "0123456789abcdefABCDEF") != 32)
		die("INSTANCE: the 32 hex digits of csvsm-igvm --vtpm-instance");
	strcpy(id, "csvsm_vtpm:");
	for (size_t i = 0; i < l; i++)
		id[11 + i] = (char)(hex[i] >= 'A' && hex[i] <= 'F' ? hex[i] - 'A' + 'a' : hex[i]);
	id[11 + l] = 0;
}

/*
 * The owner's commands for the persistent vTPM (docs/kbs.md "The persistent
 * vTPM"): vtpm-register makes an instance's 32-byte state root key (never
 * shown) with the lease length; --reset gives an existing instance a new key
 * and version 0 (a new TPM, deliberately: the old state never opens again);
 * vtpm-release ends whoever's lease (a crashed VM's, before it expires).
 */
static int vtpm_owner(int argc, char **argv, bool reg_cmd)
{
	static const struct option lo[] = {
	    {"db", 1, 0, 'd'}, {"lease-seconds", 1, 0, 'l'}, {"reset", 0, 0, 'r'}, {0, 0, 0, 0}};
	const char *db = NULL;
	long lease = 300;
	bool reset = false;
	int o;
	char *end;
	optind = 1;
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		if (o == 'd')
			db = optarg;
		else if (o == 'l' && reg_cmd)
			lease = strtol(optarg, &end, 10), lease = *end ? -1 : lease;
		else if (o == 'r' && reg_cmd)
			reset = true;
		else {
			usage(stderr);
			return 2;
		}
	}
	if (!db || optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	if (lease < 10 || lease > 86400)
		die("--lease-seconds: 10..86400");
	char id[REG_ID_MAX], err[512];
	vtpm_id(argv[optind], id);
	struct registry *reg;
	if (registry_open(db, &reg, err, sizeof(err)))
		die("%s", err);
	int rc;
	if (reg_cmd) {
		uint8_t key[REG_VTPM_KEY];
		if (RAND_bytes(key, sizeof(key)) != 1)
			die("no randomness");
		rc = registry_vtpm_register(reg, id, key, lease, reset);
		OPENSSL_cleanse(key, sizeof(key));
		if (rc == REG_OK)
			printf("%s: registered%s, lease %ld s, state version 0 (the first boot "
			       "manufactures)\n",
			       id,
			       reset ? " anew (a new state key: the old state never opens again)"
				     : "",
			       lease);
		else if (rc == REG_NO)
			fprintf(stderr,
				"csvsm-kbs: %s is registered already (--reset makes a new TPM)\n",
				id);
	} else {
		rc = registry_vtpm_release(reg, id);
		if (rc == REG_OK)
			printf("%s: lease released\n", id);
		else if (rc == REG_NO)
			fprintf(stderr, "csvsm-kbs: %s is not registered\n", id);
	}
	registry_close(reg);
	return rc == REG_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "serve"))
		return serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "validate-policy"))
		return validate_policy(argc - 1, argv + 1);
	if (!strcmp(argv[1], "put-secret"))
		return put_secret(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list-instances"))
		return list_instances(argc - 1, argv + 1);
	if (!strcmp(argv[1], "vtpm-register") || !strcmp(argv[1], "vtpm-release"))
		return vtpm_owner(argc - 1, argv + 1, !strcmp(argv[1], "vtpm-register"));
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	usage(stderr);
	return 2;
}
