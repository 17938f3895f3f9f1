/*
 * csvsm-tpm: the same vTPM csvsm runs (tpm/vtpm.c, libtpms), served on
 * 127.0.0.1 with the TCG/Microsoft TPM 2.0 simulator TCP protocol that
 * tpm2-tss's mssim TCTI speaks (TpmTcpProtocol.h; shared/reference/
 * snp-svsm-interfaces.md §3 for the command numbers):
 *
 *   command port N:    TPM_SEND_COMMAND(8) {u32 cmd, u8 locality, u32 size, bytes}
 *                      -> {u32 size, bytes, u32 0}; REMOTE_HANDSHAKE(15);
 *                      SESSION_END(20) closes; STOP(21) ends the server
 *   platform port N+1: POWER_ON/OFF, PHYS_PRES_*, CANCEL_*, NV_*, KEY_CACHE_*,
 *                      RESET, RESTART -> u32 0; SESSION_END; STOP
 *
 * All integers on the wire are big-endian. Unlike csvsm, the TPM is left
 * "just powered on": the client sends TPM2_Startup (--startup makes it
 * behave like the module instead). Bad input (truncated frames, oversized
 * sizes, unknown commands, stalls longer than 2 s) closes that connection
 * only; the server keeps serving.
 *
 * Usage: csvsm-tpm [--port N] [--once] [--timeout SEC] [--startup] [--ek-out FILE]
 *                  [--state FILE]
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tpm/vtpm.h"
#include "tpm/vtpm_proto.h"

#define MAX_CONNS    16
#define IO_TIMEOUT_S 2

struct conn {
	int fd;
	bool platform;
};

static struct conn conns[MAX_CONNS];
static struct vtpm_options opts = {.no_startup = true};
static bool stop_requested;
static bool once;
static bool served_cmd_conn;

static uint8_t buf[VTPM_BUFFER_SIZE];
static uint8_t rsp[VTPM_BUFFER_SIZE + 8];

static bool read_full(int fd, void *p, size_t n)
{
	uint8_t *b = p;
	while (n) {
		ssize_t r = recv(fd, b, n, 0);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return false; /* EOF, error or SO_RCVTIMEO expired */
		}
		b += r;
		n -= (size_t)r;
	}
	return true;
}

static bool write_full(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t r = send(fd, b, n, MSG_NOSIGNAL);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return false;
		}
		b += r;
		n -= (size_t)r;
	}
	return true;
}

static bool read_u32(int fd, uint32_t *v)
{
	uint8_t b[4];
	if (!read_full(fd, b, 4))
		return false;
	*v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	return true;
}

static void put_u32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static bool write_u32(int fd, uint32_t v)
{
	uint8_t b[4];
	put_u32(b, v);
	return write_full(fd, b, 4);
}

static void power_cycle(void)
{
	vtpm_power_off();
	if (vtpm_init(&opts))
		fprintf(stderr, "csvsm-tpm: vtpm_init failed after reset\n");
}

/* One frame on the command port. false = close the connection. */
static bool serve_command(int fd)
{
	uint32_t cmd, size, v;
	uint8_t loc;

	if (!read_u32(fd, &cmd))
		return false;
	switch (cmd) {
	case VTPM_PLAT_SEND_COMMAND: {
		if (!read_full(fd, &loc, 1) || !read_u32(fd, &size))
			return false;
		if (size > sizeof(buf)) {
			fprintf(stderr, "csvsm-tpm: command size %u too large, closing\n", size);
			return false;
		}
		if (!read_full(fd, buf, size))
			return false;
		/* {u32 size, response, u32 0} in one send: one segment, one wake-up */
		size_t n = sizeof(rsp) - 8;
		if (loc != 0 || vtpm_process(buf, size, rsp + 4, &n)) {
			/* locality other than 0 (like the SVSM protocol) or TPM off: TPM_RC_FAILURE
			 */
			static const uint8_t fail[10] = {0x80, 0x01, 0, 0, 0, 10, 0, 0, 0x01, 0x01};
			memcpy(rsp + 4, fail, sizeof(fail));
			n = sizeof(fail);
		}
		put_u32(rsp, (uint32_t)n);
		put_u32(rsp + 4 + n, 0);
		return write_full(fd, rsp, n + 8);
	}
	case VTPM_PLAT_REMOTE_HANDSHAKE:
		if (!read_u32(fd, &v))
			return false;
		/* server version 1; flags: platform available | raw mode */
		return write_u32(fd, 1) && write_u32(fd, 0x1 | 0x4) && write_u32(fd, 0);
	case VTPM_PLAT_SESSION_END:
		return false;
	case VTPM_PLAT_STOP:
		write_u32(fd, 0);
		stop_requested = true;
		return false;
	default:
		fprintf(stderr, "csvsm-tpm: unknown command-port command %u, closing\n", cmd);
		return false;
	}
}

/* One frame on the platform port. */
static bool serve_platform(int fd)
{
	uint32_t cmd;

	if (!read_u32(fd, &cmd))
		return false;
	switch (cmd) {
	case VTPM_PLAT_POWER_ON:
		/* Already on: nothing (the simulator ignores a repeated power-on too). */
		if (!vtpm_running() && vtpm_init(&opts))
			fprintf(stderr, "csvsm-tpm: vtpm_init failed\n");
		break;
	case VTPM_PLAT_POWER_OFF:
		vtpm_power_off();
		break;
	case VTPM_PLAT_RESET:
	case VTPM_PLAT_RESTART:
		power_cycle();
		break;
	case VTPM_PLAT_PHYS_PRES_ON:
	case VTPM_PLAT_PHYS_PRES_OFF:
	case VTPM_PLAT_CANCEL_ON:
	case VTPM_PLAT_CANCEL_OFF:
	case VTPM_PLAT_NV_ON:
	case VTPM_PLAT_NV_OFF:
	case VTPM_PLAT_KEY_CACHE_ON:
	case VTPM_PLAT_KEY_CACHE_OFF:
		break;
	case VTPM_PLAT_SESSION_END:
		return false;
	case VTPM_PLAT_STOP:
		write_u32(fd, 0);
		stop_requested = true;
		return false;
	default:
		fprintf(stderr, "csvsm-tpm: unknown platform command %u, closing\n", cmd);
		return false;
	}
	return write_u32(fd, 0);
}

static int listen_on(uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 8)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void accept_on(int lfd, bool platform)
{
	int fd = accept(lfd, NULL, NULL), one = 1;
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (int i = 0; i < MAX_CONNS; i++) {
		if (conns[i].fd < 0) {
			conns[i].fd = fd;
			conns[i].platform = platform;
			return;
		}
	}
	close(fd); /* too many clients */
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: csvsm-tpm [--port N] [--once] [--timeout SEC] [--startup] [--ek-out FILE]\n"
		"  --port N      command port N (default 2321), platform port N+1, on 127.0.0.1\n"
		"  --once        exit when the first command-port connection closes\n"
		"  --timeout S   exit after S seconds\n"
		"  --startup     send TPM2_Startup(CLEAR) itself, as csvsm does\n"
		"  --ek-out F    with --startup: write the EK's TPMT_PUBLIC (template L-1) to F\n"
		"  --state F     start from a saved TPMLIB_GetState(PERMANENT) blob instead of "
		"manufacturing\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long port = 2321;
	double timeout = 0;
	const char *ek_out = NULL, *state_file = NULL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--port") && i + 1 < argc) {
			char *end;
			port = strtoul(argv[++i], &end, 10);
			if (*end || port == 0 || port > 65534)
				usage();
		} else if (!strcmp(argv[i], "--timeout") && i + 1 < argc) {
			timeout = atof(argv[++i]);
		} else if (!strcmp(argv[i], "--once")) {
			once = true;
		} else if (!strcmp(argv[i], "--startup")) {
			opts.no_startup = false;
		} else if (!strcmp(argv[i], "--state") && i + 1 < argc) {
			state_file = argv[++i];
		} else if (!strcmp(argv[i], "--ek-out") && i + 1 < argc) {
			ek_out = argv[++i];
		} else {
			usage();
		}
	}
	signal(SIGPIPE, SIG_IGN);
	if (state_file) {
		static uint8_t blob[1 << 20];
		FILE *f = fopen(state_file, "rb");
		size_t len = f ? fread(blob, 1, sizeof(blob), f) : 0;
		if (f)
			fclose(f);
		if (!len || len == sizeof(blob) || vtpm_set_state(blob, len)) {
			fprintf(stderr, "csvsm-tpm: cannot restore state from %s\n", state_file);
			return 1;
		}
	}
	if (vtpm_init(&opts)) {
		fprintf(stderr, "csvsm-tpm: vtpm_init failed\n");
		return 1;
	}
	if (ek_out) {
		const uint8_t *pub;
		size_t len;
		FILE *f = fopen(ek_out, "wb");
		if (!f || vtpm_ek_public(&pub, &len) || fwrite(pub, 1, len, f) != len ||
		    fclose(f)) {
			fprintf(stderr, "csvsm-tpm: cannot write the EK public to %s\n", ek_out);
			return 1;
		}
	}
	int cl = listen_on((uint16_t)port), pl = listen_on((uint16_t)(port + 1));
	if (cl < 0 || pl < 0) {
		fprintf(stderr, "csvsm-tpm: cannot listen on 127.0.0.1:%lu/%lu: %s\n", port,
			port + 1, strerror(errno));
		return 3;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		conns[i].fd = -1;
	printf("csvsm-tpm: listening on 127.0.0.1:%lu (platform %lu)\n", port, port + 1);
	fflush(stdout);

	double start = now_s();
	while (!stop_requested) {
		struct pollfd pfd[2 + MAX_CONNS];
		int map[2 + MAX_CONNS], n = 0;
		pfd[n] = (struct pollfd){.fd = cl, .events = POLLIN};
		map[n++] = -1;
		pfd[n] = (struct pollfd){.fd = pl, .events = POLLIN};
		map[n++] = -2;
		for (int i = 0; i < MAX_CONNS; i++) {
			if (conns[i].fd >= 0) {
				pfd[n] = (struct pollfd){.fd = conns[i].fd, .events = POLLIN};
				map[n++] = i;
			}
		}
		int r = poll(pfd, (nfds_t)n, 200);
		if (timeout > 0 && now_s() - start > timeout) {
			fprintf(stderr, "csvsm-tpm: timeout, exiting\n");
			break;
		}
		if (r <= 0)
			continue;
		for (int k = 0; k < n && !stop_requested; k++) {
			if (!pfd[k].revents)
				continue;
			if (map[k] == -1) {
				accept_on(cl, false);
				continue;
			}
			if (map[k] == -2) {
				accept_on(pl, true);
				continue;
			}
			struct conn *c = &conns[map[k]];
			bool keep = c->platform ? serve_platform(c->fd) : serve_command(c->fd);
			if (!keep) {
				close(c->fd);
				c->fd = -1;
				if (!c->platform && once)
					served_cmd_conn = true;
			}
		}
		if (once && served_cmd_conn)
			break;
	}
	for (int i = 0; i < MAX_CONNS; i++)
		if (conns[i].fd >= 0)
			close(conns[i].fd);
	close(cl);
	close(pl);
	vtpm_destroy();
	printf("csvsm-tpm: stopped (%s)\n", stop_requested ? "platform STOP"
					    : once && served_cmd_conn
						? "--once: the first client left"
						: "timeout");
	return 0;
}
