/* The process's clock for durations and deadlines: CLOCK_MONOTONIC, which no change of the
 * wall clock moves (Redis records use epoch times: osbq_store_now_ms). */
#ifndef OSBQ_CLOCK_H
#define OSBQ_CLOCK_H

#include <pthread.h>
#include <stdint.h>

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t osbq_clock_ms(void);

/* Seconds on CLOCK_MONOTONIC, for durations measured finer than a millisecond. */
double osbq_clock_seconds(void);

/* Sleeps ms milliseconds on CLOCK_MONOTONIC (a signal may cut it short). */
void osbq_clock_sleep_ms(int64_t ms);

/* Initialises cond on CLOCK_MONOTONIC, as osbq_clock_wait_until needs it. 0, or -1. */
int osbq_clock_cond_init(pthread_cond_t *cond);

/* Waits on cond (made by osbq_clock_cond_init), lock held, until the
 * monotonic deadline_ms, a signal, or a spurious wake-up: callers re-check their condition. */
void osbq_clock_wait_until(pthread_cond_t *cond, pthread_mutex_t *lock, int64_t deadline_ms);

#endif
