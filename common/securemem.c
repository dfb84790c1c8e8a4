/* SPDX-License-Identifier: Apache-2.0 */
/* A locked, non-dumpable pool for libzmq's CURVE secrets (securemem.h): power-of-two size
 * classes with free lists, carved from chunks that are mapped once and never returned, so that
 * no allocation or free changes a mapping. Ownership is decided by address range, never by
 * reading memory in front of a pointer (a pointer from libsodium's allocator sits right after a
 * guard page). */
#include "securemem.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SM_MIN_SHIFT 5                  /* 32-byte blocks */
#define SM_CLASSES 8                    /* ... up to 4096 */
#define SM_HEADER 16                    /* the class, kept in front of each block */
#define SM_CHUNK (1u << 20)             /* mapped at a time */
#define SM_MAX_CHUNKS 256               /* 256 MiB: far above thousands of connections */

typedef struct sm_free {
    struct sm_free *next;
} sm_free_t;

static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static sm_free_t *s_free[SM_CLASSES];
static uint8_t *s_chunks[SM_MAX_CHUNKS];
static size_t s_n_chunks;
static uint8_t *s_bump, *s_bump_end;
static size_t s_in_use, s_served;
static bool s_locked = true;

static int s_class_of(size_t size)
{
    size_t need = size + SM_HEADER;
    for (int c = 0; c < SM_CLASSES; c++)
        if (need <= ((size_t)1 << (SM_MIN_SHIFT + c)))
            return c;
    return -1;
}

static bool s_new_chunk(void)
{
    if (s_n_chunks == SM_MAX_CHUNKS)
        return false;
    void *chunk = mmap(NULL, SM_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (chunk == MAP_FAILED)
        return false;
    madvise(chunk, SM_CHUNK, MADV_DONTDUMP);
    if (mlock(chunk, SM_CHUNK) != 0)
        s_locked = false;
    s_chunks[s_n_chunks++] = chunk;
    s_bump = chunk;
    s_bump_end = s_bump + SM_CHUNK;
    return true;
}

/* A block of class c with the lock held, or NULL. */
static uint8_t *s_take(int c)
{
    size_t bsize = (size_t)1 << (SM_MIN_SHIFT + c);
    if (s_free[c]) {
        uint8_t *b = (uint8_t *)s_free[c];
        s_free[c] = s_free[c]->next;
        return b;
    }
    if ((size_t)(s_bump_end - s_bump) < bsize && !s_new_chunk())
        return NULL;
    uint8_t *b = s_bump;
    s_bump += bsize;
    return b;
}

bool fb_securemem_owns(const void *p)
{
    const uint8_t *q = p;
    pthread_mutex_lock(&s_lock);
    bool owned = false;
    for (size_t i = 0; i < s_n_chunks && !owned; i++)
        owned = q >= s_chunks[i] && q < s_chunks[i] + SM_CHUNK;
    pthread_mutex_unlock(&s_lock);
    return owned;
}

static void s_sodium_init(void)
{
    int (*init)(void) = (int (*)(void))dlsym(RTLD_NEXT, "sodium_init");
    if (init)
        (void)init();
}

/* libsodium's own function, for what the pool does not hold. Its allocator needs the library
 * initialised (page size, canary), which libzmq may not have done yet. */
static void *s_next(const char *name)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, s_sodium_init);
    return dlsym(RTLD_NEXT, name);
}

/* FLEETBURN_SECUREMEM=libsodium: every allocation goes to libsodium's guarded allocator (for an
 * operator who prefers its guard pages to the speed, and to measure the difference). */
static bool s_pool_disabled(void)
{
    static int disabled = -1;
    if (disabled < 0) {
        const char *env = getenv("FLEETBURN_SECUREMEM");
        disabled = env && !strcmp(env, "libsodium");
    }
    return disabled;
}

void *sodium_malloc(size_t size)
{
    int c = s_pool_disabled() ? -1 : s_class_of(size);
    if (c < 0) {
        void *(*next)(size_t) = (void *(*)(size_t))s_next("sodium_malloc");
        if (!next) {
            errno = ENOMEM;
            return NULL;
        }
        return next(size);
    }
    pthread_mutex_lock(&s_lock);
    uint8_t *b = s_take(c);
    if (b) {
        s_in_use++;
        s_served++;
    }
    pthread_mutex_unlock(&s_lock);
    if (!b) {
        errno = ENOMEM;
        return NULL;
    }
    memset(b, 0, SM_HEADER);
    b[0] = (uint8_t)c;
    return b + SM_HEADER;
}

void *sodium_allocarray(size_t count, size_t size)
{
    if (count > 0 && size >= SIZE_MAX / count) {
        errno = ENOMEM;
        return NULL;
    }
    return sodium_malloc(count * size);
}

void sodium_free(void *ptr)
{
    if (!ptr)
        return;
    if (!fb_securemem_owns(ptr)) {
        void (*next)(void *) = (void (*)(void *))s_next("sodium_free");
        if (next)
            next(ptr);
        return;
    }
    uint8_t *b = (uint8_t *)ptr - SM_HEADER;
    int c = b[0];
    explicit_bzero(b, (size_t)1 << (SM_MIN_SHIFT + c));
    pthread_mutex_lock(&s_lock);
    ((sm_free_t *)b)->next = s_free[c];
    s_free[c] = (sm_free_t *)b;
    s_in_use--;
    pthread_mutex_unlock(&s_lock);
}

bool fb_securemem_use(void)
{
    pthread_mutex_lock(&s_lock);
    if (s_n_chunks == 0)
        s_new_chunk();
    bool locked = s_locked && s_n_chunks > 0;
    pthread_mutex_unlock(&s_lock);
    return locked;
}

size_t fb_securemem_in_use(void)
{
    pthread_mutex_lock(&s_lock);
    size_t n = s_in_use;
    pthread_mutex_unlock(&s_lock);
    return n;
}

size_t fb_securemem_served(void)
{
    pthread_mutex_lock(&s_lock);
    size_t n = s_served;
    pthread_mutex_unlock(&s_lock);
    return n;
}
