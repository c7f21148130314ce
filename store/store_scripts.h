/* The Lua scripts the store runs in Redis, embedded at build time from store/lua/, and the
 * contract with each: its KEYS and ARGV by name. A script declares them in two tables before its
 * code ("local KEY = {" with "  op = KEYS[1],", "local ARG = {" with "  now = ARGV[3],", one a
 * line) and reads them by those names (KEY.op, ARG.now); the enums below mirror the tables
 * (entry i is KEYS[i + 1] or ARGV[i + 1]), and tests/unit/test_store_contract.c checks the two
 * agree, names and order, and that the script reads no name its tables do not declare. */
#ifndef OSBQ_STORE_SCRIPTS_H
#define OSBQ_STORE_SCRIPTS_H

#include <stddef.h>

/* Indexes into store_script_texts, in the order store/CMakeLists.txt embeds them. */
enum store_script {
    SCRIPT_BEGIN_INSTANCE,
    SCRIPT_BEGIN_BINDING,
    SCRIPT_CLAIM,
    SCRIPT_PROGRESS,
    SCRIPT_FINISH,
    SCRIPT_LAST_OPERATION,
    SCRIPT_RECOVER,
    SCRIPT_RELEASE,
    SCRIPT_RESEND,
    SCRIPT_RESEAL,
    SCRIPT_REVOKE,
    SCRIPT_WAIT,
    SCRIPT_COUNT
};

struct store_script_text {
    const char *name; /* the file name without .lua */
    const char *text; /* the script */
};

extern const struct store_script_text store_script_texts[SCRIPT_COUNT];

/* One script's KEYS and ARGV: the enum identifiers as text, indexed by their values
 * (store_contract.c). Calls take their counts from here. */
struct store_script_contract {
    const char *const *keys; /* "BEGIN_INSTANCE_KEY_INSTANCE", ... */
    size_t key_count;
    const char *const *args; /* "BEGIN_INSTANCE_ARG_KIND", ... */
    size_t arg_count;
};

extern const struct store_script_contract store_script_contracts[SCRIPT_COUNT];

/* begin_instance.lua */
enum begin_instance_key {
    BEGIN_INSTANCE_KEY_INSTANCE,
    BEGIN_INSTANCE_KEY_OP,
    BEGIN_INSTANCE_KEY_QUEUE,
    BEGIN_INSTANCE_KEY_WAITERS,
    BEGIN_INSTANCE_KEY_BINDINGS,
    BEGIN_INSTANCE_KEY_COUNT
};
enum begin_instance_arg {
    BEGIN_INSTANCE_ARG_KIND,
    BEGIN_INSTANCE_ARG_OPERATION_ID,
    BEGIN_INSTANCE_ARG_DIGEST,
    BEGIN_INSTANCE_ARG_NOW,
    BEGIN_INSTANCE_ARG_WAITING_GATEWAY,
    BEGIN_INSTANCE_ARG_SERVICE_ID,
    BEGIN_INSTANCE_ARG_PLAN_ID,
    BEGIN_INSTANCE_ARG_PARAMETERS,
    BEGIN_INSTANCE_ARG_CONTEXT,
    BEGIN_INSTANCE_ARG_MAINTENANCE_VERSION,
    BEGIN_INSTANCE_ARG_DASHBOARD_URL,
    BEGIN_INSTANCE_ARG_JOB,
    BEGIN_INSTANCE_ARG_CLAIM_DEADLINE,
    BEGIN_INSTANCE_ARG_EXPECTED_PLAN_ID,
    BEGIN_INSTANCE_ARG_PREFIX,
    BEGIN_INSTANCE_ARG_INSTANCE_ID,
    BEGIN_INSTANCE_ARG_API_VERSION,
    BEGIN_INSTANCE_ARG_QUOTAS,
    BEGIN_INSTANCE_ARG_PLATFORM,
    BEGIN_INSTANCE_ARG_TENANT,
    BEGIN_INSTANCE_ARG_IN_PROGRESS_CAP,
    BEGIN_INSTANCE_ARG_HANDED_WORKER,
    BEGIN_INSTANCE_ARG_HANDED_UNTIL,
    BEGIN_INSTANCE_ARG_HALT,
    BEGIN_INSTANCE_ARG_COUNT
};

/* begin_binding.lua */
enum begin_binding_key {
    BEGIN_BINDING_KEY_INSTANCE,
    BEGIN_BINDING_KEY_BINDING,
    BEGIN_BINDING_KEY_OP,
    BEGIN_BINDING_KEY_QUEUE,
    BEGIN_BINDING_KEY_WAITERS,
    BEGIN_BINDING_KEY_BINDINGS,
    BEGIN_BINDING_KEY_COUNT
};
enum begin_binding_arg {
    BEGIN_BINDING_ARG_KIND,
    BEGIN_BINDING_ARG_OPERATION_ID,
    BEGIN_BINDING_ARG_DIGEST,
    BEGIN_BINDING_ARG_NOW,
    BEGIN_BINDING_ARG_WAITING_GATEWAY,
    BEGIN_BINDING_ARG_SERVICE_ID,
    BEGIN_BINDING_ARG_PLAN_ID,
    BEGIN_BINDING_ARG_PARAMETERS,
    BEGIN_BINDING_ARG_CONTEXT,
    BEGIN_BINDING_ARG_BIND_RESOURCE,
    BEGIN_BINDING_ARG_JOB,
    BEGIN_BINDING_ARG_CLAIM_DEADLINE,
    BEGIN_BINDING_ARG_PREFIX,
    BEGIN_BINDING_ARG_INSTANCE_ID,
    BEGIN_BINDING_ARG_BINDING_ID,
    BEGIN_BINDING_ARG_API_VERSION,
    BEGIN_BINDING_ARG_PREDECESSOR_KEY,
    BEGIN_BINDING_ARG_PREDECESSOR_ID,
    BEGIN_BINDING_ARG_PLATFORM,
    BEGIN_BINDING_ARG_TENANT,
    BEGIN_BINDING_ARG_IN_PROGRESS_CAP,
    BEGIN_BINDING_ARG_HANDED_WORKER,
    BEGIN_BINDING_ARG_HANDED_UNTIL,
    BEGIN_BINDING_ARG_HALT,
    BEGIN_BINDING_ARG_COUNT
};

/* claim.lua */
enum claim_key { CLAIM_KEY_OP, CLAIM_KEY_QUEUE, CLAIM_KEY_COUNT };
enum claim_arg {
    CLAIM_ARG_WORKER_ID,
    CLAIM_ARG_ATTEMPT,
    CLAIM_ARG_NOW,
    CLAIM_ARG_LEASE,
    CLAIM_ARG_OPERATION_ID,
    CLAIM_ARG_PREFIX,
    CLAIM_ARG_COUNT
};

/* progress.lua */
enum progress_key { PROGRESS_KEY_OP, PROGRESS_KEY_QUEUE, PROGRESS_KEY_COUNT };
enum progress_arg {
    PROGRESS_ARG_WORKER_ID,
    PROGRESS_ARG_DESCRIPTION,
    PROGRESS_ARG_NOW,
    PROGRESS_ARG_LEASE,
    PROGRESS_ARG_OPERATION_ID,
    PROGRESS_ARG_COUNT
};

/* finish.lua */
enum finish_key { FINISH_KEY_OP, FINISH_KEY_QUEUE, FINISH_KEY_WAITERS, FINISH_KEY_COUNT };
enum finish_arg {
    FINISH_ARG_WORKER_ID,
    FINISH_ARG_SUCCEEDED,
    FINISH_ARG_DESCRIPTION,
    FINISH_ARG_DASHBOARD_URL,
    FINISH_ARG_METADATA,
    FINISH_ARG_INSTANCE_USABLE,
    FINISH_ARG_UPDATE_REPEATABLE,
    FINISH_ARG_NOW,
    FINISH_ARG_RETENTION,
    FINISH_ARG_PREFIX,
    FINISH_ARG_OPERATION_ID,
    FINISH_ARG_BINDING,
    FINISH_ARG_MODE,
    FINISH_ARG_COUNT
};

/* last_operation.lua */
enum last_operation_key { LAST_OPERATION_KEY_RECORD, LAST_OPERATION_KEY_COUNT };
enum last_operation_arg {
    LAST_OPERATION_ARG_OPERATION_ID,
    LAST_OPERATION_ARG_PREFIX,
    LAST_OPERATION_ARG_INSTANCE_ID,
    LAST_OPERATION_ARG_BINDING_ID,
    LAST_OPERATION_ARG_PLATFORM,
    LAST_OPERATION_ARG_COUNT
};

/* recover.lua */
enum recover_key { RECOVER_KEY_QUEUE, RECOVER_KEY_COUNT };
enum recover_arg {
    RECOVER_ARG_NOW,
    RECOVER_ARG_LIMIT,
    RECOVER_ARG_MAX_ATTEMPTS,
    RECOVER_ARG_CLAIM_TIMEOUT,
    RECOVER_ARG_PREFIX,
    RECOVER_ARG_CAN_RESEND,
    RECOVER_ARG_COUNT
};

/* release.lua */
enum release_key { RELEASE_KEY_OP, RELEASE_KEY_QUEUE, RELEASE_KEY_COUNT };
enum release_arg {
    RELEASE_ARG_WORKER_ID,
    RELEASE_ARG_NOW,
    RELEASE_ARG_OPERATION_ID,
    RELEASE_ARG_COUNT
};

/* resend.lua */
enum resend_key { RESEND_KEY_OP, RESEND_KEY_QUEUE, RESEND_KEY_COUNT };
enum resend_arg { RESEND_ARG_NOW, RESEND_ARG_OPERATION_ID, RESEND_ARG_PREFIX, RESEND_ARG_COUNT };

/* wait.lua */
enum wait_key { WAIT_KEY_OP, WAIT_KEY_QUEUE, WAIT_KEY_COUNT };
enum wait_arg {
    WAIT_ARG_WORKER_ID,
    WAIT_ARG_DESCRIPTION,
    WAIT_ARG_RESUME,
    WAIT_ARG_DUE,
    WAIT_ARG_NOW,
    WAIT_ARG_OPERATION_ID,
    WAIT_ARG_PREFIX,
    WAIT_ARG_COUNT
};

/* reseal.lua */
enum reseal_key { RESEAL_KEY_BINDING, RESEAL_KEY_COUNT };
enum reseal_arg { RESEAL_ARG_EXPECTED, RESEAL_ARG_REPLACEMENT, RESEAL_ARG_COUNT };

/* revoke.lua */
enum revoke_key { REVOKE_KEY_QUEUE, REVOKE_KEY_COUNT };
enum revoke_arg {
    REVOKE_ARG_WORKER_ID,
    REVOKE_ARG_OPERATION_IDS,
    REVOKE_ARG_NOW,
    REVOKE_ARG_MAX_ATTEMPTS,
    REVOKE_ARG_CLAIM_TIMEOUT,
    REVOKE_ARG_PREFIX,
    REVOKE_ARG_COUNT
};

#endif
