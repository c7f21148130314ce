/* Basic-auth credentials compared in constant time: the expected pair is kept only as a keyed
 * hash, so neither the time taken nor a memory dump of the struct reveals it. Used for the
 * broker API and for /metrics. */
#ifndef OSBQ_AUTH_H
#define OSBQ_AUTH_H

#include <stdbool.h>

/* The expected basic-auth credentials, kept only as a keyed hash so comparison takes the same
 * time whatever the presented values. */
struct osbq_auth {
    unsigned char key[32];    /* random per process */
    unsigned char digest[32]; /* keyed hash of username NUL password */
};

/* Prepares auth for username and password. Returns 0, or -1 when libsodium cannot start. */
int osbq_auth_init(struct osbq_auth *auth, const char *username, const char *password);

/* True when username and password (either may be NULL: no credentials) match, in constant
 * time with respect to the expected values. */
bool osbq_auth_check(const struct osbq_auth *auth, const char *username, const char *password);

#endif
