/* The exec programs' watch: one thread, one epoll set. Each program contributes up to four
 * descriptors (its pidfd, stdin, stdout, stderr), each registered with a pointer to its own
 * tag in the program's entry; the watch's mailbox (its descriptor tagged NULL) brings new
 * programs and the destruction. Timers (ticks, timeouts, kill graces, drains) are checked in one
 * sweep over the entries every EXEC_WATCH_TICK_MS, which bounds their precision to that. */
#define _GNU_SOURCE

#include "exec_watch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "mailbox.h"
#include "owned.h"

/* Bytes read from a pipe at once: one read per ready pipe and wake-up, so a chatty program
 * cannot starve the others. */
#define WATCH_CHUNK 65536
/* Events taken from epoll at once. */
#define WATCH_EVENTS 256

enum fd_role { FD_PID, FD_IN, FD_OUT, FD_ERR, FD_ROLES };

struct entry;

/* What an epoll event points at: one descriptor of one entry. */
struct fd_tag {
    struct entry *e;
    enum fd_role role;
};

/* One watched program. */
struct entry {
    struct exec_watch_program p;
    int fds[FD_ROLES]; /* -1 once closed */
    struct fd_tag tags[FD_ROLES];
    size_t input_off;   /* bytes of p.input written */
    int64_t timeout_at; /* monotonic ms; 0: none */
    int64_t next_tick;  /* when keep_running is asked next */
    int64_t kill_at;    /* when SIGKILL follows the SIGTERM sent; 0 before */
    bool killed;        /* SIGKILL sent */
    int64_t exited_at;  /* monotonic ms it exited at; -1 while it runs */
    enum exec_watch_stop stop;
    bool ended; /* finished: freed once the current batch of events is handled */
    char tenant[EXEC_WATCH_TENANT_MAX]; /* whose program it is: the place it holds */
    struct osbq_mailbox_link link;      /* in the watch's mailbox, until the loop takes it */
    struct entry *prev, *next;          /* in the loop's entries */
};

/* A step waiting for a place (exec_watch_reserve), on its runner thread's stack. */
struct place_waiter {
    const char *tenant; /* whose step it is (borrowed for the wait) */
    uint64_t ticket;    /* its place in line: lower came first */
    bool granted;       /* a place was given to it (by give_place) */
    struct place_waiter *next;
};

/* The places one tenant's programs hold. */
struct tenant_places {
    char tenant[EXEC_WATCH_TENANT_MAX];
    unsigned held;
};

struct exec_watch {
    unsigned limit;
    int epoll_fd;
    struct osbq_mailbox mailbox; /* programs added, not yet taken by the loop; closed: the end */
    pthread_t thread;
    struct entry *entries; /* watched by the loop; the loop's own */
    struct entry *ended;   /* finished during the current batch; freed after it */
    char chunk[WATCH_CHUNK];

    pthread_mutex_t lock;          /* guards the fields below */
    pthread_cond_t freed;          /* a place was given to a waiter */
    unsigned busy;                 /* places taken */
    struct place_waiter *waiters;  /* steps waiting for a place, in no order (tickets say) */
    uint64_t last_ticket;          /* the ticket handed out last */
    struct tenant_places *tenants; /* the tenants holding places, tenant_count of them */
    size_t tenant_count, tenant_cap;
    bool stopping; /* the watch is going: no place is granted any more */
};

void exec_watch_close_fd(int *fd)
{
    if (*fd >= 0)
        (void)close(*fd);
    *fd = -1;
}

/* The places tenant holds (its entry in w->tenants), or NULL. Called with w->lock held. */
static struct tenant_places *tenant_find(struct exec_watch *w, const char *tenant)
{
    for (size_t i = 0; i < w->tenant_count; i++)
        if (strncmp(w->tenants[i].tenant, tenant, EXEC_WATCH_TENANT_MAX - 1) == 0)
            return &w->tenants[i];
    return NULL;
}

static unsigned tenant_held(struct exec_watch *w, const char *tenant)
{
    const struct tenant_places *t = tenant_find(w, tenant);
    return t != NULL ? t->held : 0;
}

/* Counts one place more (delta 1) or fewer (-1) for tenant; a tenant holding none is dropped.
 * Out of memory, a tenant goes uncounted: it only loses its priority. Called with w->lock
 * held. */
static void tenant_count_place(struct exec_watch *w, const char *tenant, int delta)
{
    struct tenant_places *t = tenant_find(w, tenant);
    if (t == NULL && delta > 0) {
        if (w->tenant_count == w->tenant_cap) {
            size_t cap = w->tenant_cap ? w->tenant_cap * 2 : 8;
            struct tenant_places *grown = realloc(w->tenants, cap * sizeof *grown);
            if (grown == NULL)
                return;
            w->tenants = grown;
            w->tenant_cap = cap;
        }
        t = &w->tenants[w->tenant_count++];
        (void)snprintf(t->tenant, sizeof t->tenant, "%s", tenant);
        t->held = 0;
    }
    if (t == NULL)
        return;
    if (delta > 0)
        t->held++;
    else if (t->held > 0 && --t->held == 0)
        *t = w->tenants[--w->tenant_count];
}

/* Gives free places to waiting steps: each to the step whose tenant holds the fewest places,
 * the longest waiting among those (docs/reliability.md, fairness). Called with w->lock held. */
static void grant_places(struct exec_watch *w)
{
    bool granted = false;
    while (w->busy < w->limit && w->waiters != NULL) {
        struct place_waiter **best = &w->waiters;
        unsigned best_held = tenant_held(w, (*best)->tenant);
        for (struct place_waiter **p = &(*best)->next; *p != NULL; p = &(*p)->next) {
            unsigned held = tenant_held(w, (*p)->tenant);
            if (held < best_held || (held == best_held && (*p)->ticket < (*best)->ticket)) {
                best = p;
                best_held = held;
            }
        }
        struct place_waiter *chosen = *best;
        *best = chosen->next;
        chosen->granted = true;
        w->busy++;
        tenant_count_place(w, chosen->tenant, 1);
        granted = true;
    }
    if (granted)
        pthread_cond_broadcast(&w->freed);
}

static void give_place(struct exec_watch *w, const char *tenant)
{
    pthread_mutex_lock(&w->lock);
    w->busy--;
    tenant_count_place(w, tenant, -1);
    grant_places(w);
    pthread_mutex_unlock(&w->lock);
}

/* Stops watching and closes one descriptor; a pipe's end is reported as its stream's end. */
static void drop_fd(struct exec_watch *w, struct entry *e, enum fd_role role)
{
    if (e->fds[role] < 0)
        return;
    (void)epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, e->fds[role], NULL);
    exec_watch_close_fd(&e->fds[role]);
    if (role == FD_OUT || role == FD_ERR)
        e->p.ops->output(e->p.ctx, role == FD_OUT ? 1 : 2, NULL, 0);
}

/* Signals the program's whole group: an operation owns every process it started. The
 * program is reaped only at its entry's end, so its pid, and with it the group id, cannot be
 * reused before. */
static void signal_group(struct entry *e, int sig)
{
    (void)kill(-e->p.pid, sig);
}

static void begin_stop(struct entry *e, enum exec_watch_stop why, int64_t now)
{
    e->stop = why;
    signal_group(e, SIGTERM);
    e->kill_at = now + EXEC_WATCH_KILL_GRACE_MS;
}

/* Kills what is left of the group, reaps the program, closes everything and calls ended. */
static void finish_entry(struct exec_watch *w, struct entry *e)
{
    signal_group(e, SIGKILL);
    for (int role = 0; role < FD_ROLES; role++)
        drop_fd(w, e, (enum fd_role)role);
    struct exec_watch_end end = {.stop = e->stop};
    pid_t reaped;
    while ((reaped = waitpid(e->p.pid, &end.status, 0)) < 0 && errno == EINTR) {
    }
    /* Only if something else in the process reaped it (nothing does). */
    end.lost = reaped != e->p.pid;
    e->p.ops->ended(e->p.ctx, &end);
    /* Only now: a step that waited for the place starts after this one's end is reported. */
    give_place(w, e->tenant);
    /* Later events of the same batch may still point at it: it goes after the batch. */
    e->ended = true;
    if (e->prev != NULL)
        e->prev->next = e->next;
    else if (w->entries == e)
        w->entries = e->next;
    if (e->next != NULL)
        e->next->prev = e->prev;
    e->prev = NULL;
    e->next = w->ended;
    w->ended = e;
}

static void free_ended(struct exec_watch *w)
{
    while (w->ended != NULL) {
        struct entry *e = w->ended;
        w->ended = e->next;
        free(e);
    }
}

/* Ends the entry once the program exited and its pipes are closed, or its drain time is over;
 * returns true when it did (e is gone). */
static bool settle(struct exec_watch *w, struct entry *e, int64_t now)
{
    if (e->exited_at < 0)
        return false;
    if ((e->fds[FD_OUT] >= 0 || e->fds[FD_ERR] >= 0) && now - e->exited_at < EXEC_WATCH_DRAIN_MS)
        return false;
    finish_entry(w, e);
    return true;
}

static void write_input(struct entry *e, struct exec_watch *w)
{
    ssize_t n = write(e->fds[FD_IN], e->p.input + e->input_off, e->p.input_len - e->input_off);
    if (n > 0)
        e->input_off += (size_t)n;
    else if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    /* All written, or the program closed its end (EPIPE: it does not want the input; the
     * worker ignores SIGPIPE). */
    if (n <= 0 || e->input_off == e->p.input_len)
        drop_fd(w, e, FD_IN);
}

static void read_output(struct exec_watch *w, struct entry *e, enum fd_role role)
{
    ssize_t n = read(e->fds[role], w->chunk, sizeof w->chunk);
    if (n > 0) {
        e->p.ops->output(e->p.ctx, role == FD_OUT ? 1 : 2, w->chunk, (size_t)n);
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    drop_fd(w, e, role);
}

/* Handles one ready descriptor. */
static void on_event(struct exec_watch *w, struct fd_tag *tag, int64_t now)
{
    struct entry *e = tag->e;
    if (e->ended || e->fds[tag->role] < 0)
        return;
    switch (tag->role) {
    case FD_PID:
        /* Readable once the program exited; it stays a zombie until finish_entry reaps it. */
        e->exited_at = now;
        (void)epoll_ctl(w->epoll_fd, EPOLL_CTL_DEL, e->fds[FD_PID], NULL);
        exec_watch_close_fd(&e->fds[FD_PID]);
        break;
    case FD_IN:
        write_input(e, w);
        break;
    case FD_OUT:
    case FD_ERR:
        read_output(w, e, tag->role);
        break;
    case FD_ROLES:
    default:
        break;
    }
    (void)settle(w, e, now);
}

/* Timers of one entry. */
static void sweep_entry(struct exec_watch *w, struct entry *e, int64_t now)
{
    if (settle(w, e, now))
        return;
    if (e->exited_at < 0 && e->stop == EXEC_WATCH_EXITED) {
        if (now >= e->next_tick) {
            e->next_tick = now + EXEC_WATCH_TICK_MS;
            if (!e->p.ops->keep_running(e->p.ctx))
                begin_stop(e, EXEC_WATCH_CANCELLED, now);
        }
        if (e->stop == EXEC_WATCH_EXITED && e->timeout_at > 0 && now >= e->timeout_at)
            begin_stop(e, EXEC_WATCH_TIMEOUT, now);
    }
    if (e->kill_at > 0 && !e->killed &&
        (now >= e->kill_at || (e->p.ops->hurry != NULL && e->p.ops->hurry(e->p.ctx)))) {
        signal_group(e, SIGKILL);
        e->killed = true;
    }
}

static int watch_fd(struct exec_watch *w, struct entry *e, enum fd_role role, uint32_t events)
{
    if (e->fds[role] < 0)
        return 0;
    e->tags[role] = (struct fd_tag){.e = e, .role = role};
    struct epoll_event ev = {.events = events, .data.ptr = &e->tags[role]};
    return epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, e->fds[role], &ev);
}

/* Takes the programs added since the last wake-up into the epoll set. Returns whether the watch
 * is going: no program comes after these. */
static bool take_incoming(struct exec_watch *w, int64_t now)
{
    bool closed = false;
    struct osbq_mailbox_link *list = osbq_mailbox_take(&w->mailbox, &closed);
    while (list != NULL) {
        struct entry *e = (struct entry *)(void *)((char *)list - offsetof(struct entry, link));
        list = list->next;
        e->next_tick = now + EXEC_WATCH_TICK_MS;
        e->timeout_at = e->p.timeout_ms > 0 ? now + e->p.timeout_ms : 0;
        if (watch_fd(w, e, FD_PID, EPOLLIN) < 0 || watch_fd(w, e, FD_IN, EPOLLOUT) < 0 ||
            watch_fd(w, e, FD_OUT, EPOLLIN) < 0 || watch_fd(w, e, FD_ERR, EPOLLIN) < 0) {
            /* Cannot be watched (out of kernel memory): stopped at once, reported as cancelled
             * so its operation runs again elsewhere. */
            e->stop = EXEC_WATCH_CANCELLED;
            e->prev = e->next = NULL;
            finish_entry(w, e);
            continue;
        }
        e->prev = NULL;
        e->next = w->entries;
        if (w->entries != NULL)
            w->entries->prev = e;
        w->entries = e;
    }
    return closed;
}

static void *loop_main(void *arg)
{
    struct exec_watch *w = arg;
    struct epoll_event events[WATCH_EVENTS];
    int64_t next_sweep = osbq_clock_ms() + EXEC_WATCH_TICK_MS;
    for (;;) {
        int64_t now = osbq_clock_ms();
        int timeout = next_sweep > now ? (int)(next_sweep - now) : 0;
        int n = epoll_wait(w->epoll_fd, events, WATCH_EVENTS, timeout);
        now = osbq_clock_ms();
        bool stopping = false;
        for (int i = 0; i < n; i++) {
            struct fd_tag *tag = events[i].data.ptr;
            if (tag == NULL) {
                stopping = take_incoming(w, now);
                continue;
            }
            on_event(w, tag, now);
        }
        if (!stopping && now >= next_sweep) {
            next_sweep = now + EXEC_WATCH_TICK_MS;
            for (struct entry *e = w->entries, *next; e != NULL; e = next) {
                next = e->next;
                sweep_entry(w, e, now);
            }
        }
        free_ended(w);
        if (stopping)
            break;
    }
    /* The end: nothing waits any more. */
    (void)take_incoming(w, osbq_clock_ms());
    while (w->entries != NULL) {
        struct entry *e = w->entries;
        if (e->stop == EXEC_WATCH_EXITED && e->exited_at < 0)
            e->stop = EXEC_WATCH_CANCELLED;
        finish_entry(w, e);
    }
    free_ended(w);
    return NULL;
}

struct exec_watch *exec_watch_new(unsigned limit, struct osbq_error *err)
{
    struct exec_watch *w = calloc(1, sizeof *w);
    if (w == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    w->limit = limit > 0 ? limit : 1;
    w->mailbox.fd = -1;
    w->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epoll_fd < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "epoll_create1: %s", strerror(errno));
        goto fail;
    }
    if (osbq_mailbox_init(&w->mailbox, err) < 0)
        goto fail;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    if (epoll_ctl(w->epoll_fd, EPOLL_CTL_ADD, osbq_mailbox_fd(&w->mailbox), &ev) < 0) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "epoll_ctl: %s", strerror(errno));
        goto fail;
    }
    int rc = osbq_clock_cond_init(&w->freed);
    if (rc != 0 || pthread_mutex_init(&w->lock, NULL) != 0) {
        if (rc == 0)
            pthread_cond_destroy(&w->freed);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot initialise the watch's locks");
        goto fail;
    }
    rc = pthread_create(&w->thread, NULL, loop_main, w);
    if (rc != 0) {
        pthread_cond_destroy(&w->freed);
        pthread_mutex_destroy(&w->lock);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "cannot start the exec watch thread: %s",
                       strerror(rc));
        goto fail;
    }
    return w;
fail:
    osbq_mailbox_clear(&w->mailbox);
    exec_watch_close_fd(&w->epoll_fd);
    free(w);
    return NULL;
}

bool exec_watch_reserve(struct exec_watch *w, const char *tenant, uint64_t *ticket, int64_t wait_ms)
{
    int64_t until = osbq_clock_ms() + (wait_ms > 0 ? wait_ms : 0);
    struct place_waiter me = {.tenant = tenant != NULL ? tenant : ""};
    pthread_mutex_lock(&w->lock);
    if (*ticket == 0)
        *ticket = ++w->last_ticket;
    me.ticket = *ticket;
    if (w->stopping) {
        pthread_mutex_unlock(&w->lock);
        return false;
    }
    /* In line with the others, even with a place free: the rule picks who gets it. */
    me.next = w->waiters;
    w->waiters = &me;
    grant_places(w);
    while (!me.granted && !w->stopping && osbq_clock_ms() < until)
        osbq_clock_wait_until(&w->freed, &w->lock, until);
    if (!me.granted) {
        struct place_waiter **p = &w->waiters;
        while (*p != &me)
            p = &(*p)->next;
        *p = me.next;
    }
    pthread_mutex_unlock(&w->lock);
    return me.granted;
}

void exec_watch_unreserve(struct exec_watch *w, const char *tenant)
{
    give_place(w, tenant != NULL ? tenant : "");
}

int exec_watch_add(struct exec_watch *w, const struct exec_watch_program *program,
                   struct osbq_error *err)
{
    struct entry *e = calloc(1, sizeof *e);
    int pidfd = -1;
    if (e == NULL)
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
    else if ((pidfd = (int)syscall(SYS_pidfd_open, program->pid, 0)) < 0)
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "pidfd_open: %s", strerror(errno));
    if (pidfd < 0) {
        (void)kill(-program->pid, SIGKILL);
        int fds[3] = {program->in_fd, program->out_fd, program->err_fd};
        for (int i = 0; i < 3; i++)
            exec_watch_close_fd(&fds[i]);
        while (waitpid(program->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        free(e);
        give_place(w, program->tenant != NULL ? program->tenant : "");
        return -1;
    }
    e->p = *program;
    (void)snprintf(e->tenant, sizeof e->tenant, "%s", program->tenant ? program->tenant : "");
    e->fds[FD_PID] = pidfd;
    e->fds[FD_IN] = program->in_fd;
    e->fds[FD_OUT] = program->out_fd;
    e->fds[FD_ERR] = program->err_fd;
    e->exited_at = -1;
    e->stop = EXEC_WATCH_EXITED;
    if (!osbq_mailbox_post(&w->mailbox, &e->link)) {
        /* The loop took its last programs already: this one would never be watched. */
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "the exec watch is stopping");
        (void)kill(-program->pid, SIGKILL);
        for (int role = 0; role < FD_ROLES; role++)
            exec_watch_close_fd(&e->fds[role]);
        while (waitpid(program->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        give_place(w, e->tenant);
        free(e);
        return -1;
    }
    return 0;
}

unsigned exec_watch_busy(struct exec_watch *w)
{
    pthread_mutex_lock(&w->lock);
    unsigned busy = w->busy;
    pthread_mutex_unlock(&w->lock);
    return busy;
}

void exec_watch_destroy(struct exec_watch **wp)
{
    OSBQ_OWNED_OR_RETURN(struct exec_watch, w, wp);
    *wp = NULL;
    pthread_mutex_lock(&w->lock);
    w->stopping = true;
    pthread_cond_broadcast(&w->freed);
    pthread_mutex_unlock(&w->lock);
    osbq_mailbox_close(&w->mailbox);
    pthread_join(w->thread, NULL);
    osbq_mailbox_clear(&w->mailbox);
    exec_watch_close_fd(&w->epoll_fd);
    pthread_cond_destroy(&w->freed);
    pthread_mutex_destroy(&w->lock);
    free(w->tenants);
    free(w);
}
