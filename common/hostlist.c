/* SPDX-License-Identifier: Apache-2.0 */
/* Hostlist notation: expansion of "node[01-16,20],gpu-a[1-4]" into names and folding of names
 * back into that notation. Campaign files select nodes with it and reports print node sets with
 * it, so expansion is strict (every bad character, bracket or range is an error that names the
 * part) and bounded (an expression that would expand to more than FB_HOSTLIST_MAX_NAMES names is
 * rejected before anything is allocated for it). The rules follow ClusterShell's nodeset, which
 * the unit tests use as an oracle. */
#include "hostlist.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_DIGITS 18 /* fits in uint64_t with room for the step arithmetic */
#define S_SHOW_MAX 64   /* longest piece of an expression quoted in an error */

/* Copies text[0..len) into buf for an error message: printable ASCII as is, anything else as
 * \xHH, cut with "..." past S_SHOW_MAX characters so a message stays one short line. */
static const char *s_show(const char *text, size_t len, char *buf, size_t buflen)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 8 < buflen; i++) {
        unsigned char c = (unsigned char)text[i];
        if (i >= S_SHOW_MAX) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (c >= 0x20 && c < 0x7f)
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, buflen - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

static bool s_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.';
}

static bool s_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* ---- a set of borrowed strings mapping to a size_t (open addressing, FNV-1a) ---- */

typedef struct {
    const char **keys;
    size_t *vals;
    size_t cap, n;
} s_map_t;

static uint64_t s_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ull;
    }
    return h;
}

static void s_map_init(s_map_t *m, size_t expect)
{
    m->cap = 64;
    while (m->cap < expect * 2)
        m->cap *= 2;
    m->keys = xcalloc(m->cap, sizeof *m->keys);
    m->vals = xcalloc(m->cap, sizeof *m->vals);
    m->n = 0;
}

static void s_map_fini(s_map_t *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

static size_t s_map_slot(const s_map_t *m, const char *key)
{
    size_t i = (size_t)s_hash(key) & (m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key))
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void s_map_grow(s_map_t *m)
{
    s_map_t bigger = {xcalloc(m->cap * 2, sizeof *m->keys), xcalloc(m->cap * 2, sizeof *m->vals),
                      m->cap * 2, m->n};
    for (size_t i = 0; i < m->cap; i++) {
        if (m->keys[i]) {
            size_t j = s_map_slot(&bigger, m->keys[i]);
            bigger.keys[j] = m->keys[i];
            bigger.vals[j] = m->vals[i];
        }
    }
    s_map_fini(m);
    *m = bigger;
}

/* Returns true and the stored value when key is present; otherwise inserts key -> val. */
static bool s_map_get_or_put(s_map_t *m, const char *key, size_t val, size_t *found)
{
    size_t i = s_map_slot(m, key);
    if (m->keys[i]) {
        if (found)
            *found = m->vals[i];
        return true;
    }
    m->keys[i] = key;
    m->vals[i] = val;
    if (++m->n * 2 > m->cap)
        s_map_grow(m);
    return false;
}

/* ---- expansion ---- */

typedef struct {
    uint64_t lo, hi, step;
    int width; /* zero-padding width, 0 = none */
} s_range_t;

typedef struct {
    const char *lit; /* literal text, or NULL for a bracket group */
    size_t lit_len;
    s_range_t *ranges;
    size_t n_ranges;
} s_seg_t;

typedef struct {
    char **names;
    size_t n, cap;
    uint64_t total;  /* names generated so far, duplicates included */
    bool count_only; /* fb_hostlist_check: count the names, make none */
    s_map_t seen;
} s_out_t;

/* Parses a number of at most S_MAX_DIGITS digits at text[*pos]. */
static int s_number(const char *text, size_t end, size_t *pos, uint64_t *value, size_t *ndigits)
{
    size_t p = *pos;
    uint64_t v = 0;
    while (p < end && isdigit((unsigned char)text[p])) {
        if (p - *pos >= S_MAX_DIGITS)
            return -ERANGE;
        v = v * 10 + (uint64_t)(text[p] - '0');
        p++;
    }
    if (p == *pos)
        return -EINVAL;
    *ndigits = p - *pos;
    *value = v;
    *pos = p;
    return 0;
}

/* Parses one range text[b..e) (already trimmed) of the item shown as `item`. */
static int s_parse_range(const char *text, size_t b, size_t e, const char *item, s_range_t *r,
                         char *err, size_t errlen)
{
    char shown[S_SHOW_MAX * 4 + 8];
    s_show(text + b, e - b, shown, sizeof shown);
    if (b == e) {
        return fb_errf(err, errlen, -EINVAL, "empty range in '%s'", item);
    }
    size_t p = b, lo_digits, hi_digits;
    int rc = s_number(text, e, &p, &r->lo, &lo_digits);
    if (rc) {
        return fb_errf(err, errlen, -EINVAL, "%s '%s' in '%s'",
                       rc == -ERANGE ? "number too long in range" : "bad range", shown, item);
    }
    bool lo_padded = lo_digits > 1 && text[b] == '0';
    r->hi = r->lo;
    r->step = 1;
    r->width = lo_padded ? (int)lo_digits : 0;
    if (p == e)
        return 0;
    if (text[p] != '-') {
        return fb_errf(err, errlen, -EINVAL, "bad range '%s' in '%s'", shown, item);
    }
    size_t hi_start = ++p;
    rc = s_number(text, e, &p, &r->hi, &hi_digits);
    if (rc) {
        return fb_errf(err, errlen, -EINVAL, "%s '%s' in '%s'",
                       rc == -ERANGE ? "number too long in range" : "bad range", shown, item);
    }
    bool hi_padded = hi_digits > 1 && text[hi_start] == '0';
    if ((lo_padded || hi_padded) && lo_digits != hi_digits) {
        return fb_errf(err, errlen, -EINVAL,
                       "padding length mismatch in range '%s' of '%s' (zero-padded bounds need "
                       "the same number of digits)",
                       shown, item);
    }
    if (p < e && text[p] == '/') {
        size_t step_digits;
        p++;
        if (s_number(text, e, &p, &r->step, &step_digits) || r->step == 0) {
            return fb_errf(err, errlen, -EINVAL, "bad step in range '%s' of '%s'", shown, item);
        }
    }
    if (p != e) {
        return fb_errf(err, errlen, -EINVAL, "bad range '%s' in '%s'", shown, item);
    }
    if (r->lo > r->hi) {
        return fb_errf(err, errlen, -EINVAL, "reversed range '%s' in '%s'", shown, item);
    }
    return 0;
}

static uint64_t s_range_count(const s_range_t *r)
{
    return (r->hi - r->lo) / r->step + 1;
}

static void s_segs_free(s_seg_t *segs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(segs[i].ranges);
    free(segs);
}

/* Parses item text[b..e) into segments. */
static int s_parse_item(const char *text, size_t b, size_t e, s_seg_t **segs_out, size_t *n_out,
                        char *err, size_t errlen)
{
    char item[S_SHOW_MAX * 4 + 8];
    s_show(text + b, e - b, item, sizeof item);
    s_seg_t *segs = NULL;
    size_t n = 0, cap = 0;
    size_t p = b;
    while (p < e) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4;
            segs = xrealloc(segs, cap * sizeof *segs);
        }
        s_seg_t *seg = &segs[n];
        memset(seg, 0, sizeof *seg);
        if (text[p] != '[') {
            size_t q = p;
            while (q < e && text[q] != '[') {
                if (!s_name_char(text[q])) {
                    char c[16];
                    fb_errf(err, errlen, 0, "bad character '%s' in '%s'",
                            s_show(text + q, 1, c, sizeof c), item);
                    s_segs_free(segs, n);
                    return -EINVAL;
                }
                q++;
            }
            seg->lit = text + p;
            seg->lit_len = q - p;
            n++;
            p = q;
            continue;
        }
        size_t close = p + 1;
        while (close < e && text[close] != ']')
            close++;
        /* the tokenizer guarantees the bracket is closed inside the item */
        size_t rcap = 0;
        n++;
        for (size_t rb = p + 1; rb <= close;) {
            size_t re = rb;
            while (re < close && text[re] != ',')
                re++;
            size_t tb = rb, te = re;
            while (tb < te && s_space(text[tb]))
                tb++;
            while (te > tb && s_space(text[te - 1]))
                te--;
            if (seg->n_ranges == rcap) {
                rcap = rcap ? rcap * 2 : 4;
                seg->ranges = xrealloc(seg->ranges, rcap * sizeof *seg->ranges);
            }
            if (s_parse_range(text, tb, te, item, &seg->ranges[seg->n_ranges], err, errlen)) {
                s_segs_free(segs, n);
                return -EINVAL;
            }
            seg->n_ranges++;
            rb = re + 1;
        }
        p = close + 1;
    }
    *segs_out = segs;
    *n_out = n;
    return 0;
}

static void s_out_add(s_out_t *out, const char *name, size_t len)
{
    char *copy = xstrndup(name, len);
    if (s_map_get_or_put(&out->seen, copy, out->n, NULL)) {
        free(copy);
        return;
    }
    if (out->n == out->cap) {
        out->cap = out->cap ? out->cap * 2 : 16;
        out->names = xrealloc(out->names, out->cap * sizeof *out->names);
    }
    out->names[out->n++] = copy;
}

/* Appends the number with its padding to buf at *len. */
static void s_put_number(char **buf, size_t *len, size_t *cap, uint64_t v, int width)
{
    char digits[32];
    int k = snprintf(digits, sizeof digits, "%0*llu", width, (unsigned long long)v);
    if (*len + (size_t)k + 1 > *cap) {
        *cap = (*len + (size_t)k + 1) * 2;
        *buf = xrealloc(*buf, *cap);
    }
    memcpy(*buf + *len, digits, (size_t)k);
    *len += (size_t)k;
}

/* Expands one item text[b..e) into out. */
static int s_expand_item(const char *text, size_t b, size_t e, s_out_t *out, char *err,
                         size_t errlen)
{
    s_seg_t *segs;
    size_t n_segs;
    if (s_parse_item(text, b, e, &segs, &n_segs, err, errlen))
        return -EINVAL;
    /* count first, so a huge expansion is refused before it is made */
    uint64_t count = 1;
    size_t n_groups = 0, fixed_len = 0;
    for (size_t i = 0; i < n_segs; i++) {
        if (segs[i].lit) {
            fixed_len += segs[i].lit_len;
            continue;
        }
        n_groups++;
        uint64_t group = 0;
        for (size_t r = 0; r < segs[i].n_ranges && group <= FB_HOSTLIST_MAX_NAMES; r++)
            group += s_range_count(&segs[i].ranges[r]);
        count = group > FB_HOSTLIST_MAX_NAMES ? FB_HOSTLIST_MAX_NAMES + 1ull : count * group;
        if (count > FB_HOSTLIST_MAX_NAMES)
            count = FB_HOSTLIST_MAX_NAMES + 1ull;
    }
    if (out->total + count > FB_HOSTLIST_MAX_NAMES) {
        char item[S_SHOW_MAX * 4 + 8];
        fb_errf(err, errlen, 0, "'%s' expands to more than %u names",
                s_show(text + b, e - b, item, sizeof item), FB_HOSTLIST_MAX_NAMES);
        s_segs_free(segs, n_segs);
        return -EINVAL;
    }
    out->total += count;
    if (out->count_only) {
        s_segs_free(segs, n_segs);
        return 0;
    }

    /* odometer over the bracket groups: range index and value of each, last group fastest */
    size_t *ri = xcalloc(n_segs, sizeof *ri);
    uint64_t *val = xcalloc(n_segs, sizeof *val);
    for (size_t i = 0; i < n_segs; i++)
        if (!segs[i].lit)
            val[i] = segs[i].ranges[0].lo;
    size_t cap = fixed_len + 64, len;
    char *buf = xmalloc(cap);
    for (;;) {
        len = 0;
        for (size_t i = 0; i < n_segs; i++) {
            if (segs[i].lit) {
                if (len + segs[i].lit_len + 1 > cap) {
                    cap = (len + segs[i].lit_len + 1) * 2;
                    buf = xrealloc(buf, cap);
                }
                memcpy(buf + len, segs[i].lit, segs[i].lit_len);
                len += segs[i].lit_len;
            } else {
                s_put_number(&buf, &len, &cap, val[i], segs[i].ranges[ri[i]].width);
            }
        }
        s_out_add(out, buf, len);
        if (n_groups == 0)
            break;
        size_t g = n_segs;
        bool done = true;
        while (g-- > 0) {
            if (segs[g].lit)
                continue;
            const s_range_t *r = &segs[g].ranges[ri[g]];
            if (r->hi - val[g] >= r->step) {
                val[g] += r->step;
                done = false;
                break;
            }
            if (ri[g] + 1 < segs[g].n_ranges) {
                val[g] = segs[g].ranges[++ri[g]].lo;
                done = false;
                break;
            }
            ri[g] = 0;
            val[g] = segs[g].ranges[0].lo;
        }
        if (done)
            break;
    }
    free(buf);
    free(ri);
    free(val);
    s_segs_free(segs, n_segs);
    return 0;
}

/* fb_hostlist_expand into out (count_only set: fb_hostlist_check). */
static int s_expand(const char *expr, s_out_t *out, char *err, size_t errlen);

int fb_hostlist_expand(const char *expr, char ***names_out, size_t *n_out, char *err, size_t errlen)
{
    *names_out = NULL;
    *n_out = 0;
    s_out_t out = {0};
    s_map_init(&out.seen, 16);
    int rc = s_expand(expr, &out, err, errlen);
    s_map_fini(&out.seen);
    if (rc) {
        fb_hostlist_free(out.names, out.n);
        return rc;
    }
    *names_out = out.names;
    *n_out = out.n;
    return 0;
}

int fb_hostlist_check(const char *expr, size_t *n_out, char *err, size_t errlen)
{
    s_out_t out = {.count_only = true};
    int rc = s_expand(expr, &out, err, errlen);
    if (n_out)
        *n_out = rc ? 0 : (size_t)out.total;
    return rc;
}

static int s_expand(const char *expr, s_out_t *out, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!expr)
        expr = "";
    size_t len = strlen(expr), p = 0, items = 0;
    bool after_comma = false;
    int rc = 0;
    char shown[S_SHOW_MAX * 4 + 8];
    for (;;) {
        while (p < len && s_space(expr[p]))
            p++;
        if (p == len) {
            if (after_comma) {
                rc = fb_errf(err, errlen, -EINVAL, "empty name after the last ',' in '%s'",
                             s_show(expr, len, shown, sizeof shown));
            } else if (items == 0) {
                rc = fb_errf(err, errlen, -EINVAL, "empty hostlist");
            }
            break;
        }
        if (expr[p] == ',') {
            rc = fb_errf(err, errlen, -EINVAL, "empty name before ',' at position %zu of '%s'",
                         p + 1, s_show(expr, len, shown, sizeof shown));
            break;
        }
        size_t b = p;
        int depth = 0;
        while (p < len && (depth > 0 || (expr[p] != ',' && !s_space(expr[p])))) {
            if (expr[p] == '[') {
                if (depth > 0) {
                    rc = fb_errf(err, errlen, -EINVAL, "nested '[' in '%s'",
                                 s_show(expr + b, len - b, shown, sizeof shown));
                    break;
                }
                depth = 1;
            } else if (expr[p] == ']') {
                if (depth == 0) {
                    rc = fb_errf(err, errlen, -EINVAL, "unbalanced ']' in '%s'",
                                 s_show(expr + b, p + 1 - b, shown, sizeof shown));
                    break;
                }
                depth = 0;
            }
            p++;
        }
        if (rc)
            break;
        if (depth > 0) {
            rc = fb_errf(err, errlen, -EINVAL, "unbalanced '[' in '%s'",
                         s_show(expr + b, p - b, shown, sizeof shown));
            break;
        }
        rc = s_expand_item(expr, b, p, out, err, errlen);
        if (rc)
            break;
        items++;
        while (p < len && s_space(expr[p]))
            p++;
        after_comma = p < len && expr[p] == ',';
        if (after_comma)
            p++;
    }
    return rc;
}

void fb_hostlist_free(char **names, size_t n)
{
    if (!names)
        return;
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* ---- compression ---- */

typedef struct {
    uint64_t value;
    size_t order; /* index of the name in the input */
    int digits;
    bool padded;
    int width; /* the padding width of the group it folds into */
} s_member_t;

typedef struct {
    const char *name; /* the first name of the family; prefix and suffix are slices of it */
    size_t prefix_len, suffix_off;
    s_member_t *members;
    size_t n, cap;
} s_family_t;

typedef struct {
    size_t family; /* SIZE_MAX: a name without digits */
    int width;
    size_t order;      /* first appearance */
    const char *plain; /* the name, for names without digits */
} s_unit_t;

typedef struct {
    char *buf;
    size_t len, cap;
} s_text_t;

static void s_text_put(s_text_t *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = (t->len + n + 1) * 2;
        t->buf = xrealloc(t->buf, t->cap);
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void s_text_num(s_text_t *t, uint64_t v, int width)
{
    char digits[32];
    int k = snprintf(digits, sizeof digits, "%0*llu", width, (unsigned long long)v);
    s_text_put(t, digits, (size_t)k);
}

static int s_member_cmp(const void *a, const void *b)
{
    const s_member_t *x = a, *y = b;
    if (x->width != y->width)
        return x->width < y->width ? -1 : 1;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    return 0;
}

static int s_unit_cmp(const void *a, const void *b)
{
    const s_unit_t *x = a, *y = b;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Writes the members m[0..n) of one group (same width, sorted by value) as prefix[ranges]suffix. */
static void s_emit_group(s_text_t *t, const s_family_t *f, const s_member_t *m, size_t n)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || m[i].value != m[i - 1].value)
            distinct++;
    int w = m[0].width;
    s_text_put(t, f->name, f->prefix_len);
    if (distinct > 1)
        s_text_put(t, "[", 1);
    /* 10^w: a range whose low bound is zero-padded must stay below it (same digit count) */
    uint64_t pad_limit = UINT64_MAX;
    if (w > 0 && w < 20) {
        pad_limit = 1;
        for (int k = 0; k < w; k++)
            pad_limit *= 10;
    }
    bool first = true;
    for (size_t i = 0; i < n;) {
        uint64_t lo = m[i].value, hi = lo;
        size_t j = i + 1;
        for (; j < n; j++) {
            if (m[j].value == hi)
                continue;
            if (m[j].value != hi + 1 || (lo < pad_limit / 10 && m[j].value >= pad_limit))
                break;
            hi = m[j].value;
        }
        /* lo is padded when it has fewer digits than w: then hi must have exactly w digits */
        if (!first)
            s_text_put(t, ",", 1);
        first = false;
        s_text_num(t, lo, w);
        if (hi != lo) {
            s_text_put(t, "-", 1);
            s_text_num(t, hi, w);
        }
        i = j;
    }
    if (distinct > 1)
        s_text_put(t, "]", 1);
    s_text_put(t, f->name + f->suffix_off, strlen(f->name + f->suffix_off));
}

char *fb_hostlist_compress(const char *const *names, size_t n)
{
    s_map_t families_by_key, plain_seen;
    s_map_init(&families_by_key, 16);
    s_map_init(&plain_seen, 16);
    s_family_t *fam = NULL;
    size_t n_fam = 0, cap_fam = 0;
    char **keys = NULL; /* owned family keys */
    s_unit_t *units = NULL;
    size_t n_units = 0, cap_units = 0;

    for (size_t i = 0; i < n; i++) {
        const char *name = names[i];
        if (!name || !*name)
            continue;
        size_t len = strlen(name), de = len;
        while (de > 0 && !isdigit((unsigned char)name[de - 1]))
            de--;
        size_t ds = de;
        while (ds > 0 && isdigit((unsigned char)name[ds - 1]))
            ds--;
        if (de == 0 || de - ds > S_MAX_DIGITS) {
            if (!s_map_get_or_put(&plain_seen, name, i, NULL)) {
                if (n_units == cap_units) {
                    cap_units = cap_units ? cap_units * 2 : 16;
                    units = xrealloc(units, cap_units * sizeof *units);
                }
                units[n_units++] = (s_unit_t){SIZE_MAX, 0, i, name};
            }
            continue;
        }
        char *key = xasprintf("%zu:%.*s%s", ds, (int)ds, name, name + de);
        size_t f;
        if (s_map_get_or_put(&families_by_key, key, n_fam, &f)) {
            free(key);
        } else {
            if (n_fam == cap_fam) {
                cap_fam = cap_fam ? cap_fam * 2 : 16;
                fam = xrealloc(fam, cap_fam * sizeof *fam);
                keys = xrealloc(keys, cap_fam * sizeof *keys);
            }
            f = n_fam;
            keys[n_fam] = key;
            fam[n_fam++] = (s_family_t){name, ds, de, NULL, 0, 0};
        }
        s_family_t *fp = &fam[f];
        if (fp->n == fp->cap) {
            fp->cap = fp->cap ? fp->cap * 2 : 8;
            fp->members = xrealloc(fp->members, fp->cap * sizeof *fp->members);
        }
        uint64_t v = 0;
        for (size_t k = ds; k < de; k++)
            v = v * 10 + (uint64_t)(name[k] - '0');
        int digits = (int)(de - ds);
        fp->members[fp->n++] = (s_member_t){v, i, digits, digits > 1 && name[ds] == '0', 0};
    }

    /* widths: a padded number keeps its own; an unpadded one joins the widest padded group of
     * its family it fits (width <= its digits), or the unpadded group */
    for (size_t f = 0; f < n_fam; f++) {
        s_family_t *fp = &fam[f];
        int widths[S_MAX_DIGITS + 1] = {0};
        for (size_t k = 0; k < fp->n; k++)
            if (fp->members[k].padded)
                widths[fp->members[k].digits] = 1;
        for (size_t k = 0; k < fp->n; k++) {
            s_member_t *m = &fp->members[k];
            if (m->padded) {
                m->width = m->digits;
                continue;
            }
            m->width = 0;
            for (int w = m->digits; w > 1; w--) {
                if (widths[w]) {
                    m->width = w;
                    break;
                }
            }
        }
        qsort(fp->members, fp->n, sizeof *fp->members, s_member_cmp);
        for (size_t k = 0; k < fp->n;) {
            size_t j = k, order = fp->members[k].order;
            while (j < fp->n && fp->members[j].width == fp->members[k].width) {
                if (fp->members[j].order < order)
                    order = fp->members[j].order;
                j++;
            }
            if (n_units == cap_units) {
                cap_units = cap_units ? cap_units * 2 : 16;
                units = xrealloc(units, cap_units * sizeof *units);
            }
            units[n_units++] = (s_unit_t){f, fp->members[k].width, order, NULL};
            k = j;
        }
    }
    if (n_units > 1)
        qsort(units, n_units, sizeof *units, s_unit_cmp);

    s_text_t t = {xstrdup(""), 0, 1};
    for (size_t u = 0; u < n_units; u++) {
        if (u)
            s_text_put(&t, ",", 1);
        if (units[u].family == SIZE_MAX) {
            s_text_put(&t, units[u].plain, strlen(units[u].plain));
            continue;
        }
        const s_family_t *fp = &fam[units[u].family];
        size_t k = 0;
        while (fp->members[k].width != units[u].width)
            k++;
        size_t j = k;
        while (j < fp->n && fp->members[j].width == units[u].width)
            j++;
        s_emit_group(&t, fp, fp->members + k, j - k);
    }

    for (size_t f = 0; f < n_fam; f++) {
        free(fam[f].members);
        free(keys[f]);
    }
    free(fam);
    free(keys);
    free(units);
    s_map_fini(&families_by_key);
    s_map_fini(&plain_seen);
    return t.buf;
}
