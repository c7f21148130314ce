/* The plans' average durations that set a poll's Retry-After, as a gateway last read them from
 * Redis: a poll that names its operation reads only the operation (docs/decisions/0043), and
 * an average read a few seconds ago is as good a hint as one read now. Thread-safe. */
#ifndef OSBQ_GATEWAY_AVERAGES_H
#define OSBQ_GATEWAY_AVERAGES_H

#include <stdbool.h>
#include <stdint.h>

/* How long an average read from Redis answers polls before it is read again (seconds). */
#define AVERAGES_MAX_AGE_S 10.0

/* The most averages kept; past it, all are forgotten and read again as polls need them (the
 * catalog's plans times four kinds stay far below). */
#define AVERAGES_MAX 4096

struct averages;

/* A new, empty table; NULL when out of memory. */
struct averages *averages_new(void);
void averages_free(struct averages **ap);

/* The average of kind on plan (ms, or -1: none recorded yet) when read less than
 * AVERAGES_MAX_AGE_S before now (seconds, osbq_clock_seconds): true with *average_ms. */
bool averages_get(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t *average_ms);

/* Remembers average_ms (-1: none recorded) for kind on plan, read at now. */
void averages_put(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t average_ms);

#endif
