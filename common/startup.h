/* What both binaries do first: answer --help and --version, block the stop signals, and load
 * the configuration and the catalog, stopping with one line that names what is wrong. */
#ifndef OSBQ_STARTUP_H
#define OSBQ_STARTUP_H

#include <signal.h>

#include "catalog.h"
#include "config.h"
#include "error.h"
#include "secrets.h"

/* Who is starting. */
struct osbq_startup {
    const char *prog;    /* the binary's name, first on every start-up error line */
    const char *version; /* printed by --version */
    const char *about;   /* one line for --help */
    enum osbq_role role; /* which variables it reads */
};

/* What a binary does first, before any thread starts: handles the command line
 * (--help, --version), makes jansson wipe what it frees (json_wipe.h), and blocks the stop
 * signals, which it puts in *stop (SIGPIPE ignored, SIGHUP held). */
void osbq_startup_begin(const struct osbq_startup *s, int argc, char **argv, sigset_t *stop);

/* Prints "<prog>: [<what>: ]<err->text>" and exits 1. */
void osbq_startup_die(const struct osbq_startup *s, const char *what, const struct osbq_error *err)
    __attribute__((noreturn));

/* Loads and checks the configuration, starts logging, and loads the catalog (*catalog: caller
 * frees with osbq_catalog_destroy); stops the process with one line on the first problem. */
void osbq_startup_load(const struct osbq_startup *s, struct osbq_config *cfg,
                       struct osbq_catalog **catalog);

/* Judges the failure of the first PING to Redis (err from osbq_store_ping). A refusal that
 * lasts (OSBQ_ERR_MISCONFIGURED: a wrong or missing password, an unknown database, an ACL's
 * NOPERM) stops the process with one line, as no retry cures it. Redis not answering is
 * logged at warn and start-up goes on: it may come up later. */
void osbq_startup_redis_failed(const struct osbq_startup *s, const struct osbq_error *err);

/* Loads the key ring of OSBQ_SECRET_KEY_FILE (caller frees with osbq_secrets_destroy),
 * stopping the process with one line naming the variable and the line on any problem; NULL
 * without the variable. */
struct osbq_secrets *osbq_startup_secrets(const struct osbq_startup *s,
                                          const struct osbq_config *cfg);

/* Logs which key seals binding credentials, or warns that they are stored in plaintext
 * (secrets NULL). Call once start-up can no longer fail, so a failing start-up still prints
 * one line. */
void osbq_startup_secrets_report(const struct osbq_secrets *secrets);

#endif
