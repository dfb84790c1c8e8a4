/* SPDX-License-Identifier: Apache-2.0 */
/* Encoding, decoding and validation of wire messages (proto/fleetburn.proto).
 *
 * Nothing decoded from the network is used before fb_wire_decode has validated it: the protocol
 * version, which body is set, string lengths and character sets of names and ids, repeated field
 * counts, enum ranges and numeric ranges. A message that fails is reported with a reason and
 * dropped by the caller. */
#ifndef FB_WIRE_H
#define FB_WIRE_H

#include "common/value_limits.h"
#include "common/result.h"
#include "fleetburn.pb-c.h"

#include <stddef.h>
#include <stdint.h>

#define FB_PROTOCOL_VERSION 4

/* Limits a valid message stays within. */
#define FB_WIRE_MAX_FRAME (4u << 20)    /* bytes in one frame */
#define FB_WIRE_MAX_NAME FB_LIMIT_NAME  /* node, workload, stage, metric names */
#define FB_WIRE_MAX_ID 200              /* task, campaign and result ids */
#define FB_WIRE_MAX_TEXT 65536          /* messages, errors, findings */
#define FB_WIRE_MAX_YAML FB_LIMIT_CAMPAIGN_BYTES /* submitted campaign files */
#define FB_WIRE_MAX_ITEMS FB_LIMIT_GROUP_SIZE    /* any repeated field */
#define FB_WIRE_MAX_PROGRESS_NODES 8  /* Progress.nodes: the slowest running nodes */
#define FB_WIRE_MAX_EXCHANGE 65536      /* one rank's value in an Exchange */
#define FB_WIRE_MAX_FILES FB_LIMIT_CAMPAIGN_FILES /* files attached to a Submit */
/* The frame inside a Relayed: room is left for the tag, so a relayed frame fits a frame. */
#define FB_WIRE_MAX_RELAYED (FB_WIRE_MAX_FRAME - 1024u)
#define FB_WIRE_KEY_LEN 40 /* a CURVE public key in Z85 (Relayed.agent_key) */

/* Decodes one frame into *out. Returns 0; -EBADMSG when it is not a protobuf Envelope (*out NULL);
 * -EPROTONOSUPPORT when it decoded but speaks another protocol version (*out is set, so the
 * caller can answer with a refusal naming both versions); -EINVAL when a field is invalid
 * (*out NULL). err receives the reason. */
int fb_wire_decode(const uint8_t *data, size_t len, Fleetburn__Envelope **out, char *err,
                size_t errlen);
void fb_wire_free(Fleetburn__Envelope **env_p);
/* Validates a decoded envelope's body (not the version). 0 or -EINVAL with err. */
int fb_wire_validate(const Fleetburn__Envelope *env, char *err, size_t errlen);
/* Stamps the protocol version and packs env into a new buffer (caller frees). */
uint8_t *fb_wire_encode(Fleetburn__Envelope *env, size_t *len_out);
/* Packs an Envelope holding a Relayed around frame (an encoded Envelope, not copied), tagged
 * with node, agent_key (NULL: none) and link, into a new buffer (caller frees). Like
 * fb_wire_encode it validates nothing. */
uint8_t *fb_wire_encode_relayed(const char *node, const char *agent_key, uint64_t link,
                                const uint8_t *frame, size_t frame_len, size_t *len_out);

/* True when s is a valid node name: [A-Za-z0-9._-], 1..FB_WIRE_MAX_NAME characters. */
int fb_wire_valid_name(const char *s);
/* True when s is a valid task, campaign or result id (1..FB_WIRE_MAX_ID characters). */
int fb_wire_valid_id(const char *s);

/* TaskResult <-> fb_result_t. Packing gives bytes the caller frees (spool, worker result file). */
uint8_t *fb_wire_result_pack(const fb_result_t *result, size_t *len_out);
/* Unpacks and validates; NULL with err on bad input. */
fb_result_t *fb_wire_result_unpack(const uint8_t *data, size_t len, char *err, size_t errlen);
fb_result_t *fb_wire_result_from_proto(const Fleetburn__TaskResult *msg);

/* A TaskResult view of result whose strings point into result (valid while result lives).
 * Free the view with fb_wire_result_view_free. */
Fleetburn__TaskResult *fb_wire_result_view(const fb_result_t *result);
void fb_wire_result_view_free(Fleetburn__TaskResult **msg_p);

#endif
