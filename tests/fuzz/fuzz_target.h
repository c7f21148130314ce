/* The entry point every fuzz target defines: libFuzzer calls it in the fuzz build
 * (scripts/fuzz.sh), replay_main.c calls it over the corpus and the regressions in the normal
 * build. A target returns 0 and aborts (or lets a sanitizer abort) when a property fails. */
#ifndef OSBQ_FUZZ_TARGET_H
#define OSBQ_FUZZ_TARGET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the run: a property of the code under test does not hold for this input. */
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond);            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
