/* How a destroy function takes what it destroys: from its owner's pointer, so that it can leave
 * NULL there once done (`void x_destroy(struct x **xp)`); a NULL owner or a NULL object is
 * nothing to destroy. */
#ifndef OSBQ_OWNED_H
#define OSBQ_OWNED_H

#include <stdlib.h>

/* Declares `type *var`, the object *owner holds, and returns from the (void) function when there
 * is none. The function still sets *owner = NULL when it is done. */
#define OSBQ_OWNED_OR_RETURN(type, var, owner)                                                     \
    type *var = (owner) != NULL ? *(owner) : NULL;                                                 \
    if (var == NULL)                                                                               \
    return

/* The destructor (zhashx_set_destructor) of values their owner malloc'd: frees *item and leaves
 * NULL there. */
static inline void osbq_owned_free(void **item)
{
    free(*item);
    *item = NULL;
}

#endif
