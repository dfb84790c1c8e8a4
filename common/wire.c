/* SPDX-License-Identifier: Apache-2.0 */
/* Wire message codec and validator. Validation is table-free and explicit per message so that a
 * reviewer can see every bound a peer is held to. */
#include "wire.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>

int fb_wire_valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > FB_WIRE_MAX_NAME)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

/* Ids use the characters the agent's spool can name files after: [A-Za-z0-9._:@#/-]. */
static int s_valid_id(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > FB_WIRE_MAX_ID)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("._:@#/-", c)))
            return 0;
    }
    return 1;
}

static int s_text_ok(const char *s, size_t max)
{
    return s && strlen(s) <= max;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            return fb_errf(err, errlen, -EINVAL, __VA_ARGS__);                                     \
    } while (0)

static int s_validate_inventory(const Fleetburn__Inventory *inv, char *err, size_t errlen)
{
    CHECK(inv, "hello: inventory missing");
    CHECK(s_text_ok(inv->hostname, FB_WIRE_MAX_NAME * 2), "inventory: hostname too long");
    CHECK(s_text_ok(inv->kernel, FB_WIRE_MAX_NAME), "inventory: kernel too long");
    CHECK(s_text_ok(inv->cpu_model, FB_WIRE_MAX_NAME * 2), "inventory: cpu_model too long");
    CHECK(s_text_ok(inv->agent_version, FB_WIRE_MAX_NAME), "inventory: agent_version too long");
    CHECK(inv->n_dimms <= FB_WIRE_MAX_ITEMS && inv->n_gpus <= FB_WIRE_MAX_ITEMS &&
              inv->n_nics <= FB_WIRE_MAX_ITEMS && inv->n_software <= FB_WIRE_MAX_ITEMS,
          "inventory: too many items");
    for (size_t i = 0; i < inv->n_dimms; i++)
        CHECK(s_text_ok(inv->dimms[i]->label, FB_WIRE_MAX_NAME * 2) &&
                  s_text_ok(inv->dimms[i]->location, FB_WIRE_MAX_NAME),
              "inventory: dimm %zu: label or location too long", i);
    for (size_t i = 0; i < inv->n_gpus; i++) {
        const Fleetburn__Gpu *g = inv->gpus[i];
        CHECK(s_text_ok(g->vendor, 32) && s_text_ok(g->vendor_id, 16) &&
                  s_text_ok(g->device_id, 16) && s_text_ok(g->pci_address, 32) &&
                  s_text_ok(g->link_speed, 64) && s_text_ok(g->max_link_speed, 64) &&
                  s_text_ok(g->model, FB_WIRE_MAX_NAME) && g->link_width <= 64 &&
                  g->max_link_width <= 64,
              "inventory: gpu %zu: field out of range", i);
    }
    for (size_t i = 0; i < inv->n_nics; i++) {
        const Fleetburn__Nic *n = inv->nics[i];
        CHECK(s_text_ok(n->name, 64) && s_text_ok(n->kind, 32) && s_text_ok(n->state, 64) &&
                  s_text_ok(n->rate, 64) && s_text_ok(n->address, 128),
              "inventory: nic %zu: field too long", i);
    }
    for (size_t i = 0; i < inv->n_software; i++)
        CHECK(s_text_ok(inv->software[i]->key, FB_WIRE_MAX_NAME) &&
                  s_text_ok(inv->software[i]->value, FB_WIRE_MAX_NAME * 2),
              "inventory: software entry %zu too long", i);
    return 0;
}

/* A host name or an IPv4/IPv6 literal: [A-Za-z0-9.:_%-], 1..255 characters. */
static int s_valid_address(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 255)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && !strchr(".:_%-", c))
            return 0;
    }
    return 1;
}

int fb_wire_valid_id(const char *s)
{
    return s_valid_id(s);
}

static int s_validate_ids(char **ids, size_t n, const char *what, char *err, size_t errlen)
{
    CHECK(n <= FB_WIRE_MAX_ITEMS, "%s: %zu ids, at most %u allowed", what, n, FB_WIRE_MAX_ITEMS);
    for (size_t i = 0; i < n; i++)
        CHECK(s_valid_id(ids[i]), "%s: id %zu is not a valid id", what, i);
    return 0;
}

static int s_validate_hello(const Fleetburn__Hello *m, char *err, size_t errlen)
{
    CHECK(fb_wire_valid_name(m->name), "hello: invalid node name (letters, digits, . _ -; 1-%d chars)",
          FB_WIRE_MAX_NAME);
    int rc = s_validate_inventory(m->inventory, err, errlen);
    if (rc)
        return rc;
    CHECK(m->address[0] == '\0' || s_valid_address(m->address),
          "hello: address is not a host name or IP address");
    rc = s_validate_ids(m->unacked_result_ids, m->n_unacked_result_ids, "hello.unacked", err,
                        errlen);
    return rc ? rc : s_validate_ids(m->running_task_ids, m->n_running_task_ids, "hello.running",
                                    err, errlen);
}

static int s_validate_welcome(const Fleetburn__Welcome *m, char *err, size_t errlen)
{
    CHECK(s_text_ok(m->reason, FB_WIRE_MAX_TEXT), "welcome: reason too long");
    if (m->accepted) {
        CHECK(m->heartbeat_interval_ms >= 10 && m->heartbeat_interval_ms <= 600000,
              "welcome: heartbeat interval %u ms out of range 10..600000",
              m->heartbeat_interval_ms);
        CHECK(m->liveness >= 1 && m->liveness <= 100, "welcome: liveness %u out of range 1..100",
              m->liveness);
    }
    return 0;
}

static int s_validate_run_task(const Fleetburn__RunTask *m, char *err, size_t errlen)
{
    CHECK(s_valid_id(m->task_id), "run_task: invalid task id");
    CHECK(s_valid_id(m->campaign_id), "run_task: invalid campaign id");
    CHECK(fb_wire_valid_name(m->workload), "run_task: invalid workload name");
    CHECK(s_text_ok(m->stage, FB_WIRE_MAX_NAME), "run_task: stage name too long");
    CHECK(m->timeout_ms >= FB_LIMIT_TIMEOUT_MS_MIN && m->timeout_ms <= FB_LIMIT_TIMEOUT_MS_MAX,
          "run_task: timeout %llu ms out of range %llu..%llu ms (30 days)",
          (unsigned long long)m->timeout_ms, FB_LIMIT_TIMEOUT_MS_MIN, FB_LIMIT_TIMEOUT_MS_MAX);
    CHECK(m->n_params <= FB_LIMIT_PARAMS, "run_task: %zu params, at most %u", m->n_params,
          FB_LIMIT_PARAMS);
    for (size_t i = 0; i < m->n_params; i++)
        CHECK(fb_wire_valid_name(m->params[i]->key) &&
                  s_text_ok(m->params[i]->value, FB_LIMIT_PARAM_VALUE_BYTES),
              "run_task: param %zu invalid (a name, and a value of at most %u bytes)", i,
              FB_LIMIT_PARAM_VALUE_BYTES);
    if (m->group) {
        CHECK(m->group->size >= 1 && m->group->size <= FB_WIRE_MAX_ITEMS &&
                  m->group->rank < m->group->size && m->group->n_peers <= FB_WIRE_MAX_ITEMS &&
                  s_text_ok(m->group->rendezvous, 1024),
              "run_task: group rank/size out of range");
        for (size_t i = 0; i < m->group->n_peers; i++)
            CHECK(fb_wire_valid_name(m->group->peers[i]), "run_task: group peer %zu invalid", i);
        CHECK(m->group->n_addresses == 0 || m->group->n_addresses == m->group->n_peers,
              "run_task: group has %zu addresses for %zu peers", m->group->n_addresses,
              m->group->n_peers);
        for (size_t i = 0; i < m->group->n_addresses; i++)
            CHECK(m->group->addresses[i][0] == '\0' || s_valid_address(m->group->addresses[i]),
                  "run_task: group address %zu invalid", i);
    }
    return 0;
}

static int s_validate_exchange(const Fleetburn__Exchange *m, char *err, size_t errlen)
{
    CHECK(s_valid_id(m->task_id), "exchange: invalid task id");
    CHECK(fb_wire_valid_name(m->key), "exchange: invalid key");
    CHECK(m->rank < FB_WIRE_MAX_ITEMS, "exchange: rank %u out of range", m->rank);
    CHECK(m->value.len <= FB_WIRE_MAX_EXCHANGE, "exchange: value of %zu bytes, at most %u",
          m->value.len, FB_WIRE_MAX_EXCHANGE);
    CHECK(m->n_values <= FB_WIRE_MAX_ITEMS, "exchange: %zu values, at most %u", m->n_values,
          FB_WIRE_MAX_ITEMS);
    for (size_t i = 0; i < m->n_values; i++)
        CHECK(m->values[i].len <= FB_WIRE_MAX_EXCHANGE, "exchange: value %zu too long", i);
    CHECK(s_text_ok(m->error, FB_WIRE_MAX_TEXT), "exchange: error too long");
    CHECK(m->timeout_ms <= 86400ull * 1000, "exchange: timeout out of range");
    return 0;
}

static int s_validate_metrics(Fleetburn__Metric **ms, size_t n, char *err, size_t errlen)
{
    CHECK(n <= FB_WIRE_MAX_ITEMS, "%zu metrics, at most %u", n, FB_WIRE_MAX_ITEMS);
    for (size_t i = 0; i < n; i++)
        CHECK(fb_wire_valid_name(ms[i]->name) && s_text_ok(ms[i]->unit, 32),
              "metric %zu: invalid name or unit", i);
    return 0;
}

static int s_validate_task_event(const Fleetburn__TaskEvent *m, char *err, size_t errlen)
{
    CHECK(s_valid_id(m->task_id), "task_event: invalid task id");
    CHECK(m->kind >= FLEETBURN__TASK_EVENT__KIND__KIND_STARTED &&
              m->kind <= FLEETBURN__TASK_EVENT__KIND__KIND_TELEMETRY,
          "task_event: unknown kind %d", (int)m->kind);
    CHECK(isfinite(m->progress) && m->progress >= 0 && m->progress <= 1,
          "task_event: progress out of range 0..1");
    CHECK(s_text_ok(m->message, FB_WIRE_MAX_TEXT), "task_event: message too long");
    return s_validate_metrics(m->samples, m->n_samples, err, errlen);
}

static int s_validate_task_result(const Fleetburn__TaskResult *m, char *err, size_t errlen)
{
    CHECK(s_valid_id(m->result_id), "task_result: invalid result id");
    CHECK(s_valid_id(m->task_id), "task_result: invalid task id");
    CHECK(m->node[0] == '\0' || fb_wire_valid_name(m->node), "task_result: invalid node name");
    CHECK(m->verdict >= FLEETBURN__VERDICT__VERDICT_PASS &&
              m->verdict <= FLEETBURN__VERDICT__VERDICT_ERROR,
          "task_result: verdict %d out of range", (int)m->verdict);
    CHECK(s_text_ok(m->error, FB_WIRE_MAX_TEXT), "task_result: error too long");
    int rc = s_validate_metrics(m->metrics, m->n_metrics, err, errlen);
    if (rc)
        return rc;
    CHECK(m->n_findings <= FB_WIRE_MAX_ITEMS, "task_result: too many findings");
    for (size_t i = 0; i < m->n_findings; i++)
        CHECK(s_text_ok(m->findings[i]->part, 512) && s_text_ok(m->findings[i]->kind, 32) &&
                  s_text_ok(m->findings[i]->what, FB_WIRE_MAX_TEXT),
              "task_result: finding %zu too long", i);
    return 0;
}

static int s_validate_progress(const Fleetburn__Progress *m, char *err, size_t errlen)
{
    CHECK(s_text_ok(m->campaign_id, FB_WIRE_MAX_ID) && s_text_ok(m->stage, FB_WIRE_MAX_NAME) &&
              s_text_ok(m->error, FB_WIRE_MAX_TEXT) && s_text_ok(m->summary, FB_WIRE_MAX_YAML) &&
              s_text_ok(m->state, FB_WIRE_MAX_NAME),
          "progress: field too long");
    CHECK(m->tasks_done <= m->tasks_total && m->tasks_failed <= m->tasks_done,
          "progress: task counts inconsistent");
    CHECK(m->verdict >= 0 && m->verdict <= FLEETBURN__VERDICT__VERDICT_ERROR,
          "progress: verdict out of range");
    CHECK(s_text_ok(m->stage_note, FB_WIRE_MAX_TEXT), "progress: stage note too long");
    CHECK(m->n_nodes <= FB_WIRE_MAX_PROGRESS_NODES, "progress: more than %d nodes",
          FB_WIRE_MAX_PROGRESS_NODES);
    for (size_t i = 0; i < m->n_nodes; i++) {
        const Fleetburn__NodeProgress *n = m->nodes[i];
        CHECK(s_text_ok(n->node, FB_WIRE_MAX_NAME) && s_text_ok(n->phase, FB_WIRE_MAX_TEXT),
              "progress: node %zu: field too long", i);
        CHECK(isfinite(n->fraction) && n->fraction >= 0 && n->fraction <= 1,
              "progress: node %zu: fraction out of range 0..1", i);
    }
    return 0;
}

static int s_validate_campaign_request(const Fleetburn__CampaignRequest *m, char *err,
                                       size_t errlen)
{
    CHECK(m->action >= FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_FOLLOW &&
              m->action <= FLEETBURN__CAMPAIGN_REQUEST__ACTION__ACTION_LIST,
          "campaign_request: unknown action %d", (int)m->action);
    CHECK(m->campaign_id[0] == '\0' || s_valid_id(m->campaign_id),
          "campaign_request: invalid campaign id");
    CHECK(s_text_ok(m->reason, FB_WIRE_MAX_TEXT), "campaign_request: reason too long");
    return 0;
}

static int s_validate_campaign_list(const Fleetburn__CampaignList *m, char *err, size_t errlen)
{
    CHECK(m->n_campaigns <= FB_WIRE_MAX_ITEMS, "campaign_list: %zu campaigns, at most %u",
          m->n_campaigns, FB_WIRE_MAX_ITEMS);
    CHECK(s_text_ok(m->error, FB_WIRE_MAX_TEXT), "campaign_list: error too long");
    for (size_t i = 0; i < m->n_campaigns; i++) {
        const Fleetburn__CampaignInfo *c = m->campaigns[i];
        CHECK(c && s_valid_id(c->id) && s_text_ok(c->name, FB_WIRE_MAX_TEXT) &&
                  s_text_ok(c->state, FB_WIRE_MAX_NAME) && s_text_ok(c->nodes, FB_WIRE_MAX_TEXT),
              "campaign_list: campaign %zu has an invalid or too long field", i);
        CHECK(c->verdict >= 0 && c->verdict <= FLEETBURN__VERDICT__VERDICT_ERROR,
              "campaign_list: campaign %zu verdict out of range", i);
    }
    return 0;
}

/* The relay's envelope: the frame inside is decoded and validated on its own by whoever uses it
 * (fb_wire_decode again); here only the tag is held to its bounds. */
static int s_validate_relayed(const Fleetburn__Relayed *m, char *err, size_t errlen)
{
    CHECK(fb_wire_valid_name(m->node), "relayed: invalid node name");
    size_t klen = strlen(m->agent_key);
    CHECK(klen == 0 || klen == FB_WIRE_KEY_LEN, "relayed: agent key of %zu characters (expected "
          "%d or none)", klen, FB_WIRE_KEY_LEN);
    for (size_t i = 0; i < klen; i++)
        CHECK(m->agent_key[i] > ' ' && m->agent_key[i] < 127,
              "relayed: agent key has a character outside Z85");
    CHECK(m->frame.len > 0 && m->frame.len <= FB_WIRE_MAX_RELAYED,
          "relayed: frame of %zu bytes (expected 1 to %u)", m->frame.len, FB_WIRE_MAX_RELAYED);
    return 0;
}

static int s_validate_relay_status(const Fleetburn__RelayStatus *m, char *err, size_t errlen)
{
    CHECK(m->n_nodes <= FB_WIRE_MAX_ITEMS, "relay_status: more than %d nodes", FB_WIRE_MAX_ITEMS);
    CHECK(m->n_links == m->n_nodes, "relay_status: %zu links for %zu nodes", m->n_links,
          m->n_nodes);
    for (size_t i = 0; i < m->n_nodes; i++)
        CHECK(fb_wire_valid_name(m->nodes[i]), "relay_status: node %zu is not a node name", i);
    return 0;
}

int fb_wire_validate(const Fleetburn__Envelope *env, char *err, size_t errlen)
{
    switch (env->body_case) {
    case FLEETBURN__ENVELOPE__BODY_HELLO:
        return s_validate_hello(env->hello, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_WELCOME:
        return s_validate_welcome(env->welcome, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_HEARTBEAT:
        CHECK(s_text_ok(env->heartbeat->goodbye, FB_WIRE_MAX_NAME),
              "heartbeat: goodbye longer than %d bytes", FB_WIRE_MAX_NAME);
        return s_validate_ids(env->heartbeat->running_task_ids, env->heartbeat->n_running_task_ids,
                              "heartbeat.running", err, errlen);
    case FLEETBURN__ENVELOPE__BODY_RUN_TASK:
        return s_validate_run_task(env->run_task, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_CANCEL_TASK:
        CHECK(s_valid_id(env->cancel_task->task_id), "cancel_task: invalid task id");
        CHECK(s_text_ok(env->cancel_task->reason, FB_WIRE_MAX_TEXT), "cancel_task: reason too long");
        return 0;
    case FLEETBURN__ENVELOPE__BODY_TASK_EVENT:
        return s_validate_task_event(env->task_event, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_TASK_RESULT:
        return s_validate_task_result(env->task_result, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_ACK:
        return s_validate_ids(env->ack->result_ids, env->ack->n_result_ids, "ack", err, errlen);
    case FLEETBURN__ENVELOPE__BODY_SUBMIT:
        CHECK(s_text_ok(env->submit->campaign_yaml, FB_WIRE_MAX_YAML) &&
                  env->submit->campaign_yaml[0] != '\0',
              "submit: campaign text empty or over %u bytes", FB_WIRE_MAX_YAML);
        CHECK(s_text_ok(env->submit->source, 4096), "submit: source name too long");
        CHECK(env->submit->n_files <= FB_WIRE_MAX_FILES, "submit: more than %d attached files",
              FB_WIRE_MAX_FILES);
        for (size_t i = 0; i < env->submit->n_files; i++) {
            const Fleetburn__AttachedFile *f = env->submit->files[i];
            CHECK(f && s_text_ok(f->name, 4096) && f->name[0] != '\0',
                  "submit: attached file %zu has no name or one over 4096 bytes", i);
            CHECK(f->content.len <= FB_WIRE_MAX_YAML, "submit: attached file %zu over %u bytes", i,
                  FB_WIRE_MAX_YAML);
        }
        return 0;
    case FLEETBURN__ENVELOPE__BODY_PROGRESS:
        return s_validate_progress(env->progress, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_EXCHANGE:
        return s_validate_exchange(env->exchange, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_CAMPAIGN_REQUEST:
        return s_validate_campaign_request(env->campaign_request, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_CAMPAIGN_LIST:
        return s_validate_campaign_list(env->campaign_list, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_RELAYED:
        return s_validate_relayed(env->relayed, err, errlen);
    case FLEETBURN__ENVELOPE__BODY_RELAY_STATUS:
        return s_validate_relay_status(env->relay_status, err, errlen);
    default:
        return fb_errf(err, errlen, -EINVAL, "envelope: no known body (case %d)",
                       (int)env->body_case);
    }
}

/* protobuf-c keeps fields it does not know as unknown fields, and it accepts a field number
 * written in more bytes than it needs, 0 included, or one past the largest the encoding allows
 * (2^29 - 1). Such a frame is not protobuf: packed again, it would not decode. Unknown fields
 * with valid numbers are kept (a peer's compatible addition). Returns the first bad number seen
 * in m or its sub-messages into *bad, or 0 (false) when there is none. */
static int s_bad_field_number(const ProtobufCMessage *m, uint32_t *bad)
{
    for (unsigned i = 0; i < m->n_unknown_fields; i++) {
        uint32_t tag = m->unknown_fields[i].tag;
        if (tag == 0 || tag > 0x1fffffffu) {
            *bad = tag;
            return 1;
        }
    }
    const ProtobufCMessageDescriptor *d = m->descriptor;
    for (unsigned f = 0; f < d->n_fields; f++) {
        const ProtobufCFieldDescriptor *fd = &d->fields[f];
        if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)m;
        if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + fd->quantifier_offset);
            ProtobufCMessage *const *items = *(ProtobufCMessage *const *const *)(base + fd->offset);
            for (size_t k = 0; k < n; k++)
                if (s_bad_field_number(items[k], bad))
                    return 1;
            continue;
        }
        if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + fd->quantifier_offset) != fd->id)
            continue;
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(base + fd->offset);
        if (sub && s_bad_field_number(sub, bad))
            return 1;
    }
    return 0;
}

int fb_wire_decode(const uint8_t *data, size_t len, Fleetburn__Envelope **out, char *err,
                size_t errlen)
{
    *out = NULL;
    if (len > FB_WIRE_MAX_FRAME) {
        fb_errf(err, errlen, -EINVAL, "frame of %zu bytes exceeds %u", len, FB_WIRE_MAX_FRAME);
        return -EBADMSG;
    }
    Fleetburn__Envelope *env = fleetburn__envelope__unpack(NULL, len, data);
    if (!env) {
        fb_errf(err, errlen, -EINVAL, "frame of %zu bytes is not a fleetburn envelope", len);
        return -EBADMSG;
    }
    uint32_t bad = 0;
    if (s_bad_field_number(&env->base, &bad)) {
        fb_errf(err, errlen, -EINVAL,
                "frame of %zu bytes is not a fleetburn envelope: field number %u", len, bad);
        fleetburn__envelope__free_unpacked(env, NULL);
        return -EBADMSG;
    }
    if (env->protocol_version != FB_PROTOCOL_VERSION) {
        fb_errf(err, errlen, -EINVAL,
                "protocol version mismatch: peer speaks version %u, this side speaks %u",
                env->protocol_version, FB_PROTOCOL_VERSION);
        *out = env;
        return -EPROTONOSUPPORT;
    }
    int rc = fb_wire_validate(env, err, errlen);
    if (rc) {
        fleetburn__envelope__free_unpacked(env, NULL);
        return rc;
    }
    *out = env;
    return 0;
}

void fb_wire_free(Fleetburn__Envelope **env_p)
{
    if (env_p && *env_p) {
        fleetburn__envelope__free_unpacked(*env_p, NULL);
        *env_p = NULL;
    }
}

uint8_t *fb_wire_encode(Fleetburn__Envelope *env, size_t *len_out)
{
    env->protocol_version = FB_PROTOCOL_VERSION;
    size_t len = fleetburn__envelope__get_packed_size(env);
    uint8_t *buf = xmalloc(len);
    fleetburn__envelope__pack(env, buf);
    *len_out = len;
    return buf;
}

uint8_t *fb_wire_encode_relayed(const char *node, const char *agent_key, uint64_t link,
                                const uint8_t *frame, size_t frame_len, size_t *len_out)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;
    Fleetburn__Relayed r = FLEETBURN__RELAYED__INIT;
    r.node = (char *)node;
    if (agent_key)
        r.agent_key = (char *)agent_key;
    r.link = link;
    r.frame.data = (uint8_t *)frame;
    r.frame.len = frame_len;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAYED;
    env.relayed = &r;
    return fb_wire_encode(&env, len_out);
}

Fleetburn__TaskResult *fb_wire_result_view(const fb_result_t *r)
{
    Fleetburn__TaskResult *m = xcalloc(1, sizeof *m);
    fleetburn__task_result__init(m);
    m->result_id = r->result_id ? r->result_id : "";
    m->task_id = r->task_id ? r->task_id : "";
    m->node = r->node ? r->node : "";
    m->verdict = (Fleetburn__Verdict)r->verdict;
    m->error = r->error ? r->error : "";
    m->started_ms = r->started_ms;
    m->finished_ms = r->finished_ms;
    m->n_metrics = r->n_metrics;
    m->metrics = r->n_metrics ? xcalloc(r->n_metrics, sizeof(Fleetburn__Metric *)) : NULL;
    Fleetburn__Metric *metrics = r->n_metrics ? xcalloc(r->n_metrics, sizeof(Fleetburn__Metric)) : NULL;
    for (size_t i = 0; i < r->n_metrics; i++) {
        fleetburn__metric__init(&metrics[i]);
        metrics[i].name = r->metrics[i].name;
        metrics[i].value = r->metrics[i].value;
        metrics[i].unit = r->metrics[i].unit;
        m->metrics[i] = &metrics[i];
    }
    m->n_findings = r->n_findings;
    m->findings = r->n_findings ? xcalloc(r->n_findings, sizeof(Fleetburn__Finding *)) : NULL;
    Fleetburn__Finding *findings =
        r->n_findings ? xcalloc(r->n_findings, sizeof(Fleetburn__Finding)) : NULL;
    for (size_t i = 0; i < r->n_findings; i++) {
        fleetburn__finding__init(&findings[i]);
        findings[i].part = r->findings[i].part;
        findings[i].kind = r->findings[i].kind;
        findings[i].what = r->findings[i].what;
        m->findings[i] = &findings[i];
    }
    return m;
}

void fb_wire_result_view_free(Fleetburn__TaskResult **msg_p)
{
    if (!msg_p || !*msg_p)
        return;
    Fleetburn__TaskResult *m = *msg_p;
    /* The element arrays were allocated as one block each; index 0 is its start. */
    if (m->n_metrics)
        free(m->metrics[0]);
    if (m->n_findings)
        free(m->findings[0]);
    free(m->metrics);
    free(m->findings);
    free(m);
    *msg_p = NULL;
}

uint8_t *fb_wire_result_pack(const fb_result_t *result, size_t *len_out)
{
    Fleetburn__TaskResult *m = fb_wire_result_view(result);
    size_t len = fleetburn__task_result__get_packed_size(m);
    uint8_t *buf = xmalloc(len);
    fleetburn__task_result__pack(m, buf);
    fb_wire_result_view_free(&m);
    *len_out = len;
    return buf;
}

fb_result_t *fb_wire_result_from_proto(const Fleetburn__TaskResult *m)
{
    fb_result_t *r = fb_result_new();
    fb_result_set_ids(r, m->result_id, m->task_id, m->node);
    r->verdict = (fb_verdict_t)m->verdict;
    if (m->error && m->error[0])
        r->error = xstrdup(m->error);
    r->started_ms = m->started_ms;
    r->finished_ms = m->finished_ms;
    for (size_t i = 0; i < m->n_metrics; i++)
        fb_result_add_metric(r, m->metrics[i]->name, m->metrics[i]->value, m->metrics[i]->unit);
    for (size_t i = 0; i < m->n_findings; i++)
        fb_result_add_finding(r, m->findings[i]->part, m->findings[i]->kind, m->findings[i]->what);
    return r;
}

fb_result_t *fb_wire_result_unpack(const uint8_t *data, size_t len, char *err, size_t errlen)
{
    Fleetburn__TaskResult *m = fleetburn__task_result__unpack(NULL, len, data);
    uint32_t bad = 0;
    if (m && s_bad_field_number(&m->base, &bad)) {
        fleetburn__task_result__free_unpacked(m, NULL);
        m = NULL;
    }
    if (!m) {
        fb_errf(err, errlen, -EINVAL, "not a TaskResult message (%zu bytes)", len);
        return NULL;
    }
    if (s_validate_task_result(m, err, errlen)) {
        fleetburn__task_result__free_unpacked(m, NULL);
        return NULL;
    }
    fb_result_t *r = fb_wire_result_from_proto(m);
    fleetburn__task_result__free_unpacked(m, NULL);
    return r;
}
