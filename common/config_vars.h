/* The table of OSBQ_* variables (config_vars.c): each one's name, the binaries that read it, its
 * default, its parser and its help line. Only the loader (config.c) reads it. */
#ifndef OSBQ_CONFIG_VARS_H
#define OSBQ_CONFIG_VARS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* One variable. */
struct osbq_config_var {
    const char *name;          /* the environment variable */
    enum osbq_role role;       /* which binaries read it */
    const char *default_value; /* parsed when the variable is unset; NULL: parser gets NULL */
    const char *default_help;  /* the default as --help shows it */
    bool file_variant;         /* NAME_FILE names a file holding the value (Docker secrets) */
    /* Checks value and sets its field of cfg; -1 with the reason (no variable name) in err. */
    int (*parse)(struct osbq_config *cfg, const char *value, struct osbq_error *err);
    const char *help; /* one line for --help */
};

/* Every variable, in the order they are parsed (a default may derive from an earlier value). */
extern const struct osbq_config_var osbq_config_vars[];
extern const size_t osbq_config_var_count;

#endif
