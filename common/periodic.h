/* A thread that calls one function now and then every interval until it is stopped: the shape
 * of the gateway's registry renewal and recovery scan. */
#ifndef OSBQ_PERIODIC_H
#define OSBQ_PERIODIC_H

#include "error.h"

struct osbq_periodic;

/* Starts a thread calling fn(arg) at once and then every interval_ms (measured from the end of
 * one call to the start of the next). arg is borrowed. NULL with err on failure. */
struct osbq_periodic *osbq_periodic_start(unsigned interval_ms, void (*fn)(void *arg), void *arg,
                                          struct osbq_error *err);

/* Wakes and joins the thread (a call in progress finishes first), frees, sets *pp to NULL;
 * accepts NULL. */
void osbq_periodic_stop(struct osbq_periodic **pp);

#endif
