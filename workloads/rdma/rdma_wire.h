/* SPDX-License-Identifier: Apache-2.0 */
/* What the two members of an rdmabw pair tell each other, and how it is written.
 *
 * Queue-pair details go through worker_exchange (key "qp"; the coordinator relays them, no TCP
 * port of our own) as text, one line per port:
 *
 *     fbrdma 1
 *     ep port=mlx5_0:1 lid=7 gid=fe80...7f2e mtu=4096 qpn=4711 psn=123 cqpn=4712 cpsn=99 rkey=... \
 *        src=7f0000000000 sink=7f0000800000 region=8388608 lrkey=... laddr=7f0001000000 \
 *        gbps=200 roce=0 gpu=0
 *
 * or, from a member that cannot take part, "none <reason>". After the run each member posts
 * its measured write bandwidth per connection (key "result") so that each side also knows what
 * it received. Decoding is strict (values are checked against their ranges, required keys must
 * be there, unknown keys are ignored so a newer peer can add some) because the text comes from
 * another machine.
 *
 * During the run the members keep in step over a small control queue pair with fixed-size
 * binary messages (rdma_ctl_t), little-endian on the wire. */
#ifndef FB_RDMA_WIRE_H
#define FB_RDMA_WIRE_H

#include "ibport.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RDMA_MAX_CONNS 32

typedef struct {
    char port[IB_NAME_MAX + 8]; /* "mlx5_0:1", for messages */
    uint16_t lid;
    uint8_t gid[16];
    uint32_t mtu;                         /* path MTU in bytes: 256, 512, 1024, 2048 or 4096 */
    uint32_t qpn, psn;                    /* data queue pair (24-bit values) */
    uint32_t ctl_qpn, ctl_psn;            /* control queue pair */
    uint32_t rkey;                        /* data buffer: source region then sink region */
    uint64_t src_addr, sink_addr, region; /* region: bytes in each */
    uint32_t lat_rkey;                    /* latency buffer (host memory) */
    uint64_t lat_addr;
    double gbps; /* port rate */
    bool roce;   /* addressed by GID (Ethernet link layer) */
    bool gpu;    /* source and sink are GPU memory */
} rdma_endpoint_t;

/* Encodes n endpoints, or when reason is non-NULL a "none <reason>" message. Heap string. */
char *rdma_endpoints_encode(const rdma_endpoint_t *eps, size_t n, const char *reason);

/* Decodes a message of len bytes (not necessarily terminated). Returns the number of endpoints
 * (0..RDMA_MAX_CONNS) written to eps; 0 with *none set and reason filled for a "none" message;
 * -EINVAL with err saying what is wrong (line and key) for anything malformed. */
int rdma_endpoints_decode(const void *msg, size_t len, rdma_endpoint_t *eps, size_t cap, bool *none,
                          char *reason, size_t reason_len, char *err, size_t errlen);

/* The result a member posts after the run. */
typedef struct {
    double tx_gbps[RDMA_MAX_CONNS]; /* best average write bandwidth it sent per connection; <0 not
                                       measured */
    size_t n;
    char error[256]; /* "" when it ran to the end */
} rdma_summary_t;

char *rdma_summary_encode(const rdma_summary_t *s);
int rdma_summary_decode(const void *msg, size_t len, rdma_summary_t *out, char *err, size_t errlen);

/* Control messages between the members during the run. */
typedef enum {
    RDMA_CTL_READY = 1, /* ready for step `step` (passive side prepared its buffers) */
    RDMA_CTL_DONE = 2,  /* step `step` finished on the active side; status 0 or -errno */
    RDMA_CTL_ABORT = 3, /* stopping: an error on the sender's side; no more steps */
} rdma_ctl_kind_t;

typedef struct {
    uint32_t kind;
    uint32_t step;
    int32_t status;
    uint64_t value;
} rdma_ctl_t;

#define RDMA_CTL_BYTES 32
void rdma_ctl_encode(const rdma_ctl_t *m, uint8_t out[RDMA_CTL_BYTES]);
/* -EINVAL for a wrong magic or an unknown kind. */
int rdma_ctl_decode(const uint8_t in[RDMA_CTL_BYTES], rdma_ctl_t *m);

#endif
