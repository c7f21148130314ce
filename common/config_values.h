/* Parsers of configuration values: a bounded unsigned number, a host:port address, a ZeroMQ
 * tcp:// endpoint, a redis:// URL. Text in, a typed value or the reason it is not one out
 * (without a variable name: the caller adds it); nothing is read from the environment. */
#ifndef OSBQ_CONFIG_VALUES_H
#define OSBQ_CONFIG_VALUES_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

/* A parsed redis:// URL. */
struct osbq_redis_addr {
    char *host;     /* host name or address, brackets removed from IPv6 literals */
    uint16_t port;  /* TCP port, 6379 when the URL names none */
    unsigned db;    /* database number, 0 when the URL names none */
    char *username; /* ACL user, or NULL */
    char *password; /* password, or NULL; never logged */
};

/* A parsed host:port listen address. */
struct osbq_listen_addr {
    char *host;    /* host name or address ("0.0.0.0", "::", "127.0.0.1", "localhost") */
    uint16_t port; /* TCP port, 1..65535 */
};

/* Parses a decimal unsigned integer in [min, max] with no sign, space or suffix into *out. */
int osbq_parse_uint(const char *value, unsigned long min, unsigned long max, unsigned long *out,
                    struct osbq_error *err);

/* Splits "host:port" or "[v6]:port" into *out (out->host owned by the caller). */
int osbq_listen_addr_parse(const char *value, struct osbq_listen_addr *out, struct osbq_error *err);

/* Checks a ZeroMQ "tcp://host:port" endpoint; *out gets its host (owned) and port. */
int osbq_tcp_endpoint_parse(const char *value, struct osbq_listen_addr *out,
                            struct osbq_error *err);

/* True for addresses that mean "every interface" ("*", 0.0.0.0, ::): nobody can connect to
 * them. */
bool osbq_host_is_wildcard(const char *host);

/* Parses a redis://[user:password@]host[:port][/db] URL into *out (owned; free with
 * osbq_redis_addr_clear). Returns -1 with a reason in err (no variable name) on failure. */
int osbq_redis_addr_parse(const char *url, struct osbq_redis_addr *out, struct osbq_error *err);

/* Frees the strings addr owns (the password wiped first) and zeroes it; accepts a zeroed one. */
void osbq_redis_addr_clear(struct osbq_redis_addr *addr);

#endif
