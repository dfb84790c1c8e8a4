/* SPDX-License-Identifier: Apache-2.0 */
/* The bounded file loader (fileload.h). Opening with O_NONBLOCK and checking the kind of file on
 * the open descriptor (fstat, not stat then open) is what makes it safe to point at anything:
 * a FIFO opens at once and is refused, /dev/zero is refused before it is read, and the size
 * limit holds for files that grow while they are read and for /proc files that report size 0. */
#include "fileload.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *fb_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG:
        return "a regular file";
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a FIFO";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFSOCK:
        return "a socket";
    case S_IFLNK:
        return "a symbolic link";
    default:
        return "an unknown kind";
    }
}

static int s_error(char **error, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int s_error(char **error, int rc, const char *fmt, ...)
{
    if (error) {
        va_list ap;
        va_start(ap, fmt);
        *error = xvasprintf(fmt, ap);
        va_end(ap);
        for (char *p = *error; *p; p++) /* one line, whatever the path holds */
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
    }
    return rc;
}

int fb_load_file_stat(const char *path, size_t max, char **text, size_t *len, struct stat *st,
                      char **error)
{
    *text = NULL;
    if (len)
        *len = 0;
    if (error)
        *error = NULL;
    if (!path || !*path)
        return s_error(error, -EINVAL, "no file name; expected the path of a file");
    if (max > SIZE_MAX / 4)
        max = SIZE_MAX / 4;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;
        return s_error(error, -e, "%s: cannot read: %s", path, strerror(e));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return s_error(error, -e, "%s: cannot read: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return s_error(error, -EINVAL, "%s: not a regular file (%s)", path,
                       fb_file_kind((unsigned)sb.st_mode));
    }
    if (sb.st_size > 0 && (unsigned long long)sb.st_size > (unsigned long long)max) {
        close(fd);
        return s_error(error, -EFBIG, "%s: larger than %zu bytes", path,
                       max);
    }
    /* st_size is a hint (0 for /proc files, stale for a file being written): read to the end,
     * but never more than max + 1 bytes. */
    size_t cap = sb.st_size > 0 ? (size_t)sb.st_size + 1 : 4096;
    if (cap > max + 1)
        cap = max + 1;
    char *buf = xmalloc(cap + 1);
    size_t got = 0;
    int rc = 0;
    for (;;) {
        if (got == cap) {
            if (cap > max)
                break;
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            buf = xrealloc(buf, cap + 1);
        }
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (rc) {
        free(buf);
        return s_error(error, rc, "%s: cannot read: %s", path, strerror(-rc));
    }
    if (got > max) {
        free(buf);
        return s_error(error, -EFBIG, "%s: larger than %zu bytes", path,
                       max);
    }
    buf[got] = '\0';
    *text = buf;
    if (len)
        *len = got;
    if (st)
        *st = sb;
    return 0;
}

int fb_load_file(const char *path, size_t max, char **text, size_t *len, char **error)
{
    return fb_load_file_stat(path, max, text, len, NULL, error);
}
