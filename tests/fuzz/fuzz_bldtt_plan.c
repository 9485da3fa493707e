/* Fuzz target: the BLDTT plan API (include/fmm_bldtt.h) on up to NMAX sources and, or, separate
 * targets, every kernel, checked against bldtt_direct. The bytes choose the options (some out of
 * range), the scales of the coordinates and weights, the points and weights (layout below).
 * Checks:
 *  - every status is one the header documents for that call, and options out of range are
 *    FMM_ERR_PARAM (FMM_ERR_THREADS for the thread count);
 *  - a result returned with FMM_OK is finite and within the interpolation error of its degree
 *    and MAC (below), FMM_ERR_RANGE only where an output cannot be represented (fuzz.h);
 *  - a failed call leaves the plan as it was: after a refused bldtt_setpts (NaN) or
 *    bldtt_execute (NaN weight) the next call gives bitwise the previous outputs;
 *  - the outputs are bitwise the same with 2 threads as with 1 (the header promises any count).
 *
 * Accuracy criterion. A cluster's proxies interpolate the kernel by Chebyshev polynomials of
 * degree n over a box of radius r_s, used at distance R with (r_s + r_t) < theta R. Chebyshev
 * interpolation of a function analytic outside the box converges as rho^-(n+1), with
 * rho = d + sqrt(d^2 - 1) for the singularity at d = R / r_s >= 1 / theta half-widths. So the
 * allowed relative error is FACTOR rho(theta)^-(n+1) (times (n+1)^2 for the gradient, the
 * derivative of the interpolant), measured against norms without cancellation: sum_j |q_j|
 * (|G(r)| + 1/r) for phi (1/r: the envelope of the sinc kernel's singular part) and
 * sum_j |q_j| (1/r^2 + |p|/r + 1) for the gradient (a bound of |G'| for every kernel), plus the
 * rounding of positions as in fuzz_fmm_plan.c (ROUNDING eps extent / d_min) and FLOOR. With
 * FACTOR 1 (the rate without its constant, against norms that bound the sums generously) the
 * errors found by fuzzing stayed 20 times or more below the bound.
 *
 * Byte layout: HEADER bytes (flags, kernel, parameter, theta, degree, leaf size, sources,
 * targets, coordinate scale, weight scale, second call), then PER_POINT bytes per source (three
 * 16-bit coordinates, a zoom level, the weight) and, with separate targets, per target. */
#include "tests/fuzz/fuzz.h"

#include <float.h>

#include "fmm_bldtt.h"

enum { NMAX = 200, HEADER = 11, PER_POINT = 8 };
static const double FACTOR = 1, ROUNDING = 1000, FLOOR = 1e-11;

typedef struct {
    bldtt_opts o;  /* as passed (parameter at the true scale) */
    double p_unit; /* the parameter at the unit scale */
    int k, m;      /* coordinates are unit * 2^k, weights unit * 2^m */
    long ns, nt;   /* nt = 0: targets are the sources */
    double *src, *tgt, *q;
    int want_phi, want_grad, threads2, second;
} problem;

static int parse(const uint8_t *data, size_t size, problem *P) {
    static const double theta_menu[12] = {0.5, 0.6, 0.7, 0.8, 0.9, 0.3, 0, 1, NAN, -0.5, 0.99, 0.1};
    static const double param_menu[8] = {0, 0.005, 0.1, 0.5, 1, 3.14159265358979, -1, INFINITY};
    static const int degree_special[6] = {16, 17, -1, 8, 6, 5};
    static const int leaf_special[6] = {0, -1, BLDTT_LEAF_MAX + 1, BLDTT_LEAF_MAX, 2, 3};
    memset(P, 0, sizeof *P);
    if (size < HEADER + PER_POINT) return 0;
    fuzz_bytes b = {data, size};
    bldtt_default_opts(&P->o);
    P->o.threads = 1;
    unsigned flags = fuzz_u8(&b);
    P->o.method = flags & 1 ? BLDTT_METHOD_BLTC : BLDTT_METHOD_DTT;
    if (flags & 2) P->o.method = 2; /* out of range */
    P->want_phi = !(flags & 4);
    P->want_grad = !!(flags & 8) || !P->want_phi;
    P->threads2 = !!(flags & 16);
    const int separate = flags & 32;
    P->o.kernel = (int)(fuzz_u8(&b) % (BLDTT_NKERNELS + 1)); /* the last: out of range */
    P->p_unit = param_menu[fuzz_u8(&b) % 8];
    P->o.theta = theta_menu[fuzz_u8(&b) % 12];
    /* degrees above 4 have more proxies than these sets have points: exact, and so rarer */
    unsigned db = fuzz_u8(&b), lb = fuzz_u8(&b);
    P->o.degree = db < 250 ? (int)(db % 6) : degree_special[db - 250];
    P->o.leaf_size = lb < 250 ? 1 + (int)(lb % 32) : leaf_special[lb - 250];
    const unsigned sb = fuzz_u8(&b), tb = fuzz_u8(&b);
    long ns = 1 + sb % NMAX, nt = separate ? 1 + tb % NMAX : 0;
    P->k = fuzz_scale(&b);
    P->m = fuzz_scale(&b);
    P->second = (int)fuzz_u8(&b);
    /* the parameter at the true scale, and back (exact: it stays a normal number) */
    const int pk = P->o.kernel == BLDTT_YUKAWA || P->o.kernel == BLDTT_SINC ? -P->k : P->k;
    P->o.param = ldexp(P->p_unit, pk);
    P->p_unit = ldexp(P->o.param, -pk);

    const long have = (long)(b.n / PER_POINT);
    if (have < 1) return 0;
    if (ns > have) ns = have;
    if (nt > have - ns) nt = have - ns;
    if (separate && nt < 1) return 0;
    P->ns = ns, P->nt = nt;
    P->src = malloc(sizeof(double) * 3 * (size_t)ns);
    P->q = malloc(sizeof(double) * (size_t)ns);
    P->tgt = nt ? malloc(sizeof(double) * 3 * (size_t)nt) : NULL;
    if (!P->src || !P->q || (nt && !P->tgt)) return 0;
    for (long i = 0; i < ns + nt; ++i) {
        unsigned u[3] = {fuzz_u16(&b), fuzz_u16(&b), fuzz_u16(&b)};
        unsigned zoom = fuzz_u8(&b), qb = fuzz_u8(&b);
        double *x = i < ns ? P->src + 3 * i : P->tgt + 3 * (i - ns);
        for (int d = 0; d < 3; ++d) x[d] = ldexp(fuzz_coordinate(u[d], zoom), P->k);
        if (i < ns) P->q[i] = ldexp((int8_t)qb / 16.0, P->m);
    }
    return 1;
}

/* the status makeplan must give (0: accepted) */
static int expected_makeplan(const bldtt_opts *o) {
    const int k = o->kernel;
    const double p = o->param;
    if (k < 0 || k >= BLDTT_NKERNELS) return FMM_ERR_PARAM;
    if (k != BLDTT_COULOMB && /* Coulomb ignores it */
        (!isfinite(p) || !(p >= 0) || ((k == BLDTT_REGULARIZED || k == BLDTT_SINC) && !(p > 0))))
        return FMM_ERR_PARAM;
    if (!(o->theta > 0 && o->theta < 1) || o->degree < 0 || o->degree > BLDTT_DEGREE_MAX ||
        o->leaf_size < 0 || o->leaf_size > BLDTT_LEAF_MAX ||
        (o->method != BLDTT_METHOD_DTT && o->method != BLDTT_METHOD_BLTC))
        return FMM_ERR_PARAM;
    return 0;
}

/* ---------------------------------------------------------------- reference */

typedef struct {
    int rc;
    double *phi, *grad;
    double phi_abs, grad_abs, phi_abs_max, grad_abs_max, rounding;
} reference;

/* bldtt_direct on the set scaled back to unit size (exactly), the norms and the rounding
 * allowance, all at the unit scale */
static void compute_reference(const problem *P, reference *R) {
    memset(R, 0, sizeof *R);
    const long ns = P->ns, nt = P->nt ? P->nt : P->ns;
    double *s = malloc(sizeof(double) * 3 * (size_t)ns), *q = malloc(sizeof(double) * (size_t)ns);
    double *t = P->nt ? malloc(sizeof(double) * 3 * (size_t)nt) : NULL;
    R->phi = malloc(sizeof(double) * (size_t)nt);
    R->grad = malloc(sizeof(double) * 3 * (size_t)nt);
    R->rc = FMM_ERR_NOMEM;
    if (s && q && (!P->nt || t) && R->phi && R->grad) {
        for (long i = 0; i < 3 * ns; ++i) s[i] = ldexp(P->src[i], -P->k);
        for (long i = 0; i < ns; ++i) q[i] = ldexp(P->q[i], -P->m);
        for (long i = 0; P->nt && i < 3 * nt; ++i) t[i] = ldexp(P->tgt[i], -P->k);
        bldtt_opts o = P->o;
        o.param = P->p_unit;
        R->rc = bldtt_direct(&o, ns, s, q, P->nt, t, R->phi, R->grad);
    }
    const double *tx = P->nt ? t : s;
    if (!R->rc) {
        const double p = fabs(P->p_unit);
        const int singular = P->o.kernel == BLDTT_COULOMB || P->o.kernel == BLDTT_YUKAWA;
        double extent = 0, dmin = INFINITY, sp = 0, sg = 0;
        for (long i = 0; i < 3 * ns; ++i) extent = fmax(extent, fabs(s[i]));
        for (long i = 0; i < 3 * nt; ++i) extent = fmax(extent, fabs(tx[i]));
        for (long i = 0; i < nt; ++i) {
            double a = 0, g = 0;
            for (long j = 0; j < ns; ++j) {
                if (!P->nt && j == i) continue;
                double dx = tx[3 * i] - s[3 * j], dy = tx[3 * i + 1] - s[3 * j + 1],
                       dz = tx[3 * i + 2] - s[3 * j + 2], r = sqrt(dx * dx + dy * dy + dz * dz);
                if (r == 0) {
                    if (!singular) a += fabs(q[j] * bldtt_kernel_value(P->o.kernel, P->p_unit, 0));
                    continue;
                }
                dmin = fmin(dmin, r);
                a += fabs(q[j]) * (fabs(bldtt_kernel_value(P->o.kernel, P->p_unit, r)) + 1 / r);
                g += fabs(q[j]) * (1 / (r * r) + p / r + 1);
            }
            sp += a * a, sg += g * g;
            R->phi_abs_max = fmax(R->phi_abs_max, a), R->grad_abs_max = fmax(R->grad_abs_max, g);
        }
        R->phi_abs = sqrt(sp), R->grad_abs = sqrt(sg);
        R->rounding = dmin < INFINITY ? DBL_EPSILON * extent / dmin : 0;
    }
    free(s), free(q), free(t);
}

/* Checks an execute's status rc (FMM_OK or FMM_ERR_RANGE) and outputs against the reference. */
static void check_result(const problem *P, const bldtt_plan *plan, const double *phi,
                         const double *grad, int rc) {
    reference R;
    compute_reference(P, &R);
    if (!R.rc) {
        const long nt = P->nt ? P->nt : P->ns;
        const int e = P->o.kernel == BLDTT_MULTIQUADRIC ? 1 : -1; /* G ~ length^e */
        const int n = P->o.degree, k = P->k, m = P->m;
        const double t = 1 / P->o.theta, rho = t + sqrt(t * t - 1);
        const double err = FACTOR * pow(rho, -(n + 1)), slack = FLOOR + ROUNDING * R.rounding;
        const fuzz_output c[2] = {
            {"phi", P->want_phi, nt, phi, R.phi, m + e * k, R.phi_abs, R.phi_abs_max, err + slack},
            {"grad", P->want_grad, 3 * nt, grad, R.grad, m + (e - 1) * k, R.grad_abs,
             R.grad_abs_max, (n + 1) * (n + 1) * err + slack},
        };
        bldtt_info info;
        FUZZ_CHECK(bldtt_get_info(plan, &info) == FMM_OK, "bldtt_get_info");
        char context[128];
        snprintf(context, sizeof context,
                 "%s, theta %g, degree %d, leaf %d, %ld sources, %ld targets",
                 bldtt_kernel_name(P->o.kernel), P->o.theta, n, info.leaf_size, P->ns, P->nt);
        fuzz_check_outputs(rc, c, 2, R.rounding > ldexp(DBL_EPSILON, 400), context);
    } else {
        FUZZ_CHECK(R.rc == FMM_ERR_NOMEM, "reference status %d (%s)", R.rc, bldtt_strerror(R.rc));
    }
    free(R.phi), free(R.grad);
}

/* ---------------------------------------------------------------- calls */

static int execute(const problem *P, bldtt_plan *plan, const double *q, double *phi, double *grad) {
    int rc = bldtt_execute(plan, q, P->want_phi ? phi : NULL, P->want_grad ? grad : NULL);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_NONFINITE || rc == FMM_ERR_RANGE ||
                   rc == FMM_ERR_NOMEM,
               "bldtt_execute: status %d (%s)", rc, bldtt_strerror(rc));
    return rc;
}

static int same(long m, const double *a, const double *b) {
    return !memcmp(a, b, sizeof(double) * (size_t)m);
}

/* The plan made and its points set; 0, or the status of the call that failed. */
static int make(const problem *P, int threads, bldtt_plan **plan) {
    bldtt_opts o = P->o;
    o.threads = threads;
    int rc = bldtt_makeplan(&o, plan);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_PARAM || rc == FMM_ERR_NOMEM,
               "bldtt_makeplan: status %d (%s)", rc, bldtt_strerror(rc));
    FUZZ_CHECK(!rc == !!*plan, "bldtt_makeplan returned %d and plan %p", rc, (void *)*plan);
    if (rc) return rc;
    double phi;
    FUZZ_CHECK(bldtt_execute(*plan, P->q, &phi, NULL) == FMM_ERR_NOPTS, "execute before setpts");
    rc = bldtt_setpts(*plan, P->ns, P->src, P->nt, P->tgt);
    FUZZ_CHECK(rc == FMM_OK || rc == FMM_ERR_PARAM || rc == FMM_ERR_NOMEM,
               "bldtt_setpts: status %d (%s)", rc, bldtt_strerror(rc));
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    problem P;
    bldtt_plan *plan = NULL, *plan2 = NULL;
    double *phi = NULL, *grad = NULL, *phi2 = NULL, *grad2 = NULL;
    if (!parse(data, size, &P)) goto done;
    const long nt = P.nt ? P.nt : P.ns;
    phi = malloc(sizeof(double) * (size_t)nt), grad = malloc(sizeof(double) * 3 * (size_t)nt);
    phi2 = malloc(sizeof(double) * (size_t)nt), grad2 = malloc(sizeof(double) * 3 * (size_t)nt);
    if (!phi || !grad || !phi2 || !grad2) goto done;

    const int want = expected_makeplan(&P.o);
    int rc = bldtt_makeplan(&P.o, &plan);
    FUZZ_CHECK(rc == want || rc == FMM_ERR_NOMEM, "bldtt_makeplan returned %d (%s), expected %d",
               rc, bldtt_strerror(rc), want);
    if (plan) bldtt_destroy(plan), plan = NULL;
    if (rc) goto done;
    if (make(&P, 1, &plan)) goto done;
    FUZZ_CHECK(bldtt_execute(plan, NULL, phi, grad) == FMM_ERR_ARG, "NULL weights");
    FUZZ_CHECK(bldtt_execute(plan, P.q, NULL, NULL) == FMM_ERR_ARG, "no output");
    rc = execute(&P, plan, P.q, phi, grad);
    if (rc == FMM_OK || rc == FMM_ERR_RANGE) check_result(&P, plan, phi, grad, rc);
    if (rc) goto done;
    const long np = P.want_phi ? nt : 0, ng = P.want_grad ? 3 * nt : 0;

    /* a refused call leaves the plan as it was */
    const long j = (P.second / 2) % P.ns;
    if (P.second & 1) { /* a NaN coordinate: setpts refuses it */
        double keep = P.src[3 * j];
        P.src[3 * j] = NAN;
        rc = bldtt_setpts(plan, P.ns, P.src, P.nt, P.tgt);
        P.src[3 * j] = keep;
        FUZZ_CHECK(rc == FMM_ERR_NONFINITE, "bldtt_setpts with NaN: %d", rc);
    } else { /* a NaN weight: execute refuses it */
        double keep = P.q[j];
        P.q[j] = NAN;
        rc = execute(&P, plan, P.q, phi2, grad2);
        P.q[j] = keep;
        FUZZ_CHECK(rc == FMM_ERR_NONFINITE, "bldtt_execute with a NaN weight: %d", rc);
    }
    rc = execute(&P, plan, P.q, phi2, grad2);
    FUZZ_CHECK(rc == FMM_OK && same(np, phi, phi2) && same(ng, grad, grad2),
               "after a refused call: status %d or other outputs", rc);

    /* two threads: bitwise the same */
    if (P.threads2 && !make(&P, 2, &plan2)) {
        rc = execute(&P, plan2, P.q, phi2, grad2);
        FUZZ_CHECK(rc == FMM_OK && same(np, phi, phi2) && same(ng, grad, grad2),
                   "2 threads: status %d or other outputs than 1 thread", rc);
    }
done:
    bldtt_destroy(plan), bldtt_destroy(plan2);
    free(phi), free(grad), free(phi2), free(grad2);
    free(P.src), free(P.tgt), free(P.q);
    return 0;
}
