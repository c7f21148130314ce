/* The store's pipeline. Calls are appended to one connection's output as they come and their
 * replies are read back in the same order (Redis answers a connection's commands in order), so
 * the calls of many requests share each write and each read, and no caller waits on the
 * socket. hiredis sets the connection up (address, Sentinels, AUTH, SELECT, scripts) and
 * parses replies; the reads and writes are this thread's, on a non-blocking socket.
 *
 * With OSBQ_REDIS_MIN_ACKS, calls go in batches: the calls taken in one turn, then a one-key
 * write and WAIT. Redis holds the connection's later commands while WAIT blocks, so the next
 * batch is kept back until WAIT answers (one acknowledgement round trip per batch, however
 * many calls it holds), and each call's answer is handed back only once the WAIT behind it
 * answered: whatever a reply says, replicas hold it too; when the WAIT ends short (or never
 * answers), the batch's calls fail. */
#include "store_pipeline.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "mailbox.h"
#include "owned.h"
#include "store_internal.h"

/* What a command on the connection is. */
enum sent_kind {
    SENT_CALL,        /* a call's command */
    SENT_SCRIPT_LOAD, /* SCRIPT LOAD after NOSCRIPT: the call after it says whether it worked */
    SENT_ACK_MARK,    /* the write before a WAIT (store_ack_mark_command) */
    SENT_ACK_WAIT,    /* WAIT: settles the calls held */
};

/* One command written (or being written) to Redis and not answered yet. */
struct sent {
    enum sent_kind kind;          /* what it is */
    struct osbq_store_call *call; /* SENT_CALL: whose reply it is; else NULL */
    int64_t deadline_ms;          /* no reply by then: Redis is not answering */
};

/* A list of calls linked by their next field, oldest first. */
struct call_list {
    struct osbq_store_call *first, *last;
};

struct osbq_store_pipeline {
    struct osbq_store *store;    /* borrowed: connections, scripts, fail-fast state */
    pthread_t thread;            /* runs pipeline_main until drained */
    bool running;                /* the thread has not been joined */
    struct osbq_mailbox mailbox; /* calls submitted and not sent yet; closed: draining */
    /* The thread's own. */
    redisContext *c;            /* the connection (non-blocking), or NULL */
    char sha[SCRIPT_COUNT][41]; /* the scripts as c's Redis knows them */
    struct sent *sent;          /* ring of commands sent, oldest at sent_at */
    size_t sent_cap, sent_at, sent_count;
    char *out; /* bytes to write to c, from out_at to out_len */
    size_t out_at, out_len, out_cap;
    /* The thread's own, with OSBQ_REDIS_MIN_ACKS. */
    bool wait_sent;           /* a WAIT is on the connection: send nothing more until it answers */
    struct call_list backlog; /* taken while a WAIT was out: the next batch */
    struct call_list held;    /* answered, handed back when the WAIT behind them answers */
};

static void list_push(struct call_list *list, struct osbq_store_call *call)
{
    call->next = NULL;
    if (list->first == NULL)
        list->first = call;
    else
        list->last->next = call;
    list->last = call;
}

static struct osbq_store_call *list_take(struct call_list *list)
{
    struct osbq_store_call *calls = list->first;
    list->first = list->last = NULL;
    return calls;
}

static bool acks_wanted(const struct osbq_store_pipeline *p)
{
    return p->store->cfg->redis_min_acks > 0;
}

/* Hands a call back: its reply or error is in it. The call is not touched afterwards. */
static void finish(struct osbq_store_call *call)
{
    call->done(call->done_ctx);
}

static void fail(struct osbq_store_call *call, const struct osbq_error *why)
{
    call->err = *why;
    finish(call);
}

/* Hands back the calls held for a WAIT; short: too few replicas acknowledged them (or the
 * WAIT never answered). */
static void settle_held(struct osbq_store_pipeline *p, bool short_of_acks)
{
    struct osbq_store_call *call = list_take(&p->held);
    while (call != NULL) {
        struct osbq_store_call *next = call->next;
        call->acks_short = short_of_acks;
        finish(call);
        call = next;
    }
    p->wait_sent = false;
}

/* The connection failed (or Redis stopped answering): every call sent on it fails, the
 * connection goes, and the store fails fast for a moment, as for any caller. Calls answered
 * and held for a WAIT go back short of acknowledgements. */
static void drop_connection(struct osbq_store_pipeline *p, const char *why)
{
    struct osbq_error err = {0};
    osbq_error_set(&err, OSBQ_ERR_UNAVAILABLE, "redis: %s", why);
    log_warnx("redis pipeline: %s; %zu call(s) failed", why, p->sent_count);
    settle_held(p, true);
    for (; p->sent_count > 0; p->sent_count--) {
        struct sent *s = &p->sent[p->sent_at];
        p->sent_at = (p->sent_at + 1) % p->sent_cap;
        if (s->call != NULL)
            fail(s->call, &err);
    }
    p->sent_at = 0;
    p->out_at = p->out_len = 0;
    redisFree(p->c);
    p->c = NULL;
    store_mark_down(p->store, &err);
}

static bool out_append(struct osbq_store_pipeline *p, const char *bytes, size_t len)
{
    if (len == 0) /* a plain command's head */
        return true;
    if (p->out_at > 0 && p->out_at == p->out_len)
        p->out_at = p->out_len = 0;
    if (len > p->out_cap - p->out_len) {
        size_t cap = p->out_cap ? p->out_cap : 65536;
        while (cap - p->out_len < len)
            cap *= 2;
        char *grown = realloc(p->out, cap);
        if (grown == NULL)
            return false;
        p->out = grown;
        p->out_cap = cap;
    }
    memcpy(p->out + p->out_len, bytes, len);
    p->out_len += len;
    return true;
}

static bool sent_push(struct osbq_store_pipeline *p, enum sent_kind kind,
                      struct osbq_store_call *call, int64_t deadline_ms)
{
    if (p->sent_count == p->sent_cap) {
        size_t cap = p->sent_cap ? 2 * p->sent_cap : 256;
        struct sent *grown = malloc(cap * sizeof *grown);
        if (grown == NULL)
            return false;
        for (size_t i = 0; i < p->sent_count; i++)
            grown[i] = p->sent[(p->sent_at + i) % p->sent_cap];
        free(p->sent);
        p->sent = grown;
        p->sent_cap = cap;
        p->sent_at = 0;
    }
    p->sent[(p->sent_at + p->sent_count) % p->sent_cap] = (struct sent){kind, call, deadline_ms};
    p->sent_count++;
    return true;
}

/* Connects through the store (fail-fast, Sentinels, AUTH, SELECT), makes sure Redis knows every
 * script, then makes the socket non-blocking. */
static bool pipeline_connect(struct osbq_store_pipeline *p, struct osbq_error *err)
{
    redisContext *c = store_acquire(p->store, err);
    if (c == NULL)
        return false;
    for (int i = 0; i < SCRIPT_COUNT; i++) {
        if (store_script_sha(p->store, c, (enum store_script)i, p->sha[i], err) < 0) {
            store_release(p->store, c);
            return false;
        }
    }
    int flags = fcntl(c->fd, F_GETFL);
    if (flags < 0 || fcntl(c->fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        osbq_error_set(err, OSBQ_ERR_UNAVAILABLE, "redis: cannot make the socket non-blocking");
        redisFree(c);
        return false;
    }
    p->c = c;
    return true;
}

/* Appends call's command to the output; false when out of memory. */
static bool append_call(struct osbq_store_pipeline *p, struct osbq_store_call *call)
{
    char head[STORE_CALL_HEAD_MAX];
    size_t head_len =
        store_call_head(call, call->script == STORE_CALL_COMMAND ? "" : p->sha[call->script], head);
    size_t mark = p->out_len;
    if (!out_append(p, head, head_len) || !out_append(p, call->tail, call->tail_len) ||
        !sent_push(p, SENT_CALL, call, call->deadline_ms)) {
        p->out_len = mark;
        return false;
    }
    return true;
}

/* How long a command sent now may take: a WAIT ahead of it on the connection blocks it for up
 * to OSBQ_REDIS_ACK_TIMEOUT_MS. */
static int64_t deadline_from_now(const struct osbq_store_pipeline *p)
{
    const struct osbq_config *cfg = p->store->cfg;
    return store_monotonic_ms() + (int64_t)cfg->redis_timeout_ms +
           (acks_wanted(p) ? (int64_t)cfg->redis_ack_timeout_ms : 0);
}

/* Returns whether the call went out (false: it failed, and was handed back). */
static bool send_call(struct osbq_store_pipeline *p, struct osbq_store_call *call)
{
    struct osbq_error err = {0};
    if (p->c == NULL && !pipeline_connect(p, &err)) {
        fail(call, &err);
        return false;
    }
    if (acks_wanted(p))
        call->deadline_ms = deadline_from_now(p);
    if (!append_call(p, call)) {
        osbq_error_set(&err, OSBQ_ERR_INTERNAL, "out of memory");
        fail(call, &err);
        return false;
    }
    return true;
}

/* Appends the mark and the WAIT that close a batch. */
static void send_wait(struct osbq_store_pipeline *p)
{
    char mark[STORE_ACK_COMMAND_MAX], wait[STORE_ACK_COMMAND_MAX];
    size_t mark_len = store_ack_mark_command(p->store, mark);
    size_t wait_len = store_ack_wait_command(p->store, wait);
    int64_t deadline = deadline_from_now(p);
    size_t at = p->out_len;
    if (mark_len == 0 || !out_append(p, mark, mark_len) || !out_append(p, wait, wait_len) ||
        !sent_push(p, SENT_ACK_MARK, NULL, deadline)) {
        p->out_len = at;
        drop_connection(p, "cannot send WAIT");
        return;
    }
    if (!sent_push(p, SENT_ACK_WAIT, NULL, deadline)) {
        p->sent_count--; /* the mark's entry, pushed just above */
        p->out_len = at;
        drop_connection(p, "cannot send WAIT");
        return;
    }
    p->wait_sent = true;
}

/* Sends the calls taken: at once without OSBQ_REDIS_MIN_ACKS; else as one batch closed by a
 * WAIT, unless a WAIT is still out (then they wait in the backlog for it). */
static void send_calls(struct osbq_store_pipeline *p, struct osbq_store_call *calls)
{
    if (!acks_wanted(p)) {
        while (calls != NULL) {
            struct osbq_store_call *next = calls->next;
            (void)send_call(p, calls);
            calls = next;
        }
        return;
    }
    while (calls != NULL) {
        struct osbq_store_call *next = calls->next;
        list_push(&p->backlog, calls);
        calls = next;
    }
    if (p->wait_sent)
        return;
    bool sent = false;
    struct osbq_store_call *batch = list_take(&p->backlog);
    while (batch != NULL) {
        struct osbq_store_call *next = batch->next;
        sent = send_call(p, batch) || sent;
        batch = next;
    }
    /* Calls answered after the last WAIT (resent after NOSCRIPT) need one as well. */
    if (p->c != NULL && (sent || p->held.first != NULL))
        send_wait(p);
}

/* NOSCRIPT (the script cache was flushed): SCRIPT LOAD, then the call again, once. The SHA is
 * the text's SHA-1, so the command stands as it was. */
static void resend_after_noscript(struct osbq_store_pipeline *p, struct osbq_store_call *call)
{
    char *load = NULL;
    int len = redisFormatCommand(&load, "SCRIPT LOAD %s", store_script_texts[call->script].text);
    bool ok = len > 0 && out_append(p, load, (size_t)len) &&
              sent_push(p, SENT_SCRIPT_LOAD, NULL, call->deadline_ms) && append_call(p, call);
    redisFreeCommand(load);
    call->resent = true;
    if (!ok) {
        /* Part of it may be in the output without its place among the replies: the connection
         * cannot be trusted to pair them any more. */
        struct osbq_error err = {0};
        osbq_error_set(&err, OSBQ_ERR_INTERNAL, "out of memory");
        fail(call, &err);
        drop_connection(p, "out of memory");
    }
}

/* Gives each reply parsed so far to the oldest command sent. */
static void take_replies(struct osbq_store_pipeline *p)
{
    for (;;) {
        void *got = NULL;
        if (redisReaderGetReply(p->c->reader, &got) != REDIS_OK) {
            drop_connection(p, "protocol error in a reply");
            return;
        }
        if (got == NULL)
            return;
        redisReply *reply = got;
        if (p->sent_count == 0) {
            freeReplyObject(reply);
            drop_connection(p, "a reply to no command");
            return;
        }
        struct sent sent = p->sent[p->sent_at];
        struct osbq_store_call *call = sent.call;
        p->sent_at = (p->sent_at + 1) % p->sent_cap;
        p->sent_count--;
        if (sent.kind == SENT_ACK_WAIT) {
            long long acks = store_ack_count(p->store, reply);
            freeReplyObject(reply);
            settle_held(p, acks < (long long)p->store->cfg->redis_min_acks);
            continue;
        }
        if (call == NULL) { /* the SCRIPT LOAD's or the mark's reply says nothing of use */
            freeReplyObject(reply);
            continue;
        }
        if (reply->type == REDIS_REPLY_ERROR && !call->resent &&
            call->script != STORE_CALL_COMMAND && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
            freeReplyObject(reply);
            resend_after_noscript(p, call);
            if (p->c == NULL)
                return;
            continue;
        }
        bool replica = store_call_settle(p->store, call, reply);
        if (acks_wanted(p) && call->reply != NULL)
            list_push(&p->held, call);
        else
            finish(call);
        if (replica) {
            drop_connection(p, "the server is a replica now");
            return;
        }
    }
}

static void read_replies(struct osbq_store_pipeline *p)
{
    char buf[16384];
    while (p->c != NULL) {
        ssize_t n = read(p->c->fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            char words[256];
            if (n == 0)
                (void)snprintf(words, sizeof words, "the server closed the connection");
            else
                store_errno_words(p->c, errno, words, sizeof words);
            drop_connection(p, words);
            return;
        }
        if (redisReaderFeed(p->c->reader, buf, (size_t)n) != REDIS_OK) {
            drop_connection(p, "cannot buffer a reply");
            return;
        }
        take_replies(p);
        if ((size_t)n < sizeof buf)
            return;
    }
}

static void write_out(struct osbq_store_pipeline *p)
{
    while (p->c != NULL && p->out_at < p->out_len) {
        ssize_t n = send(p->c->fd, p->out + p->out_at, p->out_len - p->out_at, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            char words[256];
            store_errno_words(p->c, errno, words, sizeof words);
            drop_connection(p, words);
            return;
        }
        p->out_at += (size_t)n;
    }
}

/* Takes the calls submitted since the last turn, linked by next; *stopping says whether
 * draining began. */
static struct osbq_store_call *take_submitted(struct osbq_store_pipeline *p, bool *stopping)
{
    struct osbq_mailbox_link *link = osbq_mailbox_take(&p->mailbox, stopping);
    struct osbq_store_call *calls = NULL, **tail = &calls;
    while (link != NULL) {
        struct osbq_store_call *call =
            (struct osbq_store_call *)(void *)((char *)link -
                                               offsetof(struct osbq_store_call, link));
        link = link->next;
        *tail = call;
        tail = &call->next;
    }
    *tail = NULL;
    return calls;
}

static void *pipeline_main(void *arg)
{
    struct osbq_store_pipeline *p = arg;
    bool stopping = false;
    for (;;) {
        send_calls(p, take_submitted(p, &stopping));
        write_out(p);
        if (stopping && p->sent_count == 0 && p->backlog.first == NULL)
            break;
        int timeout = -1;
        if (p->sent_count > 0) {
            int64_t left = p->sent[p->sent_at].deadline_ms - store_monotonic_ms();
            if (left <= 0) {
                char words[96];
                (void)snprintf(words, sizeof words, "timed out after %u ms (OSBQ_REDIS_TIMEOUT_MS)",
                               p->store->cfg->redis_timeout_ms);
                drop_connection(p, words);
                continue;
            }
            timeout = left > INT32_MAX ? INT32_MAX : (int)left;
        }
        struct pollfd fds[2] = {{.fd = osbq_mailbox_fd(&p->mailbox), .events = POLLIN}, {.fd = -1}};
        if (p->c != NULL) {
            fds[1].fd = p->c->fd;
            fds[1].events = (short)(POLLIN | (p->out_at < p->out_len ? POLLOUT : 0));
        }
        if (poll(fds, 2, timeout) < 0 && errno != EINTR) {
            log_warnx("redis pipeline: poll: %s", strerror(errno));
            continue;
        }
        if (fds[1].revents & (POLLIN | POLLERR | POLLHUP))
            read_replies(p);
        if (p->c != NULL && (fds[1].revents & POLLOUT))
            write_out(p);
    }
    /* Draining: what was submitted meanwhile was taken above; the thread ends with nothing
     * pending, and the connection cannot go back to the store's pool (it is non-blocking). */
    redisFree(p->c);
    p->c = NULL;
    return NULL;
}

struct osbq_store_pipeline *osbq_store_pipeline_start(struct osbq_store *store,
                                                      struct osbq_error *err)
{
    struct osbq_store_pipeline *p = calloc(1, sizeof *p);
    if (p == NULL) {
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    p->store = store;
    if (osbq_mailbox_init(&p->mailbox, err) < 0) {
        free(p);
        return NULL;
    }
    if (pthread_create(&p->thread, NULL, pipeline_main, p) != 0) {
        osbq_mailbox_clear(&p->mailbox);
        free(p);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "redis pipeline: cannot start its thread");
        return NULL;
    }
    p->running = true;
    return p;
}

int osbq_store_pipeline_submit(struct osbq_store_pipeline *p, struct osbq_store_call *call,
                               osbq_store_call_done_fn done, void *ctx)
{
    call->done = done;
    call->done_ctx = ctx;
    call->next = NULL;
    call->resent = false;
    call->deadline_ms = store_monotonic_ms() + (int64_t)p->store->cfg->redis_timeout_ms;
    if (!osbq_mailbox_post(&p->mailbox, &call->link))
        return osbq_error_set(&call->err, OSBQ_ERR_UNAVAILABLE,
                              "the broker is stopping: no new Redis calls");
    return 0;
}

void osbq_store_pipeline_drain(struct osbq_store_pipeline *p)
{
    osbq_mailbox_close(&p->mailbox);
    if (p->running) {
        pthread_join(p->thread, NULL);
        p->running = false;
    }
}

void osbq_store_pipeline_free(struct osbq_store_pipeline **pp)
{
    OSBQ_OWNED_OR_RETURN(struct osbq_store_pipeline, p, pp);
    osbq_store_pipeline_drain(p);
    osbq_mailbox_clear(&p->mailbox);
    free(p->sent);
    free(p->out);
    free(p);
    *pp = NULL;
}
