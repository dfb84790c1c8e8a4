/* SPDX-License-Identifier: Apache-2.0 */
/* A file tree made from fuzz input, for the readers of procfs and sysfs trees (EDAC, inventory),
 * which take a root directory. The input is a list of entries, each beginning with a line that
 * starts with '@':
 *     @sys/devices/system/edac/mc/mc0/dimm0/dimm_label\n     a regular file; its bytes follow,
 *     CPU_SrcID#0_MC#0_Chan#0_DIMM#0\n                        up to the next line starting '@'
 *     @sys/class/net/eth0/\n                                  a directory
 *     @sys/class/net/eth0 -> ../../devices/pci0000:00/eth0\n  a symbolic link
 * Paths are relative to the root; a component is any bytes but '/' and '\n', never "." or "..".
 * A link target is relative and may only climb ("..") before it descends, never above the root,
 * and files and directories are never created through a link: nothing outside the root is read
 * or written. tests/fuzz/make-corpus.sh writes fixture trees in this form. */
#ifndef FB_FUZZ_TREE_H
#define FB_FUZZ_TREE_H

#include "fuzz.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZ_TREE_MAX_ENTRIES 512
#define FZ_TREE_MAX_DEPTH 24

static char *fz_tree_base; /* a private directory; the tree is fz_tree_base/root */
static char *fz_tree_root;
/* The directory the last entry went into (components joined by '/') and a descriptor of it:
 * entries of one directory usually follow each other. */
static char *fz_tree_last_dir;
static int fz_tree_last_fd = -1;

static int fz_tree_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Removes the tree (never following links). */
static void fz_tree_clear(void)
{
    if (fz_tree_last_fd >= 0)
        close(fz_tree_last_fd);
    fz_tree_last_fd = -1;
    free(fz_tree_last_dir);
    fz_tree_last_dir = NULL;
    nftw(fz_tree_root, fz_tree_rm_one, 32, FTW_DEPTH | FTW_PHYS);
}

static void fz_tree_atexit(void)
{
    fz_tree_clear();
    rmdir(fz_tree_base);
}

/* Once, from LLVMFuzzerInitialize. */
static void fz_tree_init(void)
{
    fz_tree_base = fz_private_dir("tree");
    fz_tree_root = xasprintf("%s/root", fz_tree_base);
    atexit(fz_tree_atexit);
}

/* Splits path[0..n) into components; false when one is empty, "." or "..", or too many. */
static bool fz_tree_split(const char *path, size_t n, char **comps, size_t *n_comps)
{
    size_t k = 0, i = 0;
    while (i < n) {
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        size_t len = j - i;
        if (len == 0 || len > 255 || (len == 1 && path[i] == '.') ||
            (len == 2 && path[i] == '.' && path[i + 1] == '.') || k == FZ_TREE_MAX_DEPTH ||
            memchr(path + i, '\0', len)) {
            for (size_t m = 0; m < k; m++)
                free(comps[m]);
            return false;
        }
        comps[k++] = xstrndup(path + i, len);
        i = j + 1;
    }
    *n_comps = k;
    return k > 0;
}

/* Opens (creating as needed) the directory made of comps[0..n) without following links. The
 * descriptor is the cache's: the caller does not close it. -1 when it cannot be made. */
static int fz_tree_open_dir(char **comps, size_t n)
{
    size_t klen = 1;
    for (size_t i = 0; i < n; i++)
        klen += strlen(comps[i]) + 1;
    char *key = xmalloc(klen);
    key[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strcat(key, "/");
        strcat(key, comps[i]);
    }
    if (fz_tree_last_fd >= 0 && !strcmp(key, fz_tree_last_dir)) {
        free(key);
        return fz_tree_last_fd;
    }
    /* Start from the cached directory when it is a parent of this one, else from the root. */
    size_t start = 0;
    int fd = -1;
    size_t llen = fz_tree_last_dir ? strlen(fz_tree_last_dir) : 0;
    if (fz_tree_last_fd >= 0 && llen > 0 && !strncmp(key, fz_tree_last_dir, llen) &&
        key[llen] == '/') {
        for (const char *c = fz_tree_last_dir; *c; c++)
            start += *c == '/';
        fd = dup(fz_tree_last_fd);
    } else {
        fd = open(fz_tree_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    for (size_t i = start; i < n && fd >= 0; i++) {
        int next = openat(fd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && mkdirat(fd, comps[i], 0700) == 0)
            next = openat(fd, comps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
    }
    if (fd < 0) {
        free(key);
        return -1;
    }
    if (fz_tree_last_fd >= 0)
        close(fz_tree_last_fd);
    free(fz_tree_last_dir);
    fz_tree_last_fd = fd;
    fz_tree_last_dir = key;
    return fd;
}

/* A link target that stays inside the root from a link at depth `depth` (its directory's
 * component count): leading ".." only, then plain components. */
static bool fz_tree_target_ok(const char *t, size_t n, size_t depth)
{
    size_t i = 0, up = 0;
    bool descending = false;
    if (n == 0 || t[0] == '/' || memchr(t, '\0', n))
        return false;
    while (i < n) {
        size_t j = i;
        while (j < n && t[j] != '/')
            j++;
        size_t len = j - i;
        bool dotdot = len == 2 && t[i] == '.' && t[i + 1] == '.';
        if (len == 0 || (len == 1 && t[i] == '.') || (dotdot && descending))
            return false;
        if (dotdot)
            up++;
        else
            descending = true;
        i = j + 1;
    }
    return up <= depth;
}

static void fz_tree_entry(const char *head, size_t head_len, const uint8_t *body, size_t body_len)
{
    const char *arrow = NULL;
    for (size_t i = 0; i + 4 <= head_len; i++)
        if (!memcmp(head + i, " -> ", 4)) {
            arrow = head + i;
            break;
        }
    size_t path_len = arrow ? (size_t)(arrow - head) : head_len;
    bool dir = !arrow && path_len > 0 && head[path_len - 1] == '/';
    if (dir)
        path_len--;
    char *comps[FZ_TREE_MAX_DEPTH];
    size_t n = 0;
    if (!fz_tree_split(head, path_len, comps, &n))
        return;
    int dfd = fz_tree_open_dir(comps, dir ? n : n - 1);
    if (dfd >= 0 && !dir) {
        const char *leaf = comps[n - 1];
        if (arrow) {
            const char *target = arrow + 4;
            size_t tlen = head_len - path_len - 4;
            if (fz_tree_target_ok(target, tlen, n - 1)) {
                char *t = xstrndup(target, tlen);
                symlinkat(t, dfd, leaf);
                free(t);
            }
        } else {
            int fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (fd >= 0) {
                size_t off = 0;
                while (off < body_len) {
                    ssize_t w = write(fd, body + off, body_len - off);
                    if (w <= 0)
                        break;
                    off += (size_t)w;
                }
                close(fd);
            }
        }
    }
    for (size_t i = 0; i < n; i++)
        free(comps[i]);
}

/* Makes the tree of data under fz_tree_root (an empty root for input without entries) and
 * returns the root. Call fz_tree_clear() when done with it. */
static const char *fz_tree_build(const uint8_t *data, size_t size)
{
    fz_tree_clear();
    FZ_CHECK(mkdir(fz_tree_root, 0700) == 0);
    const uint8_t *p = data, *end = data + size;
    /* Entries start at '@' at the very beginning or after a newline. */
    if (p < end && *p != '@') {
        const uint8_t *at = NULL;
        for (const uint8_t *q = p; q + 1 < end; q++)
            if (q[0] == '\n' && q[1] == '@') {
                at = q + 1;
                break;
            }
        p = at ? at : end;
    }
    for (size_t count = 0; p < end && count < FZ_TREE_MAX_ENTRIES; count++) {
        const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
        const uint8_t *head_end = nl ? nl : end;
        const uint8_t *body = nl ? nl + 1 : end;
        const uint8_t *next = end;
        for (const uint8_t *q = body; q < end; q++)
            if (*q == '@' && (q == body || q[-1] == '\n')) {
                next = q;
                break;
            }
        fz_tree_entry((const char *)p + 1, (size_t)(head_end - p - 1), body, (size_t)(next - body));
        p = next;
    }
    return fz_tree_root;
}

#endif
