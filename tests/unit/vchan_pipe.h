/*
 * An in-memory host at the other end of csvsm's channel (include/tpm/
 * vtpm_chan.h), for the unit tests and bench/vtpm_bench.c: what csvsm
 * writes collects in `in`; before each read `serve` may take the request
 * (vchan_pipe_request) and queue answer frames (vchan_pipe_answer); a read
 * with nothing to give passes the whole wait on the pipe's clock, so a
 * silent host ends csvsm's bounded wait at once. Header only: each user
 * keeps its own pipe and its own host logic.
 */
#ifndef TESTS_UNIT_VCHAN_PIPE_H
#define TESTS_UNIT_VCHAN_PIPE_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tpm/vtpm_chan.h"

struct vchan_pipe {
	uint8_t in[4 * VCHAN_MAX_PAYLOAD]; /* what csvsm wrote */
	size_t in_len;
	uint8_t out[4 * VCHAN_MAX_PAYLOAD]; /* what csvsm will read */
	size_t out_len, out_pos;
	uint64_t now; /* microseconds, the pipe's clock */
	unsigned writes;
	void (*serve)(struct vchan_pipe *p); /* the host; may be NULL */
	struct vchan_rx rx;		     /* the request vchan_pipe_request took */
	uint8_t rx_buf[VCHAN_MAX_PAYLOAD];
};

/* The request csvsm wrote, once it is whole: true with it in p->rx. */
static inline bool vchan_pipe_request(struct vchan_pipe *p)
{
	size_t used;
	vchan_rx_init(&p->rx, p->rx_buf, sizeof(p->rx_buf));
	if (vchan_rx_feed(&p->rx, p->in, p->in_len, &used) != VCHAN_RX_FRAME)
		return false;
	p->in_len = 0;
	return true;
}

/* One answer frame queued for csvsm. */
static inline void vchan_pipe_answer(struct vchan_pipe *p, uint8_t type, uint32_t seq,
				     const uint8_t *b, size_t n)
{
	long w = vchan_frame(p->out + p->out_len, sizeof(p->out) - p->out_len, type, seq, b, n);
	if (w < 0)
		abort();
	p->out_len += (size_t)w;
}

static inline int vchan_pipe_write(void *ctx, const uint8_t *b, size_t n)
{
	struct vchan_pipe *p = ctx;
	if (p->in_len + n > sizeof(p->in))
		abort();
	memcpy(p->in + p->in_len, b, n);
	p->in_len += n;
	p->writes++;
	return 0;
}

static inline long vchan_pipe_read(void *ctx, uint8_t *b, size_t cap, uint64_t timeout_us)
{
	struct vchan_pipe *p = ctx;
	if (p->serve)
		p->serve(p);
	if (p->out_pos == p->out_len) {
		p->out_pos = p->out_len = 0;
		p->now += timeout_us; /* nothing came within the wait */
		return 0;
	}
	size_t n = p->out_len - p->out_pos < cap ? p->out_len - p->out_pos : cap;
	memcpy(b, p->out + p->out_pos, n);
	p->out_pos += n;
	p->now += 1;
	return (long)n;
}

static inline uint64_t vchan_pipe_now(void *ctx)
{
	return ((struct vchan_pipe *)ctx)->now;
}

static const struct vchan_io vchan_pipe_io = {
    .write = vchan_pipe_write, .read = vchan_pipe_read, .now_us = vchan_pipe_now};

/* A deterministic stand-in for the RNG (mbedTLS f_rng convention). */
static inline int vchan_pipe_rng(void *ctx, unsigned char *b, size_t n)
{
	static uint32_t x = 1;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)((x = x * 1103515245u + 12345u) >> 16);
	return 0;
}

#endif
