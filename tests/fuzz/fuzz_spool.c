/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the agent's spool as it reads entries back from disk after a restart (agent/spool.c):
 * the input becomes one entry file in a spool directory, which spool_open scans (file name ->
 * result id, header, CRCs) and spool_get reads; a payload that reads back goes through
 * fb_wire_result_unpack and the agent's own unpack, as a re-sent result does.
 *
 * Input: byte 0 holds flags, then the entry's file name after "r." up to a newline, then the
 * file's bytes. Flags ask the harness to make parts of the header right so that the fuzzer gets
 * past them: 1 the payload length, 2 the payload CRC, 4 the header CRC (layout in spool.c). The
 * spool lives under /dev/shm when there is one (else $TMPDIR or /tmp). */
#include "fuzz.h"

#include "agent/spool.h"
#include "common/result.h"
#include "common/wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_HEADER_LEN 40

static char *s_base, *s_dir;

static void s_cleanup_dir(void)
{
    DIR *d = opendir(s_dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *p = xasprintf("%s/%s", s_dir, de->d_name);
        unlink(p);
        free(p);
    }
    closedir(d);
}

static void s_atexit(void)
{
    s_cleanup_dir();
    rmdir(s_dir);
    rmdir(s_base);
}

static void s_init(void)
{
    s_base = fz_private_dir("spool");
    s_dir = xasprintf("%s/spool", s_base);
    atexit(s_atexit);
}

FZ_INITIALIZE(s_init())

static void s_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A file name the harness can create in the spool directory. */
static bool s_name_ok(const char *name, size_t n)
{
    return n > 0 && n <= 250 && !memchr(name, '/', n) && !memchr(name, '\0', n);
}

static void s_write_entry(const char *name, const uint8_t *bytes, size_t len)
{
    int dfd = open(s_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    FZ_CHECK(dfd >= 0);
    int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FZ_CHECK(fd >= 0);
    fz_write_all(fd, bytes, len);
    close(fd);
    close(dfd);
}

static void s_read_back(spool_t *sp)
{
    char **ids = NULL;
    size_t n = 0;
    FZ_CHECK(spool_list(sp, &ids, &n) == 0);
    FZ_CHECK(n <= 1 && n == spool_count(sp));
    for (size_t i = 0; i < n; i++) {
        FZ_CHECK(spool_id_valid(ids[i]));
        uint8_t *payload = NULL;
        size_t len = 0;
        /* Listed means checked: the same file reads back. */
        FZ_CHECK(spool_get(sp, ids[i], &payload, &len) == 0);
        FZ_CHECK(payload != NULL && len <= SPOOL_DATA_MAX);
        char err[256];
        fb_result_t *r = fb_wire_result_unpack(payload, len, err, sizeof err);
        fb_result_destroy(&r);
        Fleetburn__TaskResult *msg = fleetburn__task_result__unpack(NULL, len, payload);
        if (msg)
            fleetburn__task_result__free_unpacked(msg, NULL);
        free(payload);
    }
    spool_ids_free(ids, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned flags = data[0];
    const uint8_t *p = data + 1, *end = data + size;
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl)
        return 0;
    char *suffix = xstrndup((const char *)p, (size_t)(nl - p));
    char *name = xasprintf("r.%s", s_name_ok((const char *)p, (size_t)(nl - p)) ? suffix : "x");
    free(suffix);
    size_t len = (size_t)(end - (nl + 1));
    uint8_t *file = xmalloc(len ? len : 1);
    if (len)
        memcpy(file, nl + 1, len);
    if (len >= S_HEADER_LEN) {
        if (flags & 1)
            s_put_le(file + 24, len - S_HEADER_LEN, 8);
        if (flags & 2)
            s_put_le(file + 32, spool_crc32(file + S_HEADER_LEN, len - S_HEADER_LEN), 4);
        if (flags & 4)
            s_put_le(file + 36, spool_crc32(file, 36), 4);
    }

    FZ_CHECK(fb_mkdir_p(s_dir, 0700) == 0);
    s_write_entry(name, file, len);
    spool_t *sp = NULL;
    int rc = spool_open(s_dir, &sp);
    if (rc != 0)
        fprintf(stderr, "spool_open: %s\n", strerror(-rc));
    FZ_CHECK(rc == 0);
    s_read_back(sp);
    spool_destroy(&sp);
    /* Opened again, the spool finds the same (a damaged entry was set aside the first time). */
    FZ_CHECK(spool_open(s_dir, &sp) == 0);
    s_read_back(sp);
    spool_destroy(&sp);
    s_cleanup_dir();
    free(file);
    free(name);
    return 0;
}
