#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"

int cli_parse_double(const char *opt, const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(*v)) {
        fprintf(stderr, "fmm: %s expects a finite number, got '%s'\n", opt, s);
        return 1;
    }
    return 0;
}

int cli_parse_long(const char *opt, const char *s, long *v) {
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    if (end == s || *end || errno) {
        fprintf(stderr, "fmm: %s expects an integer, got '%s'\n", opt, s);
        return 1;
    }
    return 0;
}

int cli_parse_int(const char *opt, const char *s, int *v) {
    long l;
    if (cli_parse_long(opt, s, &l)) return 1;
    if (l < INT_MIN || l > INT_MAX) {
        fprintf(stderr, "fmm: %s value '%s' is out of range\n", opt, s);
        return 1;
    }
    *v = (int)l;
    return 0;
}
