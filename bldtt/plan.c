/* bldtt/plan.c - the BLDTT plan: kernels by name and their parameters, options and their
 * checks, the normalised units of a point set, and the plan's life (makeplan, get_info, destroy).
 * The stages that follow are in setpts.c (trees and interaction lists) and execute.c (the CPU
 * evaluation); docs/bldtt.md describes the algorithm. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda.h"
#include "bldtt/bldtt_internal.h"
#include "bldtt/kernels.h"
#include "core/scale.h"

/* ---- kernels, names, parameters ---------------------------------------------------------- */

static const char *kernel_names[BLDTT_NKERNELS] = {"coulomb", "yukawa", "regularized", "sinc",
                                                   "multiquadric"};

const char *bldtt_kernel_name(int k) {
    return k >= 0 && k < BLDTT_NKERNELS ? kernel_names[k] : NULL;
}

int bldtt_kernel_from_name(const char *name, int *k) {
    if (!name || !k) return FMM_ERR_ARG;
    for (int i = 0; i < BLDTT_NKERNELS; ++i)
        if (!strcmp(name, kernel_names[i])) {
            *k = i;
            return FMM_OK;
        }
    return FMM_ERR_PARAM;
}

double bldtt_kernel_default_param(int k) {
    switch (k) {
    case BLDTT_YUKAWA:
        return 0.5;
    case BLDTT_REGULARIZED:
        return 0.005;
    case BLDTT_SINC:
        return BT_PI;
    case BLDTT_MULTIQUADRIC:
        return 1.0;
    default:
        return 0.0;
    }
}

double bldtt_kernel_value(int k, double p, double r) {
    if (k < 0 || k >= BLDTT_NKERNELS || !(r >= 0)) return NAN;
    if (r == 0 && bt_kernel_singular(k)) return INFINITY;
    switch (k) { /* constant k per call: the switch in bt_kernel needs a literal to fold */
    case BLDTT_COULOMB:
        return bt_kernel(BLDTT_COULOMB, r * r, p, NULL);
    case BLDTT_YUKAWA:
        return bt_kernel(BLDTT_YUKAWA, r * r, p, NULL);
    case BLDTT_REGULARIZED:
        return bt_kernel(BLDTT_REGULARIZED, r * r, p, NULL);
    case BLDTT_SINC:
        return bt_kernel(BLDTT_SINC, r * r, p, NULL);
    default:
        return bt_kernel(BLDTT_MULTIQUADRIC, r * r, p, NULL);
    }
}

const char *bldtt_strerror(int status) {
    return fmm_strerror(status);
}

void bldtt_default_opts(bldtt_opts *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->kernel = BLDTT_COULOMB;
    o->param = 0;
    o->theta = 0.7;
    o->degree = 8;
    o->leaf_size = 0;
    o->method = BLDTT_METHOD_DTT;
    o->device = FMM_DEVICE_CPU;
    o->threads = 0;
}

int bt_check_kernel(int k, double p) {
    if (k < 0 || k >= BLDTT_NKERNELS) return FMM_ERR_PARAM;
    if (k == BLDTT_COULOMB) return FMM_OK;
    if (!isfinite(p)) return FMM_ERR_PARAM;
    if ((k == BLDTT_REGULARIZED || k == BLDTT_SINC) && !(p > 0)) return FMM_ERR_PARAM;
    if (!(p >= 0)) return FMM_ERR_PARAM;
    return FMM_OK;
}

int bt_check_device(int device) {
    if (device == FMM_DEVICE_CPU) return FMM_OK;
    if (device != FMM_DEVICE_CUDA) return FMM_ERR_PARAM;
#ifdef FMM_HAVE_CUDA
    return fmm_cuda_device_count() > 0 ? FMM_OK : FMM_ERR_DEVICE;
#else
    return FMM_ERR_DEVICE;
#endif
}

static int check_opts(const bldtt_opts *o) {
    int rc = bt_check_kernel(o->kernel, o->param);
    if (rc) return rc;
    if (!(o->theta > 0 && o->theta < 1)) return FMM_ERR_PARAM;
    if (o->degree < 0 || o->degree > BLDTT_DEGREE_MAX) return FMM_ERR_PARAM;
    if (o->leaf_size < 0 || o->leaf_size > BLDTT_LEAF_MAX) return FMM_ERR_PARAM;
    if (o->method != BLDTT_METHOD_DTT && o->method != BLDTT_METHOD_BLTC) return FMM_ERR_PARAM;
    if (o->threads < 0 || o->threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    return bt_check_device(o->device);
}

/* ---- scales ------------------------------------------------------------------------------ */

/* The sums are computed in normalised units (core/scale.h): coordinates divided by L = 2^elen
 * with elen = fmm_scale_exponent of the largest |coordinate| (for the regularised and
 * multiquadric kernels, of the parameter if it is larger, so that r^2 + p^2 stays in range),
 * and weights by 2^eq likewise. A power of two changes no digit, so the results are those of
 * the unscaled sum wherever that stays in the double range; but 1/r^3, r^2 + p^2 and the like
 * no longer leave it for coordinates near 1e-300 or 1e300. Every kernel is homogeneous under the
 * matching change of its parameter, G_p(L r) = L^m G_p'(r) (m = +1 for the multiquadric, -1 for
 * the others; p' = p L for Yukawa and sinc, p / L for the regularised and multiquadric
 * kernels), so the outputs are scaled back exactly: phi by 2^(eq + m elen), grad by
 * 2^(eq + (m - 1) elen). */

int bt_kernel_degree(int k) {
    return k == BLDTT_MULTIQUADRIC ? 1 : -1;
}

/* elen and the parameter in those units for points whose largest |coordinate| is amax.
 * FMM_ERR_PARAM where the sinc wavenumber times amax leaves [2^-960, 2^1018): p r would be
 * subnormal or overflow at some distances of the set (docs/bldtt.md, "Scales"). */
int bt_scale_lengths(int k, double p, double amax, int *elen, double *ps) {
    int len_param = k == BLDTT_REGULARIZED || k == BLDTT_MULTIQUADRIC;
    int e = fmm_scale_exponent(len_param && p > amax ? p : amax);
    *elen = e;
    *ps = k == BLDTT_COULOMB ? 0 : ldexp(p, len_param ? -e : e);
    /* Yukawa: above DBL_MAX exp(-p r) is 0 at every nonzero distance, as it is at DBL_MAX */
    if (k == BLDTT_YUKAWA && *ps > DBL_MAX) *ps = DBL_MAX;
    if (k == BLDTT_SINC && amax > 0) {
        int pa = ilogb(p) + ilogb(amax); /* p amax in [2^pa, 2^(pa + 2)) */
        if (pa < -960 || pa > 1017) return FMM_ERR_PARAM;
    }
    return FMM_OK;
}

/* ---- plan -------------------------------------------------------------------------------- */

int bldtt_makeplan(const bldtt_opts *opts, bldtt_plan **plan) {
    if (plan) *plan = NULL;
    if (!opts || !plan) return FMM_ERR_ARG;
    int rc = check_opts(opts);
    if (rc) return rc;
    bldtt_plan *p = calloc(1, sizeof *p);
    if (!p) return FMM_ERR_NOMEM;
    p->o = *opts;
    p->n1 = opts->degree + 1;
    p->np = p->n1 * p->n1 * p->n1;
    if (opts->leaf_size > 0)
        p->leaf = opts->leaf_size;
    else if (opts->device == FMM_DEVICE_CUDA)
        p->leaf = 2000;
    else {
        int l = (int)(0.7 * p->np); /* measured at N = 1e5, n = 4 and 8, 2 threads */
        p->leaf = l < 200 ? 200 : l > 2000 ? 2000 : l;
    }
    bt_cheb_weights(opts->degree, p->w);
    *plan = p;
    return FMM_OK;
}

static void free_lists(bt_list *l) {
    for (int k = 0; k < 4; ++k)
        free(l[k].start), free(l[k].src), l[k].start = NULL, l[k].src = NULL, l[k].count = 0;
}

void bt_free_geometry(bldtt_plan *p) {
#ifdef FMM_HAVE_CUDA
    if (p->cuda) bt_cuda_free(p);
#endif
    p->cuda = NULL;
    ct_free(&p->src);
    ct_free(&p->trg_own);
    free(p->src_cheb), free(p->trg_cheb_own);
    p->src_cheb = p->trg_cheb_own = NULL, p->trg_cheb = NULL;
    free_lists(p->lists);
    free(p->tneed);
    p->tneed = NULL;
    p->have_pts = 0;
}

void bldtt_destroy(bldtt_plan *p) {
    if (!p) return;
    bt_free_geometry(p);
    free(p);
}

int bldtt_get_info(const bldtt_plan *p, bldtt_info *info) {
    if (!p || !info) return FMM_ERR_ARG;
    *info = p->info;
    return FMM_OK;
}
