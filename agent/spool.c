/* SPDX-License-Identifier: Apache-2.0 */
/* Result spool: serialized task results kept on disk until the coordinator acknowledges them, so
 * that neither an agent restart nor a coordinator restart loses a result. Each entry is one file,
 * written to a temporary name, fsynced, renamed into place and made durable by an fsync of the
 * directory; an in-memory index (id, store sequence) answers spool_list without touching the disk.
 * A memory spool (spool_open_memory, for simulated agents) keeps the bytes in that index instead
 * and skips every file operation; ordering and replacement rules are the same.
 *
 * Entry file layout (all integers little-endian):
 *   0  8  magic "FBSPOOL1"
 *   8  8  store sequence number (orders entries; survives restarts, unlike a coarse mtime)
 *  16  8  store time, epoch milliseconds (for people reading the directory)
 *  24  8  payload length
 *  32  4  CRC-32 (IEEE) of the payload
 *  36  4  CRC-32 of bytes 0..35
 *  40     payload
 * File names: "r.<id with '/' as '%'>" for entries, "t.<n>" for temporaries (deleted at open),
 * "bad.<...>" for damaged entries set aside, ".lock" for the owner's flock. */
#include "spool.h"

#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_MAGIC "FBSPOOL1"
#define S_HEADER_LEN 40
#define S_ENTRY_PREFIX "r."
#define S_TEMP_PREFIX "t."
#define S_BAD_PREFIX "bad."
#define S_LOCK_NAME ".lock"
#define S_LOCK_WAIT_MS 3000 /* for the lock of an owner that is exiting */

typedef struct {
    char *id;
    uint64_t seq;
    uint8_t *data; /* memory spools only */
    size_t len;
} s_entry_t;

struct spool {
    bool memory; /* spool_open_memory: entries live in the index, dir is NULL */
    char *dir;
    int dir_fd;
    int lock_fd;
    s_entry_t *entries;
    size_t n_entries, cap_entries;
    uint64_t next_seq;
    uint64_t next_temp;
};

/* ---------------------------------------------------------------------------------------------
 * Encoding */

uint32_t spool_crc32(const uint8_t *p, size_t n)
{
    uint32_t crc = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

static void s_put_le(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t s_get_le(const uint8_t *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

int spool_id_valid(const char *id)
{
    if (!id)
        return 0;
    size_t len = strlen(id);
    if (len == 0 || len > SPOOL_ID_MAX)
        return 0;
    if (strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:@#/-") != len)
        return 0;
    /* Every '/'-separated segment must be a plain name. */
    const char *seg = id;
    for (;;) {
        size_t n = strcspn(seg, "/");
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 0;
        if (seg[n] == '\0')
            return 1;
        seg += n + 1;
    }
}

/* "r." + id with '/' -> '%'. */
static char *s_file_name(const char *id)
{
    char *name = xasprintf(S_ENTRY_PREFIX "%s", id);
    for (char *p = name; *p; p++)
        if (*p == '/')
            *p = '%';
    return name;
}

/* The id an entry file name stands for, or NULL when the name is not a valid entry name. */
static char *s_id_from_name(const char *name)
{
    size_t plen = strlen(S_ENTRY_PREFIX);
    if (strncmp(name, S_ENTRY_PREFIX, plen) != 0)
        return NULL;
    char *id = xstrdup(name + plen);
    for (char *p = id; *p; p++)
        if (*p == '%')
            *p = '/';
    if (!spool_id_valid(id)) {
        free(id);
        return NULL;
    }
    return id;
}

/* ---------------------------------------------------------------------------------------------
 * File I/O */

static int s_write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int s_read_all(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (r == 0)
            return -EBADMSG; /* shorter than its header says */
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reads and checks one entry file. Returns 0 with the payload (heap; may be NULL when not wanted)
 * and sequence number, -ENOENT, -EBADMSG when damaged, or -errno. */
static int s_load(spool_t *self, const char *name, uint8_t **data_out, size_t *len_out,
                  uint64_t *seq_out)
{
    int fd = openat(self->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return errno == ELOOP ? -EBADMSG : -errno;
    struct stat st;
    uint8_t header[S_HEADER_LEN];
    uint8_t *data = NULL;
    int rc = fstat(fd, &st) < 0 ? -errno : 0;
    if (rc == 0 && (!S_ISREG(st.st_mode) || st.st_size < S_HEADER_LEN))
        rc = -EBADMSG;
    if (rc == 0)
        rc = s_read_all(fd, header, sizeof header);
    uint64_t len = 0;
    if (rc == 0) {
        len = s_get_le(header + 24, 8);
        if (memcmp(header, S_MAGIC, 8) != 0 || s_get_le(header + 36, 4) != spool_crc32(header, 36) ||
            len > SPOOL_DATA_MAX || (uint64_t)st.st_size != S_HEADER_LEN + len)
            rc = -EBADMSG;
    }
    if (rc == 0) {
        data = xmalloc((size_t)len);
        rc = s_read_all(fd, data, (size_t)len);
        if (rc == 0 && s_get_le(header + 32, 4) != spool_crc32(data, (size_t)len))
            rc = -EBADMSG;
    }
    close(fd);
    if (rc < 0) {
        free(data);
        return rc;
    }
    if (seq_out)
        *seq_out = s_get_le(header + 8, 8);
    if (len_out)
        *len_out = (size_t)len;
    if (data_out)
        *data_out = data;
    else
        free(data);
    return 0;
}

/* mkdir -p with mode 0700 for the directories it creates. */
static int s_mkdirs(const char *dir)
{
    char *path = xstrdup(dir);
    int rc = 0;
    for (char *p = path + 1; rc == 0; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
            rc = -errno;
        *p = saved;
        if (saved == '\0')
            break;
    }
    free(path);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Index */

static s_entry_t *s_find(spool_t *self, const char *id)
{
    for (size_t i = 0; i < self->n_entries; i++)
        if (!strcmp(self->entries[i].id, id))
            return &self->entries[i];
    return NULL;
}

static void s_index_set(spool_t *self, const char *id, uint64_t seq)
{
    s_entry_t *e = s_find(self, id);
    if (e) {
        e->seq = seq;
        return;
    }
    if (self->n_entries == self->cap_entries) {
        self->cap_entries = self->cap_entries ? self->cap_entries * 2 : 16;
        self->entries = xrealloc(self->entries, self->cap_entries * sizeof *self->entries);
    }
    self->entries[self->n_entries++] = (s_entry_t){xstrdup(id), seq, NULL, 0};
}

static void s_index_remove(spool_t *self, const char *id)
{
    s_entry_t *e = s_find(self, id);
    if (!e)
        return;
    free(e->id);
    free(e->data);
    *e = self->entries[--self->n_entries];
}

/* Loads the index: deletes temporaries, sets damaged entries aside, records the rest. */
static int s_scan(spool_t *self)
{
    int fd = dup(self->dir_fd);
    if (fd < 0)
        return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) {
        int rc = -errno;
        close(fd);
        return rc;
    }
    rewinddir(dir);
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        const char *name = de->d_name;
        if (!strncmp(name, S_TEMP_PREFIX, strlen(S_TEMP_PREFIX))) {
            if (unlinkat(self->dir_fd, name, 0) == 0)
                log_info("spool %s: removed %s left by an interrupted write", self->dir, name);
            else
                log_warn("spool %s: cannot remove %s: %s", self->dir, name, strerror(errno));
            continue;
        }
        if (strncmp(name, S_ENTRY_PREFIX, strlen(S_ENTRY_PREFIX)) != 0)
            continue;
        char *id = s_id_from_name(name);
        uint64_t seq = 0;
        int rc = id ? s_load(self, name, NULL, NULL, &seq) : -EBADMSG;
        if (rc == 0) {
            s_index_set(self, id, seq);
            if (seq >= self->next_seq)
                self->next_seq = seq + 1;
        } else {
            char *bad = xasprintf(S_BAD_PREFIX "%s", name + strlen(S_ENTRY_PREFIX));
            log_warn("spool %s: %s is unusable (%s); set aside as %s", self->dir, name,
                     strerror(-rc), bad);
            if (renameat(self->dir_fd, name, self->dir_fd, bad) < 0)
                log_warn("spool %s: cannot rename %s: %s", self->dir, name, strerror(errno));
            free(bad);
        }
        free(id);
    }
    closedir(dir);
    return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Public API */

/* The lock of an agent that was just killed is released only when the kernel has finished its
 * exit, a moment after the kill returned: an agent restarted at once (a supervisor's restart)
 * waits that moment instead of failing. A live owner still holds it after S_LOCK_WAIT_MS. */
static int s_lock_waiting(int lock_fd)
{
    for (unsigned waited = 0;; waited += 50) {
        if (flock(lock_fd, LOCK_EX | LOCK_NB) == 0)
            return 0;
        if (errno != EWOULDBLOCK || waited >= S_LOCK_WAIT_MS)
            return -1;
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

int spool_open(const char *dir, spool_t **out)
{
    if (!dir || !*dir || !out)
        return -EINVAL;
    *out = NULL;
    int rc = s_mkdirs(dir);
    if (rc < 0)
        return rc;
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd < 0)
        return -errno;
    int lock_fd = openat(dir_fd, S_LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd < 0) {
        rc = -errno;
        close(dir_fd);
        return rc;
    }
    if (s_lock_waiting(lock_fd) < 0) {
        rc = errno == EWOULDBLOCK ? -EBUSY : -errno;
        close(lock_fd);
        close(dir_fd);
        return rc;
    }
    spool_t *self = xcalloc(1, sizeof *self);
    self->dir = xstrdup(dir);
    self->dir_fd = dir_fd;
    self->lock_fd = lock_fd;
    self->next_seq = 1;
    rc = s_scan(self);
    if (rc < 0) {
        spool_destroy(&self);
        return rc;
    }
    *out = self;
    return 0;
}

int spool_open_memory(spool_t **out)
{
    if (!out)
        return -EINVAL;
    spool_t *self = xcalloc(1, sizeof *self);
    self->memory = true;
    self->dir_fd = self->lock_fd = -1;
    self->next_seq = 1;
    *out = self;
    return 0;
}

void spool_destroy(spool_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    spool_t *self = *self_p;
    for (size_t i = 0; i < self->n_entries; i++) {
        free(self->entries[i].id);
        free(self->entries[i].data);
    }
    free(self->entries);
    if (!self->memory) {
        close(self->lock_fd); /* releases the flock */
        close(self->dir_fd);
    }
    free(self->dir);
    free(self);
    *self_p = NULL;
}

/* A memory spool's put: a replaced entry counts as stored now, as on disk. */
static int s_memory_put(spool_t *self, const char *result_id, const uint8_t *data, size_t len)
{
    s_index_set(self, result_id, self->next_seq++);
    s_entry_t *e = s_find(self, result_id);
    free(e->data);
    e->data = xmalloc(len ? len : 1);
    if (len)
        memcpy(e->data, data, len);
    e->len = len;
    return 0;
}

int spool_put(spool_t *self, const char *result_id, const uint8_t *data, size_t len)
{
    if (!self || !spool_id_valid(result_id) || (!data && len > 0))
        return -EINVAL;
    if (len > SPOOL_DATA_MAX)
        return -EFBIG;
    if (self->memory)
        return s_memory_put(self, result_id, data, len);
    uint64_t seq = self->next_seq;
    uint8_t header[S_HEADER_LEN];
    memcpy(header, S_MAGIC, 8);
    s_put_le(header + 8, seq, 8);
    s_put_le(header + 16, fb_now_ms(), 8);
    s_put_le(header + 24, len, 8);
    s_put_le(header + 32, spool_crc32(data, len), 4);
    s_put_le(header + 36, spool_crc32(header, 36), 4);

    char temp[32];
    snprintf(temp, sizeof temp, S_TEMP_PREFIX "%llu", (unsigned long long)self->next_temp++);
    int fd =
        openat(self->dir_fd, temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -errno;
    int rc = s_write_all(fd, header, sizeof header);
    if (rc == 0 && len > 0)
        rc = s_write_all(fd, data, len);
    if (rc == 0 && fsync(fd) < 0)
        rc = -errno;
    if (close(fd) < 0 && rc == 0)
        rc = -errno;
    char *name = s_file_name(result_id);
    if (rc == 0 && renameat(self->dir_fd, temp, self->dir_fd, name) < 0)
        rc = -errno;
    if (rc < 0) {
        unlinkat(self->dir_fd, temp, 0);
        free(name);
        return rc;
    }
    free(name);
    self->next_seq++;
    s_index_set(self, result_id, seq);
    if (fsync(self->dir_fd) < 0)
        return -errno;
    return 0;
}

int spool_remove(spool_t *self, const char *result_id)
{
    if (!self || !spool_id_valid(result_id))
        return -EINVAL;
    if (self->memory) {
        if (!s_find(self, result_id))
            return -ENOENT;
        s_index_remove(self, result_id);
        return 0;
    }
    char *name = s_file_name(result_id);
    int rc = unlinkat(self->dir_fd, name, 0) < 0 ? -errno : 0;
    free(name);
    if (rc == 0 || rc == -ENOENT)
        s_index_remove(self, result_id);
    return rc;
}

static int s_seq_cmp(const void *a, const void *b)
{
    uint64_t x = ((const s_entry_t *)a)->seq, y = ((const s_entry_t *)b)->seq;
    return x < y ? -1 : x > y;
}

int spool_list(spool_t *self, char ***ids_out, size_t *n_out)
{
    if (!self || !ids_out || !n_out)
        return -EINVAL;
    *ids_out = NULL;
    *n_out = 0;
    if (self->n_entries == 0)
        return 0;
    s_entry_t *sorted = xmalloc(self->n_entries * sizeof *sorted);
    memcpy(sorted, self->entries, self->n_entries * sizeof *sorted);
    qsort(sorted, self->n_entries, sizeof *sorted, s_seq_cmp);
    char **ids = xmalloc(self->n_entries * sizeof *ids);
    for (size_t i = 0; i < self->n_entries; i++)
        ids[i] = xstrdup(sorted[i].id);
    free(sorted);
    *ids_out = ids;
    *n_out = self->n_entries;
    return 0;
}

void spool_ids_free(char **ids, size_t n)
{
    if (!ids)
        return;
    for (size_t i = 0; i < n; i++)
        free(ids[i]);
    free(ids);
}

int spool_get(spool_t *self, const char *result_id, uint8_t **data_out, size_t *len_out)
{
    if (!self || !spool_id_valid(result_id) || !data_out || !len_out)
        return -EINVAL;
    if (self->memory) {
        const s_entry_t *e = s_find(self, result_id);
        if (!e)
            return -ENOENT;
        *data_out = xmalloc(e->len ? e->len : 1);
        memcpy(*data_out, e->data, e->len);
        *len_out = e->len;
        return 0;
    }
    char *name = s_file_name(result_id);
    int rc = s_load(self, name, data_out, len_out, NULL);
    free(name);
    return rc;
}

size_t spool_count(const spool_t *self)
{
    return self ? self->n_entries : 0;
}
