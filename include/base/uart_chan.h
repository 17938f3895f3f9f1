/*
 * csvsm's host channel port (base/uart_chan.c): a 16550 UART the host
 * attaches to a socket (QEMU: -chardev socket,... -device
 * isa-serial,chardev=...,iobase=0x2e8,irq=3; docs/vtpm.md "Persistence"),
 * driven polled, with interrupts off in the UART, through the GHCB's IOIO
 * event. Bulk transfers are string I/O through the GHCB's shared buffer
 * (one exit per block instead of two per byte). It carries the framed
 * protocol of include/tpm/vtpm_chan.h, which never sends 0x00.
 *
 * Image only (raw port I/O); the callers serialize (the vTPM lock).
 */
#ifndef BASE_UART_CHAN_H
#define BASE_UART_CHAN_H

#include "base/types.h"

/* Programs the UART at `port` and checks one answers there: 0, or -1 (no device). */
int uart_chan_init(uint16_t port);
/* All n bytes out, 16 per empty transmit FIFO (the 16550's rule); 0 or -1 on a stuck port. */
int uart_chan_write(const uint8_t *p, size_t n);
/* Up to cap bytes (0x00 where the receive FIFO ran empty) within timeout_us; -1 on error. */
long uart_chan_read(uint8_t *p, size_t cap, uint64_t timeout_us);

struct uart_chan_stats {
	uint64_t exits;		      /* GHCB IOIO events */
	uint64_t string_out;	      /* of which string OUT */
	uint64_t string_in;	      /* of which string IN */
	uint64_t bytes_out, bytes_in; /* non-zero bytes read */
};
void uart_chan_stats(struct uart_chan_stats *st);

#endif
