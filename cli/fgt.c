/* fmm fgt: the fast Gauss transform G(y) = sum_i q_i exp(-|y - x_i|^2 / h^2) of text files. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

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
    "  --threads N        OpenMP threads, 0..1024 (default 0: all)\n"
    "  --out FILE         write one value G(y_j) per line, in target order (%.17g); the file\n"
    "                     is replaced only when complete\n"
    "  --reference        compare with the direct sum (all targets up to 20000, else an\n"
    "                     evenly spaced sample of --reference-sample K targets, default 2000)\n"
    "  --reference-sample K   number of sampled targets for --reference\n"
    "stdout: sources, targets, dim, box_side, order, pairs_direct/hermite/taylor/h2t, time_s\n"
    "        (plan + boxes + evaluation, without file I/O) [, reference_targets,\n"
    "        reference_time_s, max_abs_error_over_sum_q]\n";

int cli_fgt(int argc, char **argv) {
    const char *sources = NULL, *targets = NULL, *out = NULL;
    double h = 0;
    int have_h = 0, reference = 0;
    long sample = 2000;
    fgt_opts o;
    fgt_default_opts(&o);
    const cli_option opts[] = {
        {"--sources", CLI_STRING, .s = &sources},
        {"--targets", CLI_STRING, .s = &targets},
        {"--bandwidth", CLI_DOUBLE, .d = &h, .min = 0, .max = INFINITY, .open = CLI_OPEN_MIN,
         .given = &have_h},
        {"--tolerance", CLI_DOUBLE, .d = &o.tolerance, .min = FGT_TOL_MIN, .max = FGT_TOL_MAX},
        {"--device", CLI_CHOICE, .i = &o.device, .choices = cli_devices},
        {"--threads", CLI_INT, .i = &o.threads, .min = 0, .max = FMM_THREADS_MAX},
        {"--out", CLI_STRING, .s = &out},
        {"--reference", CLI_FLAG, .i = &reference},
        {"--reference-sample", CLI_LONG, .l = &sample, .min = 1, .max = INFINITY},
        {0}};
    int r = cli_parse_options("fgt", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    if (!sources) {
        fprintf(stderr, "fmm fgt: --sources FILE is required (try --help)\n");
        return 2;
    }
    if (!have_h) {
        fprintf(stderr, "fmm fgt: --bandwidth H is required (try --help)\n");
        return 2;
    }
    static const char *const layouts[] = {"x", "x y", "x y z"}; /* of targets, by dimension */
    int cols, status = 1;
    long ns = 0, nt = 0;
    double *x = NULL, *q = NULL, *tv = NULL, *g = NULL;
    fgt_plan *plan = NULL;
    if (cli_read_rows("fgt", sources, "x [y [z]] q", 2, 4, &cols, &ns, &x, &q)) return 1;
    const int dim = cols - 1;
    if (targets && cli_read_rows("fgt", targets, layouts[dim - 1], dim, dim, NULL, &nt, &tv, NULL))
        goto done;
    if (!targets) nt = ns;
    g = malloc(sizeof(double) * nt);
    if (!g) {
        fprintf(stderr, "fmm fgt: out of memory\n");
        goto done;
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
    if (out && cli_write_values("fgt", out, nt, g, NULL)) goto done;
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
    free(x), free(q), free(tv), free(g);
    return status;
}
