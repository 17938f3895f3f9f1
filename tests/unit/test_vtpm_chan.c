/*
 * The channel's framing and client (tpm/vtpm_chan.c): escaping, the
 * streaming reader on frames split at every byte, 0x00 fill (empty FIFO
 * reads), every malformed header field, lengths over the limits, a bad CRC,
 * and the client against a scripted host: stale answers skipped, a timeout
 * retried under a new sequence number, STORE_CORRUPT resent, a
 * wrong answer type refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/le.h"
#include "tpm/vtpm_chan.h"
#include "vchan_pipe.h"

static uint8_t buf[VCHAN_MAX_PAYLOAD];

/* A whole escaped frame into out (vchan_frame), or one with its CRC off by one bit. */
static size_t frame(uint8_t *out, size_t cap, uint8_t type, uint32_t seq, const uint8_t *p,
		    size_t n, bool bad_crc)
{
	if (!bad_crc) {
		long w = vchan_frame(out, cap, type, seq, p, n);
		assert_true(w > 0);
		return (size_t)w;
	}
	uint8_t hdr[VCHAN_HDR], crc[4];
	vchan_hdr_put(hdr, type, seq, (uint32_t)n);
	le32_put(crc, vchan_crc32(vchan_crc32(0, hdr, sizeof(hdr)), p, n) ^ 1u);
	long a = vchan_escape(hdr, sizeof(hdr), out, cap);
	long b = vchan_escape(p, n, out + a, cap - (size_t)a);
	long c = vchan_escape(crc, 4, out + a + b, cap - (size_t)(a + b));
	assert_true(a > 0 && b >= 0 && c > 0);
	return (size_t)(a + b + c);
}

/* vchan_frame's output is what the reader takes back. */
static void frame_builder(void **state)
{
	uint8_t w[64];
	struct vchan_rx rx;
	size_t used;
	assert_int_equal(vchan_frame(w, 20, VCHAN_STORE, 1, (const uint8_t *)"ab", 2), -1);
	long n = vchan_frame(w, sizeof(w), VCHAN_STORE, 77, (const uint8_t *)"\0\1x", 3);
	assert_true(n > 0);
	vchan_rx_init(&rx, buf, sizeof(buf));
	assert_int_equal(vchan_rx_feed(&rx, w, (size_t)n, &used), VCHAN_RX_FRAME);
	assert_int_equal(rx.seq, 77);
	assert_false(rx.crc_bad);
	assert_memory_equal(rx.buf, "\0\1x", 3);
}

static void crc32_known_value(void **state)
{
	/* The CRC-32 check value (IEEE 802.3, as zlib's crc32): "123456789" -> 0xCBF43926. */
	assert_int_equal(vchan_crc32(0, (const uint8_t *)"123456789", 9), 0xCBF43926u);
	/* Continued over pieces = over the whole. */
	assert_int_equal(
	    vchan_crc32(vchan_crc32(0, (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5),
	    0xCBF43926u);
}

static void escape_never_sends_zero(void **state)
{
	uint8_t in[256], out[512];
	for (int i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	long n = vchan_escape(in, sizeof(in), out, sizeof(out));
	assert_int_equal(n, 256 + 2); /* 0x00 and 0x01 take two bytes */
	for (long i = 0; i < n; i++)
		assert_int_not_equal(out[i], 0);
	assert_int_equal(vchan_escape(in, 2, out, 3), -1); /* no room */
}

static void frame_split_everywhere_with_zero_fill(void **state)
{
	static uint8_t wire[4096], noisy[8192];
	uint8_t payload[300];
	for (unsigned i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7);
	size_t w = frame(wire, sizeof(wire), VCHAN_STORE, 42, payload, sizeof(payload), false);
	/* zeros between the bytes, as a string IN of an emptying FIFO gives */
	size_t m = 0;
	for (size_t i = 0; i < w; i++) {
		noisy[m++] = wire[i];
		if (i % 5 == 0)
			noisy[m++] = 0;
	}
	for (size_t cut = 0; cut <= m; cut++) {
		struct vchan_rx rx;
		size_t used;
		vchan_rx_init(&rx, buf, sizeof(buf));
		int rc = vchan_rx_feed(&rx, noisy, cut, &used);
		if (cut < m) {
			assert_int_equal(used, cut);
			if (rc != VCHAN_RX_FRAME) {
				assert_int_equal(rc, VCHAN_RX_MORE);
				rc = vchan_rx_feed(&rx, noisy + cut, m - cut, &used);
			}
		}
		assert_int_equal(rc, VCHAN_RX_FRAME);
		assert_int_equal(rx.type, VCHAN_STORE);
		assert_int_equal(rx.seq, 42);
		assert_int_equal(rx.got, sizeof(payload));
		assert_false(rx.crc_bad);
		assert_memory_equal(rx.buf, payload, sizeof(payload));
	}
}

static void two_frames_back_to_back(void **state)
{
	static uint8_t wire[256];
	struct vchan_rx rx;
	size_t used, off = 0;
	size_t a = frame(wire, sizeof(wire), VCHAN_FETCH_RSP, 1, (const uint8_t *)"ab", 2, false);
	size_t b = frame(wire + a, sizeof(wire) - a, VCHAN_STORE_RSP, 2, NULL, 0, false);
	vchan_rx_init(&rx, buf, sizeof(buf));
	assert_int_equal(vchan_rx_feed(&rx, wire, a + b, &used), VCHAN_RX_FRAME);
	assert_int_equal(used, a);
	assert_int_equal(rx.seq, 1);
	/* not taken yet: the reader holds it */
	assert_int_equal(vchan_rx_feed(&rx, wire + a, b, &off), VCHAN_RX_FRAME);
	assert_int_equal(off, 0);
	vchan_rx_next(&rx);
	assert_int_equal(vchan_rx_feed(&rx, wire + a, b, &used), VCHAN_RX_FRAME);
	assert_int_equal(rx.seq, 2);
	assert_int_equal(rx.got, 0);
}

/* Feeds raw (unescaped) header bytes; returns the final state. */
static int feed_header(uint8_t hdr[VCHAN_HDR], size_t cap, const char **why)
{
	static uint8_t wire[64];
	static struct vchan_rx rx;
	size_t used;
	long n = vchan_escape(hdr, VCHAN_HDR, wire, sizeof(wire));
	vchan_rx_init(&rx, buf, cap);
	int rc = vchan_rx_feed(&rx, wire, (size_t)n, &used);
	*why = rx.error;
	return rc;
}

static void malformed_headers(void **state)
{
	uint8_t h[VCHAN_HDR];
	const char *why;

	vchan_hdr_put(h, VCHAN_FETCH, 1, 0);
	assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_MORE); /* CRC to come */
	for (int i = 0; i < 4; i++) {
		vchan_hdr_put(h, VCHAN_FETCH, 1, 0);
		h[i] ^= 0x40;
		assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_ERROR);
		assert_string_equal(why, "bad magic");
	}
	vchan_hdr_put(h, VCHAN_FETCH, 1, 0);
	h[4] = 2;
	assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_ERROR);
	assert_string_equal(why, "unknown version");
	vchan_hdr_put(h, VCHAN_FETCH, 1, 0);
	h[7] = 1;
	assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_ERROR);
	assert_string_equal(why, "reserved bits set");
	vchan_hdr_put(h, VCHAN_STORE, 1, VCHAN_MAX_PAYLOAD + 1);
	assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_ERROR);
	assert_string_equal(why, "payload over the limit");
	vchan_hdr_put(h, VCHAN_STORE, 1, 0xFFFFFFFFu);
	assert_int_equal(feed_header(h, sizeof(buf), &why), VCHAN_RX_ERROR);
	vchan_hdr_put(h, VCHAN_STORE, 1, 100); /* over the caller's buffer */
	assert_int_equal(feed_header(h, 99, &why), VCHAN_RX_ERROR);

	/* Escapes: 0x01 must be followed by 0x01 or 0x02. */
	static const uint8_t bad_esc[] = {0x43, 0x53, 0x56, 0x54, 0x01, 0x03};
	struct vchan_rx rx;
	size_t used;
	vchan_rx_init(&rx, buf, sizeof(buf));
	assert_int_equal(vchan_rx_feed(&rx, bad_esc, sizeof(bad_esc), &used), VCHAN_RX_ERROR);
	assert_string_equal(rx.error, "bad escape");
	/* the reader stays refused */
	assert_int_equal(vchan_rx_feed(&rx, bad_esc, 1, &used), VCHAN_RX_ERROR);
	assert_int_equal(used, 0);
}

static void bad_crc_is_flagged(void **state)
{
	static uint8_t wire[256];
	struct vchan_rx rx;
	size_t used;
	size_t n = frame(wire, sizeof(wire), VCHAN_STORE, 9, (const uint8_t *)"xyz", 3, true);
	vchan_rx_init(&rx, buf, sizeof(buf));
	assert_int_equal(vchan_rx_feed(&rx, wire, n, &used), VCHAN_RX_FRAME);
	assert_true(rx.crc_bad);
}

/* ---- the client against a scripted host ---- */

struct host {
	struct vchan_pipe p; /* first: the pipe's serve gets the host */
	int script;	     /* what the host does next */
	uint32_t seen_seq[8];
	unsigned nseen;
};

/* The host answers when a whole request arrived. */
static void host_answer(struct vchan_pipe *p)
{
	struct host *h = (struct host *)p;
	if (!vchan_pipe_request(p))
		return;
	struct vchan_rx *rx = &p->rx;
	h->seen_seq[h->nseen++ % 8] = rx->seq;
	uint8_t st[4] = {0};
	switch (h->script) {
	case 0: /* answer properly, after a stale answer with another sequence number */
		p->out_len += frame(p->out + p->out_len, sizeof(p->out) - p->out_len,
				    (uint8_t)(rx->type + 1), rx->seq - 1, st, 4, false);
		p->out_len += frame(p->out + p->out_len, sizeof(p->out) - p->out_len,
				    (uint8_t)(rx->type + 1), rx->seq, st, 4, false);
		break;
	case 1: /* silent once, then answer */
		h->script = 0;
		break;
	case 2: /* the store arrived damaged once */
		le32_put(st, VCHAN_STORE_CORRUPT);
		p->out_len += frame(p->out + p->out_len, sizeof(p->out) - p->out_len,
				    (uint8_t)(rx->type + 1), rx->seq, st, 4, false);
		h->script = 0;
		break;
	case 3: /* the wrong type */
		p->out_len += frame(p->out + p->out_len, sizeof(p->out) - p->out_len,
				    VCHAN_RELAY_RSP, rx->seq, st, 4, false);
		break;
	case 4: /* a bad CRC from the host */
		p->out_len += frame(p->out + p->out_len, sizeof(p->out) - p->out_len,
				    (uint8_t)(rx->type + 1), rx->seq, st, 4, true);
		break;
	case 5: /* never answers */
		break;
	}
}

static void host_reset(struct host *h)
{
	memset(h, 0, sizeof(*h));
	h->p.serve = host_answer;
}

static void client_skips_stale_and_answers(void **state)
{
	static struct host h;
	struct vchan c;
	size_t len;
	host_reset(&h);
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_STORE, (const uint8_t *)"abc", 3, NULL, 0, &len),
			 VCHAN_OK);
	assert_int_equal(len, 4);
	assert_int_equal(c.st.retries, 0);
	assert_true(h.p.writes > 0);
}

static void client_retries(void **state)
{
	static struct host h;
	struct vchan c;
	size_t len;

	host_reset(&h);
	h.script = 1; /* the first try gets no answer */
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_FETCH, (const uint8_t *)"x", 1, NULL, 0, &len),
			 VCHAN_OK);
	assert_int_equal(c.st.retries, 1);
	assert_int_not_equal(h.seen_seq[0], h.seen_seq[1]); /* a new sequence number */

	host_reset(&h);
	h.script = 2; /* STORE_CORRUPT once */
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_STORE, (const uint8_t *)"x", 1, NULL, 0, &len),
			 VCHAN_OK);
	assert_int_equal(c.st.retries, 1);

	host_reset(&h);
	h.script = 5; /* never answers: bounded */
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_FETCH, NULL, 0, NULL, 0, &len), VCHAN_ERR_TIMEOUT);
	assert_int_equal(c.st.retries, 2);
	assert_int_equal(h.nseen, 3);
}

static void client_refuses_wrong_answers(void **state)
{
	static struct host h;
	struct vchan c;
	size_t len;

	host_reset(&h);
	h.script = 3;
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_FETCH, NULL, 0, NULL, 0, &len), VCHAN_ERR_PROTO);
	host_reset(&h);
	h.script = 4;
	vchan_init(&c, &vchan_pipe_io, &h.p, buf, sizeof(buf), 1000, 3);
	assert_int_equal(vchan_call(&c, VCHAN_FETCH, NULL, 0, NULL, 0, &len), VCHAN_ERR_PROTO);
	/* requests: odd types only, bounded size */
	assert_int_equal(vchan_call(&c, VCHAN_FETCH_RSP, NULL, 0, NULL, 0, &len), VCHAN_ERR_SIZE);
	assert_int_equal(vchan_call(&c, VCHAN_STORE, buf, VCHAN_MAX_PAYLOAD, buf, 1, &len),
			 VCHAN_ERR_SIZE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(crc32_known_value),
	    cmocka_unit_test(escape_never_sends_zero),
	    cmocka_unit_test(frame_builder),
	    cmocka_unit_test(frame_split_everywhere_with_zero_fill),
	    cmocka_unit_test(two_frames_back_to_back),
	    cmocka_unit_test(malformed_headers),
	    cmocka_unit_test(bad_crc_is_flagged),
	    cmocka_unit_test(client_skips_stale_and_answers),
	    cmocka_unit_test(client_retries),
	    cmocka_unit_test(client_refuses_wrong_answers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
