/* SPDX-License-Identifier: Apache-2.0 */
/* What the two netbw members say to each other over TCP besides the bulk data.
 *
 * Every connection starts with a hello from the side that connected: magic "FBNH", the kind of
 * connection (control or data), the sending rank of the direction, the stream index, and the
 * listener's nonce (from the exchange), so a listener takes only connections from its partner in
 * this task. On the control connection, messages are framed: magic "FBNM", type, payload length
 * (at most NBC_MAX_PAYLOAD), payload. Integers are big-endian. */
#ifndef FB_NET_CONTROL_H
#define FB_NET_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#define NBC_HELLO_LEN 24u
#define NBC_HEADER_LEN 12u
#define NBC_MAX_PAYLOAD 1024u

typedef enum { NBC_CONN_CONTROL = 1, NBC_CONN_DATA = 2 } nbc_conn_t;

typedef struct {
    uint32_t kind;   /* nbc_conn_t */
    uint32_t sender; /* rank that sends the data (data connections) */
    uint32_t stream;
    uint64_t nonce;
} nbc_hello_t;

typedef enum {
    NBC_STOP = 1,   /* receiver -> sender: stop sending; u64 bytes, u64 ns of the window */
    NBC_RESULT = 2, /* receiver -> sender, after the streams ended: nbc_result_t */
    NBC_PING = 3,   /* latency probe; echoed unchanged as NBC_PONG */
    NBC_PONG = 4,
    NBC_LAT_DONE = 5, /* the pinging side is done */
    NBC_ERROR = 6,    /* text: the sender of this message gives up */
} nbc_type_t;

/* What the receiver of a direction found. */
typedef struct {
    uint64_t corrupt_blocks;
    uint64_t corrupt_stream, first_offset, first_expected, first_actual;
} nbc_result_t;

void nbc_hello_encode(const nbc_hello_t *h, uint8_t out[NBC_HELLO_LEN]);
/* Returns 0, or -EPROTO when the magic or kind is wrong. */
int nbc_hello_decode(const uint8_t in[NBC_HELLO_LEN], nbc_hello_t *h);

void nbc_put_u64(uint8_t *p, uint64_t v);
uint64_t nbc_get_u64(const uint8_t *p);

/* Result payload: 5 u64. */
#define NBC_RESULT_LEN 40u
void nbc_result_encode(const nbc_result_t *r, uint8_t out[NBC_RESULT_LEN]);
void nbc_result_decode(const uint8_t in[NBC_RESULT_LEN], nbc_result_t *r);

/* Sends one message (len <= NBC_MAX_PAYLOAD) before deadline_ms. 0 or a negative errno. */
int nbc_send(int fd, uint32_t type, const void *payload, size_t len, uint64_t deadline_ms);
/* Receives one message before deadline_ms into payload (NBC_MAX_PAYLOAD + 1 bytes: an ERROR
 * text is NUL-terminated). Returns 0, -ECONNRESET when the partner closed the connection,
 * -ETIMEDOUT, or -EPROTO for a bad frame. */
int nbc_recv(int fd, uint32_t *type, uint8_t *payload, size_t *len, uint64_t deadline_ms);

#endif
