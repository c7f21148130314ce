/* The contract with each script as data: the names of its KEYS and ARGV enums (store_scripts.h)
 * by value, for the counts every call checks and for the test that reads the scripts' key_ and
 * arg_ declarations (tests/unit/test_store_contract.c). Made from the lists the enums are made
 * of, so a table follows its enum. */
#include "store_scripts.h"

/* [e] = "e": the entry of enum value e, named as the enum names it. */
#define NAMED(e) [e] = #e

/* The contract of the script whose lists are P_KEYS and P_ARGS. */
#define CONTRACT(P)                                                                                \
    {                                                                                              \
        (const char *const[]){P##_KEYS(NAMED)}, P##_KEY_COUNT,                                     \
            (const char *const[]){P##_ARGS(NAMED)}, P##_ARG_COUNT                                  \
    }

const struct store_script_contract store_script_contracts[SCRIPT_COUNT] = {
    [SCRIPT_BEGIN_INSTANCE] = CONTRACT(BEGIN_INSTANCE),
    [SCRIPT_BEGIN_BINDING] = CONTRACT(BEGIN_BINDING),
    [SCRIPT_CLAIM] = CONTRACT(CLAIM),
    [SCRIPT_PROGRESS] = CONTRACT(PROGRESS),
    [SCRIPT_FINISH] = CONTRACT(FINISH),
    [SCRIPT_LAST_OPERATION] = CONTRACT(LAST_OPERATION),
    [SCRIPT_PURGE] = CONTRACT(PURGE),
    [SCRIPT_RECOVER] = CONTRACT(RECOVER),
    [SCRIPT_RELEASE] = CONTRACT(RELEASE),
    [SCRIPT_RESEND] = CONTRACT(RESEND),
    [SCRIPT_RESEAL] = CONTRACT(RESEAL),
    [SCRIPT_REVOKE] = CONTRACT(REVOKE),
    [SCRIPT_WAIT] = CONTRACT(WAIT),
    [SCRIPT_EXPORT] = CONTRACT(EXPORT),
    [SCRIPT_IMPORT] = CONTRACT(IMPORT),
    [SCRIPT_COUNT_RECORDS] = CONTRACT(COUNT_RECORDS),
};
