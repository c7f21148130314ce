/* The Lua scripts the store runs in Redis, embedded at build time from store/lua/, and the
 * contract with each: its KEYS and ARGV by name. A script declares them before its code, one a
 * line ("local key_op = KEYS[1]", "local arg_now = ARGV[3]", decision 0046) and reads them by
 * those names only; the enums below mirror the declarations (entry i is KEYS[i + 1] or
 * ARGV[i + 1], KEY_OP for key_op), and tests/unit/test_store_contract.c checks the two agree,
 * names and order, and that the script reads no KEYS[n] or ARGV[n] but through them. */
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
    SCRIPT_PURGE,
    SCRIPT_RECOVER,
    SCRIPT_RELEASE,
    SCRIPT_RESEND,
    SCRIPT_RESEAL,
    SCRIPT_REVOKE,
    SCRIPT_WAIT,
    SCRIPT_EXPORT,
    SCRIPT_IMPORT,
    SCRIPT_COUNT_RECORDS,
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

/* Each script's KEYS and ARGV as a list, X(e) an entry: its enum is made of it, and
 * store_contract.c its table of names. */
#define STORE_ENUM_ENTRY(e) e

/* begin_instance.lua */
#define BEGIN_INSTANCE_KEYS(X)                                                                     \
    X(BEGIN_INSTANCE_KEY_INSTANCE), X(BEGIN_INSTANCE_KEY_OP), X(BEGIN_INSTANCE_KEY_QUEUE),         \
        X(BEGIN_INSTANCE_KEY_WAITERS), X(BEGIN_INSTANCE_KEY_BINDINGS)
enum begin_instance_key { BEGIN_INSTANCE_KEYS(STORE_ENUM_ENTRY), BEGIN_INSTANCE_KEY_COUNT };
#define BEGIN_INSTANCE_ARGS(X)                                                                     \
    X(BEGIN_INSTANCE_ARG_KIND), X(BEGIN_INSTANCE_ARG_OPERATION_ID), X(BEGIN_INSTANCE_ARG_DIGEST),  \
        X(BEGIN_INSTANCE_ARG_NOW), X(BEGIN_INSTANCE_ARG_WAITING_GATEWAY),                          \
        X(BEGIN_INSTANCE_ARG_SERVICE_ID), X(BEGIN_INSTANCE_ARG_PLAN_ID),                           \
        X(BEGIN_INSTANCE_ARG_PARAMETERS), X(BEGIN_INSTANCE_ARG_CONTEXT),                           \
        X(BEGIN_INSTANCE_ARG_MAINTENANCE_VERSION), X(BEGIN_INSTANCE_ARG_DASHBOARD_URL),            \
        X(BEGIN_INSTANCE_ARG_JOB), X(BEGIN_INSTANCE_ARG_CLAIM_DEADLINE),                           \
        X(BEGIN_INSTANCE_ARG_EXPECTED_PLAN_ID), X(BEGIN_INSTANCE_ARG_PREFIX),                      \
        X(BEGIN_INSTANCE_ARG_INSTANCE_ID), X(BEGIN_INSTANCE_ARG_API_VERSION),                      \
        X(BEGIN_INSTANCE_ARG_QUOTAS), X(BEGIN_INSTANCE_ARG_PLATFORM),                              \
        X(BEGIN_INSTANCE_ARG_TENANT), X(BEGIN_INSTANCE_ARG_IN_PROGRESS_CAP),                       \
        X(BEGIN_INSTANCE_ARG_HANDED_WORKER), X(BEGIN_INSTANCE_ARG_HANDED_UNTIL),                   \
        X(BEGIN_INSTANCE_ARG_HALT), X(BEGIN_INSTANCE_ARG_DELETION_PROTECTION),                     \
        X(BEGIN_INSTANCE_ARG_DELETE_CAP), X(BEGIN_INSTANCE_ARG_EVENTS_MAX),                        \
        X(BEGIN_INSTANCE_ARG_USER), X(BEGIN_INSTANCE_ARG_REQUEST_ID)
enum begin_instance_arg { BEGIN_INSTANCE_ARGS(STORE_ENUM_ENTRY), BEGIN_INSTANCE_ARG_COUNT };

/* begin_binding.lua */
#define BEGIN_BINDING_KEYS(X)                                                                      \
    X(BEGIN_BINDING_KEY_INSTANCE), X(BEGIN_BINDING_KEY_BINDING), X(BEGIN_BINDING_KEY_OP),          \
        X(BEGIN_BINDING_KEY_QUEUE), X(BEGIN_BINDING_KEY_WAITERS), X(BEGIN_BINDING_KEY_BINDINGS)
enum begin_binding_key { BEGIN_BINDING_KEYS(STORE_ENUM_ENTRY), BEGIN_BINDING_KEY_COUNT };
#define BEGIN_BINDING_ARGS(X)                                                                      \
    X(BEGIN_BINDING_ARG_KIND), X(BEGIN_BINDING_ARG_OPERATION_ID), X(BEGIN_BINDING_ARG_DIGEST),     \
        X(BEGIN_BINDING_ARG_NOW), X(BEGIN_BINDING_ARG_WAITING_GATEWAY),                            \
        X(BEGIN_BINDING_ARG_SERVICE_ID), X(BEGIN_BINDING_ARG_PLAN_ID),                             \
        X(BEGIN_BINDING_ARG_PARAMETERS), X(BEGIN_BINDING_ARG_CONTEXT),                             \
        X(BEGIN_BINDING_ARG_BIND_RESOURCE), X(BEGIN_BINDING_ARG_JOB),                              \
        X(BEGIN_BINDING_ARG_CLAIM_DEADLINE), X(BEGIN_BINDING_ARG_PREFIX),                          \
        X(BEGIN_BINDING_ARG_INSTANCE_ID), X(BEGIN_BINDING_ARG_BINDING_ID),                         \
        X(BEGIN_BINDING_ARG_API_VERSION), X(BEGIN_BINDING_ARG_PREDECESSOR_KEY),                    \
        X(BEGIN_BINDING_ARG_PREDECESSOR_ID), X(BEGIN_BINDING_ARG_PLATFORM),                        \
        X(BEGIN_BINDING_ARG_TENANT), X(BEGIN_BINDING_ARG_IN_PROGRESS_CAP),                         \
        X(BEGIN_BINDING_ARG_HANDED_WORKER), X(BEGIN_BINDING_ARG_HANDED_UNTIL),                     \
        X(BEGIN_BINDING_ARG_HALT), X(BEGIN_BINDING_ARG_DELETE_CAP),                                \
        X(BEGIN_BINDING_ARG_EVENTS_MAX), X(BEGIN_BINDING_ARG_USER),                                \
        X(BEGIN_BINDING_ARG_REQUEST_ID)
enum begin_binding_arg { BEGIN_BINDING_ARGS(STORE_ENUM_ENTRY), BEGIN_BINDING_ARG_COUNT };

/* claim.lua */
#define CLAIM_KEYS(X) X(CLAIM_KEY_OP), X(CLAIM_KEY_QUEUE)
enum claim_key { CLAIM_KEYS(STORE_ENUM_ENTRY), CLAIM_KEY_COUNT };
#define CLAIM_ARGS(X)                                                                              \
    X(CLAIM_ARG_WORKER_ID), X(CLAIM_ARG_ATTEMPT), X(CLAIM_ARG_NOW), X(CLAIM_ARG_LEASE),            \
        X(CLAIM_ARG_OPERATION_ID), X(CLAIM_ARG_PREFIX)
enum claim_arg { CLAIM_ARGS(STORE_ENUM_ENTRY), CLAIM_ARG_COUNT };

/* progress.lua */
#define PROGRESS_KEYS(X) X(PROGRESS_KEY_OP), X(PROGRESS_KEY_QUEUE)
enum progress_key { PROGRESS_KEYS(STORE_ENUM_ENTRY), PROGRESS_KEY_COUNT };
#define PROGRESS_ARGS(X)                                                                           \
    X(PROGRESS_ARG_WORKER_ID), X(PROGRESS_ARG_DESCRIPTION), X(PROGRESS_ARG_NOW),                   \
        X(PROGRESS_ARG_LEASE), X(PROGRESS_ARG_OPERATION_ID)
enum progress_arg { PROGRESS_ARGS(STORE_ENUM_ENTRY), PROGRESS_ARG_COUNT };

/* finish.lua */
#define FINISH_KEYS(X) X(FINISH_KEY_OP), X(FINISH_KEY_QUEUE), X(FINISH_KEY_WAITERS)
enum finish_key { FINISH_KEYS(STORE_ENUM_ENTRY), FINISH_KEY_COUNT };
#define FINISH_ARGS(X)                                                                             \
    X(FINISH_ARG_WORKER_ID), X(FINISH_ARG_SUCCEEDED), X(FINISH_ARG_DESCRIPTION),                   \
        X(FINISH_ARG_DASHBOARD_URL), X(FINISH_ARG_METADATA), X(FINISH_ARG_INSTANCE_USABLE),        \
        X(FINISH_ARG_UPDATE_REPEATABLE), X(FINISH_ARG_NOW), X(FINISH_ARG_RETENTION),               \
        X(FINISH_ARG_PREFIX), X(FINISH_ARG_OPERATION_ID), X(FINISH_ARG_BINDING),                   \
        X(FINISH_ARG_MODE), X(FINISH_ARG_EVENTS_MAX), X(FINISH_ARG_BY)
enum finish_arg { FINISH_ARGS(STORE_ENUM_ENTRY), FINISH_ARG_COUNT };

/* last_operation.lua */
#define LAST_OPERATION_KEYS(X) X(LAST_OPERATION_KEY_RECORD)
enum last_operation_key { LAST_OPERATION_KEYS(STORE_ENUM_ENTRY), LAST_OPERATION_KEY_COUNT };
#define LAST_OPERATION_ARGS(X)                                                                     \
    X(LAST_OPERATION_ARG_OPERATION_ID), X(LAST_OPERATION_ARG_PREFIX),                              \
        X(LAST_OPERATION_ARG_INSTANCE_ID), X(LAST_OPERATION_ARG_BINDING_ID),                       \
        X(LAST_OPERATION_ARG_PLATFORM)
enum last_operation_arg { LAST_OPERATION_ARGS(STORE_ENUM_ENTRY), LAST_OPERATION_ARG_COUNT };

/* purge.lua */
#define PURGE_KEYS(X) X(PURGE_KEY_RECORD), X(PURGE_KEY_BINDINGS)
enum purge_key { PURGE_KEYS(STORE_ENUM_ENTRY), PURGE_KEY_COUNT };
#define PURGE_ARGS(X)                                                                              \
    X(PURGE_ARG_PREFIX), X(PURGE_ARG_BINDING), X(PURGE_ARG_NOW), X(PURGE_ARG_RETENTION),           \
        X(PURGE_ARG_BY), X(PURGE_ARG_EVENTS_MAX)
enum purge_arg { PURGE_ARGS(STORE_ENUM_ENTRY), PURGE_ARG_COUNT };

/* recover.lua */
#define RECOVER_KEYS(X) X(RECOVER_KEY_QUEUE)
enum recover_key { RECOVER_KEYS(STORE_ENUM_ENTRY), RECOVER_KEY_COUNT };
#define RECOVER_ARGS(X)                                                                            \
    X(RECOVER_ARG_NOW), X(RECOVER_ARG_LIMIT), X(RECOVER_ARG_MAX_ATTEMPTS),                         \
        X(RECOVER_ARG_CLAIM_TIMEOUT), X(RECOVER_ARG_PREFIX), X(RECOVER_ARG_CAN_RESEND)
enum recover_arg { RECOVER_ARGS(STORE_ENUM_ENTRY), RECOVER_ARG_COUNT };

/* release.lua */
#define RELEASE_KEYS(X) X(RELEASE_KEY_OP), X(RELEASE_KEY_QUEUE)
enum release_key { RELEASE_KEYS(STORE_ENUM_ENTRY), RELEASE_KEY_COUNT };
#define RELEASE_ARGS(X) X(RELEASE_ARG_WORKER_ID), X(RELEASE_ARG_NOW), X(RELEASE_ARG_OPERATION_ID)
enum release_arg { RELEASE_ARGS(STORE_ENUM_ENTRY), RELEASE_ARG_COUNT };

/* resend.lua */
#define RESEND_KEYS(X) X(RESEND_KEY_OP), X(RESEND_KEY_QUEUE)
enum resend_key { RESEND_KEYS(STORE_ENUM_ENTRY), RESEND_KEY_COUNT };
#define RESEND_ARGS(X)                                                                             \
    X(RESEND_ARG_NOW), X(RESEND_ARG_OPERATION_ID), X(RESEND_ARG_PREFIX), X(RESEND_ARG_BY),         \
        X(RESEND_ARG_EVENTS_MAX)
enum resend_arg { RESEND_ARGS(STORE_ENUM_ENTRY), RESEND_ARG_COUNT };

/* wait.lua */
#define WAIT_KEYS(X) X(WAIT_KEY_OP), X(WAIT_KEY_QUEUE)
enum wait_key { WAIT_KEYS(STORE_ENUM_ENTRY), WAIT_KEY_COUNT };
#define WAIT_ARGS(X)                                                                               \
    X(WAIT_ARG_WORKER_ID), X(WAIT_ARG_DESCRIPTION), X(WAIT_ARG_RESUME), X(WAIT_ARG_DUE),           \
        X(WAIT_ARG_NOW), X(WAIT_ARG_OPERATION_ID), X(WAIT_ARG_PREFIX)
enum wait_arg { WAIT_ARGS(STORE_ENUM_ENTRY), WAIT_ARG_COUNT };

/* reseal.lua */
#define RESEAL_KEYS(X) X(RESEAL_KEY_RECORD)
enum reseal_key { RESEAL_KEYS(STORE_ENUM_ENTRY), RESEAL_KEY_COUNT };
#define RESEAL_ARGS(X) X(RESEAL_ARG_FIELD), X(RESEAL_ARG_EXPECTED), X(RESEAL_ARG_REPLACEMENT)
enum reseal_arg { RESEAL_ARGS(STORE_ENUM_ENTRY), RESEAL_ARG_COUNT };

/* revoke.lua */
#define REVOKE_KEYS(X) X(REVOKE_KEY_QUEUE)
enum revoke_key { REVOKE_KEYS(STORE_ENUM_ENTRY), REVOKE_KEY_COUNT };
#define REVOKE_ARGS(X)                                                                             \
    X(REVOKE_ARG_WORKER_ID), X(REVOKE_ARG_OPERATION_IDS), X(REVOKE_ARG_NOW),                       \
        X(REVOKE_ARG_MAX_ATTEMPTS), X(REVOKE_ARG_CLAIM_TIMEOUT), X(REVOKE_ARG_PREFIX)
enum revoke_arg { REVOKE_ARGS(STORE_ENUM_ENTRY), REVOKE_ARG_COUNT };

/* export.lua */
#define EXPORT_KEYS(X) X(EXPORT_KEY_INSTANCE), X(EXPORT_KEY_BINDINGS)
enum export_key { EXPORT_KEYS(STORE_ENUM_ENTRY), EXPORT_KEY_COUNT };
#define EXPORT_ARGS(X) X(EXPORT_ARG_PREFIX), X(EXPORT_ARG_OPS_MAX)
enum export_arg { EXPORT_ARGS(STORE_ENUM_ENTRY), EXPORT_ARG_COUNT };

/* import.lua */
#define IMPORT_KEYS(X) X(IMPORT_KEY_INSTANCE), X(IMPORT_KEY_BINDINGS), X(IMPORT_KEY_COUNTS)
enum import_key { IMPORT_KEYS(STORE_ENUM_ENTRY), IMPORT_KEY_COUNT };
#define IMPORT_ARGS(X)                                                                             \
    X(IMPORT_ARG_RECORDS), X(IMPORT_ARG_RETENTION), X(IMPORT_ARG_PREFIX), X(IMPORT_ARG_BY),        \
        X(IMPORT_ARG_EVENTS_MAX)
enum import_arg { IMPORT_ARGS(STORE_ENUM_ENTRY), IMPORT_ARG_COUNT };

/* count_records.lua */
#define COUNT_RECORDS_KEYS(X) X(COUNT_RECORDS_KEY_COUNTS)
enum count_records_key { COUNT_RECORDS_KEYS(STORE_ENUM_ENTRY), COUNT_RECORDS_KEY_COUNT };
#define COUNT_RECORDS_ARGS(X) X(COUNT_RECORDS_ARG_PREFIX), X(COUNT_RECORDS_ARG_BATCH)
enum count_records_arg { COUNT_RECORDS_ARGS(STORE_ENUM_ENTRY), COUNT_RECORDS_ARG_COUNT };

#endif
