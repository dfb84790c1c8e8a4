/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for the kernel log module: /dev/kmsg records and dmesg-style lines parse into level,
 * sequence, timestamp, text and device; recorded real-format lines (NVRM Xids, amdgpu thermal
 * and RAS errors, EDAC, machine checks, PCIe AER, mlx5 link and health events) classify with the
 * right part; garbage and truncated lines classify as nothing; the reader and the watcher follow a
 * regular file and a FIFO from their end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/kmsg.h"
#include "common/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RECS 64

typedef struct {
    pthread_mutex_t lock;
    fb_kmsg_record_t recs[MAX_RECS];
    size_t n;
} sink_t;

static void s_collect(const fb_kmsg_record_t *rec, void *user)
{
    sink_t *s = user;
    pthread_mutex_lock(&s->lock);
    if (s->n < MAX_RECS)
        s->recs[s->n++] = *rec;
    pthread_mutex_unlock(&s->lock);
}

static sink_t *s_sink(void)
{
    sink_t *s = xcalloc(1, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void s_sink_free(sink_t *s)
{
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* Reads a fixture through the stream reader, as the health sweep reads /dev/kmsg. */
static sink_t *s_read_fixture(const char *name)
{
    char *path = xasprintf("%s/kmsg/%s", FB_FIXTURES, name);
    fb_kmsg_t *k = NULL;
    assert_int_equal(fb_kmsg_open(path, FB_KMSG_FROM_START, &k), 0);
    sink_t *s = s_sink();
    int n = fb_kmsg_read(k, s_collect, s);
    assert_int_equal(n, (int)s->n);
    fb_kmsg_close(&k);
    assert_null(k);
    free(path);
    return s;
}

static fb_kmsg_class_t s_class(const fb_kmsg_record_t *r, fb_kmsg_event_t *ev)
{
    return fb_kmsg_classify(r, ev);
}

static void test_parse_record(void **state)
{
    (void)state;
    const char *rec = "6,1234,5678901,-;NVRM: Xid (PCI:0000:41:00): 79, pid=1234, GPU has fallen "
                      "off the bus.\n SUBSYSTEM=pci\n DEVICE=+pci:0000:41:00.0\n";
    fb_kmsg_record_t r;
    assert_int_equal(fb_kmsg_parse(rec, strlen(rec), &r), 0);
    assert_int_equal(r.level, 6);
    assert_int_equal(r.facility, 0);
    assert_int_equal(r.seq, 1234);
    assert_true(r.has_ts);
    assert_int_equal(r.ts_us, 5678901);
    assert_string_equal(r.text,
                        "NVRM: Xid (PCI:0000:41:00): 79, pid=1234, GPU has fallen off the bus.");
    assert_string_equal(r.device, "0000:41:00.0");

    /* Facility 3 (daemon) level 4: PRI 28. Extra header fields after the flags are skipped. */
    const char *user = "28,7,42,-,caller=T1;hello";
    assert_int_equal(fb_kmsg_parse(user, strlen(user), &r), 0);
    assert_int_equal(r.facility, 3);
    assert_int_equal(r.level, 4);
    assert_string_equal(r.text, "hello");

    /* The length bounds the input: no terminator needed. */
    assert_int_equal(fb_kmsg_parse("6,1,2,-;abcdef", 11, &r), 0);
    assert_string_equal(r.text, "abc");

    /* Long text is cut, never overflows. */
    char *big = xmalloc(5000);
    memset(big, 'x', 4999);
    big[4999] = '\0';
    assert_int_equal(fb_kmsg_parse(big, 4999, &r), 0);
    assert_int_equal(strlen(r.text), FB_KMSG_TEXT_MAX - 1);
    free(big);
}

static void test_parse_dmesg(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("dmesg.txt");
    assert_int_equal(s->n, 6);
    fb_kmsg_event_t ev;
    const fb_kmsg_record_t *r = &s->recs[0];
    assert_true(r->has_ts);
    assert_int_equal(r->ts_us, 123456789);
    assert_int_equal(r->level, -1);
    assert_int_equal(s_class(r, &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 79);
    assert_string_equal(ev.pci, "0000:41:00.0");

    r = &s->recs[1]; /* dmesg -T */
    assert_false(r->has_ts);
    assert_int_equal(s_class(r, &ev), FB_KMSG_EDAC_UE);
    assert_string_equal(ev.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");

    r = &s->recs[2]; /* dmesg -x */
    assert_int_equal(r->level, 4);
    assert_int_equal(r->ts_us, 200000001);
    assert_int_equal(s_class(r, &ev), FB_KMSG_GPU_THERMAL);
    assert_string_equal(ev.pci, "0000:48:00.0");

    r = &s->recs[3]; /* dmesg -r */
    assert_int_equal(r->level, 4);
    assert_int_equal(r->ts_us, 300500000);
    assert_int_equal(s_class(r, &ev), FB_KMSG_LINK_DOWN);
    assert_string_equal(ev.netdev, "ibp23s0");

    r = &s->recs[4]; /* journalctl -k */
    assert_string_equal(r->text, "mce: [Hardware Error]: Machine check events logged");
    assert_int_equal(s_class(r, &ev), FB_KMSG_MCE);
    assert_false(ev.fatal);

    r = &s->recs[5]; /* no prefix at all */
    assert_int_equal(s_class(r, &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 48);
    assert_string_equal(ev.pci, "0000:c1:00.0");
    s_sink_free(s);
}

static void test_nvidia(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("nvidia.txt");
    assert_int_equal(s->n, 8);
    fb_kmsg_event_t ev;
    /* The continuation lines belong to the first record. */
    assert_string_equal(s->recs[0].device, "0000:41:00.0");
    assert_int_equal(s_class(&s->recs[0], &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 79);
    assert_true(ev.fatal);
    assert_string_equal(ev.pci, "0000:41:00.0");
    assert_string_equal(fb_kmsg_xid_text(79), "GPU has fallen off the bus");

    assert_int_equal(s_class(&s->recs[1], &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 48);
    assert_string_equal(ev.pci, "0000:c1:00.0");
    assert_int_equal(s_class(&s->recs[2], &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 13);
    assert_true(fb_kmsg_xid_is_application(13));
    assert_false(fb_kmsg_xid_is_application(79));
    assert_int_equal(s_class(&s->recs[3], &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 94);
    assert_string_equal(ev.pci, "0000:1b:00.0");

    assert_int_equal(s_class(&s->recs[4], &ev), FB_KMSG_GPU_ERROR);
    assert_true(ev.fatal);
    assert_string_equal(ev.pci, "0000:c1:00.0");
    assert_int_equal(s_class(&s->recs[5], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[6], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[7], &ev), FB_KMSG_XID);
    assert_int_equal(ev.xid, 119);
    s_sink_free(s);
}

static void test_amdgpu(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("amdgpu.txt");
    assert_int_equal(s->n, 8);
    fb_kmsg_event_t ev;
    assert_int_equal(s_class(&s->recs[0], &ev), FB_KMSG_GPU_THERMAL);
    assert_false(ev.fatal);
    assert_string_equal(ev.pci, "0000:48:00.0");
    assert_int_equal(s_class(&s->recs[1], &ev), FB_KMSG_GPU_ERROR);
    assert_true(ev.fatal);
    assert_string_equal(ev.pci, "0000:c1:00.0");
    assert_int_equal(s_class(&s->recs[2], &ev), FB_KMSG_GPU_ERROR);
    assert_false(ev.fatal);
    /* A ring timeout without an address in the text: DEVICE= names the GPU. */
    assert_int_equal(s_class(&s->recs[3], &ev), FB_KMSG_GPU_ERROR);
    assert_true(ev.fatal);
    assert_string_equal(ev.pci, "0000:4b:00.0");
    assert_int_equal(s_class(&s->recs[4], &ev), FB_KMSG_GPU_ERROR);
    assert_false(ev.fatal);
    assert_int_equal(s_class(&s->recs[5], &ev), FB_KMSG_GPU_ERROR);
    assert_true(ev.fatal);
    /* Boot chatter is not a fault. */
    assert_int_equal(s_class(&s->recs[6], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[7], &ev), FB_KMSG_NONE);
    s_sink_free(s);
}

static void test_edac(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("edac.txt");
    assert_int_equal(s->n, 6);
    fb_kmsg_event_t ev;
    assert_int_equal(s_class(&s->recs[0], &ev), FB_KMSG_EDAC_CE);
    assert_false(ev.fatal);
    assert_int_equal(ev.count, 1);
    assert_int_equal(ev.mc, 0);
    assert_string_equal(ev.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_int_equal(s_class(&s->recs[1], &ev), FB_KMSG_EDAC_UE);
    assert_true(ev.fatal);
    assert_int_equal(ev.mc, 1);
    assert_string_equal(ev.label, "CPU_SrcID#1_MC#0_Chan#0_DIMM#0");
    assert_int_equal(s_class(&s->recs[2], &ev), FB_KMSG_EDAC_CE);
    assert_int_equal(ev.count, 3);
    assert_string_equal(ev.label, ""); /* "unknown memory" names no DIMM */
    assert_int_equal(s_class(&s->recs[3], &ev), FB_KMSG_EDAC_CE);
    assert_string_equal(ev.label, "mc#0csrow#2channel#1");
    assert_int_equal(s_class(&s->recs[4], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[5], &ev), FB_KMSG_EDAC_UE);
    assert_int_equal(ev.mc, 2);
    assert_string_equal(ev.label, "P0_Node0_Channel3_Dimm0 DIMM_D1");
    s_sink_free(s);
}

static void test_mce(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("mce.txt");
    assert_int_equal(s->n, 12);
    static const struct {
        fb_kmsg_class_t cls;
        bool fatal;
    } want[] = {
        {FB_KMSG_MCE, true},          /* bank status with UC set */
        {FB_KMSG_NONE, false},        /* RIP */
        {FB_KMSG_NONE, false},        /* TSC/ADDR */
        {FB_KMSG_NONE, false},        /* PROCESSOR */
        {FB_KMSG_MCE, true},          /* Machine Check Exception */
        {FB_KMSG_MCE, false},         /* events logged */
        {FB_KMSG_MCE, false},         /* bank status without UC */
        {FB_KMSG_CPU_THERMAL, false}, /* throttled */
        {FB_KMSG_NONE, false},        /* back to normal */
        {FB_KMSG_NONE, false},        /* GHES header */
        {FB_KMSG_MCE, false},         /* GHES severity corrected */
        {FB_KMSG_MCE, true},          /* AMD decoder */
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(want); i++) {
        fb_kmsg_event_t ev;
        fb_kmsg_class_t c = s_class(&s->recs[i], &ev);
        if (c != want[i].cls || ev.fatal != want[i].fatal)
            print_error("mce line %zu: %s fatal=%d\n", i, fb_kmsg_class_name(c), ev.fatal);
        assert_int_equal(c, want[i].cls);
        assert_int_equal(ev.fatal, want[i].fatal);
    }
    s_sink_free(s);
}

static void test_pcie_ib(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("pcie-ib.txt");
    assert_int_equal(s->n, 11);
    fb_kmsg_event_t ev;
    assert_int_equal(s_class(&s->recs[0], &ev), FB_KMSG_NONE); /* counted once, below */
    assert_int_equal(s_class(&s->recs[1], &ev), FB_KMSG_PCIE_AER);
    assert_false(ev.fatal);
    assert_string_equal(ev.pci, "0000:41:00.0");
    assert_int_equal(s_class(&s->recs[2], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[3], &ev), FB_KMSG_NONE);
    assert_int_equal(s_class(&s->recs[4], &ev), FB_KMSG_PCIE_AER);
    assert_true(ev.fatal);
    assert_string_equal(ev.pci, "0000:17:00.0");
    assert_int_equal(s_class(&s->recs[5], &ev), FB_KMSG_LINK_DOWN);
    assert_string_equal(ev.pci, "0000:17:00.0");
    assert_string_equal(ev.netdev, "ibp23s0");
    assert_string_equal(s->recs[5].device, "");                /* DEVICE=n5 is a netdev, not PCI */
    assert_int_equal(s_class(&s->recs[6], &ev), FB_KMSG_NONE); /* Link up */
    assert_int_equal(s_class(&s->recs[7], &ev), FB_KMSG_LINK_DOWN);
    assert_string_equal(ev.pci, "0000:29:00.0");
    assert_string_equal(ev.netdev, "");
    assert_int_equal(s_class(&s->recs[8], &ev), FB_KMSG_LINK_DOWN);
    assert_int_equal(s_class(&s->recs[9], &ev), FB_KMSG_NIC_ERROR);
    assert_string_equal(ev.pci, "0000:3a:00.0");
    assert_int_equal(s_class(&s->recs[10], &ev), FB_KMSG_NONE); /* plugged back in */
    s_sink_free(s);
}

static void test_garbage(void **state)
{
    (void)state;
    sink_t *s = s_read_fixture("garbage.txt");
    /* "6,1234,5678901,-;" and "   " carry no text; everything else parses to something. */
    assert_int_equal(s->n, 13);
    size_t xids = 0;
    for (size_t i = 0; i < s->n; i++) {
        fb_kmsg_event_t ev;
        fb_kmsg_class_t c = s_class(&s->recs[i], &ev);
        for (const char *p = s->recs[i].text; *p; p++)
            assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
        if (c == FB_KMSG_XID) {
            /* Cut Xid lines are still Xids, with what could be read. */
            xids++;
            assert_int_equal(ev.xid, -1);
        } else if (c == FB_KMSG_MCE) {
            assert_false(ev.fatal); /* a status cut short is not read as uncorrected */
        } else if (c != FB_KMSG_NONE) {
            print_error("garbage line %zu classified %s: %s\n", i, fb_kmsg_class_name(c),
                        s->recs[i].text);
            fail();
        }
    }
    assert_int_equal(xids, 2);
    fb_kmsg_record_t r;
    assert_int_equal(fb_kmsg_parse("", 0, &r), -EINVAL);
    assert_int_equal(fb_kmsg_parse("6,1,2,-;", 8, &r), -EINVAL);
    s_sink_free(s);
}

/* A record ends at its length, not at a NUL: a prefix cut inside a number is read from exactly
 * the bytes given (each buffer is a heap block of that size, so ASan sees any byte past it).
 * "[  13" is the input libFuzzer found reading past the end (tests/fuzz/corpus/kmsg). */
static void test_parse_cut_prefixes(void **state)
{
    (void)state;
    static const char *const cut[] = {"[  13", "[1.5", "[ 1.000", "<13", "4,12", "4,12,7",
                                      "[12345678901234567890"};
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        size_t len = strlen(cut[i]);
        char *buf = malloc(len);
        assert_non_null(buf);
        memcpy(buf, cut[i], len);
        fb_kmsg_record_t r;
        assert_int_equal(fb_kmsg_parse(buf, len, &r), 0);
        assert_false(r.has_ts);
        assert_string_equal(r.text, cut[i]);
        free(buf);
    }
}

static void test_pci_canon(void **state)
{
    (void)state;
    char out[16];
    assert_int_equal(fb_kmsg_pci_canon("0000:41:00.0", out), 0);
    assert_string_equal(out, "0000:41:00.0");
    assert_int_equal(fb_kmsg_pci_canon("00000000:C1:00.0", out), 0);
    assert_string_equal(out, "0000:c1:00.0");
    assert_int_equal(fb_kmsg_pci_canon("0000:41:00): 79", out), 0);
    assert_string_equal(out, "0000:41:00.0");
    assert_int_equal(fb_kmsg_pci_canon("0000:41:00.1: text", out), 0);
    assert_string_equal(out, "0000:41:00.1");
    assert_int_equal(fb_kmsg_pci_canon("0000:41:00:1f", out), -EINVAL);
    assert_int_equal(fb_kmsg_pci_canon("0000:41", out), -EINVAL);
    assert_int_equal(fb_kmsg_pci_canon("00010000:41:00.0", out), -EINVAL);
    assert_int_equal(fb_kmsg_pci_canon("0000:41:00.9", out), -EINVAL);
}

/* Waits until the sink holds n records (the watcher runs in its own thread). */
static void s_wait_for(sink_t *s, size_t n)
{
    for (int i = 0; i < 400; i++) {
        pthread_mutex_lock(&s->lock);
        size_t have = s->n;
        pthread_mutex_unlock(&s->lock);
        if (have >= n)
            return;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static void s_append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_watch_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/fb-kmsg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = xasprintf("%s/kmsg", dir);
    s_append(path, "6,1,1,-;old line before the watcher started\n");
    sink_t *s = s_sink();
    fb_kmsg_watch_t *w = NULL;
    assert_int_equal(fb_kmsg_watch_start(path, s_collect, s, &w), 0);
    s_append(path, "4,2,2,-;NVRM: Xid (PCI:0000:41:00): 79, pid=1, GPU has fallen off the bus.\n"
                   " DEVICE=+pci:0000:41:00.0\n");
    s_wait_for(s, 1);
    s_append(path, "4,3,3,-;EDAC MC0: 1 UE memory read error on DIMM_A1 (x)\n");
    s_wait_for(s, 2);
    assert_int_equal(fb_kmsg_watch_stop(&w), 0);
    assert_null(w);
    fb_kmsg_watch_stop(&w); /* NULL-safe */
    assert_int_equal(s->n, 2);
    assert_int_equal(s->recs[0].seq, 2);
    assert_string_equal(s->recs[0].device, "0000:41:00.0");
    assert_int_equal(s->recs[1].seq, 3);
    s_sink_free(s);
    unlink(path);
    rmdir(dir);
    free(path);
}

static void test_watch_fifo(void **state)
{
    (void)state;
    char dir[] = "/tmp/fb-kmsg-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char *path = xasprintf("%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    sink_t *s = s_sink();
    fb_kmsg_watch_t *w = NULL;
    assert_int_equal(fb_kmsg_watch_start(path, s_collect, s, &w), 0);
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    /* A record with its continuation line in one write, as /dev/kmsg delivers it. */
    const char *rec = "3,10,500,-;mlx5_core 0000:17:00.0 ibp23s0: Link down\n SUBSYSTEM=net\n";
    assert_int_equal(write(fd, rec, strlen(rec)), (ssize_t)strlen(rec));
    s_wait_for(s, 1);
    /* The writer goes away and comes back: the watcher keeps following. */
    close(fd);
    fd = open(path, O_WRONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    const char *more = "[  1.0] amdgpu 0000:48:00.0: amdgpu: WARN: GPU thermal throttling "
                       "temperature reached, expect performance decrease. HBM.\n";
    assert_int_equal(write(fd, more, strlen(more)), (ssize_t)strlen(more));
    s_wait_for(s, 2);
    close(fd);
    fb_kmsg_watch_stop(&w);
    assert_int_equal(s->n, 2);
    fb_kmsg_event_t ev;
    assert_int_equal(fb_kmsg_classify(&s->recs[0], &ev), FB_KMSG_LINK_DOWN);
    assert_int_equal(fb_kmsg_classify(&s->recs[1], &ev), FB_KMSG_GPU_THERMAL);
    s_sink_free(s);
    unlink(path);
    rmdir(dir);
    free(path);
}

static void test_open_errors(void **state)
{
    (void)state;
    fb_kmsg_t *k = (fb_kmsg_t *)1;
    assert_int_equal(fb_kmsg_open("/nonexistent/kmsg", FB_KMSG_FROM_END, &k), -ENOENT);
    assert_null(k);
    fb_kmsg_watch_t *w = (fb_kmsg_watch_t *)1;
    assert_int_equal(fb_kmsg_watch_start("/nonexistent/kmsg", s_collect, NULL, &w), -ENOENT);
    assert_null(w);
    fb_kmsg_close(&k); /* NULL-safe */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_record), cmocka_unit_test(test_parse_dmesg),
        cmocka_unit_test(test_nvidia),       cmocka_unit_test(test_amdgpu),
        cmocka_unit_test(test_edac),         cmocka_unit_test(test_mce),
        cmocka_unit_test(test_pcie_ib),      cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_parse_cut_prefixes),
        cmocka_unit_test(test_pci_canon),    cmocka_unit_test(test_watch_file),
        cmocka_unit_test(test_watch_fifo),   cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
