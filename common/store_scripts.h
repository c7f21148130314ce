/* The Lua scripts the store runs in Redis, embedded at build time from common/lua/. */
#ifndef OSBQ_STORE_SCRIPTS_H
#define OSBQ_STORE_SCRIPTS_H

/* Indexes into store_script_texts, in the order common/CMakeLists.txt embeds them. */
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
    SCRIPT_COUNT
};

struct store_script_text {
    const char *name; /* the file name without .lua */
    const char *text; /* the script */
};

extern const struct store_script_text store_script_texts[SCRIPT_COUNT];

#endif
