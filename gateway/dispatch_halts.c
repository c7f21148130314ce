/* The dispatcher's halts (dispatch_halts.h). */
#include "dispatch_halts.h"

#include <stdlib.h>
#include <string.h>

#include "bus.h"
#include "log.h"

/* One halt posted: the operation, and the worker running its step. */
struct halt_note {
    struct osbq_mailbox_link link;
    char operation_id[OSBQ_BUS_OPERATION_ID_MAX + 1];
    char worker_id[]; /* NUL-terminated */
};

static struct halt_note *note_of(struct osbq_mailbox_link *link)
{
    return (struct halt_note *)(void *)((char *)link - offsetof(struct halt_note, link));
}

int dispatch_halts_init(struct dispatch_halts *h)
{
    return osbq_mailbox_init(&h->mailbox, NULL);
}

void dispatch_halts_clear(struct dispatch_halts *h)
{
    if (h->mailbox.fd < 0) /* never made (a start that failed) */
        return;
    bool closed = false;
    struct osbq_mailbox_link *link = osbq_mailbox_take(&h->mailbox, &closed);
    while (link != NULL) {
        struct halt_note *note = note_of(link);
        link = link->next;
        free(note);
    }
    osbq_mailbox_clear(&h->mailbox);
}

int dispatch_halts_fd(const struct dispatch_halts *h)
{
    return osbq_mailbox_fd(&h->mailbox);
}

int dispatch_halts_post(struct dispatch_halts *h, const char *worker_id, const char *operation_id)
{
    size_t id_len = strlen(operation_id), worker_len = strlen(worker_id);
    if (id_len == 0 || id_len > OSBQ_BUS_OPERATION_ID_MAX)
        return -1;
    struct halt_note *note = malloc(sizeof *note + worker_len + 1);
    if (note == NULL)
        return -1;
    memcpy(note->operation_id, operation_id, id_len + 1);
    memcpy(note->worker_id, worker_id, worker_len + 1);
    if (!osbq_mailbox_post(&h->mailbox, &note->link)) {
        free(note);
        return -1;
    }
    return 0;
}

void dispatch_halts_send(struct dispatch_halts *h, zsock_t *router,
                         struct dispatch_workers *workers)
{
    bool closed = false;
    struct osbq_mailbox_link *link = osbq_mailbox_take(&h->mailbox, &closed);
    while (link != NULL) {
        struct halt_note *note = note_of(link);
        link = link->next;
        struct dispatch_worker *w = dispatch_workers_find_id(workers, note->worker_id);
        if (w == NULL || osbq_bus_send_halt(router, w->identity, note->operation_id) < 0)
            log_info("operation %s halted: worker %s cannot be told now; it stops at its next "
                     "lease renewal",
                     note->operation_id, note->worker_id);
        free(note);
    }
}
