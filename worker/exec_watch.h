/* The watch over the exec backend's programs: one thread with an epoll loop that drives every
 * running program of a worker (its pidfd for the exit, its stdout and stderr pipes, non-blocking
 * writes of its stdin, timers for its timeout and kill grace), so a program costs no thread
 * however long it runs. The places it gives out bound the programs running at once
 * (OSBQ_WORKER_EXEC_CONCURRENCY). */
#ifndef OSBQ_WORKER_EXEC_WATCH_H
#define OSBQ_WORKER_EXEC_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/* How often the loop asks each program's owner whether it may keep running. */
#define EXEC_WATCH_TICK_MS 100
/* Between SIGTERM and SIGKILL: time for a program to clean up after a timeout or a stop. */
#define EXEC_WATCH_KILL_GRACE_MS 2000
/* After the program exited, how long processes it left behind may keep its pipes open before
 * its group is killed: their output is read meanwhile. */
#define EXEC_WATCH_DRAIN_MS 1000

struct exec_watch;

/* Why a program ended. */
enum exec_watch_stop {
    EXEC_WATCH_EXITED,    /* on its own */
    EXEC_WATCH_TIMEOUT,   /* it ran past its timeout and was stopped */
    EXEC_WATCH_CANCELLED, /* keep_running said no, or the watch was destroyed */
};

/* How a program ended, handed to its ended callback. */
struct exec_watch_end {
    enum exec_watch_stop stop;
    int status; /* its waitpid status */
    bool lost;  /* it could not be reaped here: status unknown */
};

/* What the loop calls back, always on its own thread, never two at once. */
struct exec_watch_ops {
    /* n bytes the program wrote on stdout (stream 1) or stderr (stream 2); n == 0: that
     * stream's end (EOF, or closed by the watch). */
    void (*output)(void *ctx, int stream, const char *data, size_t n);
    /* Asked every EXEC_WATCH_TICK_MS while the program runs: false stops it (SIGTERM to its
     * process group, SIGKILL after EXEC_WATCH_KILL_GRACE_MS). */
    bool (*keep_running)(void *ctx);
    /* Asked while a stopped program is in its kill grace: true cuts the grace short. May be
     * NULL. */
    bool (*hurry)(void *ctx);
    /* Last call: the program was reaped, nothing of its process group is left, its pipes are
     * closed and its place is free again. The watch forgets ctx and the program's input. */
    void (*ended)(void *ctx, const struct exec_watch_end *end);
};

/* What an exec program was given and did, for a caller that shows it step by step (the backend
 * authors' kit, osbq-exec-kit); the worker sets none. The exec backend calls input on the
 * calling thread before the program starts, output and ended on the watch's thread, never two
 * at once; none of them may call back into the backend. The data is borrowed for the call and
 * may hold secrets (parameters, credentials). */
struct exec_trace {
    /* The job written on the program's stdin: one JSON line, newline included. */
    void (*input)(void *ctx, const char *line, size_t n);
    /* As exec_watch_ops.output: n bytes of stdout (stream 1) or stderr (stream 2), n == 0 at
     * the stream's end. */
    void (*output)(void *ctx, int stream, const char *data, size_t n);
    /* The program was reaped (before its outcome is made); not called when it never started
     * or could not be watched. */
    void (*ended)(void *ctx, const struct exec_watch_end *end);
    void *ctx; /* handed to each */
};

/* A started program handed to the watch. The program must lead its own process group (its
 * pid is the group id) and be a child of this process. */
struct exec_watch_program {
    pid_t pid;
    int in_fd, out_fd, err_fd; /* our ends of its pipes; in_fd may be -1 (nothing to write) */
    const char *input;         /* written to in_fd, then in_fd is closed; borrowed until ended */
    size_t input_len;
    int64_t timeout_ms; /* stopped past this (> 0) */
    const struct exec_watch_ops *ops;
    void *ctx;
    const char *tenant; /* whose program it is, as given to exec_watch_reserve (copied) */
};

/* Starts the loop's thread; limit places (programs running at once, >= 1). Call with the
 * stop signals blocked: the thread inherits the mask. NULL with err set when memory, epoll,
 * an eventfd or the thread cannot be had. */
struct exec_watch *exec_watch_new(unsigned limit, struct osbq_error *err);

/* Longest tenant name the places tell apart (a longer one is cut). */
#define EXEC_WATCH_TENANT_MAX 256

/* Takes a place for a program of tenant (NULL: "") about to start, waiting up to wait_ms for
 * one. The steps waiting take the places that come free by the fairness rule: the step whose
 * tenant holds the fewest places first, then the one with the lowest ticket. *ticket keeps a
 * step's place in line across calls: 0 on the first, which sets it. Returns true when taken:
 * the caller then calls exec_watch_add or exec_watch_unreserve. */
bool exec_watch_reserve(struct exec_watch *w, const char *tenant, uint64_t *ticket,
                        int64_t wait_ms);

/* Gives back a place tenant's step took with exec_watch_reserve whose program did not start. */
void exec_watch_unreserve(struct exec_watch *w, const char *tenant);

/* Hands a started program to the loop, on a place reserved before; the watch owns its fds from
 * now on, whatever the result. Returns 0; or -1 (out of memory or no pidfd: err says which)
 * when the program could not be watched: it was killed and reaped, its fds closed and its
 * place given back, and no callback will come. */
int exec_watch_add(struct exec_watch *w, const struct exec_watch_program *program,
                   struct osbq_error *err);

/* Closes *fd unless it is -1, and sets it to -1: the pipes of a program before and after it is
 * watched. */
void exec_watch_close_fd(int *fd);

/* Places taken: programs running and places reserved. */
unsigned exec_watch_busy(struct exec_watch *w);

/* Stops the loop: every program still watched gets SIGKILL to its group, is reaped and ended
 * (EXEC_WATCH_CANCELLED unless it had already timed out), then the thread is joined and the
 * watch freed. Sets *wp to NULL; accepts NULL. */
void exec_watch_destroy(struct exec_watch **wp);

#endif
