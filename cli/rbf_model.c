/* The RBF model file: reader and writer (cli/rbf_model.h). */
#define _POSIX_C_SOURCE 200809L /* the POSIX calls of core/textio.h */
#include "cli/rbf_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/textio.h"

void cli_rbf_model_free(cli_rbf_model *m) {
    if (!m) return;
    free(m->xyz), free(m->lambda);
    memset(m, 0, sizeof *m);
}

static int fail(char *err, size_t errlen, const char *fmt, ...) {
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* p past the number just parsed: only white space or a comment may follow */
static int at_end(const char *p) {
    while (text_is_space(*p)) ++p;
    return !*p || *p == '#';
}

/* Room for need centres in the model's arrays (capacities cap[0], cap[1]). */
static int reserve(cli_rbf_model *m, size_t cap[2], long need) {
    double *x = text_grow(m->xyz, &cap[0], 3 * (size_t)need, sizeof(double));
    if (x) m->xyz = x;
    double *l = text_grow(m->lambda, &cap[1], (size_t)need, sizeof(double));
    if (l) m->lambda = l;
    return !x || !l;
}

/* One line of the model; k counts the rows read so far, *count is N once "centers" was read
 * (-1 before). 0, or 1 with err set. */
static int model_line(const char *path, const text_reader *r, cli_rbf_model *m, int *have,
                      long *count, size_t cap[2], char *err, size_t errlen) {
    const char *p = r->line;
    while (text_is_space(*p)) ++p;
    if (!*p || *p == '#') return 0;
    if (*count < 0) { /* the header: shape, alpha, centers */
        static const char *const keys[] = {"shape", "alpha", "centers"};
        int key = 0;
        size_t len = strcspn(p, " \t\r\v\f#");
        while (key < 3 && !(strlen(keys[key]) == len && !strncmp(p, keys[key], len))) ++key;
        if (key == 3)
            return fail(err, errlen,
                        "%s:%ld: expected 'shape C', 'alpha A' or 'centers N' (a model written "
                        "by 'fmm rbf fit'), got '%.*s'",
                        path, r->lineno, text_token_len(p), p);
        if (key < 2 && (*have >> key & 1))
            return fail(err, errlen, "%s:%ld: a second '%s' line", path, r->lineno, keys[key]);
        if (key == 2 && *have != 3)
            return fail(err, errlen, "%s:%ld: 'centers' before 'shape' and 'alpha'", path,
                        r->lineno);
        p += len;
        const char *q = p;
        double x = 0;
        long l = 0;
        int rc = key < 2 ? text_parse_double(p, &q, &x) : text_parse_long(p, &q, &l);
        while (text_is_space(*p)) ++p;
        if (rc)
            return fail(
                err, errlen, "%s:%ld: %s: '%.*s' %s", path, r->lineno, keys[key], text_token_len(p),
                p, rc == TEXT_NUM_SYNTAX && key == 2 ? "is not an integer" : text_num_what(rc));
        if (!at_end(q))
            return fail(err, errlen, "%s:%ld: text after the %s value", path, r->lineno, keys[key]);
        if (key == 0 && !(x > 0))
            return fail(err, errlen, "%s:%ld: shape must be > 0, got %.17g", path, r->lineno, x);
        if (key == 2 && l < 1)
            return fail(err, errlen, "%s:%ld: centers must be >= 1, got %ld", path, r->lineno, l);
        if (key == 0) m->shape = x;
        if (key == 1) m->alpha = x;
        if (key == 2) *count = l;
        *have |= 1 << key;
        return 0;
    }
    double v[4];
    int k = 0;
    for (;;) {
        while (text_is_space(*p)) ++p;
        if (!*p || *p == '#') break;
        double x;
        int rc = text_parse_double(p, &p, &x);
        if (rc)
            return fail(err, errlen, "%s:%ld: column %d: '%.*s' %s", path, r->lineno, k + 1,
                        text_token_len(p), p, text_num_what(rc));
        if (k < 4) v[k] = x;
        ++k;
    }
    if (k != 4)
        return fail(err, errlen, "%s:%ld: %d number%s, expected 4 (x y z lambda)", path, r->lineno,
                    k, k == 1 ? "" : "s");
    if (m->n >= *count)
        return fail(err, errlen, "%s:%ld: more rows than 'centers %ld'", path, r->lineno, *count);
    if (reserve(m, cap, m->n + 1))
        return fail(err, errlen, "%s:%ld: out of memory", path, r->lineno);
    memcpy(m->xyz + 3 * m->n, v, sizeof(double) * 3);
    m->lambda[m->n++] = v[3];
    return 0;
}

int cli_rbf_model_read(const char *path, cli_rbf_model *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (err && errlen) err[0] = '\0';
    text_reader r;
    int rl = text_open(&r, path);
    if (rl) {
        text_describe(&r, rl, path, err, errlen);
        return 1;
    }
    int have = 0, bad = 0;
    long count = -1;
    size_t cap[2] = {0, 0};
    while (!bad && (rl = text_next(&r)) == TEXT_LINE) {
        if (!r.newline)
            bad = fail(err, errlen, "%s:%ld: the file ends inside this line (cut short?)", path,
                       r.lineno);
        else
            bad = model_line(path, &r, m, &have, &count, cap, err, errlen);
    }
    if (!bad && rl < 0) bad = 1, text_describe(&r, rl, path, err, errlen);
    if (!bad && count < 0)
        bad = fail(err, errlen, "%s: no 'centers N' line (not a model written by 'fmm rbf fit')",
                   path);
    if (!bad && m->n != count)
        bad = fail(err, errlen, "%s: %ld rows, expected %ld ('centers %ld'; cut short?)", path,
                   m->n, count, count);
    text_close(&r);
    if (bad) cli_rbf_model_free(m);
    return bad;
}

int cli_rbf_model_write(const char *path, const cli_rbf_model *m) {
    text_out o;
    if (text_out_open(&o, path)) return -1;
    text_out_printf(&o,
                    "# fmm rbf model: s(x) = sum lambda_i sqrt(|x - x_i|^2 + shape^2) + alpha\n");
    text_out_printf(&o, "shape %.17g\nalpha %.17g\ncenters %ld\n", m->shape, m->alpha, m->n);
    for (long i = 0; i < m->n; ++i)
        text_out_printf(&o, "%.17g %.17g %.17g %.17g\n", m->xyz[3 * i], m->xyz[3 * i + 1],
                        m->xyz[3 * i + 2], m->lambda[i]);
    return text_out_commit(&o);
}
