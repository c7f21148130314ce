/* Jansson allocates with malloc and frees through here: the block is zeroed over its usable
 * size first. malloc_usable_size (glibc, and the sanitizers' allocators) gives that size
 * without a header of our own, so blocks jansson hands out (json_dumps) stay free()-able. */
#include "json_wipe.h"

#include <jansson.h>
#include <malloc.h>
#include <sodium.h>
#include <stdlib.h>

static void wiping_free(void *p)
{
    if (p == NULL)
        return;
    sodium_memzero(p, malloc_usable_size(p));
    free(p);
}

void osbq_json_wipe_on_free(void)
{
    json_set_alloc_funcs(malloc, wiping_free);
}
