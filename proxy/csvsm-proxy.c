/*
 * csvsm-proxy: the host's side of csvsm's vTPM channel (docs/vtpm.md
 * "Persistence"). It listens on a unix socket that QEMU's chardev for the
 * channel's 16550 connects to, keeps csvsm's sealed state in a two-slot
 * file (include/proxy/slots.h), answers csvsm's FETCH and STORE, and
 * relays csvsm's HTTP exchanges with csvsm-kbs (include/proxy/relay.h).
 * With --log it records every frame that crosses it, in both directions.
 *
 *   csvsm-proxy --socket PATH --state FILE [--log FILE] [--kbs-url URL
 *               [--kbs-cacert PEM]] [--max-connections N] [--idle-exit S]
 *               [--io-timeout S] [--test-tear-store N]
 *   csvsm-proxy --state FILE --show | --export OUT | --import IN
 *
 * QEMU: -chardev socket,id=vtpm,path=PATH -device
 * isa-serial,chardev=vtpm,iobase=0x2e8,irq=3 (one connection per boot; the
 * proxy must listen before QEMU starts). The proxy trusts nothing csvsm
 * sends beyond the framing and is trusted by csvsm for nothing: it cannot
 * read the state and csvsm checks whatever it answers.
 *
 * Exit status: 0; 1 on an I/O error; 2 on usage; 9 after a --test-tear-store.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/le.h"
#include "proxy/relay.h"
#include "proxy/slots.h"
#include "tpm/vtpm_chan.h"

static const char *prog = "csvsm-proxy";
static FILE *logf;
static int state_fd = -1;
static struct relay relay;
static long tear_store = -1; /* --test-tear-store N: the Nth STORE is torn */
static long stores;
static pid_t peer_pid;
static uint8_t rx_buf[VCHAN_MAX_PAYLOAD], tx_buf[VCHAN_MAX_PAYLOAD + 8];

static void logx(const char *fmt, ...)
{
	struct timespec ts;
	va_list ap;
	if (!logf)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(logf, "%lld.%06ld ", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	va_start(ap, fmt);
	vfprintf(logf, fmt, ap);
	va_end(ap);
}

static void log_hex(const uint8_t *p, size_t n)
{
	if (!logf)
		return;
	for (size_t i = 0; i < n; i++)
		fprintf(logf, "%02x", p[i]);
	fputc('\n', logf);
	fflush(logf);
}

static const char *type_name(unsigned t)
{
	static const char *const n[] = {"?",	     "FETCH", "FETCH_RSP", "STORE",
					"STORE_RSP", "RELAY", "RELAY_RSP"};
	return t < sizeof(n) / sizeof(n[0]) ? n[t] : "?";
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One answer frame: header, payload, CRC, escaped (vchan_frame). */
static int answer(int fd, uint8_t type, uint32_t seq, const uint8_t *p, size_t n)
{
	static uint8_t wire[2 * (VCHAN_HDR + VCHAN_MAX_PAYLOAD + VCHAN_CRC)];
	long w = vchan_frame(wire, sizeof(wire), type, seq, p, n);

	if (w < 0)
		return -1;
	logx("-> %s seq=%u len=%zu payload=", type_name(type), seq, n);
	log_hex(p, n);
	return write_all(fd, wire, (size_t)w);
}

static int on_fetch(int fd, uint32_t seq, const uint8_t *p, size_t n)
{
	struct slots_view v;
	uint32_t len = 0;

	if (n != 20)
		logx("note FETCH payload of %zu bytes (20 expected)\n", n);
	le32_put(tx_buf, VCHAN_FETCH_NONE);
	if (slots_read(state_fd, &v, tx_buf + 4, sizeof(tx_buf) - 4, &len)) {
		logx("error reading the state file\n");
		return -1;
	}
	if (v.newest >= 0) {
		le32_put(tx_buf, VCHAN_FETCH_STATE);
		logx("state: slot %d generation %llu, %u bytes\n", v.newest,
		     (unsigned long long)v.slot[v.newest].generation, len);
		return answer(fd, VCHAN_FETCH_RSP, seq, tx_buf, 4 + len);
	}
	if (v.written) {
		/* Slots were written but none is intact: say so; "none" would let
		 * csvsm's sealed mode manufacture a new TPM in place of the lost one. */
		le32_put(tx_buf, VCHAN_FETCH_DAMAGED);
		logx("state: damaged (no intact slot)\n");
		return answer(fd, VCHAN_FETCH_RSP, seq, tx_buf, 4);
	}
	logx("state: none kept\n");
	return answer(fd, VCHAN_FETCH_RSP, seq, tx_buf, 4);
}

static int on_store(int fd, uint32_t seq, const uint8_t *p, size_t n, bool crc_bad)
{
	uint8_t st[4];
	uint64_t gen = 0;

	if (crc_bad) {
		le32_put(st, VCHAN_STORE_CORRUPT);
		logx("STORE arrived damaged (CRC): asking for it again\n");
		return answer(fd, VCHAN_STORE_RSP, seq, st, 4);
	}
	stores++;
	if (tear_store > 0 && stores == tear_store) {
		int rc = slots_write(state_fd, p, (uint32_t)n, 0, &gen);
		logx("test: STORE %ld torn after half of the slot (rc %d); killing the VM (pid %d) "
		     "and the proxy\n",
		     stores, rc, (int)peer_pid);
		if (logf)
			fflush(logf);
		if (peer_pid > 0)
			kill(peer_pid, SIGKILL);
		_exit(9);
	}
	int rc = slots_write(state_fd, p, (uint32_t)n, -1, &gen);
	le32_put(st, rc ? 1u : VCHAN_STORE_OK);
	logx("STORE %ld: %s (generation %llu, %zu bytes)\n", stores,
	     rc ? "write failed" : "durable", (unsigned long long)gen, n);
	return answer(fd, VCHAN_STORE_RSP, seq, st, 4);
}

static int on_relay(int fd, uint32_t seq, const uint8_t *p, size_t n)
{
	char path[256];
	size_t out_len = 0;
	long http = 0;
	int rc = RELAY_UNREACH;

	if (n >= 8) {
		uint32_t method = le32_get(p), pl = le32_get(p + 4);
		if (pl < sizeof(path) && pl <= n - 8 &&
		    (method == RELAY_GET || method == RELAY_POST)) {
			memcpy(path, p + 8, pl);
			path[pl] = 0;
			if (strlen(path) == pl)
				rc = relay_http(&relay, method, path, p + 8 + pl, n - 8 - pl,
						tx_buf + 8, VCHAN_RELAY_MAX, &out_len, &http);
			logx("relay %s %s -> status %d http %ld, %zu bytes\n",
			     method == RELAY_GET ? "GET" : "POST", path, rc, http, out_len);
		}
	}
	le32_put(tx_buf, (uint32_t)rc);
	le32_put(tx_buf + 4, (uint32_t)http);
	return answer(fd, VCHAN_RELAY_RSP, seq, tx_buf, 8 + (rc == RELAY_OK ? out_len : 0));
}

static int serve(int fd, int io_timeout_s)
{
	static uint8_t wire[65536];
	struct vchan_rx rx;
	struct pollfd pfd = {fd, POLLIN, 0};
	long bad_run = 0;

	vchan_rx_init(&rx, rx_buf, sizeof(rx_buf));
	for (;;) {
		int pr = poll(&pfd, 1, io_timeout_s * 1000);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0) {
			logx("connection idle for %d s: closed\n", io_timeout_s);
			return 0;
		}
		ssize_t n = read(fd, wire, sizeof(wire));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		size_t off = 0;
		while (off < (size_t)n) {
			size_t used = 0;
			int rc = vchan_rx_feed(&rx, wire + off, (size_t)n - off, &used);
			off += used;
			if (rc == VCHAN_RX_ERROR) {
				/* Resynchronise: look at the byte that failed again unless it
				 * was the first one the reader saw (it may start the next
				 * frame, after the rest of one damaged on the way). */
				if (!bad_run++)
					logx("bad input from csvsm (%s): resynchronising\n",
					     rx.error);
				if (used > 1)
					off--;
				vchan_rx_init(&rx, rx_buf, sizeof(rx_buf));
				continue;
			}
			if (bad_run && rc == VCHAN_RX_FRAME) {
				logx("resynchronised after %ld bad bytes\n", bad_run);
				bad_run = 0;
			}
			if (rc != VCHAN_RX_FRAME)
				continue;
			logx("<- %s seq=%u len=%zu crc=%s payload=", type_name(rx.type), rx.seq,
			     rx.got, rx.crc_bad ? "BAD" : "ok");
			log_hex(rx.buf, rx.got);
			int arc = 0;
			switch (rx.type) {
			case VCHAN_FETCH:
				arc = rx.crc_bad ? 0 : on_fetch(fd, rx.seq, rx.buf, rx.got);
				break;
			case VCHAN_STORE:
				arc = on_store(fd, rx.seq, rx.buf, rx.got, rx.crc_bad);
				break;
			case VCHAN_RELAY:
				arc = rx.crc_bad ? 0 : on_relay(fd, rx.seq, rx.buf, rx.got);
				break;
			default:
				logx("unknown request type %u: ignored\n", rx.type);
			}
			if (arc)
				return -1;
			vchan_rx_next(&rx);
		}
	}
}

static int tool(const char *show, const char *export_path, const char *import_path)
{
	static uint8_t buf[SLOTS_DATA_MAX];
	struct slots_view v;
	uint32_t len = 0;
	uint64_t gen;

	if (slots_read(state_fd, &v, buf, sizeof(buf), &len)) {
		fprintf(stderr, "%s: cannot read the state file\n", prog);
		return 1;
	}
	if (show) {
		for (int i = 0; i < 2; i++)
			printf("slot %d: %s generation %llu, %u bytes%s\n", i,
			       v.slot[i].intact ? "intact" : "empty or damaged",
			       (unsigned long long)v.slot[i].generation, v.slot[i].len,
			       i == v.newest ? " (newest)" : "");
		return 0;
	}
	if (export_path) {
		FILE *f = fopen(export_path, "wb");
		if (v.newest < 0 || !f || fwrite(buf, 1, len, f) != len || fclose(f)) {
			fprintf(stderr, "%s: nothing exported\n", prog);
			return 1;
		}
		return 0;
	}
	FILE *f = fopen(import_path, "rb");
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;
	if (!f || ferror(f) || !feof(f) || slots_write(state_fd, buf, (uint32_t)n, -1, &gen)) {
		fprintf(stderr, "%s: %s: not imported\n", prog, import_path);
		if (f)
			fclose(f);
		return 1;
	}
	fclose(f);
	printf("imported %zu bytes as generation %llu\n", n, (unsigned long long)gen);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: %s --socket PATH --state FILE [--log FILE] [--kbs-url URL [--kbs-cacert PEM]]\n"
	    "       [--max-connections N] [--idle-exit SEC] [--io-timeout SEC] [--test-tear-store "
	    "N]\n"
	    "       %s --state FILE --show | --export OUT | --import IN\n",
	    prog, prog);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"socket", required_argument, NULL, 's'},
					     {"state", required_argument, NULL, 'f'},
					     {"log", required_argument, NULL, 'l'},
					     {"kbs-url", required_argument, NULL, 'k'},
					     {"kbs-cacert", required_argument, NULL, 'c'},
					     {"max-connections", required_argument, NULL, 'm'},
					     {"idle-exit", required_argument, NULL, 'i'},
					     {"io-timeout", required_argument, NULL, 't'},
					     {"test-tear-store", required_argument, NULL, 'T'},
					     {"show", no_argument, NULL, 'S'},
					     {"export", required_argument, NULL, 'E'},
					     {"import", required_argument, NULL, 'I'},
					     {"help", no_argument, NULL, 'h'},
					     {NULL, 0, NULL, 0}};
	const char *sock = NULL, *state = NULL, *log_path = NULL, *url = NULL, *cacert = NULL;
	const char *show = NULL, *exp = NULL, *imp = NULL;
	long max_conns = 0, idle = 0, io_timeout = 600;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end = NULL;
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'f':
			state = optarg;
			break;
		case 'l':
			log_path = optarg;
			break;
		case 'k':
			url = optarg;
			break;
		case 'c':
			cacert = optarg;
			break;
		case 'S':
			show = "1";
			break;
		case 'E':
			exp = optarg;
			break;
		case 'I':
			imp = optarg;
			break;
		case 'm':
		case 'i':
		case 't':
		case 'T': {
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v < 0) {
				fprintf(stderr, "%s: bad number '%s'\n", prog, optarg);
				return 2;
			}
			if (c == 'm')
				max_conns = v;
			else if (c == 'i')
				idle = v;
			else if (c == 't')
				io_timeout = v ? v : 1;
			else
				tear_store = v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc || !state || (!sock && !show && !exp && !imp) ||
	    (!!show + !!exp + !!imp > 1) || (sock && (show || exp || imp))) {
		usage(stderr);
		return 2;
	}
	state_fd = slots_open(state);
	if (state_fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, state, strerror(errno));
		return 1;
	}
	if (!sock)
		return tool(show, exp, imp);
	if (log_path && !(logf = fopen(log_path, "a"))) {
		fprintf(stderr, "%s: %s: %s\n", prog, log_path, strerror(errno));
		return 1;
	}
	if (relay_init(&relay, url, cacert, 10)) {
		fprintf(stderr, "%s: cannot set up the relay to %s\n", prog, url);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: socket path too long\n", prog);
		return 2;
	}
	strcpy(sa.sun_path, sock);
	unlink(sock);
	int ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	mode_t old = umask(077); /* the socket is the owner's only */
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		umask(old);
		fprintf(stderr, "%s: %s: %s\n", prog, sock, strerror(errno));
		return 1;
	}
	umask(old);
	logx("listening on %s, state %s, broker %s\n", sock, state, url ? url : "none");
	for (long n = 0; !max_conns || n < max_conns; n++) {
		struct pollfd pfd = {ls, POLLIN, 0};
		int pr = poll(&pfd, 1, idle ? (int)(idle * 1000) : -1);
		if (pr == 0) {
			logx("no connection for %ld s: exiting\n", idle);
			break;
		}
		if (pr < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		int cfd = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		struct ucred cred;
		socklen_t cl = sizeof(cred);
		peer_pid = getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) ? 0 : cred.pid;
		logx("connection %ld from pid %d\n", n + 1, (int)peer_pid);
		relay_new_session(&relay);
		int rc = serve(cfd, (int)io_timeout);
		close(cfd);
		logx("connection %ld closed%s\n", n + 1, rc ? " after an I/O error" : "");
	}
	close(ls);
	unlink(sock);
	relay_free(&relay);
	if (logf)
		fclose(logf);
	return 0;
}
