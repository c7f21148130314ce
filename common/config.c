/* Loading the configuration: each variable of the table (config_vars.c) read from the
 * environment or its _FILE, the rules that tie two variables together, --help, and the names
 * of misspelt variables. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config_vars.h"
#include "secrets.h"

/* Secrets read from *_FILE paths are small; anything larger is a wrong path. */
#define SECRET_FILE_MAX 4096

static const char *lookup_getenv(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* Reads a secret from path: at most SECRET_FILE_MAX bytes, one trailing newline removed. */
static char *read_secret_file(const char *path, struct osbq_error *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = calloc(1, SECRET_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        osbq_error_set(err, OSBQ_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    size_t n = fread(buf, 1, SECRET_FILE_MAX + 1, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || n > SECRET_FILE_MAX || memchr(buf, '\0', n) != NULL) {
        osbq_error_set(err, OSBQ_ERR_INVALID, "%s: %s", path,
                       failed ? "read error" : "not a small text file");
        free(buf);
        return NULL;
    }
    if (n > 0 && buf[n - 1] == '\n')
        buf[--n] = '\0';
    if (n > 0 && buf[n - 1] == '\r')
        buf[--n] = '\0';
    return buf;
}

/* Parses var into cfg: its value, from NAME_FILE when that is set, else its default. */
static int load_variable(struct osbq_config *cfg, const struct osbq_config_var *var,
                         osbq_config_getenv_fn lookup, void *ctx, struct osbq_error *err)
{
    const char *value = lookup(var->name, ctx);
    const char *name = var->name;
    char file_name[64];
    char *from_file = NULL;
    if (var->file_variant) {
        (void)snprintf(file_name, sizeof file_name, "%s_FILE", var->name);
        const char *path = lookup(file_name, ctx);
        if (path != NULL && value != NULL)
            return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: set either %s or %s, not both",
                                  var->name, var->name, file_name);
        if (path != NULL) {
            name = file_name;
            from_file = read_secret_file(path, err);
            if (from_file == NULL)
                return osbq_error_prefix(err, "%s", name);
            value = from_file;
        }
    }
    if (value == NULL)
        value = var->default_value;
    int rc = var->parse(cfg, value, err);
    osbq_secrets_free_text(from_file);
    return rc < 0 ? osbq_error_prefix(err, "%s", name) : 0;
}

/* Two variables that make sense only together: both set, or neither. */
static int both_or_neither(bool first_set, const char *first, bool second_set, const char *second,
                           const char *note, struct osbq_error *err)
{
    if (first_set == second_set)
        return 0;
    return osbq_error_set(err, OSBQ_ERR_INVALID, "%s: set both %s and %s, or neither%s",
                          first_set ? second : first, first, second, note);
}

/* The variables that make sense only together; role decides which bus certificates pair. */
static int check_pairs(const struct osbq_config *cfg, enum osbq_role role, struct osbq_error *err)
{
    bool server_cert = cfg->bus_server_cert != NULL;
    if (both_or_neither(cfg->metrics_username != NULL, "OSBQ_METRICS_USERNAME",
                        cfg->metrics_password != NULL, "OSBQ_METRICS_PASSWORD", "", err) < 0 ||
        both_or_neither(cfg->sentinel_count != 0, "OSBQ_REDIS_SENTINELS",
                        cfg->redis_master_name != NULL, "OSBQ_REDIS_MASTER_NAME", "", err) < 0 ||
        both_or_neither(cfg->broker_username != NULL, "OSBQ_BROKER_USERNAME",
                        cfg->broker_password != NULL, "OSBQ_BROKER_PASSWORD",
                        " (with OSBQ_PLATFORMS)", err) < 0 ||
        both_or_neither(cfg->tls_cert_path != NULL, "OSBQ_TLS_CERT", cfg->tls_key_path != NULL,
                        "OSBQ_TLS_KEY", "", err) < 0)
        return -1;
    if ((role & OSBQ_ROLE_GATEWAY) &&
        both_or_neither(server_cert, "OSBQ_BUS_CURVE_SERVER_CERT", cfg->bus_clients_dir != NULL,
                        "OSBQ_BUS_CURVE_CLIENTS_DIR", "", err) < 0)
        return -1;
    if ((role & OSBQ_ROLE_WORKER) &&
        both_or_neither(server_cert, "OSBQ_BUS_CURVE_SERVER_CERT", cfg->bus_client_cert != NULL,
                        "OSBQ_BUS_CURVE_CLIENT_CERT", "", err) < 0)
        return -1;
    return 0;
}

int osbq_config_load(struct osbq_config *cfg, enum osbq_role role, osbq_config_getenv_fn lookup,
                     void *ctx, struct osbq_error *err)
{
    struct osbq_config loaded = {0};
    if (lookup == NULL)
        lookup = lookup_getenv;
    for (size_t i = 0; i < osbq_config_var_count; i++) {
        const struct osbq_config_var *var = &osbq_config_vars[i];
        if ((var->role & role) != 0 && load_variable(&loaded, var, lookup, ctx, err) < 0)
            goto fail;
    }
    if (check_pairs(&loaded, role, err) < 0)
        goto fail;
    *cfg = loaded;
    return 0;
fail:
    osbq_config_clear(&loaded);
    return -1;
}

void osbq_config_clear(struct osbq_config *cfg)
{
    osbq_redis_addr_clear(&cfg->redis);
    free(cfg->namespace_);
    free(cfg->catalog_path);
    free(cfg->listen.host);
    osbq_secrets_free_text(cfg->broker_username);
    osbq_secrets_free_text(cfg->broker_password);
    free(cfg->bus_bind);
    free(cfg->bus_advertise);
    osbq_secrets_free_text(cfg->metrics_username);
    osbq_secrets_free_text(cfg->metrics_password);
    free(cfg->metrics_listen.host);
    for (size_t i = 0; i < cfg->sentinel_count; i++)
        free(cfg->sentinels[i].host);
    free(cfg->redis_master_name);
    free(cfg->tls_cert_path);
    free(cfg->tls_key_path);
    free(cfg->secret_key_file);
    free(cfg->bus_server_cert);
    free(cfg->bus_client_cert);
    free(cfg->bus_clients_dir);
    free(cfg->policy_path);
    free(cfg->platforms_path);
    memset(cfg, 0, sizeof *cfg);
}

void osbq_config_print_help(FILE *out, enum osbq_role role)
{
    fprintf(out, "Environment variables:\n");
    for (size_t i = 0; i < osbq_config_var_count; i++) {
        const struct osbq_config_var *var = &osbq_config_vars[i];
        if ((var->role & role) == 0)
            continue;
        const char *def = var->default_help ? var->default_help : var->default_value;
        fprintf(out, "  %-24s %s\n  %-24s default: %s\n", var->name, var->help, "", def);
        if (var->file_variant)
            fprintf(out, "  %-24s (%s_FILE: path of a file holding it)\n", "", var->name);
    }
}

/* The variable's name, or its _FILE form (variant), in buf; false when it has none. */
static bool variable_name(const struct osbq_config_var *var, bool variant, char *buf, size_t size)
{
    if (variant && !var->file_variant)
        return false;
    int n = snprintf(buf, size, "%s%s", var->name, variant ? "_FILE" : "");
    return n > 0 && (size_t)n < size;
}

bool osbq_config_known(const char *name)
{
    char known[64];
    for (size_t i = 0; i < osbq_config_var_count; i++)
        for (int variant = 0; variant < 2; variant++)
            if (variable_name(&osbq_config_vars[i], variant, known, sizeof known) &&
                strcmp(name, known) == 0)
                return true;
    return false;
}

/* Levenshtein distance of a and b, or limit + 1 when it exceeds limit or a name is too long
 * to compare. */
static size_t edit_distance(const char *a, const char *b, size_t limit)
{
    enum { longest = 64 };
    size_t la = strlen(a);
    size_t lb = strlen(b);
    if (la >= longest || lb >= longest || (la > lb ? la - lb : lb - la) > limit)
        return limit + 1;
    size_t row[longest + 1];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t above = row[j];
            size_t best = diagonal + (a[i - 1] != b[j - 1]);
            if (above + 1 < best)
                best = above + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diagonal = above;
        }
    }
    return row[lb];
}

const char *osbq_config_suggest(const char *name)
{
    const size_t limit = 2;
    const char *best = NULL;
    size_t best_distance = limit + 1;
    for (size_t i = 0; i < osbq_config_var_count; i++) {
        /* A _FILE form is suggested as its variable: the caller adds the suffix if meant. */
        size_t d = edit_distance(name, osbq_config_vars[i].name, limit);
        if (d < best_distance) {
            best = osbq_config_vars[i].name;
            best_distance = d;
        }
    }
    return best;
}
