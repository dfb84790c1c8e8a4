/* SPDX-License-Identifier: Apache-2.0 */
/* Tests for naming the DIMM of a memtest miscompare and telling stuck from transient: the SMBIOS
 * type 17/20 decoder on tables of real machines (tests/fixtures/smbios, with malformed tables cut
 * from them), the EDAC decoder's log-line parser on lines real kernels printed, the debugfs
 * decoder end to end against a stand-in kernel (a thread that answers writes to the addr file by
 * appending the driver's line to a kernel-log file), the rasdaemon lookup on a real SQLite
 * database made from rasdaemon 0.6.8's own schema, the chain's order and its "not decodable
 * here" reasons, the page retest, and memtest itself naming the DIMM of a stuck bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "common/kmsg.h"
#include "common/smbios.h"
#include "common/util.h"
#include "memtest/dimmloc.h"
#include "memtest/edacdecode.h"
#include "memtest/memtest.h"
#include "memtest/miscompare.h"
#include "memtest/rasdb.h"
#include "memtest/retest.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- helpers --------------------------------------------------------------------------------- */

static uint8_t *s_load(const char *rel, size_t *len)
{
    char *path = xasprintf("%s/%s", FB_FIXTURES, rel);
    char *text = fb_read_file(path, len);
    if (!text)
        print_error("cannot read %s\n", path);
    assert_non_null(text);
    free(path);
    return (uint8_t *)text;
}

static void s_write(const char *path, const void *data, size_t len)
{
    char *dir = xstrdup(path);
    *strrchr(dir, '/') = '\0';
    assert_int_equal(fb_mkdir_p(dir, 0755), 0);
    free(dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int s_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

static char *s_tmpdir(void)
{
    char *dir = xstrdup("/tmp/fb-dimmloc.XXXXXX");
    assert_non_null(mkdtemp(dir));
    return dir;
}

static void s_rmtree(char **dir)
{
    nftw(*dir, s_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(*dir);
    *dir = NULL;
}

/* ---- SMBIOS ---------------------------------------------------------------------------------- */

static void s_parse_fixture(const char *name, fb_smbios_t *s)
{
    char *rel = xasprintf("smbios/%s", name);
    size_t len = 0;
    uint8_t *t = s_load(rel, &len);
    char err[200] = "";
    int rc = fb_smbios_parse(t, len, s, err, sizeof err);
    if (rc)
        print_error("%s: %s\n", name, err);
    assert_int_equal(rc, 0);
    free(t);
    free(rel);
}

/* Flex mode: 0-4 GiB interleaved over both channels, 4-6 GiB on ChannelB-DIMM0 alone. */
static void test_smbios_flex_mode(void **state)
{
    (void)state;
    fb_smbios_t s;
    s_parse_fixture("lenovo-g580-flex.dmi", &s);
    assert_int_equal(s.n_dimms, 4);
    assert_int_equal(s.n_ranges, 3);
    assert_string_equal(s.dimms[0].locator, "ChannelA-DIMM0");
    assert_string_equal(s.dimms[0].part, "8KTF25664HZ-1G6M1");
    assert_true(s.dimms[0].size_mb == 2048);
    assert_true(s.dimms[1].size_mb == 0);
    assert_true(s.ranges[2].start == 4ULL << 30 && s.ranges[2].end == (6ULL << 30) - 1);
    assert_int_equal(s.ranges[0].position, 1);
    assert_int_equal(s.ranges[0].depth, 2);
    char why[300];
    const fb_smbios_dimm_t *d = fb_smbios_locate(&s, 0x140000123ULL, why, sizeof why);
    assert_non_null(d);
    assert_string_equal(d->locator, "ChannelB-DIMM0");
    assert_string_equal(d->bank, "BANK 2");
    assert_string_equal(d->serial, "E375B06D");
    assert_null(fb_smbios_locate(&s, 0x80000000ULL, why, sizeof why));
    assert_non_null(strstr(why, "'ChannelA-DIMM0' and 'ChannelA-DIMM1' both cover 0x80000000"));
    assert_null(fb_smbios_locate(&s, 6ULL << 30, why, sizeof why));
    assert_string_equal(why, "no SMBIOS type 20 range covers 0x180000000");
    fb_smbios_clear(&s);
}

static void test_smbios_refusals(void **state)
{
    (void)state;
    fb_smbios_t s;
    char why[300];
    s_parse_fixture("laptop-2x4g-unknown-interleave.dmi", &s);
    assert_int_equal(s.n_dimms, 2);
    assert_null(fb_smbios_locate(&s, 0x1000, why, sizeof why));
    assert_non_null(strstr(why, "'DIMM 0' and 'DIMM 1' both cover 0x1000: interleaved"));
    fb_smbios_clear(&s);

    /* Disjoint ranges, but the firmware does not say they are not interleaved. */
    s_parse_fixture("netbook-2x512m-unknown-interleave.dmi", &s);
    assert_int_equal(s.n_dimms, 2);
    assert_string_equal(s.dimms[1].locator, "SODIMM2");
    assert_string_equal(s.dimms[1].manufacturer, ""); /* 21-byte type 17: no such field */
    assert_null(fb_smbios_locate(&s, 0x30000000, why, sizeof why));
    assert_non_null(
        strstr(why, "handle 0x000E ('SODIMM2') does not say whether it is interleaved"));
    fb_smbios_clear(&s);

    s_parse_fixture("xeon-e5-2695v3-8dimm-no-type20.dmi", &s);
    assert_int_equal(s.n_dimms, 8);
    assert_int_equal(s.n_ranges, 0);
    assert_string_equal(s.dimms[7].locator, "P2-DIMMH1");
    assert_string_equal(s.dimms[7].bank, "P1_Node1_Channel3_Dimm0");
    assert_true(s.dimms[7].size_mb == 8192);
    assert_null(fb_smbios_locate(&s, 0x1000, why, sizeof why));
    assert_non_null(strstr(why, "has no type 20 (memory device mapped address) entries"));
    fb_smbios_clear(&s);
}

/* Every truncation of a real table either parses (cut at a structure boundary) or is refused
 * with the offset of the structure that does not fit; none crashes or leaks. */
static void test_smbios_truncated(void **state)
{
    (void)state;
    size_t len = 0;
    uint8_t *t = s_load("smbios/lenovo-g580-flex.dmi", &len);
    unsigned refused = 0;
    for (size_t cut = 0; cut < len; cut++) {
        uint8_t *copy = xmalloc(cut ? cut : 1);
        memcpy(copy, t, cut);
        fb_smbios_t s;
        char err[200] = "";
        int rc = fb_smbios_parse(copy, cut, &s, err, sizeof err);
        if (rc) {
            assert_int_equal(rc, -EINVAL);
            assert_non_null(strstr(err, "offset 0x"));
            assert_int_equal(s.n_dimms + s.n_ranges, 0);
            refused++;
        }
        fb_smbios_clear(&s);
        free(copy);
    }
    assert_true(refused > len / 2);
    /* A structure whose length field is below its own header. */
    t[1] = 3;
    fb_smbios_t s;
    char err[200];
    assert_int_equal(fb_smbios_parse(t, len, &s, err, sizeof err), -EINVAL);
    assert_string_equal(err, "offset 0x0: structure type 16 length 3 does not fit (header 4 "
                             "bytes, 600 bytes left)");
    free(t);
}

/* Sizes: KiB granularity, the extended size of large DIMMs, and an unknown size. */
static void test_smbios_sizes(void **state)
{
    (void)state;
    uint8_t t[3 * 0x24 + 16];
    memset(t, 0, sizeof t);
    uint16_t sizes[] = {0x8000 | 2048, 0x7FFF, 0xFFFF};
    for (int i = 0; i < 3; i++) {
        uint8_t *p = t + i * 0x24;
        p[0] = 17;
        p[1] = 0x22;
        p[2] = (uint8_t)(0x10 + i);
        p[0x0C] = (uint8_t)(sizes[i] & 0xFF);
        p[0x0D] = (uint8_t)(sizes[i] >> 8);
        if (i == 1) { /* 256 GiB in the extended size field */
            p[0x1C] = 0x00;
            p[0x1D] = 0x00;
            p[0x1E] = 0x04;
        }
        /* no strings: the double NUL at 0x22, 0x23 is already there */
    }
    t[3 * 0x24] = 127;
    t[3 * 0x24 + 1] = 4;
    fb_smbios_t s;
    char err[200];
    assert_int_equal(fb_smbios_parse(t, 3 * 0x24 + 6, &s, err, sizeof err), 0);
    assert_int_equal(s.n_dimms, 3);
    assert_true(s.dimms[0].size_mb == 2);
    assert_true(s.dimms[1].size_mb == 256 * 1024);
    assert_true(s.dimms[2].size_mb == UINT64_MAX);
    assert_string_equal(s.dimms[0].locator, "");
    fb_smbios_clear(&s);
}

static void test_smbios_read(void **state)
{
    (void)state;
    char *root = s_tmpdir();
    fb_smbios_t s;
    char err[300];
    assert_int_equal(fb_smbios_read(root, &s, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "/sys/firmware/dmi/tables/DMI is absent"));
    size_t len = 0;
    uint8_t *t = s_load("smbios/xeon-e5-2695v3-8dimm-no-type20.dmi", &len);
    char *path = xasprintf("%s/sys/firmware/dmi/tables/DMI", root);
    s_write(path, t, len);
    assert_int_equal(fb_smbios_read(root, &s, err, sizeof err), 0);
    assert_int_equal(s.n_dimms, 8);
    fb_smbios_clear(&s);
    s_write(path, t, 7); /* cut inside the first structure */
    assert_int_equal(fb_smbios_read(root, &s, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "/sys/firmware/dmi/tables/DMI: offset 0x0"));
    free(path);
    free(t);
    s_rmtree(&root);
}

/* ---- EDAC decoder lines ---------------------------------------------------------------------- */

/* The lines of tests/fixtures/edacdecode/lines.txt, without its comment lines. */
static char **s_lines(size_t *n)
{
    size_t len;
    char *text = (char *)s_load("edacdecode/lines.txt", &len);
    char **lines = xcalloc(64, sizeof *lines);
    *n = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l && *n < 64;
         l = strtok_r(NULL, "\n", &save))
        if (*l != '#')
            lines[(*n)++] = xstrdup(l);
    free(text);
    return lines;
}

static void s_parse_record(const char *line, mt_edac_decoded_t *d, int expect_rc)
{
    fb_kmsg_record_t *rec = xmalloc(sizeof *rec);
    assert_int_equal(fb_kmsg_parse(line, strlen(line), rec), 0);
    int rc = mt_edac_parse_line(rec->text, d);
    if (rc != expect_rc)
        print_error("'%s': %d\n", rec->text, rc);
    assert_int_equal(rc, expect_rc);
    free(rec);
}

static void test_edac_lines(void **state)
{
    (void)state;
    size_t n;
    char **lines = s_lines(&n);
    assert_true(n >= 9);
    mt_edac_decoded_t d;
    uint64_t addr;
    char parts[300];

    /* Sapphire Rapids, firmware (ADXL) decode. */
    s_parse_record(lines[0], &d, 0);
    assert_string_equal(d.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_int_equal(d.mc, 0);
    assert_true(d.corrected);
    assert_true(d.count == 0);
    assert_true(mt_edac_line_address(&d, 12, &addr) && addr == 0x30aa905a80ULL);
    assert_true(d.system_address == 0x30aa905a80LL);
    assert_true(d.channel == 1 && d.dimm == 0 && d.rank == 1 && d.chip_select == 2);
    assert_string_equal(mt_edac_describe(&d, parts, sizeof parts),
                        "socket 0, memory controller 0, channel 1, DIMM 0, rank 1, chip select 2, "
                        "row 0x442a, column 0x440, bank 1, bank group 1");
    assert_true(mt_edac_label_is_one_dimm(d.label));

    s_parse_record(lines[1], &d, 0);
    assert_string_equal(d.label, "CPU_SrcID#0_MC#1_Chan#0_DIMM#1");
    assert_true(d.count == 1 && d.dimm == 1 && d.bank_group == 5);
    assert_true(mt_edac_line_address(&d, 12, &addr) && addr == 0x91b2f55c0ULL);

    /* Ice Lake, an uncorrected error, dmesg prefix. */
    s_parse_record(lines[2], &d, 0);
    assert_false(d.corrected);
    assert_int_equal(d.mc, 3);
    assert_true(mt_edac_line_address(&d, 12, &addr) && addr == 0x7e025e400ULL);
    assert_true(d.row == 0x3b01 && d.column == 0x380 && d.rank == 1);

    /* The driver's own decode (no firmware): no SystemAddress, channel and slot from the
     * location layers. */
    s_parse_record(lines[3], &d, 0);
    assert_string_equal(d.label, "CPU_SrcID#0_MC#1_Chan#0_DIMM#0");
    assert_true(d.system_address == MT_EDAC_UNKNOWN);
    assert_true(d.channel == 0 && d.dimm == 0 && d.imc == 1 && d.row == 0x15da);
    assert_true(mt_edac_line_address(&d, 12, &addr) && addr == 0x3ddc84140ULL);

    s_parse_record(lines[4], &d, 0);
    assert_true(mt_edac_line_address(&d, 12, &addr) && addr == 0x90ba03400ULL);

    /* Ambiguous or no DIMM: parsed, but not one DIMM. */
    s_parse_record(lines[5], &d, 0);
    assert_false(mt_edac_label_is_one_dimm(d.label));
    s_parse_record(lines[6], &d, 0);
    assert_string_equal(d.label, "any memory");
    assert_false(mt_edac_label_is_one_dimm(d.label));

    /* The driver's other lines are not error lines. */
    for (size_t i = 7; i < n; i++)
        s_parse_record(lines[i], &d, -EINVAL);
    for (size_t i = 0; i < n; i++)
        free(lines[i]);
    free(lines);

    /* Garbage and overflow. */
    assert_int_equal(mt_edac_parse_line("EDAC MC99999999999999999999: 1 CE x on y (z)", &d),
                     -EINVAL);
    assert_int_equal(mt_edac_parse_line("EDAC MC0: 1 CE on", &d), -EINVAL);
    assert_int_equal(mt_edac_parse_line("EDAC MC0: 1 CE on X (page:0xfffffffffffffffffff "
                                        "offset:0x1)",
                                        &d),
                     0);
    assert_false(d.has_page);
    assert_false(mt_edac_line_address(&d, 12, &addr));
}

/* ---- the debugfs decoder against a stand-in kernel ------------------------------------------- */

typedef struct {
    char *addr_path, *kmsg_path;
    const char *label; /* what the stand-in decodes every address to; NULL: it never answers */
    atomic_bool stop;
    pthread_t tid;
    unsigned answered;
} kernel_t;

/* Answers each address written to addr_path as skx_edac would: one EDAC line in the log. */
static void *s_kernel_main(void *arg)
{
    kernel_t *k = arg;
    while (!atomic_load(&k->stop)) {
        char *text = fb_read_file(k->addr_path, NULL);
        if (text && *text) {
            uint64_t phys = strtoull(text, NULL, 10);
            int fd = open(k->addr_path, O_WRONLY | O_TRUNC);
            close(fd);
            if (k->label) {
                FILE *log = fopen(k->kmsg_path, "a");
                fprintf(log,
                        "EDAC MC0: 1 CE memory read error on %s (channel:1 slot:0 page:0x%" PRIx64
                        " offset:0x%" PRIx64
                        " grain:32 syndrome:0x0 - err_code:0x0000:0x0090 ProcessorSocketId:0x0 "
                        "MemoryControllerId:0x0 PhysicalRankId:0x1 Row:0x442a Column:0x440 "
                        "Bank:0x1 BankGroup:0x1)\n",
                        k->label, phys >> 12, phys & 0xFFF);
                fclose(log);
                k->answered++;
            }
        }
        free(text);
        usleep(2000);
    }
    return NULL;
}

/* A root with the skx_edac decoder and a kernel log; the stand-in answers in a thread. */
static void s_kernel_start(kernel_t *k, const char *root, const char *label)
{
    memset(k, 0, sizeof *k);
    k->addr_path = xasprintf("%s/sys/kernel/debug/edac/skx_test/addr", root);
    k->kmsg_path = xasprintf("%s/dev/kmsg", root);
    k->label = label;
    s_write(k->addr_path, "", 0);
    s_write(k->kmsg_path, "", 0);
    assert_int_equal(pthread_create(&k->tid, NULL, s_kernel_main, k), 0);
}

static void s_kernel_stop(kernel_t *k)
{
    atomic_store(&k->stop, true);
    pthread_join(k->tid, NULL);
    free(k->addr_path);
    free(k->kmsg_path);
}

static void test_decoder_find(void **state)
{
    (void)state;
    char *root = s_tmpdir(), *path = NULL, driver[32], why[300];
    assert_int_equal(mt_edac_decoder_find(root, &path, driver, sizeof driver, why, sizeof why),
                     -ENOENT);
    assert_non_null(strstr(why, "debugfs is not mounted at"));
    char *f = xasprintf("%s/sys/kernel/debug/clear_warn_once", root);
    s_write(f, "", 0);
    free(f);
    assert_int_equal(mt_edac_decoder_find(root, &path, driver, sizeof driver, why, sizeof why),
                     -ENOENT);
    assert_non_null(strstr(why, "/sys/kernel/debug/edac: no EDAC driver loaded, or one built "
                                "without CONFIG_EDAC_DEBUG"));
    f = xasprintf("%s/sys/kernel/debug/edac/mc0/fake_inject", root);
    s_write(f, "", 0);
    free(f);
    f = xasprintf("%s/sys/devices/system/edac/mc/mc0/mc_name", root);
    s_write(f, "F19h\n", 5);
    free(f);
    assert_int_equal(mt_edac_decoder_find(root, &path, driver, sizeof driver, why, sizeof why),
                     -ENOTSUP);
    assert_string_equal(why, "the EDAC driver here (F19h) has no address decoder interface (only "
                             "skx_edac and i10nm_edac, on Intel Xeon, have one)");
    f = xasprintf("%s/sys/kernel/debug/edac/i10nm_test/addr", root);
    s_write(f, "", 0);
    assert_int_equal(mt_edac_decoder_find(root, &path, driver, sizeof driver, why, sizeof why), 0);
    assert_string_equal(path, f);
    assert_string_equal(driver, "i10nm_edac");
    free(path);
    free(f);
    s_rmtree(&root);
}

static void test_decoder_roundtrip(void **state)
{
    (void)state;
    char *root = s_tmpdir();
    kernel_t k;
    s_kernel_start(&k, root, "CPU_SrcID#1_MC#0_Chan#2_DIMM#1");
    /* Lines of earlier errors already in the log are not the answer. */
    FILE *log = fopen(k.kmsg_path, "a");
    fprintf(log, "EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#0_DIMM#0 (channel:0 "
                 "slot:0 page:0x1234 offset:0x40 grain:32 syndrome:0x0)\n");
    fclose(log);
    mt_edac_decoded_t d;
    bool wrote = false;
    char why[300] = "";
    int rc = mt_edac_decode(k.addr_path, k.kmsg_path, 0x1234040ULL, 12, 2000, &d, &wrote, why,
                            sizeof why);
    if (rc)
        print_error("decode: %s\n", why);
    assert_int_equal(rc, 0);
    assert_true(wrote);
    assert_string_equal(d.label, "CPU_SrcID#1_MC#0_Chan#2_DIMM#1");
    assert_true(d.rank == 1 && d.row == 0x442a);
    s_kernel_stop(&k);

    /* A decoder that logs nothing for the address (outside its ranges). */
    s_kernel_start(&k, root, NULL);
    rc = mt_edac_decode(k.addr_path, k.kmsg_path, 0xfee00000ULL, 12, 100, &d, &wrote, why,
                        sizeof why);
    assert_int_equal(rc, -ETIMEDOUT);
    assert_true(wrote);
    assert_non_null(strstr(why, "logged no decode of 0xfee00000 within 100 ms"));
    s_kernel_stop(&k);

    /* The chain stops asking a decoder that did not answer. */
    char *ras_db = xasprintf("%s/none.db", root);
    mt_dimmloc_cfg_t cfg = {.mode = MT_DIMMLOC_AUTO,
                            .root = root,
                            .ras_db = ras_db,
                            .page_shift = 12,
                            .decode_timeout_ms = 100};
    mt_dimmloc_t out;
    s_kernel_start(&k, root, NULL);
    cfg.kmsg_path = k.kmsg_path;
    mt_dimmloc_locate(&cfg, 0x2000, &out);
    assert_true(out.decoder_silent && out.used_decoder);
    cfg.decoder_silent = true;
    mt_dimmloc_locate(&cfg, 0x3000, &out);
    assert_false(out.used_decoder);
    assert_non_null(strstr(out.why, "EDAC address decoder: not asked (it logged no answer for an "
                                    "earlier page)"));
    free(ras_db);
    s_kernel_stop(&k);

    /* No kernel log to read the answer from: nothing is written. */
    char *nolog = xasprintf("%s/absent/kmsg", root);
    char *addr = xasprintf("%s/sys/kernel/debug/edac/skx_test/addr", root);
    rc = mt_edac_decode(addr, nolog, 0x1000, 12, 100, &d, &wrote, why, sizeof why);
    assert_int_equal(rc, -ENOENT);
    assert_false(wrote);
    assert_non_null(strstr(why, "is not readable"));
    free(addr);
    free(nolog);
    s_rmtree(&root);
}

/* ---- rasdaemon ------------------------------------------------------------------------------- */

static void s_exec_fixture(sqlite3 *db, const char *rel)
{
    size_t len;
    char *sql = (char *)s_load(rel, &len);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK)
        print_error("%s: %s\n", rel, err);
    assert_int_equal(rc, SQLITE_OK);
    free(sql);
}

/* A rasdaemon database at path from the schema fixture, with events.sql when with_events. */
static void s_make_ras_db(const char *path, bool with_events)
{
    s_write(path, "", 0);
    unlink(path);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    s_exec_fixture(db, "rasdaemon/schema-0.6.8.sql");
    if (with_events)
        s_exec_fixture(db, "rasdaemon/events.sql");
    sqlite3_close(db);
}

static void test_ras_time(void **state)
{
    (void)state;
    int64_t t;
    assert_int_equal(mt_ras_parse_time("2026-03-01 15:41:13 +0800", &t), 0);
    assert_true(t == 1772350873LL); /* 07:41:13 UTC */
    assert_int_equal(mt_ras_parse_time("2026-03-01 07:41:13 +0000", &t), 0);
    assert_true(t == 1772350873LL);
    assert_int_equal(mt_ras_parse_time("2026-02-28 21:11:13 -1030", &t), 0);
    assert_true(t == 1772350873LL);
    const char *bad[] = {"",
                         "yesterday",
                         "2026-03-01 15:41:13",
                         "2026-03-01 15:41:13 +080",
                         "2026-13-01 15:41:13 +0800",
                         "2026-03-01 24:41:13 +0800",
                         "2026-03-01T15:41:13 +0800",
                         "1969-12-31 23:59:59 +0000",
                         "2026-03-01 15:41:13 +1560",
                         "2026-03-01 15:41:13 +0800 "};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(mt_ras_parse_time(bad[i], &t), -EINVAL);
    assert_int_equal(mt_ras_parse_time(NULL, &t), -EINVAL);
}

static void test_ras_lookup(void **state)
{
    (void)state;
    char *dir = s_tmpdir();
    char *path = xasprintf("%s/ras-mc_event.db", dir);
    s_make_ras_db(path, true);
    int64_t from = 1772350873LL, to = from + 60;
    uint64_t page = 0x3ddc84000ULL;
    mt_ras_event_t ev[8];
    char err[300];
    int n = mt_ras_lookup(path, page, page + 4095, from, to, ev, 8, err, sizeof err);
    assert_int_equal(n, 2); /* rows 1 and 2; row 3 is before the window, 5 and 6 are refused */
    assert_string_equal(ev[0].label, "CPU_SrcID#0_MC#1_Chan#0_DIMM#0");
    assert_string_equal(ev[0].type, "Corrected");
    assert_true(ev[0].address == 0x3ddc84140ULL && ev[1].count == 2);
    n = mt_ras_lookup(path, page, page + 4095, from - 7200, to, ev, 8, err, sizeof err);
    assert_int_equal(n, 3);
    n = mt_ras_lookup(path, page + 4096, page + 8191, from, to, ev, 8, err, sizeof err);
    assert_int_equal(n, 1);
    assert_string_equal(ev[0].type, "Uncorrected");
    assert_int_equal(mt_ras_lookup(path, 0, 4095, from, to, ev, 8, err, sizeof err), 0);

    /* No database, a directory, a file that is not SQLite, a database without mc_event. */
    char *absent = xasprintf("%s/none.db", dir);
    assert_int_equal(mt_ras_lookup(absent, 0, 1, 0, 1, ev, 8, err, sizeof err), -ENOENT);
    assert_non_null(strstr(err, "no rasdaemon database (rasdaemon not installed, or never run)"));
    assert_int_equal(mt_ras_lookup(dir, 0, 1, 0, 1, ev, 8, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not a regular file"));
    char *junk = xasprintf("%s/junk.db", dir);
    s_write(junk, "this is not a database, only text long enough to have a header", 62);
    assert_true(mt_ras_lookup(junk, 0, 1, 0, 1, ev, 8, err, sizeof err) < 0);
    assert_non_null(strstr(err, "junk.db"));
    char *other = xasprintf("%s/other.db", dir);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE t(x)", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    assert_int_equal(mt_ras_lookup(other, 0, 1, 0, 1, ev, 8, err, sizeof err), -EINVAL);
    assert_non_null(strstr(err, "not rasdaemon's mc_event table: no such table: mc_event"));
    free(other);
    free(junk);
    free(absent);
    free(path);
    s_rmtree(&dir);
}

/* ---- the chain ------------------------------------------------------------------------------- */

static mt_dimmloc_cfg_t s_cfg(const char *root, char **ras_db, char **kmsg, int64_t from,
                              int64_t to)
{
    *ras_db = xasprintf("%s%s", root, MT_RAS_DB_PATH);
    *kmsg = xasprintf("%s/dev/kmsg", root);
    return (mt_dimmloc_cfg_t){.mode = MT_DIMMLOC_AUTO,
                              .root = root,
                              .kmsg_path = *kmsg,
                              .ras_db = *ras_db,
                              .from = from,
                              .to = to,
                              .page_shift = 12,
                              .decode_timeout_ms = 2000};
}

static void test_chain_order(void **state)
{
    (void)state;
    char *root = s_tmpdir(), *ras_db, *kmsg;
    mt_dimmloc_cfg_t cfg = s_cfg(root, &ras_db, &kmsg, 1772350873LL, 1772350873LL + 60);
    mt_dimmloc_t out;

    /* Nothing on this machine: every source says why. */
    mt_dimmloc_locate(&cfg, 0x3ddc84140ULL, &out);
    assert_false(out.named);
    assert_false(out.used_decoder);
    assert_non_null(strstr(out.why, "not decodable here: rasdaemon: "));
    assert_non_null(strstr(out.why, "; EDAC address decoder: debugfs is not mounted at "));
    assert_non_null(strstr(out.why, "; SMBIOS: "));

    /* SMBIOS alone, passive: the flex-mode laptop's non-interleaved range. */
    size_t len;
    uint8_t *t = s_load("smbios/lenovo-g580-flex.dmi", &len);
    char *dmi = xasprintf("%s/sys/firmware/dmi/tables/DMI", root);
    s_write(dmi, t, len);
    cfg.mode = MT_DIMMLOC_PASSIVE;
    mt_dimmloc_locate(&cfg, 0x140000040ULL, &out);
    assert_true(out.named);
    assert_string_equal(out.label, "ChannelB-DIMM0");
    assert_string_equal(out.source, "SMBIOS");
    assert_non_null(strstr(out.detail, "bank 'BANK 2', Micron 16KTF51264HZ-1G6M1"));

    /* The decoder comes before SMBIOS in mode auto. */
    kernel_t k;
    s_kernel_start(&k, root, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    cfg.mode = MT_DIMMLOC_AUTO;
    mt_dimmloc_locate(&cfg, 0x140000040ULL, &out);
    assert_true(out.named);
    assert_true(out.used_decoder);
    assert_string_equal(out.label, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    assert_string_equal(out.source, "skx_edac decoder");
    assert_non_null(strstr(out.detail, "skx_edac decoded 0x140000040 to EDAC MC0: socket 0, "
                                       "memory controller 0, channel 1, DIMM 0, rank 1"));

    /* rasdaemon's records of the page come first, and the decoder is not asked. */
    s_make_ras_db(ras_db, true);
    unsigned asked = k.answered;
    mt_dimmloc_locate(&cfg, 0x3ddc84140ULL, &out);
    assert_true(out.named);
    assert_false(out.used_decoder);
    assert_int_equal(k.answered, asked);
    assert_string_equal(out.label, "CPU_SrcID#0_MC#1_Chan#0_DIMM#0");
    assert_string_equal(out.source, "rasdaemon");
    assert_string_equal(out.detail, "rasdaemon recorded 3 Corrected errors in page 0x3ddc84000 "
                                    "during the task (first at 0x3ddc84140)");
    s_kernel_stop(&k);

    /* Records of two DIMMs in one page name neither. */
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(ras_db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO mc_event VALUES(7,'2026-03-01 15:41:40 +0800',1,"
                                  "'Corrected','memory read error','CPU_SrcID#0_MC#1_Chan#1_DIMM#0'"
                                  ",1,1,0,-1,16605790528,32,0,'')",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    cfg.mode = MT_DIMMLOC_PASSIVE;
    mt_dimmloc_locate(&cfg, 0x3ddc84140ULL, &out);
    assert_false(out.named);
    assert_non_null(strstr(out.why, "rasdaemon: the 3 errors recorded in page 0x3ddc84000 name "
                                    "'CPU_SrcID#0_MC#1_Chan#0_DIMM#0' and "
                                    "'CPU_SrcID#0_MC#1_Chan#1_DIMM#0', not one DIMM"));
    assert_non_null(strstr(out.why, "EDAC address decoder: not asked (dimm_decode=passive)"));
    assert_non_null(strstr(out.why, "SMBIOS: no SMBIOS type 20 range covers 0x3ddc84140"));

    mt_dimmloc_locate(&cfg, 0, &out);
    assert_non_null(strstr(out.why, "pagemap needs CAP_SYS_ADMIN"));
    cfg.mode = MT_DIMMLOC_OFF;
    mt_dimmloc_locate(&cfg, 0x1000, &out);
    assert_string_equal(out.why, "not decodable here: DIMM lookup is off (dimm_decode=off)");
    mt_dimmloc_mode_t mode;
    assert_int_equal(mt_dimmloc_parse_mode("passive", &mode), 0);
    assert_int_equal(mode, MT_DIMMLOC_PASSIVE);
    assert_int_equal(mt_dimmloc_parse_mode("maybe", &mode), -EINVAL);
    free(t);
    free(dmi);
    free(ras_db);
    free(kmsg);
    s_rmtree(&root);
}

/* ---- retest ---------------------------------------------------------------------------------- */

typedef struct {
    size_t word;
    uint64_t bit, value; /* the stuck bit and the value it keeps */
    unsigned calls;
} stuck_hook_t;

static void s_stuck_hook(void *user, uint64_t *page, size_t n_words)
{
    stuck_hook_t *h = user;
    assert_true(h->word < n_words);
    page[h->word] = (page[h->word] & ~h->bit) | h->value;
    h->calls++;
}

static void test_retest(void **state)
{
    (void)state;
    size_t n = 4096 / sizeof(uint64_t);
    uint64_t *page = aligned_alloc(4096, 4096);
    mt_retest_t r;
    mt_retest_page(page, n, 100, 0x5555555555555555ULL, MT_MOVING_INVERSIONS, 7, 8, NULL, NULL, &r);
    assert_int_equal(r.rounds, 8);
    assert_int_equal(r.word_rounds, 0);
    assert_true(r.miscompares == 0);
    assert_false(mt_retest_stuck(&r));
#if defined(__x86_64__) || defined(__aarch64__)
    assert_true(r.flushed);
#endif

    /* Bit 12 of word 100 stuck at 1: every round sees it, through the backgrounds and the
     * pattern. */
    stuck_hook_t h = {.word = 100, .bit = 1ULL << 12, .value = 1ULL << 12};
    mt_retest_page(page, n, 100, 0, MT_WALKING_ZEROS, 7, 8, s_stuck_hook, &h, &r);
    assert_int_equal(r.word_rounds, 8);
    assert_int_equal(r.failed_rounds, 8);
    assert_true(r.word_xor == 1ULL << 12);
    assert_true(r.miscompares >= 8 * 3); /* 0, 0x...AAA (bit 12 clear) and expected=0 */
    assert_true(mt_retest_stuck(&r));
    assert_true(h.calls >= 8 * 6);

    /* A fault in another word of the page: rounds fail, but the word itself is fine. */
    h = (stuck_hook_t){.word = 3, .bit = 1, .value = 0};
    mt_retest_page(page, n, 100, 0, MT_SOLID_BITS, 7, 4, s_stuck_hook, &h, &r);
    assert_int_equal(r.failed_rounds, 4);
    assert_int_equal(r.word_rounds, 0);
    assert_false(mt_retest_stuck(&r));
    free(page);
}

/* ---- memtest end to end ---------------------------------------------------------------------- */

/* Whether this process can read physical addresses (root with CAP_SYS_ADMIN). */
static bool s_can_read_phys(void)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    static volatile uint64_t probe = 1;
    uint64_t phys = mt_phys_addr(fd, (const void *)&probe);
    if (fd >= 0)
        close(fd);
    return phys != 0;
}

static void test_memtest_names_dimm(void **state)
{
    (void)state;
    char *root = s_tmpdir();
    kernel_t k;
    s_kernel_start(&k, root, "CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
    setenv("FLEETBURN_SYSFS_ROOT", root, 1);
    const char *params[] = {
        "size=4MiB",         "threads=2",        "patterns=random", "inject_stuck_bits=1",
        "inject_bitflips=1", "dimm_decode=auto", "retests=4"};
    worker_ctx_t *ctx = worker_ctx_new("t1", "node07", params, FB_ARRAY_LEN(params), true);
    unsetenv("FLEETBURN_SYSFS_ROOT");
    assert_int_equal(memtest_run(ctx), FB_VERDICT_FAIL);
    fb_result_t *res = worker_result(ctx);
    assert_true(fb_result_metric(res, "miscompares")->value == 2);
    assert_true(fb_result_metric(res, "stuck_pages")->value == 1);
    assert_true(fb_result_metric(res, "transient_pages")->value == 1);
    bool phys = s_can_read_phys();
    assert_true(fb_result_metric(res, "dimms_named")->value == (phys ? 2 : 0));
    unsigned stuck = 0, transient = 0, dimm = 0;
    for (size_t i = 0; i < res->n_findings; i++) {
        const fb_finding_t *f = &res->findings[i];
        if (!strncmp(f->what, "miscompare in random", 20)) {
            stuck += strstr(f->what, "stuck (failed again in 4 of 4 retests)") != NULL;
            transient += strstr(f->what, "transient (failed again in 0 of 4 retests)") != NULL;
            assert_non_null(strstr(f->what, phys ? "DIMM CPU_SrcID#0_MC#0_Chan#1_DIMM#0"
                                                 : "DIMM not decodable here"));
        }
        if (!strcmp(f->kind, "dimm")) {
            assert_string_equal(f->part, "node07/CPU_SrcID#0_MC#0_Chan#1_DIMM#0");
            assert_non_null(strstr(f->what, "named by skx_edac decoder: skx_edac decoded 0x"));
            assert_non_null(strstr(f->what, " on node07, "));
            dimm++;
        }
        if (!phys && !strncmp(f->what, "page ", 5))
            assert_non_null(strstr(f->what, "pagemap needs CAP_SYS_ADMIN"));
    }
    assert_int_equal(stuck, 1);
    assert_int_equal(transient, 1);
    assert_int_equal(dimm, phys ? 2 : 0);
    assert_int_equal(k.answered, phys ? 2 : 0);
    worker_ctx_destroy(&ctx);
    s_kernel_stop(&k);
    s_rmtree(&root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smbios_flex_mode),   cmocka_unit_test(test_smbios_refusals),
        cmocka_unit_test(test_smbios_truncated),   cmocka_unit_test(test_smbios_sizes),
        cmocka_unit_test(test_smbios_read),        cmocka_unit_test(test_edac_lines),
        cmocka_unit_test(test_decoder_find),       cmocka_unit_test(test_decoder_roundtrip),
        cmocka_unit_test(test_ras_time),           cmocka_unit_test(test_ras_lookup),
        cmocka_unit_test(test_chain_order),        cmocka_unit_test(test_retest),
        cmocka_unit_test(test_memtest_names_dimm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
