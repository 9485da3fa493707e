/* Option parsing, and the readers and writers of numeric text files shared by the commands. */
#define _POSIX_C_SOURCE 200809L /* the POSIX calls of core/textio.h */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/textio.h"
#include "systems/pointsets.h"

const char *const cli_devices[] = {"cpu", "cuda", NULL};

static int is_int(const cli_option *o) {
    return o->kind == CLI_INT || o->kind == CLI_LONG;
}

/* " in 1..50", " in (0, 1)", " >= 1", " > 0", or "" for an option without a range */
static void range_text(const cli_option *o, char *buf, size_t len) {
    const int lo_open = o->open & CLI_OPEN_MIN, hi_open = o->open & CLI_OPEN_MAX;
    if (!(o->min < o->max))
        snprintf(buf, len, "%s", "");
    else if (o->max == INFINITY)
        snprintf(buf, len, " %s %g", lo_open ? ">" : ">=", o->min);
    else if (is_int(o))
        snprintf(buf, len, " in %g..%g", o->min, o->max);
    else
        snprintf(buf, len, " in %s%g, %g%s", lo_open ? "(" : "[", o->min, o->max,
                 hi_open ? ")" : "]");
}

int cli_out_of_range(const char *cmd, const cli_option *o, double x, const char *s) {
    if (!(o->min < o->max)) return 0;
    const int lo_ok = (o->open & CLI_OPEN_MIN) ? x > o->min : x >= o->min;
    const int hi_ok = (o->open & CLI_OPEN_MAX) ? x < o->max : x <= o->max;
    if (lo_ok && hi_ok) return 0;
    char r[80];
    range_text(o, r, sizeof r);
    if (s)
        fprintf(stderr, "fmm %s: %s must be%s, got '%s'\n", cmd, o->name, r, s);
    else
        fprintf(stderr, "fmm %s: %s must be%s, got %g\n", cmd, o->name, r, x);
    return 1;
}

/* s as the value of o: 0 and *v (integer options: *l, and *v = *l rounded), or a message that
 * names o, what it expects and its range */
static int parse_number(const char *cmd, const cli_option *o, const char *s, double *v, long *lv) {
    const char *end = s;
    long l = 0;
    int rc = is_int(o) ? text_parse_long(s, &end, &l) : text_parse_double(s, &end, v);
    if (!rc && *end) rc = TEXT_NUM_SYNTAX; /* the whole argument is the number */
    if (rc) {
        char r[80];
        range_text(o, r, sizeof r);
        fprintf(stderr, "fmm %s: %s expects %s%s, got '%s'%s%s\n", cmd, o->name,
                is_int(o) ? "an integer" : "a finite number", r, s,
                rc == TEXT_NUM_SYNTAX ? "" : ", which ",
                rc == TEXT_NUM_SYNTAX ? "" : text_num_what(rc));
        return 1;
    }
    if (is_int(o)) *v = (double)l;
    if (cli_out_of_range(cmd, o, *v, s)) return 1;
    if (o->kind == CLI_INT && (l < INT_MIN || l > INT_MAX)) {
        fprintf(stderr, "fmm %s: %s value '%s' does not fit an int\n", cmd, o->name, s);
        return 1;
    }
    if (lv) *lv = l;
    return 0;
}

/* whether s is a number as a whole (strtod's syntax): a value, not the next option */
static int is_number(const char *s) {
    char *end;
    strtod(s, &end);
    return end != s && *end == '\0';
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
        double x;
        long l;
        int bad = 0;
        switch (o->kind) {
        case CLI_STRING:
            *o->s = v;
            break;
        case CLI_INT:
            bad = parse_number(cmd, o, v, &x, &l);
            if (!bad) *o->i = (int)l;
            break;
        case CLI_LONG:
            bad = parse_number(cmd, o, v, &x, &l);
            if (!bad) *o->l = l;
            break;
        case CLI_DOUBLE:
            bad = parse_number(cmd, o, v, &x, NULL);
            if (!bad) *o->d = x;
            break;
        case CLI_DOUBLE3:
            bad = parse_number(cmd, o, v, &o->d[0], NULL);
            if (!bad && i + 2 < argc && argv[i + 1][0] != '-' && argv[i + 2][0] != '-') {
                bad = parse_number(cmd, o, argv[i + 1], &o->d[1], NULL) ||
                      parse_number(cmd, o, argv[i + 2], &o->d[2], NULL);
                i += 2;
            } else {
                o->d[1] = o->d[2] = o->d[0];
            }
            break;
        case CLI_BOX: {
            int k = 0;
            bad = parse_number(cmd, o, v, &o->d[k++], NULL);
            while (!bad && k < 9 && i + 1 < argc && is_number(argv[i + 1]))
                bad = parse_number(cmd, o, argv[++i], &o->d[k++], NULL);
            if (!bad && k != 1 && k != 3 && k != 9) {
                fprintf(stderr, "fmm %s: %s takes 1, 3 or 9 numbers, got %d\n", cmd, o->name, k);
                bad = 1;
            }
            if (o->given) *o->given = k;
            break;
        }
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

int cli_read_rows_lines(const char *cmd, const char *path, const char *layout, int min_cols,
                        int max_cols, int *cols, long *n, double **rows, double **last,
                        long **lines, double *box, int *nbox) {
    char err[512];
    if (!pts_read_rows(path, layout, min_cols, max_cols, cols, n, rows, last, lines, box, nbox, err,
                       sizeof err))
        return 0;
    fprintf(stderr, "fmm %s: %s\n", cmd, err);
    return 1;
}

int cli_read_rows(const char *cmd, const char *path, const char *layout, int min_cols, int max_cols,
                  int *cols, long *n, double **rows, double **last) {
    return cli_read_rows_lines(cmd, path, layout, min_cols, max_cols, cols, n, rows, last, NULL,
                               NULL, NULL);
}

int cli_write_failed(const char *cmd, const char *path) {
    fprintf(stderr, "fmm %s: cannot write '%s': %s\n", cmd, path, strerror(errno));
    return 1;
}

int cli_write_values(const char *cmd, const char *path, long n, const double *a, const double *v) {
    text_out o;
    if (text_out_open(&o, path)) return cli_write_failed(cmd, path);
    for (long i = 0; i < n; ++i) {
        if (v)
            text_out_printf(&o, "%.17g %.17g %.17g %.17g\n", a[i], v[3 * i], v[3 * i + 1],
                            v[3 * i + 2]);
        else
            text_out_printf(&o, "%.17g\n", a[i]);
    }
    return text_out_commit(&o) ? cli_write_failed(cmd, path) : 0;
}

typedef struct {
    double p[3];
    long i;
} point_at;

static int cmp_point_at(const void *a, const void *b) {
    const point_at *u = a, *w = b;
    for (int d = 0; d < 3; ++d)
        if (u->p[d] != w->p[d]) return u->p[d] < w->p[d] ? -1 : 1;
    return (u->i > w->i) - (u->i < w->i);
}

int cli_report_coincident(const char *cmd, const char *path, const char *what, long n,
                          const double *xyz, const long *lines, double period) {
    point_at *s = malloc(sizeof *s * (size_t)(n > 0 ? n : 1));
    if (!s) return 0;
    for (long i = 0; i < n; ++i) {
        for (int d = 0; d < 3; ++d) {
            const double x = xyz[3 * i + d];
            s[i].p[d] = period > 0 ? x - period * floor(x / period) : x;
        }
        s[i].i = i;
    }
    qsort(s, (size_t)n, sizeof *s, cmp_point_at);
    long k = 1;
    while (k < n && memcmp(s[k].p, s[k - 1].p, sizeof s[k].p)) ++k;
    int found = k < n;
    if (found) {
        const long a = s[k - 1].i, b = s[k].i;
        fprintf(stderr,
                "fmm %s: %s:%ld and %s:%ld: two %s at the same position (%.15g %.15g %.15g%s)\n",
                cmd, path, lines[a], path, lines[b], what, xyz[3 * a], xyz[3 * a + 1],
                xyz[3 * a + 2], period > 0 ? ", in the periodic box" : "");
    }
    free(s);
    return found;
}

double cli_rel_l2_error(long m, int dim, const long *idx, const double *val, const double *ref) {
    double big = 0;
    for (long k = 0; k < m; ++k)
        for (int d = 0; d < dim; ++d) {
            const double v = val[dim * (idx ? idx[k] : k) + d], r = ref[dim * k + d];
            big = fmax(big, fmax(fabs(v), fabs(r)));
        }
    if (!(big > 0) || !isfinite(big)) return big > 0 ? NAN : 0.0;
    double e = 0, s = 0;
    for (long k = 0; k < m; ++k)
        for (int d = 0; d < dim; ++d) {
            const double v = val[dim * (idx ? idx[k] : k) + d] / big, r = ref[dim * k + d] / big;
            e += (v - r) * (v - r), s += r * r;
        }
    return s > 0 ? sqrt(e / s) : sqrt(e) * big;
}
