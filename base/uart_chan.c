/*
 * The host channel's 16550 (include/base/uart_chan.h).
 *
 * Every register access is a GHCB IOIO event made here directly (no #VC
 * round trip): SW_EXITINFO1 as the SVM IOIO intercept's EXITINFO1 (APM
 * vol. 2 §15.10.2), RAX the data of an OUT (GHCB spec 56421 §4.1.2). A
 * block is one string event: EXITINFO1 with the STR and REP bits,
 * SW_EXITINFO2 the repeat count, SW_SCRATCH the GPA of the GHCB's shared
 * buffer holding the bytes, as Linux's #VC handler sends a REP INS/OUTS
 * (arch/x86/coco/sev/vc-handle.c vc_handle_ioio: op_count, the shared
 * buffer as scratch) and KVM serves it (arch/x86/kvm/svm/sev.c
 * sev_es_string_io: count = exit_info_2, setup_vmgexit_scratch; QEMU then
 * performs each access on the device).
 *
 * Transmit: the 16550 takes 16 bytes whenever its transmit FIFO is empty
 * (LSR.THRE with FIFOs on), and csvsm never writes more. QEMU's 16550 hands
 * each byte to the chardev at once and keeps it in the FIFO only when the
 * socket does not take it (hw/char/serial.c serial_ioport_write,
 * serial_xmit); a write past a full FIFO overwrites its oldest byte
 * ("xmit overruns overwrite data"). Writing a whole shared buffer per event
 * was tried and measured: a unix socket charges every one-byte send its
 * full buffer overhead, so under load the socket refused bytes within a
 * few hundred and the FIFO overran (the proxy saw a bad CRC;
 * docs/vtpm.md "The channel"). So: LSR, then at most 16 bytes, per 16.
 *
 * Receive: QEMU's receive path is flow-controlled (serial_can_receive
 * offers the FIFO's room up to the trigger level, which csvsm sets to 14)
 * and a read of the data register with the FIFO empty returns 0
 * (serial_ioport_read), so one string IN of 16 bytes takes what the FIFO
 * holds and fills the rest with 0x00, which the channel never sends.
 */
#include "base/cpu.h"
#include "base/percpu.h"
#include "base/platform.h"
#include "base/string.h"
#include "base/uart_chan.h"
#include "snp/ghcb.h"
#include "arch/x86/insn.h"

#define RBR 0 /* receive buffer / transmit holding */
#define IER 1
#define FCR 2
#define LCR 3
#define MCR 4
#define LSR 5
#define SCR 7

#define LSR_DR	    0x01
#define LSR_THRE    0x20
#define FIFO	    16u
#define IOIO_SEG_DS (3ULL << IOIO_SEG_SHIFT) /* OUTS reads DS:RSI, INS writes ES:RDI (ES = 0) */

#define WRITE_STALL_US (10ULL * 1000 * 1000) /* a transmitter that never empties */

static uint16_t base;
static struct uart_chan_stats st;

static struct ghcb *ghcb_of(struct percpu **cpu)
{
	*cpu = this_cpu();
	return *cpu ? (*cpu)->ghcb : NULL;
}

/* One byte-wide IN or OUT; -1 if the host broke the protocol. */
static int pio(uint16_t port, bool in, uint8_t *val)
{
	struct percpu *cpu;
	struct ghcb *g = ghcb_of(&cpu);
	uint64_t info = (uint64_t)port << IOIO_PORT_SHIFT | IOIO_DATA_8 | IOIO_ADDR_64;

	if (!g)
		return -1;
	ghcb_prepare(g, SVM_EXIT_IOIO, info | (in ? IOIO_TYPE_IN : 0), 0);
	if (!in)
		GHCB_SET(g, rax, *val);
	platform->ghcb_call(cpu, g);
	st.exits++;
	if (ghcb_check_result(g, NULL) != GHCB_STATUS_OK)
		return -1;
	if (in) {
		if (!GHCB_VALID(g, rax))
			return -1;
		*val = (uint8_t)__atomic_load_n(&g->rax, __ATOMIC_RELAXED);
	}
	return 0;
}

/* One string IN or OUT of n bytes through the shared buffer. */
static int pio_string(bool in, uint8_t *p, size_t n)
{
	struct percpu *cpu;
	struct ghcb *g = ghcb_of(&cpu);
	uint64_t info = (uint64_t)base << IOIO_PORT_SHIFT | IOIO_TYPE_STR | IOIO_REP | IOIO_DATA_8 |
			IOIO_ADDR_64;

	if (!g || !n || n > GHCB_SHARED_BUF_SIZE)
		return -1;
	if (!in)
		memcpy(g->shared_buffer, p, n);
	ghcb_prepare(g, SVM_EXIT_IOIO, info | (in ? IOIO_TYPE_IN : IOIO_SEG_DS), n);
	GHCB_SET(g, sw_scratch, cpu->ghcb_gpa + GHCB_SHARED_BUF_OFF);
	platform->ghcb_call(cpu, g);
	st.exits++;
	if (ghcb_check_result(g, NULL) != GHCB_STATUS_OK)
		return -1;
	if (in) /* copied once out of the shared page; the caller parses the copy */
		memcpy(p, g->shared_buffer, n);
	return 0;
}

int uart_chan_init(uint16_t port)
{
	uint8_t v;

	base = port;
	/* Interrupts off, 115200 8N1 (the divisor is moot for QEMU), FIFOs on and
	 * cleared with the receive trigger at 14 bytes (QEMU lets the chardev fill
	 * the receive FIFO up to it), DTR|RTS without OUT2: the UART raises no IRQ. */
	static const uint8_t setup[][2] = {{IER, 0x00}, {LCR, 0x80}, {RBR, 0x01}, {IER, 0x00},
					   {LCR, 0x03}, {FCR, 0xC7}, {MCR, 0x03}};
	for (unsigned i = 0; i < ARRAY_SIZE(setup); i++) {
		v = setup[i][1];
		if (pio((uint16_t)(port + setup[i][0]), false, &v))
			return -1;
	}
	/* Something answers: the scratch register keeps what was written (no
	 * device reads 0xFF, the SNP machine's denied port too). */
	for (unsigned k = 0; k < 2; k++) {
		uint8_t want = k ? 0xA5 : 0x5A;
		v = want;
		if (pio((uint16_t)(port + SCR), false, &v) ||
		    pio((uint16_t)(port + SCR), true, &v) || v != want)
			return -1;
	}
	return 0;
}

static int wait_thre(void)
{
	uint64_t t0 = timer_us();
	uint8_t lsr;
	for (;;) {
		if (pio((uint16_t)(base + LSR), true, &lsr))
			return -1;
		if (lsr & LSR_THRE)
			return 0;
		if (timer_us() - t0 > WRITE_STALL_US)
			return -1;
		cpu_relax();
	}
}

int uart_chan_write(const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = MIN(n, (size_t)FIFO);
		if (wait_thre() || pio_string(false, (uint8_t *)p, k))
			return -1;
		st.string_out++;
		st.bytes_out += k;
		p += k;
		n -= k;
	}
	return 0;
}

long uart_chan_read(uint8_t *p, size_t cap, uint64_t timeout_us)
{
	uint64_t t0 = timer_us();
	size_t k = MIN(cap, (size_t)FIFO);

	if (!k)
		return 0;
	for (;;) {
		if (pio_string(true, p, k))
			return -1;
		st.string_in++;
		size_t got = 0;
		for (size_t i = 0; i < k; i++)
			got += p[i] != 0;
		if (got) {
			st.bytes_in += got;
			return (long)k;
		}
		if (timer_us() - t0 >= timeout_us)
			return 0;
		cpu_relax();
	}
}

void uart_chan_stats(struct uart_chan_stats *out)
{
	*out = st;
}
