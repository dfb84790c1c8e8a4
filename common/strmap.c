/* SPDX-License-Identifier: Apache-2.0 */
/* Open-addressing string map with tombstone-free deletion (backward shift). */
#include "strmap.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key;
    void *value;
    uint64_t hash;
} slot_t;

struct fb_strmap {
    slot_t *slots;
    size_t cap, size;
};

static uint64_t s_hash(const char *key)
{
    uint64_t h = 1469598103934665603ull;
    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 1099511628211ull;
    return h;
}

fb_strmap_t *fb_strmap_new(void)
{
    fb_strmap_t *self = xcalloc(1, sizeof *self);
    self->cap = 16;
    self->slots = xcalloc(self->cap, sizeof(slot_t));
    return self;
}

void fb_strmap_destroy(fb_strmap_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    fb_strmap_t *self = *self_p;
    for (size_t i = 0; i < self->cap; i++)
        free(self->slots[i].key);
    free(self->slots);
    free(self);
    *self_p = NULL;
}

static size_t s_find(const fb_strmap_t *self, const char *key, uint64_t h)
{
    size_t i = h & (self->cap - 1);
    while (self->slots[i].key && (self->slots[i].hash != h || strcmp(self->slots[i].key, key)))
        i = (i + 1) & (self->cap - 1);
    return i;
}

static void s_grow(fb_strmap_t *self)
{
    slot_t *old = self->slots;
    size_t old_cap = self->cap;
    self->cap *= 2;
    self->slots = xcalloc(self->cap, sizeof(slot_t));
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].key)
            continue;
        size_t j = old[i].hash & (self->cap - 1);
        while (self->slots[j].key)
            j = (j + 1) & (self->cap - 1);
        self->slots[j] = old[i];
    }
    free(old);
}

void *fb_strmap_put(fb_strmap_t *self, const char *key, void *value)
{
    if ((self->size + 1) * 4 > self->cap * 3)
        s_grow(self);
    uint64_t h = s_hash(key);
    size_t i = s_find(self, key, h);
    if (self->slots[i].key) {
        void *prev = self->slots[i].value;
        self->slots[i].value = value;
        return prev;
    }
    self->slots[i].key = xstrdup(key);
    self->slots[i].value = value;
    self->slots[i].hash = h;
    self->size++;
    return NULL;
}

void *fb_strmap_get(const fb_strmap_t *self, const char *key)
{
    size_t i = s_find(self, key, s_hash(key));
    return self->slots[i].key ? self->slots[i].value : NULL;
}

void *fb_strmap_remove(fb_strmap_t *self, const char *key)
{
    size_t i = s_find(self, key, s_hash(key));
    if (!self->slots[i].key)
        return NULL;
    void *value = self->slots[i].value;
    free(self->slots[i].key);
    self->slots[i].key = NULL;
    self->size--;
    /* Shift later members of the probe chain back so lookups never stop at a hole. */
    size_t hole = i;
    for (size_t j = (i + 1) & (self->cap - 1); self->slots[j].key; j = (j + 1) & (self->cap - 1)) {
        size_t home = self->slots[j].hash & (self->cap - 1);
        int movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            self->slots[hole] = self->slots[j];
            self->slots[j].key = NULL;
            hole = j;
        }
    }
    return value;
}

size_t fb_strmap_size(const fb_strmap_t *self)
{
    return self->size;
}

int fb_strmap_next(const fb_strmap_t *self, size_t *pos, const char **key, void **value)
{
    while (*pos < self->cap) {
        slot_t *s = &self->slots[(*pos)++];
        if (s->key) {
            if (key)
                *key = s->key;
            if (value)
                *value = s->value;
            return 1;
        }
    }
    return 0;
}
