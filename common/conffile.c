/* SPDX-License-Identifier: Apache-2.0 */
/* "key = value" configuration files (conffile.h). Small and strict on purpose: a site
 * configuration decides which programs run as root on every node, so a typo is an error that
 * names the line and the key instead of a setting silently ignored, and a file that someone
 * other than its owner could have changed is refused before it is believed. */
#include "conffile.h"

#include "fileload.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fb_conf {
    char *source;
    char **keys, **values;
    int *lines;
    size_t n;
};

static char *s_one_line(char *msg)
{
    for (char *p = msg; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return msg;
}

static int s_fail(char **error_out, const char *source, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int s_fail(char **error_out, const char *source, int line, const char *fmt, ...)
{
    if (error_out) {
        va_list ap;
        va_start(ap, fmt);
        char *what = xvasprintf(fmt, ap);
        va_end(ap);
        *error_out = s_one_line(xasprintf("%s:%d: %s", source, line, what));
        free(what);
    }
    return -EINVAL;
}

static bool s_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool s_key_ok(const char *key)
{
    size_t n = strlen(key);
    return n > 0 && n <= 64 && strspn(key, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static char *s_key_list(const char *const *keys)
{
    char *list = xstrdup("");
    for (size_t i = 0; keys[i]; i++) {
        char *next = xasprintf("%s%s%s", list, i ? ", " : "", keys[i]);
        free(list);
        list = next;
    }
    return list;
}

void fb_conf_destroy(fb_conf_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_conf_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        free(self->keys[i]);
        free(self->values[i]);
    }
    free(self->keys);
    free(self->values);
    free(self->lines);
    free(self->source);
    free(self);
    *self_p = NULL;
}

/* One non-comment line, trimmed (line[0..len) holds no newline). */
static int s_parse_line(fb_conf_t *c, const char *const *keys, char *line, int lineno,
                        char **error_out)
{
    char shown[256];
    char *eq = strchr(line, '=');
    if (!eq) {
        size_t w = strcspn(line, " \t");
        line[w] = '\0';
        return s_fail(error_out, c->source, lineno,
                      "no '=' after '%s'; expected a setting as key = value",
                      fb_show_value(line, shown, sizeof shown));
    }
    char *key = line, *value = eq + 1;
    char *end = eq;
    while (end > key && s_blank(end[-1]))
        end--;
    *end = '\0';
    if (!s_key_ok(key))
        return s_fail(error_out, c->source, lineno,
                      "'%s' is not a key; expected a setting as key = value, the key in lower "
                      "case letters, digits and '_'",
                      fb_show_value(key, shown, sizeof shown));
    bool known = false;
    for (size_t i = 0; keys[i] && !known; i++)
        known = !strcmp(keys[i], key);
    if (!known) {
        char *list = s_key_list(keys);
        s_fail(error_out, c->source, lineno, "%s: unknown key; expected one of %s", key, list);
        free(list);
        return -EINVAL;
    }
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->keys[i], key))
            return s_fail(error_out, c->source, lineno,
                          "%s: given twice (also on line %d); expected each key once", key,
                          c->lines[i]);
    while (s_blank(*value))
        value++;
    /* A '#' after a blank starts a comment. */
    for (char *p = value; *p; p++)
        if (*p == '#' && (p == value || s_blank(p[-1]))) {
            *p = '\0';
            break;
        }
    size_t vlen = strlen(value);
    while (vlen && s_blank(value[vlen - 1]))
        value[--vlen] = '\0';
    if (vlen == 0)
        return s_fail(error_out, c->source, lineno,
                      "%s: no value; expected %s = VALUE, or the line left out for the default",
                      key, key);
    if (vlen > FB_CONF_MAX_VALUE)
        return s_fail(error_out, c->source, lineno, "%s: a value of %zu bytes; expected at most %d",
                      key, vlen, FB_CONF_MAX_VALUE);
    for (const char *p = value; *p; p++)
        if (((unsigned char)*p < 0x20 && *p != '\t') || *p == 0x7f)
            return s_fail(error_out, c->source, lineno,
                          "%s: the value holds a control character (0x%02x); expected text on "
                          "one line",
                          key, (unsigned char)*p);
    c->keys = xrealloc(c->keys, (c->n + 1) * sizeof *c->keys);
    c->values = xrealloc(c->values, (c->n + 1) * sizeof *c->values);
    c->lines = xrealloc(c->lines, (c->n + 1) * sizeof *c->lines);
    c->keys[c->n] = xstrdup(key);
    c->values[c->n] = xstrdup(value);
    c->lines[c->n] = lineno;
    c->n++;
    return 0;
}

int fb_conf_parse(const char *text, size_t len, const char *source, const char *const *keys,
                  fb_conf_t **out, char **error_out)
{
    *out = NULL;
    if (error_out)
        *error_out = NULL;
    fb_conf_t *c = xcalloc(1, sizeof *c);
    c->source = xstrdup(source ? source : "<config>");
    int rc = 0;
    int lineno = 0;
    for (size_t pos = 0; text && pos < len && rc == 0;) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        lineno++;
        if (memchr(text + pos, '\0', n)) {
            rc = s_fail(error_out, c->source, lineno,
                        "a NUL byte; expected a text file of key = value lines");
            break;
        }
        char *line = xstrndup(text + pos, n);
        pos += n + (nl ? 1 : 0);
        size_t l = strlen(line);
        if (l && line[l - 1] == '\r')
            line[--l] = '\0';
        char *s = line;
        while (s_blank(*s))
            s++;
        if (*s && *s != '#')
            rc = s_parse_line(c, keys, s, lineno, error_out);
        free(line);
    }
    if (rc) {
        fb_conf_destroy(&c);
        return rc;
    }
    *out = c;
    return 0;
}

int fb_conf_load(const char *path, const char *const *keys, fb_conf_t **out, char **error_out)
{
    *out = NULL;
    if (error_out)
        *error_out = NULL;
    char *text = NULL;
    size_t len = 0;
    struct stat st;
    int rc = fb_load_file_stat(path, FB_CONF_MAX_BYTES, &text, &len, &st, error_out);
    if (rc)
        return rc;
    uid_t me = geteuid();
    if (st.st_uid != 0 && st.st_uid != me) {
        if (error_out)
            *error_out = s_one_line(xasprintf(
                "%s: owned by uid %u; expected a file owned by root or by the user running this "
                "program (uid %u): it decides which programs run",
                path, (unsigned)st.st_uid, (unsigned)me));
        rc = -EPERM;
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        if (error_out)
            *error_out = s_one_line(
                xasprintf("%s: writable by %s (mode %04o); expected a file only its owner can "
                          "change (chmod go-w %s): it decides which programs run",
                          path,
                          (st.st_mode & S_IWGRP) && (st.st_mode & S_IWOTH) ? "group and others"
                          : (st.st_mode & S_IWGRP)                         ? "its group"
                                                                           : "others",
                          (unsigned)(st.st_mode & 07777), path));
        rc = -EPERM;
    } else {
        rc = fb_conf_parse(text, len, path, keys, out, error_out);
    }
    free(text);
    return rc;
}

static ssize_t s_index(const fb_conf_t *self, const char *key)
{
    for (size_t i = 0; self && key && i < self->n; i++)
        if (!strcmp(self->keys[i], key))
            return (ssize_t)i;
    return -1;
}

const char *fb_conf_get(const fb_conf_t *self, const char *key)
{
    ssize_t i = s_index(self, key);
    return i < 0 ? NULL : self->values[i];
}

char *fb_conf_error(const fb_conf_t *self, const char *key, const char *fmt, ...)
{
    ssize_t i = s_index(self, key);
    va_list ap;
    va_start(ap, fmt);
    char *what = xvasprintf(fmt, ap);
    va_end(ap);
    char *msg = xasprintf("%s:%d: %s: %s", self ? self->source : "<config>",
                          i < 0 ? 0 : self->lines[i], key, what);
    free(what);
    return s_one_line(msg);
}

int fb_conf_get_bool(const fb_conf_t *self, const char *key, bool dflt, bool *out, char **error_out)
{
    if (error_out)
        *error_out = NULL;
    const char *v = fb_conf_get(self, key);
    *out = dflt;
    if (!v)
        return 0;
    if (fb_parse_bool(v, out) == 0)
        return 0;
    *out = dflt;
    if (error_out) {
        char shown[256];
        *error_out = fb_conf_error(self, key, "'%s' is not yes or no; expected yes or no",
                                   fb_show_value(v, shown, sizeof shown));
    }
    return -EINVAL;
}
