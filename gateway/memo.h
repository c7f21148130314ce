/* What a gateway remembers of Redis's answers so that later requests need not ask again (the
 * plans' averages, decision 0043; the instances' tenants, decision 0045): small values by string
 * key, copied in and out, in a czmq hash table under one mutex. Bounded: past its most entries a
 * new key makes it forget them all, to be learned again from the next answers. Thread-safe. */
#ifndef OSBQ_GATEWAY_MEMO_H
#define OSBQ_GATEWAY_MEMO_H

#include <stdbool.h>
#include <stddef.h>

struct memo;

/* A new, empty table of at most max entries; NULL when out of memory. */
struct memo *memo_new(size_t max);
void memo_free(struct memo **mp);

/* The value remembered for key, copied into out (size bytes at most): true, or false when none
 * is, or it does not fit. NULL m: none. */
bool memo_get(struct memo *m, const char *key, void *out, size_t size);

/* Remembers size bytes of value for key, replacing what was there. NULL m: nothing. */
void memo_put(struct memo *m, const char *key, const void *value, size_t size);

#endif
