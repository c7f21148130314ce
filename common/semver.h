/* Semantic Versioning 2.0.0 syntax check (the catalog's maintenance_info.version). */
#ifndef OSBQ_SEMVER_H
#define OSBQ_SEMVER_H

#include <stdbool.h>

/* True when s is a valid semantic version 2.0.0 string ("1.2.3-rc.1+build.5"). */
bool osbq_semver_valid(const char *s);

#endif
