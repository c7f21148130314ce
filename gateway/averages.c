/* The averages a gateway read, by "<kind> <plan>", in a memo (memo.h). */
#include "averages.h"

#include <stdio.h>
#include <stdlib.h>

#include "memo.h"

struct averages {
    struct memo *by_key; /* "<kind> <plan>" -> struct average */
};

struct average {
    int64_t ms;     /* -1: none recorded */
    double read_at; /* osbq_clock_seconds when read from Redis */
};

struct averages *averages_new(void)
{
    struct averages *a = calloc(1, sizeof *a);
    if (a != NULL && (a->by_key = memo_new(AVERAGES_MAX)) == NULL) {
        free(a);
        a = NULL;
    }
    return a;
}

void averages_free(struct averages **ap)
{
    if (ap == NULL || *ap == NULL)
        return;
    memo_free(&(*ap)->by_key);
    free(*ap);
    *ap = NULL;
}

/* The table's key of kind on plan in buf; false when it does not fit (not kept then). */
static bool average_key(char *buf, size_t size, const char *plan, const char *kind)
{
    int n = snprintf(buf, size, "%s %s", kind, plan);
    return n > 0 && (size_t)n < size;
}

bool averages_get(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t *average_ms)
{
    char key[512];
    struct average found;
    if (a == NULL || !average_key(key, sizeof key, plan, kind) ||
        !memo_get(a->by_key, key, &found, sizeof found))
        return false;
    bool fresh = now - found.read_at < AVERAGES_MAX_AGE_S && now >= found.read_at;
    if (fresh)
        *average_ms = found.ms;
    return fresh;
}

void averages_put(struct averages *a, const char *plan, const char *kind, double now,
                  int64_t average_ms)
{
    char key[512];
    if (a == NULL || !average_key(key, sizeof key, plan, kind))
        return;
    const struct average item = {average_ms, now};
    memo_put(a->by_key, key, &item, sizeof item);
}
