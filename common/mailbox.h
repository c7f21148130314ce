/* A mailbox: how one thread is handed work by the others, written once (czmq's actor pipe;
 * Redis's ae.c, where a file event wakes the loop). Items are posted to a list; an eventfd wakes
 * the owner's loop when the list turns non-empty, so one wake-up carries every item posted
 * meanwhile; the owner takes the whole list at once. Closing it refuses new items and wakes the
 * owner a last time. Items link themselves (a struct osbq_mailbox_link inside each), so posting
 * allocates nothing. */
#ifndef OSBQ_MAILBOX_H
#define OSBQ_MAILBOX_H

#include <pthread.h>
#include <stdbool.h>

#include "error.h"

/* What an item holds to be posted: the mailbox's while it is in it. */
struct osbq_mailbox_link {
    struct osbq_mailbox_link *next; /* the next item posted, oldest first */
};

/* Embedded in its owner; the fields are the mailbox's own. */
struct osbq_mailbox {
    pthread_mutex_t lock;                   /* guards first, last and closed */
    struct osbq_mailbox_link *first, *last; /* posted, not taken yet, oldest first */
    bool closed;                            /* osbq_mailbox_close was called */
    int fd;                                 /* eventfd (non-blocking): readable once an item
                                             * arrived in an empty mailbox, or it closed */
};

/* Makes mb empty and open. 0, or -1 with err (no eventfd or lock). */
int osbq_mailbox_init(struct osbq_mailbox *mb, struct osbq_error *err);

/* Frees what osbq_mailbox_init made; items still in it are not touched (take them first). */
void osbq_mailbox_clear(struct osbq_mailbox *mb);

/* The descriptor the owner's loop polls (readable: call osbq_mailbox_take); borrowed. */
int osbq_mailbox_fd(const struct osbq_mailbox *mb);

/* Posts link's item, from any thread. Returns true, or false when the mailbox is closed (the
 * item stays the caller's). */
bool osbq_mailbox_post(struct osbq_mailbox *mb, struct osbq_mailbox_link *link);

/* For the owner, once its fd is readable (or at any time): takes every item posted so far,
 * oldest first (NULL: none), and says in *closed whether the mailbox is closed: then no item
 * comes after these. */
struct osbq_mailbox_link *osbq_mailbox_take(struct osbq_mailbox *mb, bool *closed);

/* Refuses new items and wakes the owner; from any thread. */
void osbq_mailbox_close(struct osbq_mailbox *mb);

#endif
