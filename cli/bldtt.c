/* fmm bldtt: kernel-independent fast summation (BLDTT / BLTC) of sources read from a text file. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/commands.h"
#include "fmm_bldtt.h"

static const char *help =
    "usage: fmm bldtt --sources FILE [options]\n"
    "phi(x_i) = sum_j G(|x_i - y_j|) q_j by the barycentric Lagrange dual tree traversal.\n"
    "  --sources FILE     sources, one per line: x y z q ('#' comments, blank lines ok)\n"
    "  --targets FILE     targets, one per line: x y z (default: the sources, self term left out)\n"
    "  --kernel K         coulomb 1/r (default), yukawa exp(-p r)/r, regularized 1/sqrt(r^2+p^2),\n"
    "                     sinc sin(p r)/r, multiquadric sqrt(r^2+p^2)\n"
    "  --param X          kernel parameter p: yukawa >= 0 (default 0.5), regularized > 0\n"
    "                     (0.005), sinc > 0 (pi), multiquadric >= 0 (1); coulomb has none\n"
    "  --theta T          MAC parameter, 0 < T < 1 (default 0.7; smaller is more accurate)\n"
    "  --degree N         interpolation degree, 0..16 (default 8; larger is more accurate)\n"
    "  --leaf N           max particles per leaf, 0..100000 (default 0: cpu 0.7(N+1)^3 in\n"
    "                     [200,2000], cuda 2000)\n"
    "  --method M         bldtt (dual tree traversal, default) or bltc (treecode, for comparison)\n"
    "  --device cpu|cuda  where the sums run (default cpu)\n"
    "  --threads N        OpenMP threads, 0..1024 (default 0: all)\n"
    "  --gradient         also compute d phi/d x (written as 3 more columns with --out)\n"
    "  --out FILE         write one line per target, in input order: phi [dx dy dz] (%.17g);\n"
    "                     the file is replaced only when complete\n"
    "  --reference        compare with the direct sum (all targets up to 20000, else an evenly\n"
    "                     spaced sample of --reference-sample K targets, default 2000)\n"
    "stdout: sources, targets, kernel, param, theta, degree, leaf, pairs_pp/pc/cp/cc, setup_s,\n"
    "        time_s (setup + evaluation, no file I/O) [, rel_l2_error, rel_l2_error_gradient]\n";

int cli_bldtt(int argc, char **argv) {
    const char *src = NULL, *trg = NULL, *out = NULL, *kernel = NULL;
    int reference = 0, gradient = 0, have_param = 0;
    long sample = 2000;
    bldtt_opts o;
    bldtt_default_opts(&o);
    static const char *const methods[] = {"bldtt", "bltc", NULL}; /* enum bldtt_method order */
    const cli_option opts[] = {
        {"--sources", CLI_STRING, .s = &src},
        {"--targets", CLI_STRING, .s = &trg},
        {"--kernel", CLI_STRING, .s = &kernel},
        {"--param", CLI_DOUBLE, .d = &o.param, .given = &have_param},
        {"--theta", CLI_DOUBLE, .d = &o.theta, .min = 0, .max = 1,
         .open = CLI_OPEN_MIN | CLI_OPEN_MAX},
        {"--degree", CLI_INT, .i = &o.degree, .min = 0, .max = BLDTT_DEGREE_MAX},
        {"--leaf", CLI_INT, .i = &o.leaf_size, .min = 0, .max = BLDTT_LEAF_MAX},
        {"--method", CLI_CHOICE, .i = &o.method, .choices = methods},
        {"--device", CLI_CHOICE, .i = &o.device, .choices = cli_devices},
        {"--threads", CLI_INT, .i = &o.threads, .min = 0, .max = FMM_THREADS_MAX},
        {"--gradient", CLI_FLAG, .i = &gradient},
        {"--out", CLI_STRING, .s = &out},
        {"--reference", CLI_FLAG, .i = &reference},
        {"--reference-sample", CLI_LONG, .l = &sample, .min = 1, .max = INFINITY},
        {0}};
    int r = cli_parse_options("bldtt", help, opts, argc, argv);
    if (r) return r < 0 ? 0 : r;
    /* the library owns the kernel names */
    if (kernel && bldtt_kernel_from_name(kernel, &o.kernel)) {
        fprintf(stderr,
                "fmm bldtt: unknown kernel '%s' (coulomb, yukawa, regularized, sinc, "
                "multiquadric)\n",
                kernel);
        return 2;
    }
    if (!src) {
        fprintf(stderr, "fmm bldtt: --sources FILE is required (try --help)\n");
        return 2;
    }
    if (!have_param) o.param = bldtt_kernel_default_param(o.kernel);
    if (o.kernel == BLDTT_COULOMB && have_param) {
        fprintf(stderr, "fmm bldtt: the coulomb kernel has no --param\n");
        return 2;
    }
    /* --param's range by kernel (fmm_bldtt.h): kappa >= 0, eps > 0, wavenumber > 0, c >= 0 */
    const int param_open = o.kernel == BLDTT_REGULARIZED || o.kernel == BLDTT_SINC;
    char param_name[64];
    snprintf(param_name, sizeof param_name, "--param of the %s kernel",
             bldtt_kernel_name(o.kernel));
    const cli_option param = {param_name, CLI_DOUBLE, .min = 0, .max = INFINITY,
                              .open = param_open ? CLI_OPEN_MIN : 0};
    if (have_param && cli_out_of_range("bldtt", &param, o.param, NULL)) return 2;
    bldtt_plan *plan = NULL;
    int rc = bldtt_makeplan(&o, &plan); /* options first: no file is read for bad options */
    if (rc) {
        const char *what = rc == FMM_ERR_PARAM ? " (check --param, --theta, --degree, --leaf)" : "";
        fprintf(stderr, "fmm bldtt: %s%s\n", bldtt_strerror(rc), what);
        return 2;
    }
    long ns, nt = 0;
    double *sxyz = NULL, *q = NULL, *txyz = NULL, *phi = NULL, *grad = NULL;
    int status = 1;
    if (cli_read_rows("bldtt", src, "x y z q", 4, 4, NULL, &ns, &sxyz, &q) ||
        (trg && cli_read_rows("bldtt", trg, "x y z", 3, 3, NULL, &nt, &txyz, NULL)))
        goto done;
    long m = trg ? nt : ns;
    phi = malloc(sizeof(double) * m);
    grad = gradient ? malloc(sizeof(double) * 3 * m) : NULL;
    if (!phi || (gradient && !grad)) {
        fprintf(stderr, "fmm bldtt: out of memory\n");
        goto done;
    }
    double t0 = omp_get_wtime();
    rc = bldtt_setpts(plan, ns, sxyz, nt, txyz);
    double t1 = omp_get_wtime();
    if (!rc) rc = bldtt_execute(plan, q, phi, grad);
    double t2 = omp_get_wtime();
    if (rc) {
        fprintf(stderr, "fmm bldtt: %s\n", bldtt_strerror(rc));
        goto done;
    }
    bldtt_info info;
    bldtt_get_info(plan, &info);
    if (out && cli_write_values("bldtt", out, m, phi, grad)) goto done;
    printf("sources %ld\ntargets %ld\nkernel %s\nparam %.17g\ntheta %g\ndegree %d\nleaf %d\n", ns,
           m, bldtt_kernel_name(o.kernel), o.param, o.theta, o.degree, info.leaf_size);
    printf("pairs_pp %ld\npairs_pc %ld\npairs_cp %ld\npairs_cc %ld\n", info.pairs[0], info.pairs[1],
           info.pairs[2], info.pairs[3]);
    printf("setup_s %.6f\ntime_s %.6f\n", t1 - t0, t2 - t0);
    if (reference) {
        long k = m <= 20000 ? m : (sample < m ? sample : m);
        long *idx = malloc(sizeof(long) * k);
        double *rp = malloc(sizeof(double) * k),
               *rg = gradient ? malloc(sizeof(double) * 3 * k) : NULL;
        if (!idx || !rp || (gradient && !rg)) {
            fprintf(stderr, "fmm bldtt: out of memory\n");
            free(idx), free(rp), free(rg);
            goto done;
        }
        for (long j = 0; j < k; ++j) idx[j] = (long)((double)j * m / k);
        double r0 = omp_get_wtime();
        rc = bldtt_direct_subset(&o, ns, sxyz, q, nt, txyz, k, idx, rp, rg);
        double r1 = omp_get_wtime();
        if (rc) {
            fprintf(stderr, "fmm bldtt: reference: %s\n", bldtt_strerror(rc));
            free(idx), free(rp), free(rg);
            goto done;
        }
        printf("reference_targets %ld\nreference_time_s %.6f\n", k, r1 - r0);
        printf("rel_l2_error %.6e\n", cli_rel_l2_error(k, 1, idx, phi, rp));
        if (gradient) printf("rel_l2_error_gradient %.6e\n", cli_rel_l2_error(k, 3, idx, grad, rg));
        free(idx), free(rp), free(rg);
    }
    status = 0;
done:
    bldtt_destroy(plan);
    free(sxyz), free(q), free(txyz), free(phi), free(grad);
    return status;
}
