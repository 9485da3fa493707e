/* Option parsing and the reader of numeric text files, shared by the commands. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

const char *const cli_devices[] = {"cpu", "cuda", NULL};

static int parse_double(const char *cmd, const char *opt, const char *s, double *v) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(*v)) {
        fprintf(stderr, "fmm %s: %s expects a finite number, got '%s'\n", cmd, opt, s);
        return 1;
    }
    return 0;
}

static int parse_long(const char *cmd, const char *opt, const char *s, long *v) {
    char *end;
    errno = 0;
    *v = strtol(s, &end, 10);
    if (end == s || *end || errno) {
        fprintf(stderr, "fmm %s: %s expects an integer, got '%s'\n", cmd, opt, s);
        return 1;
    }
    return 0;
}

static int out_of_range(const char *cmd, const cli_option *o, double x, const char *s) {
    if (!(o->min < o->max) || (x >= o->min && x <= o->max)) return 0;
    if (o->max == INFINITY)
        fprintf(stderr, "fmm %s: %s must be >= %g, got '%s'\n", cmd, o->name, o->min, s);
    else
        fprintf(stderr, "fmm %s: %s must be in %g..%g, got '%s'\n", cmd, o->name, o->min, o->max, s);
    return 1;
}

static int parse_choice(const char *cmd, const cli_option *o, const char *s) {
    for (int k = 0; o->choices[k]; ++k)
        if (!strcmp(o->choices[k], s)) {
            *o->i = k;
            return 0;
        }
    fprintf(stderr, "fmm %s: %s expects ", cmd, o->name);
    for (int k = 0; o->choices[k]; ++k)
        fprintf(stderr, "%s%s", k == 0 ? "" : o->choices[k + 1] ? ", " : " or ", o->choices[k]);
    fprintf(stderr, ", got '%s'\n", s);
    return 1;
}

int cli_parse_options(const char *cmd, const char *help, const cli_option *opts, int argc,
                      char **argv) {
    const cli_option *arg = opts; /* where to look for the next positional slot */
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        }
        if (a[0] != '-') {
            while (arg->name && arg->kind != CLI_ARG) ++arg;
            if (!arg->name) {
                fprintf(stderr, "fmm %s: unexpected argument '%s' (try --help)\n", cmd, a);
                return 2;
            }
            *arg++->s = a;
            continue;
        }
        const cli_option *o = opts;
        while (o->name && (o->kind == CLI_ARG || strcmp(o->name, a))) ++o;
        if (!o->name) {
            fprintf(stderr, "fmm %s: unknown option '%s' (try --help)\n", cmd, a);
            return 2;
        }
        if (o->given) *o->given = 1;
        if (o->kind == CLI_FLAG) {
            *o->i = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fmm %s: %s needs a value\n", cmd, a);
            return 2;
        }
        const char *v = argv[++i];
        long l;
        double x;
        int bad = 0;
        switch (o->kind) {
        case CLI_STRING:
            *o->s = v;
            break;
        case CLI_INT:
            bad = parse_long(cmd, a, v, &l) || out_of_range(cmd, o, (double)l, v);
            if (!bad && (l < INT_MIN || l > INT_MAX)) {
                fprintf(stderr, "fmm %s: %s value '%s' does not fit an int\n", cmd, a, v);
                bad = 1;
            }
            if (!bad) *o->i = (int)l;
            break;
        case CLI_LONG:
            bad = parse_long(cmd, a, v, &l) || out_of_range(cmd, o, (double)l, v);
            if (!bad) *o->l = l;
            break;
        case CLI_DOUBLE:
            bad = parse_double(cmd, a, v, &x) || out_of_range(cmd, o, x, v);
            if (!bad) *o->d = x;
            break;
        case CLI_DOUBLE3:
            bad = parse_double(cmd, a, v, &o->d[0]);
            if (!bad && i + 2 < argc && argv[i + 1][0] != '-' && argv[i + 2][0] != '-') {
                bad = parse_double(cmd, a, argv[i + 1], &o->d[1]) ||
                      parse_double(cmd, a, argv[i + 2], &o->d[2]);
                i += 2;
            } else {
                o->d[1] = o->d[2] = o->d[0];
            }
            break;
        case CLI_CHOICE:
            bad = parse_choice(cmd, o, v);
            break;
        case CLI_FLAG:
        case CLI_ARG:
            break;
        }
        if (bad) return 2;
    }
    return 0;
}

/* One line of any length into *buf, grown as needed: 1, 0 at the end of the file (or on a read
 * error: ferror tells), -1 out of memory. */
static int read_line(FILE *f, char **buf, size_t *cap) {
    size_t len = 0;
    for (;;) {
        if (*cap - len < 2) {
            size_t c = *cap ? 2 * *cap : 4096;
            char *b = realloc(*buf, c);
            if (!b) return -1;
            *buf = b, *cap = c;
        }
        size_t room = *cap - len;
        if (!fgets(*buf + len, room > INT_MAX ? INT_MAX : (int)room, f)) return len > 0;
        len += strlen(*buf + len);
        if (len > 0 && (*buf)[len - 1] == '\n') return 1;
    }
}

/* room for need doubles in *a */
static int reserve(double **a, size_t *cap, size_t need) {
    if (need <= *cap) return 0;
    size_t c = *cap ? 2 * *cap : 1024;
    double *b = realloc(*a, sizeof(double) * c);
    if (!b) return 1;
    *a = b, *cap = c;
    return 0;
}

int cli_read_rows(const char *cmd, const char *path, const char *layout, int min_cols,
                  int max_cols, int *cols, long *n, double **rows, double **last) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fmm %s: cannot open '%s': %s\n", cmd, path, strerror(errno));
        return 1;
    }
    char *line = NULL;
    size_t linecap = 0, nv = 0, vcap = 0, nrow = 0, lcap = 0;
    double *v = NULL, *w = NULL;
    long lineno = 0;
    int c = 0, rl;
    while ((rl = read_line(f, &line, &linecap)) > 0) {
        ++lineno;
        const char *p = line;
        int k = 0;
        for (;;) {
            while (isspace((unsigned char)*p)) ++p;
            if (!*p || *p == '#') break;
            char *end;
            double x = strtod(p, &end);
            if (end == p || !(!*end || *end == '#' || isspace((unsigned char)*end))) {
                int len = (int)strcspn(p, " \t\r\n#");
                fprintf(stderr, "fmm %s: %s:%ld: not a number: '%.*s'\n", cmd, path, lineno,
                        len < 40 ? len : 40, p);
                goto fail;
            }
            if (!isfinite(x)) {
                fprintf(stderr, "fmm %s: %s:%ld: column %d is NaN, Inf or out of range\n", cmd,
                        path, lineno, k + 1);
                goto fail;
            }
            if (reserve(&v, &vcap, nv + 1)) goto nomem;
            v[nv++] = x, ++k;
            p = end;
        }
        if (!k) continue;
        if (c ? k != c : k < min_cols || (max_cols && k > max_cols)) {
            char want[64];
            if (min_cols == max_cols) snprintf(want, sizeof want, "%d", min_cols);
            else if (c) snprintf(want, sizeof want, "%d like the first row", c);
            else if (!max_cols) snprintf(want, sizeof want, "at least %d", min_cols);
            else snprintf(want, sizeof want, "%d to %d", min_cols, max_cols);
            fprintf(stderr, "fmm %s: %s:%ld: %d number%s, expected %s (%s)\n", cmd, path, lineno,
                    k, k == 1 ? "" : "s", want, layout);
            goto fail;
        }
        c = k;
        if (last) {
            if (reserve(&w, &lcap, nrow + 1)) goto nomem;
            w[nrow] = v[--nv];
        }
        ++nrow;
    }
    if (rl < 0) goto nomem;
    if (ferror(f)) {
        fprintf(stderr, "fmm %s: %s:%ld: read error\n", cmd, path, lineno + 1);
        goto fail;
    }
    if (!nrow) {
        fprintf(stderr, "fmm %s: %s: no rows of numbers (%s)\n", cmd, path, layout);
        goto fail;
    }
    fclose(f);
    free(line);
    if (cols) *cols = c;
    *n = (long)nrow, *rows = v;
    if (last) *last = w;
    return 0;
nomem:
    fprintf(stderr, "fmm %s: out of memory reading '%s'\n", cmd, path);
fail:
    fclose(f);
    free(line), free(v), free(w);
    return 1;
}
