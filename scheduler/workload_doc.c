/* SPDX-License-Identifier: Apache-2.0 */
/* The workload schema written out for people: the parameter tables of docs/campaign-file.md
 * (Markdown) and `fleetburn workloads [NAME]` (text). Both come from the one table in
 * workload.c, so the documentation cannot drift from what the campaign parser accepts; a test
 * compares the committed page with this output (tests/integration/test_docs_generated.sh). */
#include "workload_doc.h"

#include "common/util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_TEST_ONLY "test-only: "
/* ENUM lists longer than this are written under the table instead of in its type column. */
#define S_INLINE_CHOICES_MAX 6

/* A memory stream for the text; like the x* allocators, out of memory is not recoverable. */
static FILE *s_open_text(char **text, size_t *len)
{
    FILE *out = open_memstream(text, len);
    if (!out) {
        fputs("fleetburn: out of memory writing the workload schema\n", stderr);
        abort();
    }
    return out;
}

static size_t s_count_choices(const char *const *choices)
{
    size_t n = 0;
    while (choices && choices[n])
        n++;
    return n;
}

static void s_write_choices(FILE *out, const char *const *choices, const char *quote)
{
    for (size_t i = 0; choices && choices[i]; i++)
        fprintf(out, "%s%s%s%s", i ? ", " : "", quote, choices[i], quote);
}

static void s_write_bounds(FILE *out, const fb_param_spec_t *p)
{
    if (p->min == 0 && p->max == 0)
        return;
    if (p->max == UINT64_MAX || p->max == 0)
        fprintf(out, " from %" PRIu64, p->min);
    else
        fprintf(out, " %" PRIu64 " – %" PRIu64, p->min, p->max);
}

/* The type column: what a value looks like, with bounds and short choice lists. */
static void s_write_type(FILE *out, const fb_param_spec_t *p, const char *quote)
{
    size_t n_choices = s_count_choices(p->choices);
    switch (p->type) {
    case FB_PARAM_BYTES:
        fputs("byte size", out);
        break;
    case FB_PARAM_BYTES_OR_PERCENT:
        fputs("byte size or percentage", out);
        break;
    case FB_PARAM_UINT:
        fputs("integer", out);
        s_write_bounds(out, p);
        break;
    case FB_PARAM_UINT_OR_AUTO:
        fprintf(out, "%sauto%s or integer", quote, quote);
        s_write_bounds(out, p);
        break;
    case FB_PARAM_DOUBLE:
        fputs("number", out);
        break;
    case FB_PARAM_DURATION:
        fputs("duration", out);
        break;
    case FB_PARAM_BOOL:
        fputs("boolean", out);
        break;
    case FB_PARAM_ENUM:
        if (n_choices > S_INLINE_CHOICES_MAX) {
            fputs("one of the names below", out);
        } else {
            fputs("one of ", out);
            s_write_choices(out, p->choices, quote);
        }
        break;
    case FB_PARAM_ENUM_LIST:
        if (n_choices > S_INLINE_CHOICES_MAX) {
            fprintf(out, "%sall%s or a list of the names below", quote, quote);
        } else {
            fprintf(out, "%sall%s or a list of ", quote, quote);
            s_write_choices(out, p->choices, quote);
        }
        break;
    case FB_PARAM_STRING:
        fputs("text", out);
        break;
    }
}

/* Table cells may not hold a '|' or a line break; the help texts have neither, but a stray one
 * would silently break the table, so it is written escaped. */
static void s_write_cell(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            fputs("\\|", out);
        else if (*c == '\n')
            fputc(' ', out);
        else
            fputc(*c, out);
    }
}

static void s_write_markdown_row(FILE *out, const fb_param_spec_t *p)
{
    fprintf(out, "| `%s` | ", p->name);
    s_write_type(out, p, "`");
    fputs(" | ", out);
    if (p->default_value)
        fprintf(out, "`%s`", p->default_value);
    else
        fputs("none", out);
    fputs(" | ", out);
    const char *help = p->help ? p->help : "";
    if (p->fault_injection) {
        fputs("**test-only**: ", out);
        if (!strncmp(help, S_TEST_ONLY, strlen(S_TEST_ONLY)))
            help += strlen(S_TEST_ONLY);
    }
    s_write_cell(out, help);
    fputs(" |\n", out);
}

/* Continues text on lines of at most width columns, each indented by indent spaces; the first
 * line continues where the cursor is (column col). */
static void s_write_wrapped(FILE *out, const char *text, size_t col, size_t indent, size_t width)
{
    const char *p = text;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t word = strcspn(p, " ");
        if (word == 0)
            break;
        if (col > indent && col + 1 + word > width) {
            fprintf(out, "\n%*s", (int)indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, word, out);
        col += word;
        p += word;
    }
    fputc('\n', out);
}

static void s_write_long_choices(FILE *out, const fb_workload_spec_t *w, bool markdown)
{
    for (size_t i = 0; i < w->n_params; i++) {
        const fb_param_spec_t *p = &w->params[i];
        if ((p->type != FB_PARAM_ENUM && p->type != FB_PARAM_ENUM_LIST) ||
            s_count_choices(p->choices) <= S_INLINE_CHOICES_MAX)
            continue;
        if (markdown) {
            fprintf(out, "\n`%s` names: ", p->name);
            s_write_choices(out, p->choices, "`");
            fputs(p->type == FB_PARAM_ENUM_LIST ? ". `all` must stand alone.\n" : ".\n", out);
        } else {
            char *list = NULL;
            size_t len = 0;
            FILE *mem = s_open_text(&list, &len);
            fprintf(mem, "%s names:", p->name);
            for (size_t c = 0; p->choices[c]; c++)
                fprintf(mem, " %s%s", p->choices[c], p->choices[c + 1] ? "," : "");
            fclose(mem);
            fputs("\n  ", out);
            s_write_wrapped(out, list, 2, 6, 78);
            free(list);
        }
    }
}

static void s_write_markdown_workload(FILE *out, const fb_workload_spec_t *w)
{
    char scopes[256];
    fprintf(out, "### `%s` — %s\n\n", w->name, w->summary);
    fprintf(out, "Runs in a stage with %s.\n\n", fb_workload_scopes(w, scopes, sizeof scopes));
    fputs("| parameter | type | default | meaning |\n|---|---|---|---|\n", out);
    for (size_t i = 0; i < w->n_params; i++)
        s_write_markdown_row(out, &w->params[i]);
    s_write_long_choices(out, w, true);
}

char *fb_workload_markdown(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = s_open_text(&text, &len);
    fputs(FB_WORKLOAD_DOC_BEGIN "\n", out);
    for (size_t i = 0; i < fb_workload_count(); i++) {
        fputc('\n', out);
        s_write_markdown_workload(out, fb_workload_at(i));
    }
    fputs("\n" FB_WORKLOAD_DOC_END "\n", out);
    fclose(out);
    return text;
}

char *fb_workload_listing(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = s_open_text(&text, &len);
    for (size_t i = 0; i < fb_workload_count(); i++) {
        const fb_workload_spec_t *w = fb_workload_at(i);
        fprintf(out, "%-11s %s\n", w->name, w->summary);
    }
    fclose(out);
    return text;
}

char *fb_workload_describe(const fb_workload_spec_t *w, bool with_test_only)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = s_open_text(&text, &len);
    char scopes[256];
    fprintf(out, "%s: %s\nruns in a stage with %s\n\nparameters:\n", w->name, w->summary,
            fb_workload_scopes(w, scopes, sizeof scopes));
    for (size_t i = 0; i < w->n_params; i++) {
        const fb_param_spec_t *p = &w->params[i];
        if (p->fault_injection && !with_test_only)
            continue;
        fprintf(out, "  %s (", p->name);
        s_write_type(out, p, "");
        fprintf(out, "%s%s)\n", p->default_value ? ", default " : ", no default",
                p->default_value ? p->default_value : "");
        fputs("      ", out);
        s_write_wrapped(out, p->help ? p->help : "", 6, 6, 78);
    }
    s_write_long_choices(out, w, false);
    fclose(out);
    return text;
}
