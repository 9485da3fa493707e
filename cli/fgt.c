/* fmm fgt: the fast Gauss transform G(y) = sum_i q_i exp(-|y - x_i|^2 / h^2) of text files. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "fmm_fgt.h"

static const char *help =
    "usage: fmm fgt --sources FILE --bandwidth H [options]\n"
    "Fast Gauss transform G(y_j) = sum_i q_i exp(-|y_j - x_i|^2 / H^2) in 1, 2 or 3 dimensions.\n"
    "  --sources FILE     one source per line: x [y [z]] q (the number of columns gives the\n"
    "                     dimension; '#' comments and blank lines are allowed)\n"
    "  --targets FILE     one target per line: x [y [z]] (default: the sources)\n"
    "  --bandwidth H      h > 0 (FIGTree's convention: exp(-r^2/h^2))\n"
    "  --tolerance EPS    max |G - G_exact| <= EPS * sum |q|, 1e-12..1e-1 (default 1e-6)\n"
    "  --device cpu|cuda  where to evaluate (default cpu)\n"
    "  --threads N        OpenMP threads (default: all)\n"
    "  --out FILE         write one value G(y_j) per line, in target order (%.17g)\n"
    "  --reference        compare with the direct sum (all targets up to 20000, else an\n"
    "                     evenly spaced sample of --reference-sample K targets, default 2000)\n"
    "  --reference-sample K   number of sampled targets for --reference\n"
    "stdout: sources, targets, dim, box_side, order, pairs_direct/hermite/taylor/h2t, time_s\n"
    "        (plan + boxes + evaluation, without file I/O) [, reference_targets,\n"
    "        reference_time_s, max_abs_error_over_sum_q]\n";

/* Reads rows of numbers; every row must have the same count (cols, set from the first row
 * when *cols == 0). Returns 0 or prints one line and returns 1. */
static int read_rows(const char *path, const char *what, int *cols, long *n, double **out) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fmm fgt: cannot open %s file '%s'\n", what, path);
        return 1;
    }
    long cap = 1024, m = 0, line = 0;
    double *v = malloc(sizeof(double) * cap);
    char buf[4096];
    int bad = !v;
    while (!bad && fgets(buf, sizeof buf, f)) {
        ++line;
        if (!strchr(buf, '\n') && !feof(f)) {
            fprintf(stderr, "fmm fgt: %s file '%s' line %ld is too long\n", what, path, line);
            bad = 2;
            break;
        }
        char *s = buf;
        while (*s == ' ' || *s == '\t') ++s;
        if (*s == '#' || *s == '\n' || *s == '\r' || *s == 0) continue;
        double row[4];
        int k = 0;
        for (;;) {
            while (*s == ' ' || *s == '\t' || *s == ',') ++s;
            if (*s == '\n' || *s == '\r' || *s == 0 || *s == '#') break;
            char *end;
            errno = 0;
            double x = strtod(s, &end);
            if (end == s) {
                fprintf(stderr, "fmm fgt: %s file '%s' line %ld: not a number\n", what, path, line);
                bad = 2;
                break;
            }
            if (!isfinite(x)) {
                fprintf(stderr, "fmm fgt: %s file '%s' line %ld: NaN or Inf\n", what, path, line);
                bad = 2;
                break;
            }
            if (k == 4) {
                fprintf(stderr, "fmm fgt: %s file '%s' line %ld: too many columns\n", what, path, line);
                bad = 2;
                break;
            }
            row[k++] = x;
            s = end;
        }
        if (bad) break;
        if (*cols == 0) *cols = k;
        if (k != *cols) {
            fprintf(stderr, "fmm fgt: %s file '%s' line %ld: %d columns, expected %d\n", what, path,
                    line, k, *cols);
            bad = 2;
            break;
        }
        if (m + k > cap) {
            cap *= 2;
            double *w = realloc(v, sizeof(double) * cap);
            if (!w) {
                bad = 1;
                break;
            }
            v = w;
        }
        for (int i = 0; i < k; ++i) v[m++] = row[i];
    }
    if (!bad && ferror(f)) {
        fprintf(stderr, "fmm fgt: error reading %s file '%s'\n", what, path);
        bad = 2;
    }
    fclose(f);
    if (bad == 1) fprintf(stderr, "fmm fgt: out of memory\n");
    if (!bad && m == 0) {
        fprintf(stderr, "fmm fgt: %s file '%s' holds no points\n", what, path);
        bad = 2;
    }
    if (bad) {
        free(v);
        return 1;
    }
    *n = m / *cols;
    *out = v;
    return 0;
}

int cli_fgt(int argc, char **argv) {
    const char *sources = NULL, *targets = NULL, *out = NULL;
    double h = 0;
    int have_h = 0, reference = 0;
    long sample = 2000;
    fgt_opts o;
    fgt_default_opts(&o);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return 0;
        }
        if (!strcmp(a, "--reference")) {
            reference = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fmm fgt: %s needs a value (or unknown option)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--sources")) sources = v;
        else if (!strcmp(a, "--targets")) targets = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--bandwidth")) bad = cli_parse_double(a, v, &h), have_h = 1;
        else if (!strcmp(a, "--tolerance")) bad = cli_parse_double(a, v, &o.tolerance);
        else if (!strcmp(a, "--threads")) bad = cli_parse_int(a, v, &o.threads);
        else if (!strcmp(a, "--reference-sample")) {
            bad = cli_parse_long(a, v, &sample);
            if (!bad && sample < 1) {
                fprintf(stderr, "fmm fgt: --reference-sample must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--device")) {
            if (!strcmp(v, "cpu")) o.device = FMM_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) o.device = FMM_DEVICE_CUDA;
            else {
                fprintf(stderr, "fmm fgt: --device expects cpu or cuda, got '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "fmm fgt: unknown option '%s' (try --help)\n", a);
            return 2;
        }
        if (bad) return 2;
    }
    if (!sources) {
        fprintf(stderr, "fmm fgt: --sources FILE is required (try --help)\n");
        return 2;
    }
    if (!have_h) {
        fprintf(stderr, "fmm fgt: --bandwidth H is required (try --help)\n");
        return 2;
    }
    if (!(h > 0)) {
        fprintf(stderr, "fmm fgt: --bandwidth must be > 0, got %g\n", h);
        return 2;
    }
    int cols = 0, tcols;
    long ns = 0, nt = 0;
    double *sv = NULL, *tv = NULL;
    if (read_rows(sources, "sources", &cols, &ns, &sv)) return 1;
    if (cols < 2) {
        fprintf(stderr, "fmm fgt: sources need x [y [z]] q: 2 to 4 columns, got %d\n", cols);
        free(sv);
        return 1;
    }
    const int dim = cols - 1;
    tcols = dim;
    if (targets && read_rows(targets, "targets", &tcols, &nt, &tv)) {
        free(sv);
        return 1;
    }
    int status = 1;
    double *x = malloc(sizeof(double) * ns * dim), *q = malloc(sizeof(double) * ns);
    if (!targets) nt = ns;
    double *g = malloc(sizeof(double) * nt);
    fgt_plan *plan = NULL;
    if (!x || !q || !g) {
        fprintf(stderr, "fmm fgt: out of memory\n");
        goto done;
    }
    for (long i = 0; i < ns; ++i) {
        for (int d = 0; d < dim; ++d) x[i * dim + d] = sv[i * cols + d];
        q[i] = sv[i * cols + dim];
    }
    const double *y = targets ? tv : x;
    double t0 = omp_get_wtime();
    int rc = fgt_makeplan(dim, h, &o, &plan);
    if (!rc) rc = fgt_setpts(plan, ns, x, nt, targets ? tv : NULL);
    if (!rc) rc = fgt_execute(plan, q, g);
    double t1 = omp_get_wtime();
    if (rc) {
        fprintf(stderr, "fmm fgt: %s\n", fgt_strerror(rc));
        goto done;
    }
    fgt_info info;
    fgt_get_info(plan, &info);
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "fmm fgt: cannot write '%s'\n", out);
            goto done;
        }
        for (long j = 0; j < nt; ++j) fprintf(f, "%.17g\n", g[j]);
        if (fclose(f)) {
            fprintf(stderr, "fmm fgt: error writing '%s'\n", out);
            goto done;
        }
    }
    printf("sources %ld\ntargets %ld\ndim %d\nbox_side %.3g\norder %d\n", ns, nt, dim,
           info.box_side, info.order);
    printf("pairs_direct %ld\npairs_hermite %ld\npairs_taylor %ld\npairs_h2t %ld\n",
           info.pairs[FGT_MODE_DIRECT], info.pairs[FGT_MODE_HERMITE], info.pairs[FGT_MODE_TAYLOR],
           info.pairs[FGT_MODE_H2T]);
    printf("time_s %.6f\n", t1 - t0);
    if (reference) {
        long m = nt <= 20000 ? nt : (sample < nt ? sample : nt);
        double *yr = malloc(sizeof(double) * m * dim), *gr = malloc(sizeof(double) * m);
        long *idx = malloc(sizeof(long) * m);
        if (!yr || !gr || !idx) {
            fprintf(stderr, "fmm fgt: out of memory\n");
            free(yr), free(gr), free(idx);
            goto done;
        }
        for (long k = 0; k < m; ++k) {
            idx[k] = (long)((double)k * nt / m);
            for (int d = 0; d < dim; ++d) yr[k * dim + d] = y[idx[k] * dim + d];
        }
        double r0 = omp_get_wtime();
        rc = fgt_direct(dim, h, ns, x, q, m, yr, gr, o.threads);
        double r1 = omp_get_wtime();
        if (rc) {
            fprintf(stderr, "fmm fgt: reference: %s\n", fgt_strerror(rc));
            free(yr), free(gr), free(idx);
            goto done;
        }
        double sq = 0, e = 0;
        for (long i = 0; i < ns; ++i) sq += fabs(q[i]);
        for (long k = 0; k < m; ++k) {
            double d = fabs(g[idx[k]] - gr[k]);
            if (d > e) e = d;
        }
        printf("reference_targets %ld\nreference_time_s %.6f\nmax_abs_error_over_sum_q %.6e\n", m,
               r1 - r0, sq > 0 ? e / sq : e);
        free(yr), free(gr), free(idx);
    }
    status = 0;
done:
    fgt_destroy(plan);
    free(sv), free(tv), free(x), free(q), free(g);
    return status;
}
