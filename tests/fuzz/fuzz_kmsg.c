/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzzes the kernel log parsers of common/kmsg.c: fb_kmsg_parse and fb_kmsg_classify on the input
 * as one record, fb_kmsg_pci_canon on it as an address, and the stream reader (line assembly,
 * continuation lines) on the input as a log file, through a memfd. Log lines come from drivers
 * and, in a replayed log, from anyone. */
#include "fuzz.h"

#include "common/kmsg.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

FZ_INITIALIZE()

static void s_check_record(const fb_kmsg_record_t *rec)
{
    FZ_CHECK(memchr(rec->text, '\0', sizeof rec->text) != NULL);
    FZ_CHECK(memchr(rec->device, '\0', sizeof rec->device) != NULL);
    for (const char *p = rec->text; *p; p++)
        FZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f);
    FZ_CHECK(rec->level >= -1 && rec->level <= 7);
    fb_kmsg_event_t ev;
    fb_kmsg_class_t cls = fb_kmsg_classify(rec, &ev);
    FZ_CHECK(cls == ev.cls && (int)cls >= 0 && cls < FB_KMSG_N_CLASSES);
    FZ_CHECK(memchr(ev.pci, '\0', sizeof ev.pci) && memchr(ev.netdev, '\0', sizeof ev.netdev) &&
             memchr(ev.label, '\0', sizeof ev.label));
    (void)fb_kmsg_class_name(cls);
    if (cls == FB_KMSG_XID && ev.xid >= 0) {
        (void)fb_kmsg_xid_text(ev.xid);
        (void)fb_kmsg_xid_is_application(ev.xid);
    }
    if (cls == FB_KMSG_EDAC_CE || cls == FB_KMSG_EDAC_UE)
        FZ_CHECK(ev.count >= 1);
}

static void s_on_record(const fb_kmsg_record_t *rec, void *user)
{
    (*(size_t *)user)++;
    s_check_record(rec);
}

/* The input as a log file read by the stream reader. */
static void s_stream(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-kmsg", MFD_CLOEXEC);
    FZ_CHECK(fd >= 0);
    fz_write_all(fd, data, size);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    fb_kmsg_t *k = NULL;
    int rc = fb_kmsg_open(path, FB_KMSG_FROM_START, &k);
    FZ_CHECK(rc == 0);
    size_t count = 0;
    int n = fb_kmsg_read(k, s_on_record, &count);
    FZ_CHECK(n >= 0 && (size_t)n == count);
    FZ_CHECK(count <= size);
    fb_kmsg_close(&k);
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fb_kmsg_record_t *rec = xmalloc(sizeof *rec);
    int rc = fb_kmsg_parse((const char *)data, size, rec);
    FZ_CHECK(rc == 0 || rc == -EINVAL);
    if (rc == 0)
        s_check_record(rec);
    free(rec);

    char *text = fz_cstr(data, size < 64 ? size : 64);
    char pci[16];
    if (fb_kmsg_pci_canon(text, pci) == 0)
        FZ_CHECK(strlen(pci) == 12 && pci[4] == ':' && pci[7] == ':' && pci[10] == '.');
    free(text);

    s_stream(data, size);
    return 0;
}
