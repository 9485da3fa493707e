/* fmm rbf: multiquadric RBF interpolation (FGP iteration) and mesh deformation.
 *   fmm rbf fit    --centers C --shape c [--tolerance eps] --out MODEL
 *   fmm rbf eval   --model MODEL --points P --out FILE
 *   fmm rbf deform --mesh IN.vtk --displacements D --out OUT.vtk
 *   fmm rbf matvec --centers C --shape c   (one timed mat-vec, for benchmarks) */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/rbf_model.h"
#include "fmm_rbf.h"
#include "rbf/vtk_io.h"

static const char *help =
    "usage: fmm rbf fit    --centers FILE --shape C [options] --out MODEL\n"
    "       fmm rbf eval   --model MODEL --points FILE --out FILE [options]\n"
    "       fmm rbf deform --mesh IN.vtk --displacements FILE --out OUT.vtk [options]\n"
    "       fmm rbf matvec --centers FILE --shape C [options]\n"
    "Multiquadric interpolation s(x) = sum_i lambda_i sqrt(|x-x_i|^2 + C^2) + alpha with\n"
    "s(x_i) = f_i and sum lambda_i = 0, by the Faul-Goodsell-Powell Krylov iteration.\n"
    "  fit     --centers FILE: one centre per line 'x y z f' ('#' comments, blank lines ok);\n"
    "          writes MODEL (text: shape, alpha, then 'x y z lambda' per centre, %.17g).\n"
    "          stdout: n, iterations, max_residual (max|f - s(x_i)| / max|f|), solver "
    "(fgp|dense),\n"
    "          matvec,\n"
    "          single_passes (of the mat-vecs, those in single precision), setup_s, fit_s,\n"
    "          time_s (setup + fit, without file I/O)\n"
    "  eval    --points FILE: 'x y z' per line (further columns ignored); --out: s per line.\n"
    "          stdout: n, m, time_s\n"
    "  deform  --mesh: legacy ASCII VTK unstructured grid; --displacements: 'x y z dx dy dz'\n"
    "          per boundary point (need not be mesh nodes); fits one interpolant per component\n"
    "          and moves every node (nodes on a boundary point get its displacement exactly);\n"
    "          writes OUT.vtk. --shape defaults to 1/3 of the mean nearest-neighbour spacing of\n"
    "          the boundary points. stdout: boundary_points, nodes, shape, iterations (largest\n"
    "          of the three fits), max_residual, solver, min_volume_ratio (smallest new/old volume "
    "of\n"
    "          the 3-D cells' corner tetrahedra; <= 0: an inverted cell), time_s\n"
    "  matvec  one mat-vec (Phi w)_i at the centres with random weights summing to 0;\n"
    "          stdout: n, matvec, matvec_s (median of --repeat), rel_error (max-norm error\n"
    "          against the direct sum at --sample targets, relative to max|Phi w|)\n"
    "options:\n"
    "  --shape C          multiquadric shape parameter c > 0 (fit, matvec: required)\n"
    "  --tolerance T      stop when max|r| <= T max|f|, 1e-13..0.5 (default 1e-8)\n"
    "  --lset Q           L-set size 2..200 (default: automatic, for the direct CPU mat-vec 80\n"
    "                     from 10000 centres and 96 from 16000, else 50)\n"
    "  --max-iter K       iteration limit, >= 1 (default 500)\n"
    "  --dense-max N      fit, deform: a fit of at most N centres that the iteration does not\n"
    "                     finish falls back to a dense LU solve (stdout: solver dense), 0..20000\n"
    "                     (default 4000; 0: never)\n"
    "  --matvec M         auto|direct|series|bldtt (default auto: direct, or series on the CPU\n"
    "                     for N >= 200000 at tolerance >= 1e-5)\n"
    "  --series-tol E     accuracy of the series mat-vec terms and BLDTT's (theta, n), 0..1e-2\n"
    "                     (default 0: tolerance/100; BLDTT tolerance/1000)\n"
    "  --precision P      mixed|double (default mixed: a fit with the direct CPU mat-vec takes\n"
    "                     some passes in single precision, its final residual in double)\n"
    "  --device D         cpu|cuda (default cpu)\n"
    "  --threads N        OpenMP threads, 0..1024 (default 0: all)\n"
    "  --seed S           seed of the FGP random order, >= 0 (default 1)\n"
    "  --repeat K         matvec: number of timed mat-vecs (default 3)\n"
    "  --sample K         matvec: targets for the error check (default 1000; 0 = none)\n"
    "Output files (MODEL, --out) are replaced only when complete: a failed write keeps the old "
    "one.\n";

typedef struct {
    const char *centers, *out, *model, *points, *mesh, *disp;
    int have_shape, repeat;
    long sample;
    fmm_rbf_opts o;
} args;

/* 'x y z' rows, further columns ignored (a centres file 'x y z f' serves as points) */
static int read_points(const char *cmd, const char *path, long *n, double **xyz) {
    int cols;
    if (cli_read_rows(cmd, path, "x y z ...", 3, 0, &cols, n, xyz, NULL)) return 1;
    for (long i = 0; i < *n; ++i)
        for (int k = 0; k < 3; ++k) (*xyz)[3 * i + k] = (*xyz)[cols * i + k];
    return 0;
}

/* --precision names, in the order of fmm_rbf_opts.mixed_precision */
static const char *const precisions[] = {"double", "mixed", NULL};
/* --matvec names, in the order of enum fmm_rbf_matvec */
static const char *const matvecs[] = {"auto", "direct", "series", "bldtt", NULL};
static const char *const solvers[] = {"fgp", "dense"}; /* enum fmm_rbf_solver order */

static int need(const char *cmd, const char *v, const char *opt) {
    if (v) return 0;
    fprintf(stderr, "fmm rbf %s: %s is required (try --help)\n", cmd, opt);
    return 1;
}

static int cmd_fit(args *A) {
    if (need("fit", A->centers, "--centers FILE") || need("fit", A->out, "--out MODEL")) return 2;
    if (!A->have_shape) {
        fprintf(stderr, "fmm rbf fit: --shape C is required (try --help)\n");
        return 2;
    }
    long n, *lines;
    double *xyz, *f;
    if (cli_read_rows_lines("rbf fit", A->centers, "x y z f", 4, 4, NULL, &n, &xyz, &f, &lines,
                            NULL, NULL))
        return 1;
    int status = 1;
    double *lam = malloc(sizeof(double) * n);
    fmm_rbf_plan *p = NULL;
    if (!lam) {
        fprintf(stderr, "fmm rbf fit: out of memory\n");
        goto done;
    }
    double t0 = omp_get_wtime(), alpha = 0;
    fmm_rbf_result r;
    int rc = fmm_rbf_makeplan(&A->o, &p);
    if (!rc) rc = fmm_rbf_setpts(p, n, xyz);
    if (!rc) rc = fmm_rbf_execute(p, f, lam, &alpha, &r);
    double t1 = omp_get_wtime();
    if (rc == FMM_ERR_COINCIDENT &&
        cli_report_coincident("rbf fit", A->centers, "centres", n, xyz, lines, 0))
        goto done;
    if (rc) {
        fprintf(stderr, "fmm rbf fit: %s\n", fmm_rbf_strerror(rc));
        goto done;
    }
    const cli_rbf_model model = {A->o.shape, alpha, n, xyz, lam};
    if (cli_rbf_model_write(A->out, &model)) {
        cli_write_failed("rbf fit", A->out);
        goto done;
    }
    printf(
        "n %ld\niterations %d\nmax_residual %.6e\nsolver %s\nmatvec %s\nsingle_passes %d\nsetup_s "
        "%.6f\nfit_s %.6f\ntime_s %.6f\n",
        n, r.iterations, r.max_residual, solvers[r.solver], matvecs[r.matvec], r.single_passes,
        r.time_setup_s, r.time_fit_s, t1 - t0);
    status = 0;
done:
    fmm_rbf_destroy(p);
    free(xyz), free(f), free(lam), free(lines);
    return status;
}

static int cmd_eval(args *A) {
    if (need("eval", A->model, "--model MODEL") || need("eval", A->points, "--points FILE") ||
        need("eval", A->out, "--out FILE"))
        return 2;
    cli_rbf_model model;
    char err[512];
    double *pts;
    long m;
    if (cli_rbf_model_read(A->model, &model, err, sizeof err)) {
        fprintf(stderr, "fmm rbf eval: %s\n", err);
        return 1;
    }
    if (read_points("rbf eval", A->points, &m, &pts)) {
        cli_rbf_model_free(&model);
        return 1;
    }
    int status = 1;
    double *s = malloc(sizeof(double) * m);
    fmm_rbf_plan *p = NULL;
    if (!s) {
        fprintf(stderr, "fmm rbf eval: out of memory\n");
        goto done;
    }
    A->o.shape = model.shape;
    A->o.lset_size = 2; /* no fit: the smallest L-sets keep setpts cheap */
    double t0 = omp_get_wtime();
    int rc = fmm_rbf_makeplan(&A->o, &p);
    if (!rc) rc = fmm_rbf_setpts(p, model.n, model.xyz);
    if (!rc) rc = fmm_rbf_eval(p, model.lambda, model.alpha, m, pts, s);
    double t1 = omp_get_wtime();
    if (rc) {
        fprintf(stderr, "fmm rbf eval: %s\n", fmm_rbf_strerror(rc));
        goto done;
    }
    if (cli_write_values("rbf eval", A->out, m, s, NULL)) goto done;
    printf("n %ld\nm %ld\ntime_s %.6f\n", model.n, m, t1 - t0);
    status = 0;
done:
    fmm_rbf_destroy(p);
    cli_rbf_model_free(&model);
    free(pts), free(s);
    return status;
}

static int cmd_deform(args *A) {
    if (need("deform", A->mesh, "--mesh IN.vtk") ||
        need("deform", A->disp, "--displacements FILE") || need("deform", A->out, "--out OUT.vtk"))
        return 2;
    fmm_vtk_mesh mesh, moved;
    char err[512];
    int rc = fmm_vtk_read_msg(A->mesh, &mesh, err, sizeof err);
    if (rc) {
        fprintf(stderr, "fmm rbf deform: %s\n", err);
        return 1;
    }
    long nb;
    double *t;
    if (cli_read_rows("rbf deform", A->disp, "x y z dx dy dz", 6, 6, NULL, &nb, &t, NULL)) {
        fmm_vtk_free(&mesh);
        return 1;
    }
    int status = 1;
    double *b = malloc(sizeof(double) * 3 * nb), *d = malloc(sizeof(double) * 3 * nb);
    memset(&moved, 0, sizeof moved);
    moved = mesh;
    moved.xyz = malloc(sizeof(double) * 3 * (mesh.npoints > 0 ? mesh.npoints : 1));
    if (!b || !d || !moved.xyz) {
        fprintf(stderr, "fmm rbf deform: out of memory\n");
        goto done;
    }
    memcpy(moved.xyz, mesh.xyz, sizeof(double) * 3 * mesh.npoints);
    for (long i = 0; i < nb; ++i)
        for (int k = 0; k < 3; ++k) b[3 * i + k] = t[6 * i + k], d[3 * i + k] = t[6 * i + 3 + k];
    double t0 = omp_get_wtime();
    if (!A->have_shape) {
        double h;
        rc = fmm_rbf_mean_spacing(nb, b, &h);
        if (rc) {
            fprintf(stderr, "fmm rbf deform: %s\n", fmm_rbf_strerror(rc));
            goto done;
        }
        A->o.shape = h / 3;
    }
    fmm_rbf_result r;
    rc = fmm_rbf_deform(&A->o, nb, b, d, mesh.npoints, moved.xyz, &r);
    double t1 = omp_get_wtime();
    if (rc) {
        fprintf(stderr, "fmm rbf deform: %s\n", fmm_rbf_strerror(rc));
        goto done;
    }
    double ratio = NAN;
    int have_ratio = fmm_vtk_min_volume_ratio(&mesh, &moved, &ratio) == 0;
    rc = fmm_vtk_write(A->out, &moved, "deformed by fmm rbf deform");
    if (rc == FMM_ERR_IO) {
        cli_write_failed("rbf deform", A->out);
        goto done;
    }
    if (rc) {
        fprintf(stderr, "fmm rbf deform: cannot write '%s': %s\n", A->out, fmm_rbf_strerror(rc));
        goto done;
    }
    printf(
        "boundary_points %ld\nnodes %ld\nshape %.6g\niterations %d\nmax_residual %.6e\nsolver %s\n",
        nb, mesh.npoints, A->o.shape, r.iterations, r.max_residual, solvers[r.solver]);
    if (have_ratio) printf("min_volume_ratio %.6f\n", ratio);
    printf("time_s %.6f\n", t1 - t0);
    status = 0;
done:
    free(b), free(d), free(t), free(moved.xyz);
    fmm_vtk_free(&mesh);
    return status;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmd_matvec(args *A) {
    if (need("matvec", A->centers, "--centers FILE")) return 2;
    if (!A->have_shape) {
        fprintf(stderr, "fmm rbf matvec: --shape C is required (try --help)\n");
        return 2;
    }
    long n;
    double *xyz;
    if (read_points("rbf matvec", A->centers, &n, &xyz)) return 1;
    int status = 1, rc;
    double *w = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
    double *ms = malloc(sizeof(double) * A->repeat);
    fmm_rbf_plan *p = NULL, *ref = NULL;
    if (!w || !out || !ms) {
        fprintf(stderr, "fmm rbf matvec: out of memory\n");
        goto done;
    }
    unsigned long long st = A->o.seed * 2654435761ULL + 12345;
    double sum = 0;
    for (long i = 0; i < n; ++i) {
        st = st * 6364136223846793005ULL + 1442695040888963407ULL;
        w[i] = (double)(st >> 11) / 9007199254740992.0 - 0.5;
        sum += w[i];
    }
    for (long i = 0; i < n; ++i) w[i] -= sum / n;
    A->o.lset_size = 2;
    rc = fmm_rbf_makeplan(&A->o, &p);
    if (!rc) rc = fmm_rbf_setpts(p, n, xyz);
    for (int k = 0; k < A->repeat && !rc; ++k) rc = fmm_rbf_matvec(p, w, out, &ms[k]);
    if (rc) {
        fprintf(stderr, "fmm rbf matvec: %s\n", fmm_rbf_strerror(rc));
        goto done;
    }
    qsort(ms, A->repeat, sizeof(double), cmp_d);
    int mv;
    fmm_rbf_get_method(p, &mv, NULL);
    printf("n %ld\nmatvec %s\ndevice %s\nmatvec_s %.6f\n", n, matvecs[mv],
           A->o.device ? "cuda" : "cpu", ms[A->repeat / 2] / 1e3);
    long m = A->sample < n ? A->sample : n;
    if (m > 0) {
        fmm_rbf_opts o = A->o;
        o.matvec = FMM_RBF_MATVEC_DIRECT;
        o.device = FMM_DEVICE_CPU;
        double *pt = malloc(sizeof(double) * 3 * m), *rv = malloc(sizeof(double) * m);
        if (!pt || !rv) {
            free(pt), free(rv);
            fprintf(stderr, "fmm rbf matvec: out of memory\n");
            goto done;
        }
        for (long k = 0; k < m; ++k) {
            long i = (long)((double)k * n / m);
            for (int c = 0; c < 3; ++c) pt[3 * k + c] = xyz[3 * i + c];
        }
        rc = fmm_rbf_makeplan(&o, &ref);
        if (!rc) rc = fmm_rbf_setpts(ref, n, xyz);
        if (!rc) rc = fmm_rbf_eval(ref, w, 0.0, m, pt, rv);
        if (rc) {
            free(pt), free(rv);
            fprintf(stderr, "fmm rbf matvec: reference: %s\n", fmm_rbf_strerror(rc));
            goto done;
        }
        double e = 0, s = 0;
        for (long k = 0; k < m; ++k) {
            long i = (long)((double)k * n / m);
            if (fabs(out[i] - rv[k]) > e) e = fabs(out[i] - rv[k]);
            if (fabs(rv[k]) > s) s = fabs(rv[k]);
        }
        printf("reference_targets %ld\nrel_error %.3e\n", m, s > 0 ? e / s : e);
        free(pt), free(rv);
    }
    status = 0;
done:
    fmm_rbf_destroy(p);
    fmm_rbf_destroy(ref);
    free(xyz), free(w), free(out), free(ms);
    return status;
}

int cli_rbf(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr,
                "fmm rbf: a subcommand is required: fit, eval, deform or matvec (try --help)\n");
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(help, stdout);
        return 0;
    }
    if (strcmp(cmd, "fit") && strcmp(cmd, "eval") && strcmp(cmd, "deform") &&
        strcmp(cmd, "matvec")) {
        fprintf(stderr,
                "fmm rbf: unknown subcommand '%s' (fit, eval, deform, matvec; try --help)\n", cmd);
        return 2;
    }
    args A = {.repeat = 3, .sample = 1000};
    fmm_rbf_default_opts(&A.o);
    long seed = (long)A.o.seed;
    const cli_option opts[] = {
        {"--centers", CLI_STRING, .s = &A.centers},
        {"--out", CLI_STRING, .s = &A.out},
        {"--model", CLI_STRING, .s = &A.model},
        {"--points", CLI_STRING, .s = &A.points},
        {"--mesh", CLI_STRING, .s = &A.mesh},
        {"--displacements", CLI_STRING, .s = &A.disp},
        {"--shape", CLI_DOUBLE, .d = &A.o.shape, .min = 0, .max = INFINITY, .open = CLI_OPEN_MIN,
         .given = &A.have_shape},
        {"--tolerance", CLI_DOUBLE, .d = &A.o.tolerance, .min = FMM_RBF_TOL_MIN,
         .max = FMM_RBF_TOL_MAX},
        {"--lset", CLI_INT, .i = &A.o.lset_size, .min = FMM_RBF_Q_MIN, .max = FMM_RBF_Q_MAX},
        {"--max-iter", CLI_INT, .i = &A.o.max_iter, .min = 1, .max = INFINITY},
        {"--dense-max", CLI_INT, .i = &A.o.dense_max, .min = 0, .max = FMM_RBF_DENSE_LIMIT},
        {"--matvec", CLI_CHOICE, .i = &A.o.matvec, .choices = matvecs},
        {"--series-tol", CLI_DOUBLE, .d = &A.o.series_tol, .min = 0, .max = 1e-2},
        {"--precision", CLI_CHOICE, .i = &A.o.mixed_precision, .choices = precisions},
        {"--device", CLI_CHOICE, .i = &A.o.device, .choices = cli_devices},
        {"--threads", CLI_INT, .i = &A.o.threads, .min = 0, .max = FMM_THREADS_MAX},
        {"--seed", CLI_LONG, .l = &seed, .min = 0, .max = INFINITY},
        {"--repeat", CLI_INT, .i = &A.repeat, .min = 1, .max = INFINITY},
        {"--sample", CLI_LONG, .l = &A.sample, .min = 0, .max = INFINITY},
        {0}};
    char name[16];
    snprintf(name, sizeof name, "rbf %s", cmd);
    int r = cli_parse_options(name, help, opts, argc - 1, argv + 1);
    if (r) return r < 0 ? 0 : r;
    A.o.seed = (unsigned long long)seed;
    if (!strcmp(cmd, "fit")) return cmd_fit(&A);
    if (!strcmp(cmd, "eval")) return cmd_eval(&A);
    if (!strcmp(cmd, "deform")) return cmd_deform(&A);
    return cmd_matvec(&A);
}
