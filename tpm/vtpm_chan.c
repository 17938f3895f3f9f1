/*
 * The channel's framing and csvsm's client (include/tpm/vtpm_chan.h). The
 * reader is a byte-at-a-time state machine over escaped input, so that a
 * frame split anywhere, a stream of garbage or a frame that never ends
 * costs bounded memory and time; tests/unit/test_vtpm_chan.c feeds it
 * malformed input and tests/fuzz/fuzz_vtpm_chan.c fuzzes it.
 */
#include "base/le.h"
#include "base/string.h"
#include "tpm/vtpm_chan.h"

#define ESC   0x01
#define STAGE 512u /* escaped bytes written per io->write */

long vchan_escape(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		bool esc = in[i] <= ESC;
		if (o + 1 + esc > cap)
			return -1;
		if (esc) {
			out[o++] = ESC;
			out[o++] = (uint8_t)(in[i] + 1);
		} else {
			out[o++] = in[i];
		}
	}
	return (long)o;
}

void vchan_hdr_put(uint8_t hdr[VCHAN_HDR], uint8_t type, uint32_t seq, uint32_t len)
{
	le32_put(hdr, VCHAN_MAGIC);
	hdr[4] = VCHAN_VERSION;
	hdr[5] = type;
	hdr[6] = hdr[7] = 0;
	le32_put(hdr + 8, seq);
	le32_put(hdr + 12, len);
}

uint32_t vchan_crc32(uint32_t crc, const uint8_t *p, size_t n)
{
	/* Half-byte table of the reflected polynomial 0xEDB88320. */
	static const uint32_t t[16] = {0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC,
				       0x76DC4190, 0x6B6B51F4, 0x4DB26158, 0x5005713C,
				       0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C,
				       0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C};
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= p[i];
		crc = (crc >> 4) ^ t[crc & 15];
		crc = (crc >> 4) ^ t[crc & 15];
	}
	return ~crc;
}

long vchan_frame(uint8_t *out, size_t cap, uint8_t type, uint32_t seq, const uint8_t *p, size_t n)
{
	uint8_t hdr[VCHAN_HDR], crc[VCHAN_CRC];
	long a, b, c;

	if (n > VCHAN_MAX_PAYLOAD)
		return -1;
	vchan_hdr_put(hdr, type, seq, (uint32_t)n);
	le32_put(crc, vchan_crc32(vchan_crc32(0, hdr, sizeof(hdr)), p, n));
	if ((a = vchan_escape(hdr, sizeof(hdr), out, cap)) < 0 ||
	    (b = vchan_escape(p, n, out + a, cap - (size_t)a)) < 0 ||
	    (c = vchan_escape(crc, sizeof(crc), out + a + b, cap - (size_t)(a + b))) < 0)
		return -1;
	return a + b + c;
}

void vchan_rx_init(struct vchan_rx *rx, uint8_t *buf, size_t cap)
{
	memset(rx, 0, sizeof(*rx));
	rx->buf = buf;
	rx->cap = cap;
}

void vchan_rx_next(struct vchan_rx *rx)
{
	if (rx->error)
		return;
	rx->got = rx->want = 0;
	rx->crc_got = 0;
	rx->esc = rx->in_payload = rx->crc_bad = false;
}

static int rx_fail(struct vchan_rx *rx, const char *why)
{
	rx->error = why;
	return VCHAN_RX_ERROR;
}

/* One unescaped byte; returns MORE, FRAME or ERROR. */
static int rx_byte(struct vchan_rx *rx, uint8_t b)
{
	if (!rx->in_payload) {
		rx->hdr[rx->got++] = b;
		/* The magic is checked byte by byte: a stream that is not ours stops at once. */
		if (rx->got <= 4 && b != (uint8_t)(VCHAN_MAGIC >> (8 * (rx->got - 1))))
			return rx_fail(rx, "bad magic");
		if (rx->got < VCHAN_HDR)
			return VCHAN_RX_MORE;
		if (rx->hdr[4] != VCHAN_VERSION)
			return rx_fail(rx, "unknown version");
		if (rx->hdr[6] || rx->hdr[7])
			return rx_fail(rx, "reserved bits set");
		rx->type = rx->hdr[5];
		rx->seq = le32_get(rx->hdr + 8);
		rx->want = le32_get(rx->hdr + 12);
		if (rx->want > VCHAN_MAX_PAYLOAD || rx->want > rx->cap)
			return rx_fail(rx, "payload over the limit");
		rx->got = 0;
		rx->crc_got = 0;
		rx->crc = vchan_crc32(0, rx->hdr, VCHAN_HDR);
		rx->in_payload = true;
		return VCHAN_RX_MORE;
	}
	if (rx->got < rx->want) {
		rx->buf[rx->got++] = b;
		if (rx->got == rx->want)
			rx->crc = vchan_crc32(rx->crc, rx->buf, rx->want);
		return VCHAN_RX_MORE;
	}
	rx->crc_in[rx->crc_got++] = b;
	if (rx->crc_got < VCHAN_CRC)
		return VCHAN_RX_MORE;
	rx->crc_bad = le32_get(rx->crc_in) != rx->crc;
	return VCHAN_RX_FRAME;
}

static bool rx_complete(const struct vchan_rx *rx)
{
	return rx->in_payload && rx->got == rx->want && rx->crc_got == VCHAN_CRC;
}

int vchan_rx_feed(struct vchan_rx *rx, const uint8_t *wire, size_t n, size_t *used)
{
	size_t i = 0;
	int rc = VCHAN_RX_MORE;

	if (rx->error) {
		*used = 0;
		return VCHAN_RX_ERROR;
	}
	if (rx_complete(rx)) { /* a complete frame not yet taken */
		*used = 0;
		return VCHAN_RX_FRAME;
	}
	while (i < n && rc == VCHAN_RX_MORE) {
		uint8_t b = wire[i++];
		if (b == 0)
			continue; /* never sent: an empty FIFO read */
		if (rx->esc) {
			if (b != 0x01 && b != 0x02) {
				rc = rx_fail(rx, "bad escape");
				break;
			}
			rx->esc = false;
			rc = rx_byte(rx, (uint8_t)(b - 1));
		} else if (b == ESC) {
			rx->esc = true;
		} else {
			rc = rx_byte(rx, b);
		}
	}
	*used = i;
	return rc;
}

/* ---- client ---- */

const char *vchan_strerror(int err)
{
	switch (err) {
	case VCHAN_OK:
		return "ok";
	case VCHAN_ERR_IO:
		return "the channel's port failed";
	case VCHAN_ERR_TIMEOUT:
		return "no answer from the host";
	case VCHAN_ERR_PROTO:
		return "the host broke the channel protocol";
	case VCHAN_ERR_SIZE:
		return "request too large";
	}
	return "unknown error";
}

void vchan_init(struct vchan *c, const struct vchan_io *io, void *ctx, uint8_t *buf, size_t cap,
		uint64_t timeout_us, unsigned attempts)
{
	memset(c, 0, sizeof(*c));
	c->io = io;
	c->ctx = ctx;
	c->buf = buf;
	c->cap = cap;
	c->timeout_us = timeout_us;
	c->attempts = attempts ? attempts : 1;
	c->seq = 0;
}

static int send_part(struct vchan *c, const uint8_t *p, size_t n, uint32_t *crc)
{
	uint8_t stage[STAGE];
	*crc = vchan_crc32(*crc, p, n);
	while (n) {
		size_t k = MIN(n, STAGE / 2); /* escaping at most doubles */
		long e = vchan_escape(p, k, stage, sizeof(stage));
		if (e < 0 || c->io->write(c->ctx, stage, (size_t)e))
			return VCHAN_ERR_IO;
		c->st.tx_wire += (uint64_t)e;
		p += k;
		n -= k;
	}
	return VCHAN_OK;
}

/* Reads until the answer to `seq` is complete or the deadline passes. */
static int wait_answer(struct vchan *c, uint8_t type, uint32_t seq, size_t *len)
{
	uint8_t in[256];
	uint64_t deadline = c->io->now_us(c->ctx) + c->timeout_us;

	vchan_rx_init(&c->rx, c->buf, c->cap);
	for (;;) {
		uint64_t now = c->io->now_us(c->ctx);
		if (now >= deadline)
			return VCHAN_ERR_TIMEOUT;
		long n = c->io->read(c->ctx, in, sizeof(in), deadline - now);
		if (n < 0)
			return VCHAN_ERR_IO;
		c->st.rx_wire += (uint64_t)n;
		size_t off = 0;
		while (off < (size_t)n) {
			size_t used;
			int rc = vchan_rx_feed(&c->rx, in + off, (size_t)n - off, &used);
			off += used;
			if (rc == VCHAN_RX_ERROR)
				return VCHAN_ERR_PROTO;
			if (rc != VCHAN_RX_FRAME)
				continue;
			if (c->rx.seq == seq) {
				/* Host-to-csvsm bytes are never lost (the UART's receive
				 * side is flow-controlled): a bad CRC is the host's doing. */
				if (c->rx.type != (uint8_t)(type + 1) || c->rx.crc_bad)
					return VCHAN_ERR_PROTO;
				*len = c->rx.got;
				c->st.rx_bytes += VCHAN_HDR + c->rx.got + VCHAN_CRC;
				return VCHAN_OK;
			}
			vchan_rx_next(&c->rx); /* an answer to an earlier attempt: skip it */
		}
	}
}

int vchan_call(struct vchan *c, uint8_t type, const uint8_t *head, size_t hl, const uint8_t *tail,
	       size_t tl, size_t *len)
{
	uint8_t hdr[VCHAN_HDR], crcb[VCHAN_CRC];
	size_t total;
	uint64_t t0 = c->io->now_us(c->ctx);
	int rc = VCHAN_ERR_TIMEOUT;

	if (ADD_OVERFLOW(hl, tl, &total) || total > VCHAN_MAX_PAYLOAD || !(type & 1))
		return VCHAN_ERR_SIZE;
	c->st.calls++;
	for (unsigned a = 0; a < c->attempts; a++) {
		uint32_t crc = 0, seq = ++c->seq;
		if (a)
			c->st.retries++;
		vchan_hdr_put(hdr, type, seq, (uint32_t)total);
		if (send_part(c, hdr, sizeof(hdr), &crc) || send_part(c, head, hl, &crc) ||
		    send_part(c, tail, tl, &crc))
			return VCHAN_ERR_IO;
		uint32_t crc_once = crc;
		le32_put(crcb, crc);
		if (send_part(c, crcb, sizeof(crcb), &crc_once))
			return VCHAN_ERR_IO;
		c->st.tx_bytes += VCHAN_HDR + total + VCHAN_CRC;
		rc = wait_answer(c, type, seq, len);
		if (rc == VCHAN_OK && type == VCHAN_STORE && *len >= 4 &&
		    le32_get(c->buf) == VCHAN_STORE_CORRUPT)
			rc = VCHAN_ERR_TIMEOUT; /* damaged on the way: again */
		if (rc != VCHAN_ERR_TIMEOUT)
			break;
	}
	c->st.us += c->io->now_us(c->ctx) - t0;
	return rc;
}
