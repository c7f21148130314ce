/* A thread's mailbox: a list, an eventfd and a close flag. */
#include "mailbox.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void wake(struct osbq_mailbox *mb)
{
    uint64_t one = 1;
    /* Fails only when the counter would overflow: the owner is woken anyway. */
    while (write(mb->fd, &one, sizeof one) < 0 && errno == EINTR)
        ;
}

int osbq_mailbox_init(struct osbq_mailbox *mb, struct osbq_error *err)
{
    mb->first = mb->last = NULL;
    mb->closed = false;
    mb->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (mb->fd < 0)
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "eventfd: %s", strerror(errno));
    if (pthread_mutex_init(&mb->lock, NULL) != 0) {
        (void)close(mb->fd);
        mb->fd = -1;
        return osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot initialise a mailbox's lock");
    }
    return 0;
}

void osbq_mailbox_clear(struct osbq_mailbox *mb)
{
    if (mb->fd < 0)
        return;
    pthread_mutex_destroy(&mb->lock);
    (void)close(mb->fd);
    mb->fd = -1;
}

int osbq_mailbox_fd(const struct osbq_mailbox *mb)
{
    return mb->fd;
}

bool osbq_mailbox_post(struct osbq_mailbox *mb, struct osbq_mailbox_link *link)
{
    link->next = NULL;
    pthread_mutex_lock(&mb->lock);
    if (mb->closed) {
        pthread_mutex_unlock(&mb->lock);
        return false;
    }
    /* One wake-up per batch: the owner takes the whole list when it wakes. */
    bool was_empty = mb->first == NULL;
    if (was_empty)
        mb->first = link;
    else
        mb->last->next = link;
    mb->last = link;
    pthread_mutex_unlock(&mb->lock);
    if (was_empty)
        wake(mb);
    return true;
}

struct osbq_mailbox_link *osbq_mailbox_take(struct osbq_mailbox *mb, bool *closed)
{
    /* The count first, then the list: an item posted after the list is taken finds it empty
     * and wakes the owner again. */
    uint64_t count;
    while (read(mb->fd, &count, sizeof count) < 0 && errno == EINTR)
        ;
    pthread_mutex_lock(&mb->lock);
    struct osbq_mailbox_link *items = mb->first;
    mb->first = mb->last = NULL;
    *closed = mb->closed;
    pthread_mutex_unlock(&mb->lock);
    return items;
}

void osbq_mailbox_close(struct osbq_mailbox *mb)
{
    pthread_mutex_lock(&mb->lock);
    mb->closed = true;
    pthread_mutex_unlock(&mb->lock);
    wake(mb);
}
