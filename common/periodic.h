/* A thread that calls one function now and then until it is stopped: the shape of the
 * gateway's registry renewal (every interval) and recovery scan (whenever its next work falls
 * due). */
#ifndef OSBQ_PERIODIC_H
#define OSBQ_PERIODIC_H

#include <stdint.h>

#include "error.h"

struct osbq_periodic;

/* Starts a thread calling fn(arg) at once and then every interval_ms (measured from the end of
 * one call to the start of the next). arg is borrowed. NULL with err on failure. */
struct osbq_periodic *osbq_periodic_start(unsigned interval_ms, void (*fn)(void *arg), void *arg,
                                          struct osbq_error *err);

/* Starts a thread calling fn(arg, told_ms) at once and then at the epoch ms (CLOCK_REALTIME)
 * each call returns, or sooner when told: told_ms is the earliest time osbq_periodic_sooner
 * gave since the last call, 0 when none. arg is borrowed. NULL with err on failure. */
struct osbq_periodic *osbq_periodic_start_at(int64_t (*fn)(void *arg, int64_t told_ms), void *arg,
                                             struct osbq_error *err);

/* Starts a thread as osbq_periodic_start (fn, with fn_at NULL) or osbq_periodic_start_at (fn_at,
 * with fn NULL) does, taking arg (malloc'd; NULL: out of memory, refused): freed by
 * osbq_periodic_stop, or at once when the start fails. For a task whose state is all in arg. */
struct osbq_periodic *osbq_periodic_start_owning(unsigned interval_ms, void (*fn)(void *arg),
                                                 int64_t (*fn_at)(void *arg, int64_t told_ms),
                                                 void *arg, struct osbq_error *err);

/* Tells the thread of work due at at_ms (epoch ms): a thread asleep past it wakes to call its
 * function, which is given the earliest such time. From any thread. */
void osbq_periodic_sooner(struct osbq_periodic *p, int64_t at_ms);

/* Wakes and joins the thread (a call in progress finishes first), frees, sets *pp to NULL;
 * accepts NULL. */
void osbq_periodic_stop(struct osbq_periodic **pp);

#endif
