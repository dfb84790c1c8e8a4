/* SPDX-License-Identifier: Apache-2.0 */
/* Thread and memory placement for memtest and its bandwidth bound, without libnuma: CPU-to-node
 * maps come from sysfs cpulists, threads take CPUs round-robin across nodes, pin themselves, and
 * first-touch (or lock) their own chunk so that every node's memory controllers are loaded. */
#include "placement.h"
#include "common/util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Parses a kernel CPU list ("0-3,8-11") and marks its CPUs as belonging to node. */
static int s_parse_cpulist(const char *text, int node, int *node_of)
{
    const char *p = text;
    while (*p) {
        char *end = NULL;
        unsigned long lo = strtoul(p, &end, 10), hi = lo;
        if (end == p)
            return -EINVAL;
        if (*end == '-') {
            p = end + 1;
            hi = strtoul(p, &end, 10);
            if (end == p || hi < lo)
                return -EINVAL;
        }
        for (unsigned long c = lo; c <= hi && c < MT_MAX_CPUS; c++)
            node_of[c] = node;
        p = end;
        if (*p == ',')
            p++;
        else if (*p && !isspace((unsigned char)*p))
            return -EINVAL;
        while (isspace((unsigned char)*p))
            p++;
    }
    return 0;
}

/* Marks every CPU with its NUMA node from ROOT/sys/devices/system/node/nodeN/cpulist. */
static void s_read_nodes(const char *root, mt_note_fn note, void *user, int *node_of)
{
    char *dir_path = xasprintf("%s/sys/devices/system/node", root);
    DIR *dir = opendir(dir_path);
    struct dirent *de;
    while (dir && (de = readdir(dir))) {
        int node;
        char tail;
        if (sscanf(de->d_name, "node%d%c", &node, &tail) != 1 || node < 0)
            continue;
        char *path = xasprintf("%s/%s/cpulist", dir_path, de->d_name);
        char *list = fb_read_file(path, NULL);
        if (list && s_parse_cpulist(list, node, node_of) && note) {
            char shown[64];
            char *line = xasprintf("memtest: ignoring unparsable %s ('%s')", path,
                                   fb_show_value(list, shown, sizeof shown));
            note(user, line);
            free(line);
        }
        free(list);
        free(path);
    }
    if (dir)
        closedir(dir);
    free(dir_path);
}

/* The CPUs of the affinity mask with their nodes, ascending; the highest node into *max_node. */
static size_t s_allowed_cpus(const int *node_of, mt_cpu_slot_t *cpus, int *max_node)
{
    cpu_set_t *allowed = CPU_ALLOC(MT_MAX_CPUS);
    size_t set_size = CPU_ALLOC_SIZE(MT_MAX_CPUS);
    CPU_ZERO_S(set_size, allowed);
    if (sched_getaffinity(0, set_size, allowed))
        for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < MT_MAX_CPUS; c++)
            CPU_SET_S((size_t)c, set_size, allowed);
    size_t n = 0;
    *max_node = 0;
    for (int c = 0; c < MT_MAX_CPUS; c++) {
        if (!CPU_ISSET_S((size_t)c, set_size, allowed))
            continue;
        cpus[n].cpu = c;
        cpus[n].node = node_of[c] < 0 ? 0 : node_of[c];
        if (cpus[n].node > *max_node)
            *max_node = cpus[n].node;
        n++;
    }
    CPU_FREE(allowed);
    return n;
}

size_t mt_cpu_slots(const char *root, mt_note_fn note, void *user, mt_cpu_slot_t **out)
{
    int *node_of = xmalloc(MT_MAX_CPUS * sizeof *node_of);
    for (int c = 0; c < MT_MAX_CPUS; c++)
        node_of[c] = -1;
    s_read_nodes(root ? root : "", note, user, node_of);
    mt_cpu_slot_t *cpus = xcalloc(MT_MAX_CPUS, sizeof *cpus);
    int max_node = 0;
    size_t n = s_allowed_cpus(node_of, cpus, &max_node);
    free(node_of);
    /* Round-robin: pass k takes the k-th CPU of every node that has one. */
    mt_cpu_slot_t *slots = xcalloc(n ? n : 1, sizeof *slots);
    bool *used = xcalloc(n ? n : 1, sizeof *used);
    size_t m = 0;
    while (m < n) {
        for (int node = 0; node <= max_node; node++)
            for (size_t i = 0; i < n; i++)
                if (!used[i] && cpus[i].node == node) {
                    used[i] = true;
                    slots[m++] = cpus[i];
                    break;
                }
    }
    free(used);
    free(cpus);
    *out = slots;
    return n;
}

unsigned mt_count_nodes(const mt_cpu_slot_t *slots, size_t n)
{
    unsigned count = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && slots[j].node != slots[i].node)
            j++;
        count += j == i;
    }
    return count;
}

size_t mt_thread_count(uint64_t size, uint64_t asked, size_t n_slots, size_t page)
{
    size_t n = asked ? (size_t)asked : n_slots;
    if (n == 0)
        n = 1;
    if (size / n < page)
        n = (size_t)(size / page);
    return n ? n : 1;
}

static int s_pin(int cpu)
{
    cpu_set_t *set = CPU_ALLOC(MT_MAX_CPUS);
    size_t size = CPU_ALLOC_SIZE(MT_MAX_CPUS);
    CPU_ZERO_S(size, set);
    CPU_SET_S((size_t)cpu, size, set);
    int err = sched_setaffinity(0, size, set) ? errno : 0;
    CPU_FREE(set);
    return err;
}

void mt_chunk_setup(mt_chunk_t *c, int cpu, size_t bytes, bool lock)
{
    memset(c, 0, sizeof *c);
    c->bytes = bytes;
    c->pin_err = s_pin(cpu);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        c->map_err = errno;
        return;
    }
    c->buf = p;
    /* Huge pages cut TLB misses on big chunks; pagemap still resolves every 4 KiB page. */
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    if (lock && mlock(p, bytes))
        c->lock_err = errno;
    if (!lock || c->lock_err) {
        long page = sysconf(_SC_PAGESIZE);
        for (size_t off = 0; off < bytes; off += (size_t)(page > 0 ? page : 4096))
            ((volatile char *)p)[off] = 0;
    }
}

void mt_chunk_release(mt_chunk_t *c)
{
    if (c->buf)
        munmap(c->buf, c->bytes);
    c->buf = NULL;
}
