/*
 * csvsm's channel to the host (tpm/vtpm_chan.c): framed messages over a
 * byte stream, the host side being build/csvsm-proxy (proxy/). On csvsm's
 * side the stream is a 16550 UART the host attaches to a socket
 * (base/uart_chan.c); docs/vtpm.md "Persistence" has the whole picture.
 *
 * A frame (little-endian):
 *   0x00 u32 magic "CSVT"   0x04 u8 version (1)   0x05 u8 type
 *   0x06 u16 reserved (0)   0x08 u32 sequence     0x0C u32 payload length
 *   0x10 payload (at most VCHAN_MAX_PAYLOAD bytes)
 *   then u32 CRC-32 (IEEE 802.3) of header and payload
 * csvsm sends requests (odd types), the host answers each with the next
 * type and the same sequence number. Nothing in a frame is trusted: the
 * state inside is sealed (include/tpm/vtpm_seal.h), the broker's answers
 * signed (include/tpm/vtpm_jose.h); the framing only has to be parsed
 * safely, and a host that breaks it gets a refusal. The CRC is no defence
 * (a host recomputes it): it tells the proxy that bytes were lost on the
 * way (a UART overrun, base/uart_chan.c), so that it answers
 * VCHAN_STORE_CORRUPT and csvsm sends the state again instead of the proxy
 * keeping a damaged one.
 *
 * On the wire every frame byte 0x00 is sent as 0x01 0x01 and 0x01 as
 * 0x01 0x02, so the stream never carries 0x00 and a reader drops every
 * 0x00 it sees. That lets csvsm read the UART in blocks through one string
 * IN (QEMU's 16550 reads 0 from an empty receive FIFO: hw/char/serial.c
 * serial_ioport_read) instead of two exits per byte: base/uart_chan.c.
 */
#ifndef TPM_VTPM_CHAN_H
#define TPM_VTPM_CHAN_H

#include "base/types.h"
#include "tpm/vtpm_seal.h"

#define VCHAN_MAGIC	  0x54565343u /* "CSVT" */
#define VCHAN_VERSION	  1u
#define VCHAN_HDR	  16u
#define VCHAN_CRC	  4u
#define VCHAN_MAX_PAYLOAD (VTPM_SEALED_MAX + 64u)
#define VCHAN_RELAY_MAX	  (16u * 1024u) /* a relayed request or answer body */

enum vchan_type {
	VCHAN_FETCH = 1,     /* csvsm: {u32 mode, u8 instance[16]} */
	VCHAN_FETCH_RSP = 2, /* host: {u32 status} + the newest intact sealed state (status 0) */
	VCHAN_STORE = 3,     /* csvsm: one sealed state */
	VCHAN_STORE_RSP = 4, /* host: {u32 status}: 0 once the state is durable (fsync'd) */
	VCHAN_RELAY = 5,     /* csvsm: {u32 method, u32 path length, path, body} for csvsm-kbs */
	VCHAN_RELAY_RSP = 6, /* host: {u32 status, u32 HTTP status, body} */
};
#define VCHAN_FETCH_STATE   0u /* FETCH_RSP: a state follows */
#define VCHAN_FETCH_NONE    1u /* FETCH_RSP: the host keeps no state for this instance */
#define VCHAN_FETCH_DAMAGED 3u /* FETCH_RSP: the host has written state, none of it intact */
#define VCHAN_STORE_OK	    0u
#define VCHAN_STORE_CORRUPT 2u /* STORE_RSP: the frame arrived damaged: send it again */
#define VCHAN_RELAY_OK	    0u /* the broker answered (any HTTP status) */
#define VCHAN_RELAY_UNREACH 1u /* the host could not reach the broker */
#define VCHAN_RELAY_NONE    2u /* the host has no broker configured */
#define VCHAN_METHOD_GET    1u
#define VCHAN_METHOD_POST   2u

/* ---- the wire codec (pure; both sides use it) ---- */

/* Escapes in[0..n) into out[0..cap); returns the bytes written, or -1 if cap is short. */
long vchan_escape(const uint8_t *in, size_t n, uint8_t *out, size_t cap);

/* A frame header. */
void vchan_hdr_put(uint8_t hdr[VCHAN_HDR], uint8_t type, uint32_t seq, uint32_t len);
/* CRC-32 (reflected, polynomial 0xEDB88320, init and final xor ~0), continued from crc. */
uint32_t vchan_crc32(uint32_t crc, const uint8_t *p, size_t n);
/*
 * One whole frame on the wire (header, payload, CRC; escaped) into
 * out[0..cap): its length, or -1 if cap is short. The host's side
 * (csvsm-proxy) and the tests build their frames with it; csvsm streams its
 * own (vchan_call) without a buffer that size.
 */
long vchan_frame(uint8_t *out, size_t cap, uint8_t type, uint32_t seq, const uint8_t *p, size_t n);

/* The streaming reader: escaped wire bytes in, one frame at a time out. */
enum vchan_rx_state { VCHAN_RX_MORE = 0, VCHAN_RX_FRAME = 1, VCHAN_RX_ERROR = -1 };
struct vchan_rx {
	uint8_t hdr[VCHAN_HDR];
	uint8_t *buf; /* payload buffer, the caller's */
	size_t cap, got, want;
	uint8_t crc_in[VCHAN_CRC];
	unsigned crc_got;
	uint32_t crc;
	bool esc, in_payload, crc_bad;
	uint8_t type;
	uint32_t seq;
	const char *error; /* why the stream was refused */
};
void vchan_rx_init(struct vchan_rx *rx, uint8_t *buf, size_t cap);
/*
 * Feeds wire bytes; *used is how many were taken. VCHAN_RX_FRAME: one frame
 * is complete (rx->type, rx->seq, rx->buf[0..rx->got)) and bytes after it
 * are left for the next call (call vchan_rx_next first); rx->crc_bad says
 * its CRC did not match (the frame is still delivered, so that the proxy
 * can answer it; csvsm refuses it). VCHAN_RX_ERROR: a bad escape, magic,
 * version, reserved field or a length over the cap; the reader stays in
 * error until vchan_rx_init.
 */
int vchan_rx_feed(struct vchan_rx *rx, const uint8_t *wire, size_t n, size_t *used);
/* Ready for the next frame after VCHAN_RX_FRAME. */
void vchan_rx_next(struct vchan_rx *rx);

/* ---- csvsm's client ---- */

struct vchan_io {
	/* All n bytes out: 0, or -1 (the port stopped taking bytes). */
	int (*write)(void *ctx, const uint8_t *p, size_t n);
	/* Whatever arrives within timeout_us (0..cap bytes, 0x00 fill allowed); -1 on error. */
	long (*read)(void *ctx, uint8_t *p, size_t cap, uint64_t timeout_us);
	/* Microseconds, monotonic (for the deadlines). */
	uint64_t (*now_us)(void *ctx);
};

struct vchan_stats {
	uint64_t calls, retries, tx_bytes, rx_bytes, tx_wire, rx_wire, us;
};

struct vchan {
	const struct vchan_io *io;
	void *ctx;
	uint32_t seq;
	uint8_t *buf; /* the answer's payload lands here */
	size_t cap;
	uint64_t timeout_us; /* per attempt */
	unsigned attempts;   /* per call */
	struct vchan_rx rx;
	struct vchan_stats st;
};

void vchan_init(struct vchan *c, const struct vchan_io *io, void *ctx, uint8_t *buf, size_t cap,
		uint64_t timeout_us, unsigned attempts);

enum vchan_err {
	VCHAN_OK = 0,
	VCHAN_ERR_IO = -1,	/* the port failed */
	VCHAN_ERR_TIMEOUT = -2, /* no answer within the attempts */
	VCHAN_ERR_PROTO = -3,	/* the host broke the framing or answered with another type */
	VCHAN_ERR_SIZE = -4,	/* a request over the limit */
};
const char *vchan_strerror(int err);

/*
 * Sends request `type` (payload head[0..hl) then tail[0..tl)), waits for
 * the answer of type + 1 with the same sequence number; other sequence
 * numbers are stale answers and skipped. On VCHAN_OK the answer is in
 * c->buf[0..*len). A timeout, or a STORE_RSP saying the frame arrived
 * damaged, resends under a new sequence number, up to c->attempts in all.
 */
int vchan_call(struct vchan *c, uint8_t type, const uint8_t *head, size_t hl, const uint8_t *tail,
	       size_t tl, size_t *len);

#endif
