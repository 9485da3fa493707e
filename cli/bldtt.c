/* fmm bldtt: kernel-independent fast summation (BLDTT / BLTC) of sources read from a text file. */
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "fmm_bldtt.h"
#include "pointsets.h"

static const char *help =
    "usage: fmm bldtt --sources FILE [options]\n"
    "phi(x_i) = sum_j G(|x_i - y_j|) q_j by the barycentric Lagrange dual tree traversal.\n"
    "  --sources FILE     sources, one per line: x y z q ('#' comments, blank lines ok)\n"
    "  --targets FILE     targets, one per line: x y z (default: the sources, self term left out)\n"
    "  --kernel K         coulomb 1/r (default), yukawa exp(-p r)/r, regularized 1/sqrt(r^2+p^2),\n"
    "                     sinc sin(p r)/r, multiquadric sqrt(r^2+p^2)\n"
    "  --param X          kernel parameter p (defaults: yukawa 0.5, regularized 0.005, sinc pi,\n"
    "                     multiquadric 1; coulomb has none)\n"
    "  --theta T          MAC parameter, 0 < T < 1 (default 0.7; smaller is more accurate)\n"
    "  --degree N         interpolation degree, 0..16 (default 8; larger is more accurate)\n"
    "  --leaf N           max particles per leaf (default: cpu 0.7(N+1)^3 in [200,2000], cuda 2000)\n"
    "  --method M         bldtt (dual tree traversal, default) or bltc (treecode, for comparison)\n"
    "  --device cpu|cuda  where the sums run (default cpu)\n"
    "  --threads N        OpenMP threads (default: all)\n"
    "  --gradient         also compute d phi/d x (written as 3 more columns with --out)\n"
    "  --out FILE         write one line per target, in input order: phi [dx dy dz] (%.17g)\n"
    "  --reference        compare with the direct sum (all targets up to 20000, else an evenly\n"
    "                     spaced sample of --reference-sample K targets, default 2000)\n"
    "stdout: sources, targets, kernel, param, theta, degree, leaf, pairs_pp/pc/cp/cc, setup_s,\n"
    "        time_s (setup + evaluation, no file I/O) [, rel_l2_error, rel_l2_error_gradient]\n";

/* reads "x y z" lines (extra columns are an error); same comment rules as pts_read_xyzq */
static int read_xyz(const char *path, long *n, double **xyz) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fmm bldtt: cannot open '%s'\n", path);
        return 1;
    }
    long cap = 1024, k = 0, line = 0;
    double *a = malloc(sizeof(double) * 3 * cap);
    char buf[4096];
    int bad = !a;
    if (bad) fprintf(stderr, "fmm bldtt: out of memory\n");
    while (!bad && fgets(buf, sizeof buf, f)) {
        ++line;
        char *h = strchr(buf, '#');
        if (h) *h = 0;
        char *s = buf, *end;
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') ++s;
        if (!*s) continue;
        double v[3];
        int m = 0;
        for (;;) {
            while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') ++s;
            if (!*s) break;
            errno = 0;
            double d = strtod(s, &end);
            if (end == s || m == 3) {
                m = -1;
                break;
            }
            if (!isfinite(d) || errno == ERANGE) {
                m = -2;
                break;
            }
            v[m++] = d;
            s = end;
        }
        if (m != 3) {
            fprintf(stderr, "fmm bldtt: %s:%ld: %s\n", path, line,
                    m == -2 ? "non-finite coordinate" : "expected 3 numbers x y z");
            bad = 1;
            break;
        }
        if (k == cap) {
            cap *= 2;
            double *b = realloc(a, sizeof(double) * 3 * cap);
            if (!b) {
                fprintf(stderr, "fmm bldtt: out of memory\n");
                bad = 1;
                break;
            }
            a = b;
        }
        memcpy(a + 3 * k, v, sizeof v), ++k;
    }
    fclose(f);
    if (!bad && k == 0) {
        fprintf(stderr, "fmm bldtt: %s: no targets\n", path);
        bad = 1;
    }
    if (bad) {
        free(a);
        return 1;
    }
    *n = k, *xyz = a;
    return 0;
}

int cli_bldtt(int argc, char **argv) {
    const char *src = NULL, *trg = NULL, *out = NULL;
    int reference = 0, gradient = 0, have_param = 0;
    long sample = 2000;
    bldtt_opts o;
    bldtt_default_opts(&o);
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
        if (!strcmp(a, "--gradient")) {
            gradient = 1;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "fmm bldtt: %s needs a value (or unknown option)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--sources")) src = v;
        else if (!strcmp(a, "--targets")) trg = v;
        else if (!strcmp(a, "--out")) out = v;
        else if (!strcmp(a, "--param")) bad = cli_parse_double(a, v, &o.param), have_param = 1;
        else if (!strcmp(a, "--theta")) bad = cli_parse_double(a, v, &o.theta);
        else if (!strcmp(a, "--degree")) bad = cli_parse_int(a, v, &o.degree);
        else if (!strcmp(a, "--leaf")) bad = cli_parse_int(a, v, &o.leaf_size);
        else if (!strcmp(a, "--threads")) bad = cli_parse_int(a, v, &o.threads);
        else if (!strcmp(a, "--reference-sample")) {
            bad = cli_parse_long(a, v, &sample);
            if (!bad && sample < 1) {
                fprintf(stderr, "fmm bldtt: --reference-sample must be >= 1\n");
                return 2;
            }
        } else if (!strcmp(a, "--kernel")) {
            if (bldtt_kernel_from_name(v, &o.kernel)) {
                fprintf(stderr, "fmm bldtt: unknown kernel '%s' (coulomb, yukawa, regularized, sinc, "
                                "multiquadric)\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--method")) {
            if (!strcmp(v, "bldtt")) o.method = BLDTT_METHOD_DTT;
            else if (!strcmp(v, "bltc")) o.method = BLDTT_METHOD_BLTC;
            else {
                fprintf(stderr, "fmm bldtt: --method must be bldtt or bltc, not '%s'\n", v);
                return 2;
            }
        } else if (!strcmp(a, "--device")) {
            if (!strcmp(v, "cpu")) o.device = FMM_DEVICE_CPU;
            else if (!strcmp(v, "cuda")) o.device = FMM_DEVICE_CUDA;
            else {
                fprintf(stderr, "fmm bldtt: --device must be cpu or cuda, not '%s'\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "fmm bldtt: unknown option '%s' (try --help)\n", a);
            return 2;
        }
        if (bad) return 2;
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
    bldtt_plan *plan = NULL;
    int rc = bldtt_makeplan(&o, &plan); /* options first: no file is read for bad options */
    if (rc) {
        const char *what = rc == FMM_ERR_PARAM ? " (check --param, --theta, --degree, --leaf)" : "";
        fprintf(stderr, "fmm bldtt: %s%s\n", bldtt_strerror(rc), what);
        return 2;
    }
    long ns, nt = 0;
    double *sxyz = NULL, *q = NULL, *txyz = NULL, *phi = NULL, *grad = NULL;
    char err[512];
    int status = 1;
    if (pts_read_xyzq(src, &ns, &sxyz, &q, err, sizeof err)) {
        fprintf(stderr, "fmm bldtt: %s\n", err);
        goto done;
    }
    if (trg && read_xyz(trg, &nt, &txyz)) goto done;
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
    if (out) {
        FILE *f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "fmm bldtt: cannot write '%s'\n", out);
            goto done;
        }
        for (long i = 0; i < m; ++i) {
            if (gradient)
                fprintf(f, "%.17g %.17g %.17g %.17g\n", phi[i], grad[3 * i], grad[3 * i + 1], grad[3 * i + 2]);
            else
                fprintf(f, "%.17g\n", phi[i]);
        }
        if (fclose(f)) {
            fprintf(stderr, "fmm bldtt: error writing '%s'\n", out);
            goto done;
        }
    }
    printf("sources %ld\ntargets %ld\nkernel %s\nparam %.17g\ntheta %g\ndegree %d\nleaf %d\n", ns, m,
           bldtt_kernel_name(o.kernel), o.param, o.theta, o.degree, info.leaf_size);
    printf("pairs_pp %ld\npairs_pc %ld\npairs_cp %ld\npairs_cc %ld\n", info.pairs[0], info.pairs[1],
           info.pairs[2], info.pairs[3]);
    printf("setup_s %.6f\ntime_s %.6f\n", t1 - t0, t2 - t0);
    if (reference) {
        long k = m <= 20000 ? m : (sample < m ? sample : m);
        long *idx = malloc(sizeof(long) * k);
        double *rp = malloc(sizeof(double) * k), *rg = gradient ? malloc(sizeof(double) * 3 * k) : NULL;
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
        double e = 0, s = 0, eg = 0, sg = 0;
        for (long j = 0; j < k; ++j) {
            long i = idx[j];
            e += (phi[i] - rp[j]) * (phi[i] - rp[j]), s += rp[j] * rp[j];
            if (gradient)
                for (int d = 0; d < 3; ++d)
                    eg += (grad[3 * i + d] - rg[3 * j + d]) * (grad[3 * i + d] - rg[3 * j + d]),
                        sg += rg[3 * j + d] * rg[3 * j + d];
        }
        printf("reference_targets %ld\nreference_time_s %.6f\n", k, r1 - r0);
        printf("rel_l2_error %.6e\n", s > 0 ? sqrt(e / s) : sqrt(e));
        if (gradient) printf("rel_l2_error_gradient %.6e\n", sg > 0 ? sqrt(eg / sg) : sqrt(eg));
        free(idx), free(rp), free(rg);
    }
    status = 0;
done:
    bldtt_destroy(plan);
    free(sxyz), free(q), free(txyz), free(phi), free(grad);
    return status;
}
