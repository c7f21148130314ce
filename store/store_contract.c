/* The contract with each script as data: the names of its KEYS and ARGV enums (store_scripts.h)
 * by value, for the counts every call checks and for the test that reads the scripts' key_ and
 * arg_ declarations (tests/unit/test_store_contract.c). Designated by the enums, so a table follows
 * its enum. */
#include "store_scripts.h"

/* [e] = "e": the entry of enum value e, named as the enum names it. */
#define NAMED(e) [e] = #e

static const char *const begin_instance_keys[] = {
    NAMED(BEGIN_INSTANCE_KEY_INSTANCE), NAMED(BEGIN_INSTANCE_KEY_OP),
    NAMED(BEGIN_INSTANCE_KEY_QUEUE), NAMED(BEGIN_INSTANCE_KEY_WAITERS),
    NAMED(BEGIN_INSTANCE_KEY_BINDINGS)};

static const char *const begin_instance_args[] = {NAMED(BEGIN_INSTANCE_ARG_KIND),
                                                  NAMED(BEGIN_INSTANCE_ARG_OPERATION_ID),
                                                  NAMED(BEGIN_INSTANCE_ARG_DIGEST),
                                                  NAMED(BEGIN_INSTANCE_ARG_NOW),
                                                  NAMED(BEGIN_INSTANCE_ARG_WAITING_GATEWAY),
                                                  NAMED(BEGIN_INSTANCE_ARG_SERVICE_ID),
                                                  NAMED(BEGIN_INSTANCE_ARG_PLAN_ID),
                                                  NAMED(BEGIN_INSTANCE_ARG_PARAMETERS),
                                                  NAMED(BEGIN_INSTANCE_ARG_CONTEXT),
                                                  NAMED(BEGIN_INSTANCE_ARG_MAINTENANCE_VERSION),
                                                  NAMED(BEGIN_INSTANCE_ARG_DASHBOARD_URL),
                                                  NAMED(BEGIN_INSTANCE_ARG_JOB),
                                                  NAMED(BEGIN_INSTANCE_ARG_CLAIM_DEADLINE),
                                                  NAMED(BEGIN_INSTANCE_ARG_EXPECTED_PLAN_ID),
                                                  NAMED(BEGIN_INSTANCE_ARG_PREFIX),
                                                  NAMED(BEGIN_INSTANCE_ARG_INSTANCE_ID),
                                                  NAMED(BEGIN_INSTANCE_ARG_API_VERSION),
                                                  NAMED(BEGIN_INSTANCE_ARG_QUOTAS),
                                                  NAMED(BEGIN_INSTANCE_ARG_PLATFORM),
                                                  NAMED(BEGIN_INSTANCE_ARG_TENANT),
                                                  NAMED(BEGIN_INSTANCE_ARG_IN_PROGRESS_CAP),
                                                  NAMED(BEGIN_INSTANCE_ARG_HANDED_WORKER),
                                                  NAMED(BEGIN_INSTANCE_ARG_HANDED_UNTIL),
                                                  NAMED(BEGIN_INSTANCE_ARG_HALT),
                                                  NAMED(BEGIN_INSTANCE_ARG_DELETION_PROTECTION),
                                                  NAMED(BEGIN_INSTANCE_ARG_DELETE_CAP),
                                                  NAMED(BEGIN_INSTANCE_ARG_EVENTS_MAX),
                                                  NAMED(BEGIN_INSTANCE_ARG_USER),
                                                  NAMED(BEGIN_INSTANCE_ARG_REQUEST_ID)};

static const char *const begin_binding_keys[] = {
    NAMED(BEGIN_BINDING_KEY_INSTANCE), NAMED(BEGIN_BINDING_KEY_BINDING),
    NAMED(BEGIN_BINDING_KEY_OP),       NAMED(BEGIN_BINDING_KEY_QUEUE),
    NAMED(BEGIN_BINDING_KEY_WAITERS),  NAMED(BEGIN_BINDING_KEY_BINDINGS)};

static const char *const begin_binding_args[] = {NAMED(BEGIN_BINDING_ARG_KIND),
                                                 NAMED(BEGIN_BINDING_ARG_OPERATION_ID),
                                                 NAMED(BEGIN_BINDING_ARG_DIGEST),
                                                 NAMED(BEGIN_BINDING_ARG_NOW),
                                                 NAMED(BEGIN_BINDING_ARG_WAITING_GATEWAY),
                                                 NAMED(BEGIN_BINDING_ARG_SERVICE_ID),
                                                 NAMED(BEGIN_BINDING_ARG_PLAN_ID),
                                                 NAMED(BEGIN_BINDING_ARG_PARAMETERS),
                                                 NAMED(BEGIN_BINDING_ARG_CONTEXT),
                                                 NAMED(BEGIN_BINDING_ARG_BIND_RESOURCE),
                                                 NAMED(BEGIN_BINDING_ARG_JOB),
                                                 NAMED(BEGIN_BINDING_ARG_CLAIM_DEADLINE),
                                                 NAMED(BEGIN_BINDING_ARG_PREFIX),
                                                 NAMED(BEGIN_BINDING_ARG_INSTANCE_ID),
                                                 NAMED(BEGIN_BINDING_ARG_BINDING_ID),
                                                 NAMED(BEGIN_BINDING_ARG_API_VERSION),
                                                 NAMED(BEGIN_BINDING_ARG_PREDECESSOR_KEY),
                                                 NAMED(BEGIN_BINDING_ARG_PREDECESSOR_ID),
                                                 NAMED(BEGIN_BINDING_ARG_PLATFORM),
                                                 NAMED(BEGIN_BINDING_ARG_TENANT),
                                                 NAMED(BEGIN_BINDING_ARG_IN_PROGRESS_CAP),
                                                 NAMED(BEGIN_BINDING_ARG_HANDED_WORKER),
                                                 NAMED(BEGIN_BINDING_ARG_HANDED_UNTIL),
                                                 NAMED(BEGIN_BINDING_ARG_HALT),
                                                 NAMED(BEGIN_BINDING_ARG_DELETE_CAP),
                                                 NAMED(BEGIN_BINDING_ARG_EVENTS_MAX),
                                                 NAMED(BEGIN_BINDING_ARG_USER),
                                                 NAMED(BEGIN_BINDING_ARG_REQUEST_ID)};

static const char *const claim_keys[] = {NAMED(CLAIM_KEY_OP), NAMED(CLAIM_KEY_QUEUE)};

static const char *const claim_args[] = {NAMED(CLAIM_ARG_WORKER_ID),    NAMED(CLAIM_ARG_ATTEMPT),
                                         NAMED(CLAIM_ARG_NOW),          NAMED(CLAIM_ARG_LEASE),
                                         NAMED(CLAIM_ARG_OPERATION_ID), NAMED(CLAIM_ARG_PREFIX)};

static const char *const progress_keys[] = {NAMED(PROGRESS_KEY_OP), NAMED(PROGRESS_KEY_QUEUE)};

static const char *const progress_args[] = {
    NAMED(PROGRESS_ARG_WORKER_ID), NAMED(PROGRESS_ARG_DESCRIPTION), NAMED(PROGRESS_ARG_NOW),
    NAMED(PROGRESS_ARG_LEASE), NAMED(PROGRESS_ARG_OPERATION_ID)};

static const char *const finish_keys[] = {NAMED(FINISH_KEY_OP), NAMED(FINISH_KEY_QUEUE),
                                          NAMED(FINISH_KEY_WAITERS)};

static const char *const finish_args[] = {NAMED(FINISH_ARG_WORKER_ID),
                                          NAMED(FINISH_ARG_SUCCEEDED),
                                          NAMED(FINISH_ARG_DESCRIPTION),
                                          NAMED(FINISH_ARG_DASHBOARD_URL),
                                          NAMED(FINISH_ARG_METADATA),
                                          NAMED(FINISH_ARG_INSTANCE_USABLE),
                                          NAMED(FINISH_ARG_UPDATE_REPEATABLE),
                                          NAMED(FINISH_ARG_NOW),
                                          NAMED(FINISH_ARG_RETENTION),
                                          NAMED(FINISH_ARG_PREFIX),
                                          NAMED(FINISH_ARG_OPERATION_ID),
                                          NAMED(FINISH_ARG_BINDING),
                                          NAMED(FINISH_ARG_MODE),
                                          NAMED(FINISH_ARG_EVENTS_MAX),
                                          NAMED(FINISH_ARG_BY)};

static const char *const last_operation_keys[] = {NAMED(LAST_OPERATION_KEY_RECORD)};

static const char *const last_operation_args[] = {
    NAMED(LAST_OPERATION_ARG_OPERATION_ID), NAMED(LAST_OPERATION_ARG_PREFIX),
    NAMED(LAST_OPERATION_ARG_INSTANCE_ID), NAMED(LAST_OPERATION_ARG_BINDING_ID),
    NAMED(LAST_OPERATION_ARG_PLATFORM)};

static const char *const purge_keys[] = {NAMED(PURGE_KEY_RECORD), NAMED(PURGE_KEY_BINDINGS)};

static const char *const purge_args[] = {NAMED(PURGE_ARG_PREFIX), NAMED(PURGE_ARG_BINDING),
                                         NAMED(PURGE_ARG_NOW),    NAMED(PURGE_ARG_RETENTION),
                                         NAMED(PURGE_ARG_BY),     NAMED(PURGE_ARG_EVENTS_MAX)};

static const char *const recover_keys[] = {NAMED(RECOVER_KEY_QUEUE)};

static const char *const recover_args[] = {
    NAMED(RECOVER_ARG_NOW),           NAMED(RECOVER_ARG_LIMIT),  NAMED(RECOVER_ARG_MAX_ATTEMPTS),
    NAMED(RECOVER_ARG_CLAIM_TIMEOUT), NAMED(RECOVER_ARG_PREFIX), NAMED(RECOVER_ARG_CAN_RESEND)};

static const char *const release_keys[] = {NAMED(RELEASE_KEY_OP), NAMED(RELEASE_KEY_QUEUE)};

static const char *const release_args[] = {NAMED(RELEASE_ARG_WORKER_ID), NAMED(RELEASE_ARG_NOW),
                                           NAMED(RELEASE_ARG_OPERATION_ID)};

static const char *const resend_keys[] = {NAMED(RESEND_KEY_OP), NAMED(RESEND_KEY_QUEUE)};

static const char *const resend_args[] = {NAMED(RESEND_ARG_NOW), NAMED(RESEND_ARG_OPERATION_ID),
                                          NAMED(RESEND_ARG_PREFIX), NAMED(RESEND_ARG_BY),
                                          NAMED(RESEND_ARG_EVENTS_MAX)};

static const char *const reseal_keys[] = {NAMED(RESEAL_KEY_RECORD)};

static const char *const reseal_args[] = {NAMED(RESEAL_ARG_FIELD), NAMED(RESEAL_ARG_EXPECTED),
                                          NAMED(RESEAL_ARG_REPLACEMENT)};

static const char *const revoke_keys[] = {NAMED(REVOKE_KEY_QUEUE)};

static const char *const revoke_args[] = {
    NAMED(REVOKE_ARG_WORKER_ID),    NAMED(REVOKE_ARG_OPERATION_IDS), NAMED(REVOKE_ARG_NOW),
    NAMED(REVOKE_ARG_MAX_ATTEMPTS), NAMED(REVOKE_ARG_CLAIM_TIMEOUT), NAMED(REVOKE_ARG_PREFIX)};

static const char *const wait_keys[] = {NAMED(WAIT_KEY_OP), NAMED(WAIT_KEY_QUEUE)};

static const char *const wait_args[] = {NAMED(WAIT_ARG_WORKER_ID), NAMED(WAIT_ARG_DESCRIPTION),
                                        NAMED(WAIT_ARG_RESUME),    NAMED(WAIT_ARG_DUE),
                                        NAMED(WAIT_ARG_NOW),       NAMED(WAIT_ARG_OPERATION_ID),
                                        NAMED(WAIT_ARG_PREFIX)};

static const char *const export_keys[] = {NAMED(EXPORT_KEY_INSTANCE), NAMED(EXPORT_KEY_BINDINGS)};

static const char *const export_args[] = {NAMED(EXPORT_ARG_PREFIX), NAMED(EXPORT_ARG_OPS_MAX)};

static const char *const import_keys[] = {NAMED(IMPORT_KEY_INSTANCE), NAMED(IMPORT_KEY_BINDINGS),
                                          NAMED(IMPORT_KEY_COUNTS)};

static const char *const import_args[] = {NAMED(IMPORT_ARG_RECORDS), NAMED(IMPORT_ARG_RETENTION),
                                          NAMED(IMPORT_ARG_PREFIX), NAMED(IMPORT_ARG_BY),
                                          NAMED(IMPORT_ARG_EVENTS_MAX)};

static const char *const count_records_keys[] = {NAMED(COUNT_RECORDS_KEY_COUNTS)};

static const char *const count_records_args[] = {NAMED(COUNT_RECORDS_ARG_PREFIX),
                                                 NAMED(COUNT_RECORDS_ARG_BATCH)};

const struct store_script_contract store_script_contracts[SCRIPT_COUNT] = {
    [SCRIPT_BEGIN_INSTANCE] = {begin_instance_keys, BEGIN_INSTANCE_KEY_COUNT, begin_instance_args,
                               BEGIN_INSTANCE_ARG_COUNT},
    [SCRIPT_BEGIN_BINDING] = {begin_binding_keys, BEGIN_BINDING_KEY_COUNT, begin_binding_args,
                              BEGIN_BINDING_ARG_COUNT},
    [SCRIPT_CLAIM] = {claim_keys, CLAIM_KEY_COUNT, claim_args, CLAIM_ARG_COUNT},
    [SCRIPT_PROGRESS] = {progress_keys, PROGRESS_KEY_COUNT, progress_args, PROGRESS_ARG_COUNT},
    [SCRIPT_FINISH] = {finish_keys, FINISH_KEY_COUNT, finish_args, FINISH_ARG_COUNT},
    [SCRIPT_LAST_OPERATION] = {last_operation_keys, LAST_OPERATION_KEY_COUNT, last_operation_args,
                               LAST_OPERATION_ARG_COUNT},
    [SCRIPT_PURGE] = {purge_keys, PURGE_KEY_COUNT, purge_args, PURGE_ARG_COUNT},
    [SCRIPT_RECOVER] = {recover_keys, RECOVER_KEY_COUNT, recover_args, RECOVER_ARG_COUNT},
    [SCRIPT_RELEASE] = {release_keys, RELEASE_KEY_COUNT, release_args, RELEASE_ARG_COUNT},
    [SCRIPT_RESEND] = {resend_keys, RESEND_KEY_COUNT, resend_args, RESEND_ARG_COUNT},
    [SCRIPT_RESEAL] = {reseal_keys, RESEAL_KEY_COUNT, reseal_args, RESEAL_ARG_COUNT},
    [SCRIPT_REVOKE] = {revoke_keys, REVOKE_KEY_COUNT, revoke_args, REVOKE_ARG_COUNT},
    [SCRIPT_WAIT] = {wait_keys, WAIT_KEY_COUNT, wait_args, WAIT_ARG_COUNT},
    [SCRIPT_EXPORT] = {export_keys, EXPORT_KEY_COUNT, export_args, EXPORT_ARG_COUNT},
    [SCRIPT_IMPORT] = {import_keys, IMPORT_KEY_COUNT, import_args, IMPORT_ARG_COUNT},
    [SCRIPT_COUNT_RECORDS] = {count_records_keys, COUNT_RECORDS_KEY_COUNT, count_records_args,
                              COUNT_RECORDS_ARG_COUNT},
};
