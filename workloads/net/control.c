/* SPDX-License-Identifier: Apache-2.0 */
/* Encoding of netbw's connection hellos and control messages. Frames are sent in one send so
 * that a ping is one TCP segment; a frame that does not start with the magic or announces more
 * than NBC_MAX_PAYLOAD bytes is a protocol error, never trusted. */
#include "control.h"
#include "sock.h"

#include <errno.h>
#include <string.h>

#define NBC_MAGIC_HELLO 0x46424e48u /* "FBNH" */
#define NBC_MAGIC_MSG 0x46424e4du   /* "FBNM" */

static void s_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
}

static uint32_t s_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void nbc_put_u64(uint8_t *p, uint64_t v)
{
    s_put_u32(p, (uint32_t)(v >> 32));
    s_put_u32(p + 4, (uint32_t)v);
}

uint64_t nbc_get_u64(const uint8_t *p)
{
    return (uint64_t)s_get_u32(p) << 32 | s_get_u32(p + 4);
}

void nbc_hello_encode(const nbc_hello_t *h, uint8_t out[NBC_HELLO_LEN])
{
    s_put_u32(out, NBC_MAGIC_HELLO);
    s_put_u32(out + 4, h->kind);
    s_put_u32(out + 8, h->sender);
    s_put_u32(out + 12, h->stream);
    nbc_put_u64(out + 16, h->nonce);
}

int nbc_hello_decode(const uint8_t in[NBC_HELLO_LEN], nbc_hello_t *h)
{
    if (s_get_u32(in) != NBC_MAGIC_HELLO)
        return -EPROTO;
    h->kind = s_get_u32(in + 4);
    h->sender = s_get_u32(in + 8);
    h->stream = s_get_u32(in + 12);
    h->nonce = nbc_get_u64(in + 16);
    return h->kind == NBC_CONN_CONTROL || h->kind == NBC_CONN_DATA ? 0 : -EPROTO;
}

void nbc_result_encode(const nbc_result_t *r, uint8_t out[NBC_RESULT_LEN])
{
    nbc_put_u64(out, r->corrupt_blocks);
    nbc_put_u64(out + 8, r->corrupt_stream);
    nbc_put_u64(out + 16, r->first_offset);
    nbc_put_u64(out + 24, r->first_expected);
    nbc_put_u64(out + 32, r->first_actual);
}

void nbc_result_decode(const uint8_t in[NBC_RESULT_LEN], nbc_result_t *r)
{
    r->corrupt_blocks = nbc_get_u64(in);
    r->corrupt_stream = nbc_get_u64(in + 8);
    r->first_offset = nbc_get_u64(in + 16);
    r->first_expected = nbc_get_u64(in + 24);
    r->first_actual = nbc_get_u64(in + 32);
}

int nbc_send(int fd, uint32_t type, const void *payload, size_t len, uint64_t deadline_ms)
{
    uint8_t frame[NBC_HEADER_LEN + NBC_MAX_PAYLOAD];
    if (len > NBC_MAX_PAYLOAD)
        return -EMSGSIZE;
    s_put_u32(frame, NBC_MAGIC_MSG);
    s_put_u32(frame + 4, type);
    s_put_u32(frame + 8, (uint32_t)len);
    if (len)
        memcpy(frame + NBC_HEADER_LEN, payload, len);
    return nsock_send_all(fd, frame, NBC_HEADER_LEN + len, deadline_ms);
}

int nbc_recv(int fd, uint32_t *type, uint8_t *payload, size_t *len, uint64_t deadline_ms)
{
    uint8_t header[NBC_HEADER_LEN];
    int rc = nsock_recv_all(fd, header, sizeof header, deadline_ms);
    if (rc)
        return rc;
    uint32_t n = s_get_u32(header + 8);
    if (s_get_u32(header) != NBC_MAGIC_MSG || n > NBC_MAX_PAYLOAD)
        return -EPROTO;
    rc = n ? nsock_recv_all(fd, payload, n, deadline_ms) : 0;
    if (rc)
        return rc;
    payload[n] = '\0';
    *type = s_get_u32(header + 4);
    *len = n;
    return 0;
}
