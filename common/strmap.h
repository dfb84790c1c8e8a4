/* SPDX-License-Identifier: Apache-2.0 */
/* A string-keyed hash map of borrowed pointers (open addressing, linear probing). The map
 * copies keys; values are the caller's. Used for agents by name and identity, tasks by id:
 * lookups stay O(1) with thousands of agents. */
#ifndef FB_STRMAP_H
#define FB_STRMAP_H

#include <stddef.h>

typedef struct fb_strmap fb_strmap_t;

fb_strmap_t *fb_strmap_new(void);
void fb_strmap_destroy(fb_strmap_t **self_p);
/* Inserts or replaces; returns the previous value or NULL. */
void *fb_strmap_put(fb_strmap_t *self, const char *key, void *value);
void *fb_strmap_get(const fb_strmap_t *self, const char *key);
/* Removes key; returns its value or NULL. */
void *fb_strmap_remove(fb_strmap_t *self, const char *key);
size_t fb_strmap_size(const fb_strmap_t *self);
/* Iteration: start with *pos = 0; returns 0 at the end. Do not modify the map while iterating. */
int fb_strmap_next(const fb_strmap_t *self, size_t *pos, const char **key, void **value);

#endif
