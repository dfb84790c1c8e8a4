/* SPDX-License-Identifier: Apache-2.0 */
/* fb-fuzz-seeds OUTDIR: writes the binary seeds of the fuzz corpora, made by the project's own
 * encoders so that every seed is a valid input: OUTDIR/wire (one frame of every message kind and
 * one of another protocol version), OUTDIR/result (packed TaskResults), OUTDIR/spool (entry files
 * as spool_put writes them, in fuzz_spool's input form), OUTDIR/exline (post and reply lines) and
 * OUTDIR/peer (every message fuzz_peer decodes, behind its selector byte) and OUTDIR/keys (key
 * files of a fixed key pair: public, secret, an agent key with a nodes: line).
 * tests/fuzz/make-corpus.sh runs it. */
#include "agent/spool.h"
#include "allreduce/ar.h"
#include "allreduce/launch_mpirun.h"
#include "allreduce/native.h"
#include "common/exline.h"
#include "common/result.h"
#include "common/util.h"
#include "common/wire.h"
#include "net/control.h"
#include "rdma/rdma_wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

static const char *s_out;

static void s_write(const char *dir, const char *name, const void *data, size_t len)
{
    char *d = xasprintf("%s/%s", s_out, dir);
    if (fb_mkdir_p(d, 0755) != 0) {
        fprintf(stderr, "fb-fuzz-seeds: cannot create %s\n", d);
        exit(1);
    }
    char *path = xasprintf("%s/%s", d, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "fb-fuzz-seeds: cannot write %s\n", path);
        exit(1);
    }
    free(path);
    free(d);
}

static void s_frame(const char *name, Fleetburn__Envelope *env)
{
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(env, &len);
    Fleetburn__Envelope *check = NULL;
    char err[256];
    if (fb_wire_decode(buf, len, &check, err, sizeof err) != 0) {
        fprintf(stderr, "fb-fuzz-seeds: seed %s does not decode: %s\n", name, err);
        exit(1);
    }
    fb_wire_free(&check);
    s_write("wire", name, buf, len);
    free(buf);
}

static fb_result_t *s_result(int kind)
{
    fb_result_t *r = fb_result_new();
    switch (kind) {
    case 0:
        fb_result_set_ids(r, "c1/dram/node01", "c1/dram/node01", "node01");
        r->verdict = FB_VERDICT_PASS;
        r->started_ms = 1795000000000ull;
        r->finished_ms = 1795000060000ull;
        fb_result_add_metric(r, "memtest.bytes", 68719476736.0, "B");
        fb_result_add_metric(r, "memtest.gbps", 21.5, "GB/s");
        break;
    case 1:
        fb_result_set_ids(r, "c1/dram/node02", "c1/dram/node02", "node02");
        r->verdict = FB_VERDICT_FAIL;
        fb_result_add_metric(r, "memtest.errors", 3, "");
        fb_result_add_finding(r, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0", "dimm",
                              "3 bit flips at 0x7f0000001000 (pattern walking_ones)");
        fb_result_add_finding(r, "node02", "node", "EDAC CE count rose by 3");
        break;
    case 2:
        fb_result_set_ids(r, "c1/net/p0.node01-node05", "c1/net/p0", "node01");
        r->verdict = FB_VERDICT_ERROR;
        fb_result_set_error(r, "peer node05 did not connect within 30 s");
        break;
    default:
        fb_result_set_ids(r, "c2/gpu/node03", "c2/gpu/node03", "node03");
        r->verdict = FB_VERDICT_SKIPPED;
        fb_result_set_error(r, "no GPU on this node");
        break;
    }
    return r;
}

static void s_wire_seeds(void)
{
    Fleetburn__Envelope env = FLEETBURN__ENVELOPE__INIT;

    Fleetburn__Dimm dimm = FLEETBURN__DIMM__INIT;
    dimm.label = "CPU_SrcID#0_MC#0_Chan#1_DIMM#0";
    dimm.location = "mc0/dimm1";
    dimm.size_mb = 32768;
    Fleetburn__Dimm *dimms[] = {&dimm};
    Fleetburn__Gpu gpu = FLEETBURN__GPU__INIT;
    gpu.vendor = "nvidia";
    gpu.vendor_id = "0x10de";
    gpu.device_id = "0x2335";
    gpu.pci_address = "0000:41:00.0";
    gpu.link_speed = "32.0 GT/s PCIe";
    gpu.link_width = 16;
    gpu.max_link_speed = "32.0 GT/s PCIe";
    gpu.max_link_width = 16;
    Fleetburn__Gpu *gpus[] = {&gpu};
    Fleetburn__Nic nic = FLEETBURN__NIC__INIT;
    nic.name = "mlx5_0";
    nic.kind = "infiniband";
    nic.port = 1;
    nic.state = "ACTIVE";
    nic.rate = "400 Gb/sec (4X NDR)";
    nic.speed_mbps = 400000;
    nic.address = "fe80:0000:0000:0000:0c42:a103:001b:2c10";
    Fleetburn__Nic *nics[] = {&nic};
    Fleetburn__Inventory__SoftwareEntry sw = FLEETBURN__INVENTORY__SOFTWARE_ENTRY__INIT;
    sw.key = "nvidia_driver";
    sw.value = "580.65.06";
    Fleetburn__Inventory__SoftwareEntry *sws[] = {&sw};
    Fleetburn__Inventory inv = FLEETBURN__INVENTORY__INIT;
    inv.hostname = "node01";
    inv.kernel = "6.1.0-18-amd64";
    inv.cpu_model = "AMD EPYC 9454 48-Core Processor";
    inv.cpus = 96;
    inv.numa_nodes = 2;
    inv.mem_total_bytes = 1623497187328ull;
    inv.n_dimms = 1, inv.dimms = dimms;
    inv.n_gpus = 1, inv.gpus = gpus;
    inv.n_nics = 1, inv.nics = nics;
    inv.agent_version = "0.1.0";
    inv.n_software = 1, inv.software = sws;
    Fleetburn__Hello hello = FLEETBURN__HELLO__INIT;
    char *unacked[] = {"c1/dram/node01"};
    char *running[] = {"c1/gpu/node01"};
    hello.name = "node01";
    hello.inventory = &inv;
    hello.n_unacked_result_ids = 1, hello.unacked_result_ids = unacked;
    hello.n_running_task_ids = 1, hello.running_task_ids = running;
    hello.address = "10.0.0.1";
    env.body_case = FLEETBURN__ENVELOPE__BODY_HELLO;
    env.hello = &hello;
    s_frame("hello", &env);

    Fleetburn__Welcome welcome = FLEETBURN__WELCOME__INIT;
    welcome.accepted = 1;
    welcome.heartbeat_interval_ms = 1000;
    welcome.liveness = 5;
    welcome.protocol_version = FB_PROTOCOL_VERSION;
    env.body_case = FLEETBURN__ENVELOPE__BODY_WELCOME;
    env.welcome = &welcome;
    s_frame("welcome", &env);

    Fleetburn__Heartbeat hb = FLEETBURN__HEARTBEAT__INIT;
    hb.time_ms = 1795000000000ull;
    hb.n_running_task_ids = 1, hb.running_task_ids = running;
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    s_frame("heartbeat", &env);

    Fleetburn__Param p1 = FLEETBURN__PARAM__INIT, p2 = FLEETBURN__PARAM__INIT;
    p1.key = "size", p1.value = "80%";
    p2.key = "patterns", p2.value = "walking_ones,random";
    Fleetburn__Param *params[] = {&p1, &p2};
    Fleetburn__RunTask run = FLEETBURN__RUN_TASK__INIT;
    run.task_id = "c1/dram/node01";
    run.campaign_id = "c1";
    run.stage = "dram";
    run.workload = "memtest";
    run.n_params = 2, run.params = params;
    run.timeout_ms = 1800000;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RUN_TASK;
    env.run_task = &run;
    s_frame("run_task", &env);

    Fleetburn__Group group = FLEETBURN__GROUP__INIT;
    char *peers[] = {"node01", "node05"};
    char *addrs[] = {"10.0.0.1", "10.0.0.5"};
    group.rank = 1, group.size = 2;
    group.n_peers = 2, group.peers = peers;
    group.rendezvous = "c1/net/p0";
    group.n_addresses = 2, group.addresses = addrs;
    Fleetburn__Param p3 = FLEETBURN__PARAM__INIT;
    p3.key = "duration", p3.value = "30s";
    Fleetburn__Param *gparams[] = {&p3};
    run.task_id = "c1/net/p0";
    run.stage = "net";
    run.workload = "netbw";
    run.n_params = 1, run.params = gparams;
    run.group = &group;
    s_frame("run_task_group", &env);

    Fleetburn__CancelTask cancel = FLEETBURN__CANCEL_TASK__INIT;
    cancel.task_id = "c1/dram/node01";
    cancel.reason = "campaign stopped";
    env.body_case = FLEETBURN__ENVELOPE__BODY_CANCEL_TASK;
    env.cancel_task = &cancel;
    s_frame("cancel_task", &env);

    Fleetburn__Metric m1 = FLEETBURN__METRIC__INIT;
    m1.name = "gpu0.temp", m1.value = 71.0, m1.unit = "C";
    Fleetburn__Metric *samples[] = {&m1};
    Fleetburn__TaskEvent ev = FLEETBURN__TASK_EVENT__INIT;
    ev.task_id = "c1/gpu/node01";
    ev.kind = FLEETBURN__TASK_EVENT__KIND__KIND_TELEMETRY;
    ev.time_ms = 1795000001000ull;
    ev.progress = 0.25;
    ev.message = "pass 1 of 4";
    ev.n_samples = 1, ev.samples = samples;
    env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_EVENT;
    env.task_event = &ev;
    s_frame("task_event", &env);

    for (int k = 0; k < 2; k++) {
        fb_result_t *r = s_result(k);
        Fleetburn__TaskResult *view = fb_wire_result_view(r);
        env.body_case = FLEETBURN__ENVELOPE__BODY_TASK_RESULT;
        env.task_result = view;
        s_frame(k ? "task_result_fail" : "task_result_pass", &env);
        fb_wire_result_view_free(&view);
        fb_result_destroy(&r);
    }

    Fleetburn__Ack ack = FLEETBURN__ACK__INIT;
    char *acked[] = {"c1/dram/node01", "c1/dram/node02"};
    ack.n_result_ids = 2, ack.result_ids = acked;
    env.body_case = FLEETBURN__ENVELOPE__BODY_ACK;
    env.ack = &ack;
    s_frame("ack", &env);

    static const char campaign[] = "name: rack12\nnodes: node[01-16]\nstages:\n"
                                   "  - name: net\n    workload: netbw\n    scope: pairs\n"
                                   "    pairing: topology\n    topology: fabric.topo\n";
    static const char fabric[] = "leaf01: node[01-08]\nleaf02: node[09-16]\nspine01: leaf[01-02]\n";
    Fleetburn__AttachedFile file = FLEETBURN__ATTACHED_FILE__INIT;
    file.name = "fabric.topo";
    file.content.data = (uint8_t *)fabric;
    file.content.len = sizeof fabric - 1;
    Fleetburn__AttachedFile *files[] = {&file};
    Fleetburn__Submit submit = FLEETBURN__SUBMIT__INIT;
    submit.campaign_yaml = (char *)campaign;
    submit.source = "rack12.yaml";
    submit.n_files = 1, submit.files = files;
    env.body_case = FLEETBURN__ENVELOPE__BODY_SUBMIT;
    env.submit = &submit;
    s_frame("submit", &env);

    Fleetburn__Progress prog = FLEETBURN__PROGRESS__INIT;
    prog.campaign_id = "c1";
    prog.stage = "dram";
    prog.stage_index = 1, prog.stage_count = 3;
    prog.tasks_total = 16, prog.tasks_done = 16, prog.tasks_failed = 1;
    prog.elapsed_ms = 1800000;
    prog.finished = 1;
    prog.verdict = FLEETBURN__VERDICT__VERDICT_FAIL;
    prog.summary = "campaign c1: fail\n  dram: 15 pass, 1 fail (node02)\n";
    env.body_case = FLEETBURN__ENVELOPE__BODY_PROGRESS;
    env.progress = &prog;
    s_frame("progress", &env);

    Fleetburn__Exchange ex = FLEETBURN__EXCHANGE__INIT;
    static const uint8_t value[] = {0x0a, 0x00, 0x00, 0x05, 0x13, 0x88};
    ex.task_id = "c1/ar/g0";
    ex.key = "ar.member";
    ex.rank = 1;
    ex.value.data = (uint8_t *)value, ex.value.len = sizeof value;
    ex.timeout_ms = 60000;
    env.body_case = FLEETBURN__ENVELOPE__BODY_EXCHANGE;
    env.exchange = &ex;
    s_frame("exchange_post", &env);
    ProtobufCBinaryData vals[2] = {{sizeof value, (uint8_t *)value}, {0, NULL}};
    ex.value.len = 0, ex.value.data = NULL;
    ex.n_values = 2, ex.values = vals;
    s_frame("exchange_reply", &env);

    /* A relay's envelope around an agent's heartbeat (up) and around a Welcome (down). */
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    size_t inner_len = 0;
    uint8_t *inner = fb_wire_encode(&env, &inner_len);
    Fleetburn__Relayed relayed = FLEETBURN__RELAYED__INIT;
    relayed.node = "node01";
    relayed.agent_key = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
    relayed.link = 42;
    relayed.frame.data = inner;
    relayed.frame.len = inner_len;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAYED;
    env.relayed = &relayed;
    s_frame("relayed_heartbeat", &env);
    free(inner);
    relayed.agent_key = "";
    env.body_case = FLEETBURN__ENVELOPE__BODY_WELCOME;
    env.welcome = &welcome;
    inner = fb_wire_encode(&env, &inner_len);
    relayed.frame.data = inner;
    relayed.frame.len = inner_len;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAYED;
    env.relayed = &relayed;
    s_frame("relayed_welcome", &env);
    free(inner);
    Fleetburn__RelayStatus status = FLEETBURN__RELAY_STATUS__INIT;
    char *status_nodes[] = {"node01", "node02"};
    uint64_t status_links[] = {42, 43};
    status.nodes = status_nodes;
    status.n_nodes = status.n_links = 2;
    status.links = status_links;
    env.body_case = FLEETBURN__ENVELOPE__BODY_RELAY_STATUS;
    env.relay_status = &status;
    s_frame("relay_status", &env);

    /* Another protocol version: decodes, then refused with both versions named. */
    env.body_case = FLEETBURN__ENVELOPE__BODY_HEARTBEAT;
    env.heartbeat = &hb;
    size_t len = 0;
    uint8_t *buf = fb_wire_encode(&env, &len);
    Fleetburn__Envelope *e = fleetburn__envelope__unpack(NULL, len, buf);
    free(buf);
    e->protocol_version = FB_PROTOCOL_VERSION + 1;
    len = fleetburn__envelope__get_packed_size(e);
    buf = xmalloc(len);
    fleetburn__envelope__pack(e, buf);
    s_write("wire", "heartbeat_next_version", buf, len);
    free(buf);
    fleetburn__envelope__free_unpacked(e, NULL);
}

static void s_result_seeds(void)
{
    static const char *names[] = {"pass", "fail", "error", "skipped"};
    for (int k = 0; k < 4; k++) {
        fb_result_t *r = s_result(k);
        size_t len = 0;
        uint8_t *buf = fb_wire_result_pack(r, &len);
        s_write("result", names[k], buf, len);
        free(buf);
        fb_result_destroy(&r);
    }
}

/* Entries as spool_put writes them, as fuzz_spool's input: flags 0, the name, the file. The
 * store time in the header (bytes 16..23) is set to a fixed one, with the header CRC (36..39)
 * made again, so that the seeds are the same on every run. */
static void s_spool_seeds(void)
{
    char tmpl[] = "/tmp/fb-fuzz-seeds.XXXXXX";
    if (!mkdtemp(tmpl)) {
        perror("fb-fuzz-seeds: mkdtemp");
        exit(1);
    }
    spool_t *sp = NULL;
    if (spool_open(tmpl, &sp) != 0) {
        fprintf(stderr, "fb-fuzz-seeds: cannot open a spool in %s\n", tmpl);
        exit(1);
    }
    for (int k = 0; k < 4; k++) {
        fb_result_t *r = s_result(k);
        size_t len = 0;
        uint8_t *buf = fb_wire_result_pack(r, &len);
        if (spool_put(sp, r->result_id, buf, len) != 0) {
            fprintf(stderr, "fb-fuzz-seeds: spool_put failed\n");
            exit(1);
        }
        free(buf);
        char *name = xasprintf("r.%s", r->result_id);
        for (char *p = name; *p; p++)
            if (*p == '/')
                *p = '%';
        char *path = xasprintf("%s/%s", tmpl, name);
        size_t flen = 0;
        char *file = NULL;
        FILE *f = fopen(path, "rb");
        if (f) {
            file = xmalloc(SPOOL_DATA_MAX);
            flen = fread(file, 1, SPOOL_DATA_MAX, f);
            fclose(f);
        }
        if (!file || flen < 40) {
            fprintf(stderr, "fb-fuzz-seeds: cannot read back %s\n", path);
            exit(1);
        }
        uint64_t when = 1795000000000ull;
        for (int i = 0; i < 8; i++)
            file[16 + i] = (char)(when >> (8 * i));
        uint32_t crc = spool_crc32((const uint8_t *)file, 36);
        for (int i = 0; i < 4; i++)
            file[36 + i] = (char)(crc >> (8 * i));
        size_t slen = 1 + strlen(name + 2) + 1 + flen;
        uint8_t *seed = xmalloc(slen);
        seed[0] = 0;
        memcpy(seed + 1, name + 2, strlen(name + 2));
        seed[1 + strlen(name + 2)] = '\n';
        memcpy(seed + 2 + strlen(name + 2), file, flen);
        char *sname = xasprintf("entry%d", k);
        s_write("spool", sname, seed, slen);
        free(sname);
        free(seed);
        free(file);
        unlink(path);
        free(path);
        free(name);
        fb_result_destroy(&r);
    }
    spool_destroy(&sp);
    char *lock = xasprintf("%s/.lock", tmpl);
    unlink(lock);
    free(lock);
    rmdir(tmpl);
}

static void s_exline_seeds(void)
{
    static const uint8_t v1[] = {0x0a, 0x00, 0x00, 0x05, 0x13, 0x88};
    static const uint8_t v2[] = {0xde, 0xad, 0xbe, 0xef};
    char *line = fb_exline_post_format("ar.member", 60000, v1, sizeof v1);
    s_write("exline", "post", line, strlen(line));
    free(line);
    line = fb_exline_post_format("nccl-id", 0, NULL, 0);
    s_write("exline", "post_empty", line, strlen(line));
    free(line);
    fb_exline_blob_t vals[3] = {{(uint8_t *)v1, sizeof v1}, {NULL, 0}, {(uint8_t *)v2, sizeof v2}};
    line = fb_exline_reply_ok_format("ar.member", vals, 3);
    s_write("exline", "reply_ok", line, strlen(line));
    free(line);
    line = fb_exline_reply_error_format("ar.member", "rank 3 (node07) lost");
    s_write("exline", "reply_error", line, strlen(line));
    free(line);
}

/* fuzz_peer's input: the selector byte, then the message. */
static void s_peer(unsigned which, const char *name, const void *msg, size_t len)
{
    uint8_t *seed = xmalloc(len + 1);
    seed[0] = (uint8_t)which;
    memcpy(seed + 1, msg, len);
    s_write("peer", name, seed, len + 1);
    free(seed);
}

static void s_peer_seeds(void)
{
    ar_member_t m = {.state = AR_MEMBER_OK,
                     .n = 2,
                     .devices = {0, 1},
                     .nccl_version = 22105,
                     .min_mem_bytes = 85899345920ull};
    char *text = ar_member_format(&m);
    s_peer(0, "ar_member", text, strlen(text));
    free(text);
    ar_member_t none = {.state = AR_MEMBER_NO_GPUS};
    snprintf(none.why, sizeof none.why, "no GPU on this node");
    text = ar_member_format(&none);
    s_peer(0, "ar_member_none", text, strlen(text));
    free(text);

    ar_size_result_t sizes[2] = {{.bytes = 1048576,
                                  .count = 262144,
                                  .avg_us = 41.5,
                                  .min_us = 40.1,
                                  .max_us = 44.0,
                                  .iters = 20,
                                  .first_bad_rank = -1},
                                 {.bytes = 268435456,
                                  .count = 67108864,
                                  .avg_us = 2210.0,
                                  .min_us = 2190.5,
                                  .max_us = 2250.25,
                                  .errors = 3,
                                  .iters = 20,
                                  .first_bad_rank = 1}};
    ar_rank_error_t bad = {.bytes = 268435456,
                           .rank = 1,
                           .errors = 3,
                           .index = 4096,
                           .iter = 7,
                           .expected = 2.0,
                           .got = 2.5};
    text = ar_results_format("", sizes, 2, &bad, 1);
    s_peer(1, "ar_results", text, strlen(text));
    free(text);

    mpirun_member_t mm = {.gpu = false, .slots = 4, .mem_bytes = 270582939648ull};
    snprintf(mm.rank_path, sizeof mm.rank_path, "/usr/lib/fleetburn/fleetburn-mpirank");
    text = mpirun_member_format(&mm);
    s_peer(2, "mpirun_member", text, strlen(text));
    free(text);

    rdma_endpoint_t ep = {.lid = 7,
                          .mtu = 4096,
                          .qpn = 4711,
                          .psn = 123,
                          .ctl_qpn = 4712,
                          .ctl_psn = 99,
                          .rkey = 0x1234,
                          .src_addr = 0x7f0000000000ull,
                          .sink_addr = 0x7f0000800000ull,
                          .region = 8388608,
                          .lat_rkey = 0x99,
                          .lat_addr = 0x7f0001000000ull,
                          .gbps = 200};
    snprintf(ep.port, sizeof ep.port, "mlx5_0:1");
    ep.gid[0] = 0xfe, ep.gid[1] = 0x80, ep.gid[15] = 0x2e;
    text = rdma_endpoints_encode(&ep, 1, NULL);
    s_peer(3, "rdma_endpoints", text, strlen(text));
    free(text);
    text = rdma_endpoints_encode(NULL, 0, "no active port");
    s_peer(3, "rdma_endpoints_none", text, strlen(text));
    free(text);

    rdma_summary_t sum = {.tx_gbps = {196.5, -1}, .n = 2};
    text = rdma_summary_encode(&sum);
    s_peer(4, "rdma_summary", text, strlen(text));
    free(text);

    char line[512];
    ar_format_line(&sizes[1], line, sizeof line);
    s_peer(5, "ar_line", line, strlen(line));
    ar_format_rank_line(3, "node07/gpu1", line, sizeof line);
    s_peer(6, "ar_rank_line", line, strlen(line));
    ar_format_error_line(&bad, line, sizeof line);
    s_peer(7, "ar_error_line", line, strlen(line));

    uint8_t bin[64];
    nbc_hello_t h = {
        .kind = NBC_CONN_DATA, .sender = 1, .stream = 3, .nonce = 0x1122334455667788ull};
    nbc_hello_encode(&h, bin);
    s_peer(8, "nbc_hello", bin, NBC_HELLO_LEN);
    nbc_result_t nr = {.corrupt_blocks = 1,
                       .corrupt_stream = 2,
                       .first_offset = 65536,
                       .first_expected = 0xaa,
                       .first_actual = 0xab};
    nbc_result_encode(&nr, bin);
    s_peer(9, "nbc_result", bin, NBC_RESULT_LEN);
    rdma_ctl_t ctl = {.kind = RDMA_CTL_DONE, .step = 4, .status = 0, .value = 8388608};
    rdma_ctl_encode(&ctl, bin);
    s_peer(10, "rdma_ctl", bin, RDMA_CTL_BYTES);
}

/* Key files in the format common/keys.h describes, of a key pair made from a fixed secret (the
 * bytes 0..31), so that the seeds are the same on every run. */
static void s_key_seeds(void)
{
    uint8_t raw[32];
    for (int i = 0; i < 32; i++)
        raw[i] = (uint8_t)i;
    char secret[41], public_key[41];
    if (!zmq_z85_encode(secret, raw, sizeof raw) || zmq_curve_public(public_key, secret) != 0) {
        fprintf(stderr, "fb-fuzz-seeds: libzmq cannot make a CURVE key\n");
        exit(1);
    }
    char *text = xasprintf("# fleetburn CURVE key\npublic-key: %s\n", public_key);
    s_write("keys", "public", text, strlen(text));
    free(text);
    text = xasprintf("# fleetburn CURVE key (secret)\npublic-key: %s\nsecret-key: %s\n", public_key,
                     secret);
    s_write("keys", "secret", text, strlen(text));
    free(text);
    text = xasprintf("public-key = %s\nnodes: gpu[001-128],login\n", public_key);
    s_write("keys", "agent-nodes", text, strlen(text));
    free(text);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fb-fuzz-seeds OUTDIR\n");
        return 2;
    }
    s_out = argv[1];
    s_wire_seeds();
    s_result_seeds();
    s_spool_seeds();
    s_exline_seeds();
    s_peer_seeds();
    s_key_seeds();
    return 0;
}
