/* The redis backend's connection to a plan's target Redis server, as its administrator: open
 * it from the URL in the worker's environment, run commands on it, drop a user; and the
 * backend's failure rule. For backend_redis.c. */
#ifndef OSBQ_WORKER_REDIS_TARGET_H
#define OSBQ_WORKER_REDIS_TARGET_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "config.h"

#define REDIS_NO_MEMORY "The broker ran out of memory."
#define REDIS_FAILED    "The plan's Redis server refused an operation of the broker."

/* One connection to the target server, as its administrator. */
struct redis_target {
    struct osbq_redis_addr addr; /* the parsed admin URL; its password is zeroed on clear */
    redisContext *c;             /* NULL until connected */
};

/* Records a failure: a failed provision leaves no instance, any other failed redis operation
 * leaves the instance as it was (and an update never fails). */
void redis_target_fail(struct backend_call *call, const char *description);

/* Connects to the plan's target server (the URL in the environment variable its
 * target_url_env setting names, OSBQ_REDIS_TARGET_URL by default) as its administrator. Returns
 * true, or false with the outcome filled; close t either way. Descriptions name neither the
 * address nor the URL (platform users see them); the log has the address, never the URL (it
 * holds the admin password). */
bool redis_target_open(struct backend_call *call, struct redis_target *t);

/* Closes the connection and clears the address (its password zeroed). */
void redis_target_close(struct redis_target *t);

/* Runs a command (argvlen may be NULL for C strings); NULL (logged) when the connection
 * failed. hiredis contexts are unusable after an error, so callers stop at the first NULL.
 * Caller frees the reply. */
redisReply *redis_target_command(struct backend_call *call, struct redis_target *t, int argc,
                                 const char **argv, const size_t *argvlen);

/* Logs an error reply to what (never a credential: no command we send echoes one back). */
void redis_target_log_error(struct backend_call *call, const struct redis_target *t,
                            const char *what, const redisReply *r);

/* Disconnects every client logged in as user and deletes it; a user already gone is fine.
 * Returns true, or false with the outcome filled. */
bool redis_target_drop_user(struct backend_call *call, struct redis_target *t, const char *user);

#endif
