/* Semantic Versioning 2.0.0 (the catalog's maintenance_info.version): its syntax, and the
 * precedence of two versions. */
#ifndef OSBQ_SEMVER_H
#define OSBQ_SEMVER_H

#include <stdbool.h>

/* True when s is a valid semantic version 2.0.0 string ("1.2.3-rc.1+build.5"). */
bool osbq_semver_valid(const char *s);

/* The precedence of versions a and b (both valid): negative when a comes before b, 0 when they
 * are the same version (build metadata aside), positive after (semver.org rule 11). */
int osbq_semver_compare(const char *a, const char *b);

#endif
