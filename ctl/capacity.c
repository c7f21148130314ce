/* How many workers the load needs (capacity.h). */
#include "capacity.h"

/* Figures beyond this are a hostile or broken status: clamped, so sums and products stay far
 * from overflowing (2^40 jobs times 2^20 workers). */
#define CAPACITY_FIGURE_MAX  ((int64_t)1 << 40)
#define CAPACITY_WORKERS_MAX ((int64_t)1 << 20)

/* A status's integer figure, 0 when missing or negative, clamped to CAPACITY_FIGURE_MAX. */
static int64_t figure(const json_t *status, const char *key)
{
    const json_t *value = json_object_get(status, key);
    if (!json_is_integer(value) || json_integer_value(value) < 0)
        return 0;
    json_int_t n = json_integer_value(value);
    return n > CAPACITY_FIGURE_MAX ? CAPACITY_FIGURE_MAX : (int64_t)n;
}

static int64_t add_clamped(int64_t sum, int64_t n)
{
    return sum > CAPACITY_FIGURE_MAX - n ? CAPACITY_FIGURE_MAX : sum + n;
}

void capacity_from_statuses(const json_t *gateways, const json_t *workers, struct capacity *out)
{
    *out = (struct capacity){0};
    size_t i;
    const json_t *status;
    json_array_foreach (gateways, i, status)
        out->queued = add_clamped(out->queued, figure(status, "jobs_queued"));
    json_array_foreach (workers, i, status) {
        if (out->workers == CAPACITY_WORKERS_MAX)
            break;
        out->workers++;
        out->stopping += json_is_true(json_object_get(status, "stopping"));
        out->running = add_clamped(out->running, figure(status, "running"));
        int64_t slots = figure(status, "slots");
        if (slots > 0) {
            out->sized++;
            out->slots = add_clamped(out->slots, slots);
        }
    }
}

int64_t capacity_workers_needed(const struct capacity *c, bool *exact)
{
    int64_t load = add_clamped(c->queued < 0 ? 0 : c->queued, c->running < 0 ? 0 : c->running);
    int64_t sized = c->sized > CAPACITY_WORKERS_MAX ? CAPACITY_WORKERS_MAX : c->sized;
    *exact = load == 0 || (sized > 0 && c->slots > 0);
    if (load == 0)
        return 0;
    if (!*exact)
        return 1;
    /* ceil(load / (slots / sized)) in integers: load and sized are clamped, so no overflow. */
    int64_t slots = c->slots > CAPACITY_FIGURE_MAX ? CAPACITY_FIGURE_MAX : c->slots;
    return (load * sized + slots - 1) / slots;
}
