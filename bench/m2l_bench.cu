/*
 * m2l-bench: the GPU M2L variants of m2l/m2l_gpu.h and m2l/bench/m2l_variants.h on dense tree levels, next to a memory-bound
 * and a compute-bound reference microkernel (Kohnke et al. 2021, Fig. 15). See docs/m2l-bench.md
 * and --help.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/harmonics.h"
#include "fmm.h"
#include "m2l/bench/m2l_variants.h"
#include "m2l/m2l_gpu.h"
#include "m2l/operators.h"

static const char *usage =
    "usage: m2l-bench [options]\n"
    "Times every GPU M2L variant on one dense tree level (8^D boxes, each box's full V list)\n"
    "for each order p and depth D, checks each variant's output against a CPU reference first,\n"
    "and runs a memory-bound and a compute-bound reference microkernel in the same run.\n"
    "  --orders LIST     orders p, e.g. 2..20 or 4,6,8 (default 2..20; 1..20 allowed)\n"
    "  --depths LIST     tree depths D (level 8^D boxes), e.g. 3,4,5 (default 3,4,5; 2..7)\n"
    "  --variants LIST   naive,dynamic,symmetric,tiled,tensor,symfloat,halo (default all; tensor:\n"
    "                    p <= 10; symfloat: the symmetric variant with float products, as the\n"
    "                    mixed-precision FMM runs its coarse levels; halo: halo tiles and TF32\n"
    "                    tensor cores, p <= 10 and D >= 4, as the mixed-precision FMM runs its\n"
    "                    finest level from depth 5)\n"
    "  --reps R          timed runs per measurement, median reported (default 10); slow\n"
    "                    variants get fewer so that one measurement stays near --budget\n"
    "  --budget S        seconds of timed runs per measurement (default 0.3)\n"
    "  --cap S           skip a variant where one run is projected (from the depth below)\n"
    "                    to take longer than S seconds (default 2)\n"
    "  --periodic 0|1    1: periodic level, every box has its full 189-entry V list (default 1);\n"
    "                    0: open boundary, sources outside the level are absent\n"
    "  --samples N       target boxes checked against the CPU reference (default 16, plus the\n"
    "                    first and last box)\n"
    "  --seed S          seed of the random multipoles (default 12345)\n"
    "  --csv FILE        write the results as CSV (one row per measurement and microkernel)\n"
    "  --emulate         no GPU: check the symmetric variant's plan tables and algebra\n"
    "                    (m2l_symmetric_emulate) against the CPU reference instead\n"
    "  --help            this text\n"
    "Columns: time_ms (median), translations/s (M2L pairs per second), GFLOP/s counted as dense\n"
    "operators (2 nc^2 per translation, nc = (p+1)^2), frac = that rate over the compute-bound\n"
    "microkernel's FP64 FMA rate, err = max over checked boxes of max|U - U_ref| / max|U_ref|.\n"
    "A variant passes its check with err <= 1e-12 (symfloat: 1e-5, halo: 3e-5) and no NaN left "
    "anywhere in U (U is poisoned\n"
    "with NaN before the run). Exit status: 0 all checks passed, 1 a check failed or a variant\n"
    "returned an error, 2 bad options or no usable device.\n";

enum { V_NAIVE, V_DYNAMIC, V_SYMMETRIC, V_TILED, V_TENSOR, V_SYMFLOAT, V_HALO, V_COUNT };
static const char *vname[V_COUNT] = {"naive",  "dynamic",  "symmetric", "tiled",
                                     "tensor", "symfloat", "halo"};
/* the check's bound on max|U - U_ref| / max|U_ref|: double variants 1e-12; float products 1e-5;
 * halo 3e-5: TF32 in three products is float-accurate, but the tensor cores' float accumulation
 * truncates (m2l/m2l_halo.cu; measured on an H100 3e-6..1.4e-5 at p 4..10, depths 5 and 6) */
static double check_bound(int v) {
    return v == V_HALO ? 3e-5 : (v == V_SYMFLOAT ? 1e-5 : 1e-12);
}

struct opts {
    std::vector<int> orders, depths;
    bool variant[V_COUNT];
    int reps = 10, periodic = 1, samples = 16, emulate = 0;
    double budget = 0.3, cap = 2.0;
    unsigned long long seed = 12345;
    const char *csv = nullptr;
};

static bool parse_list(const char *s, int lo, int hi, std::vector<int> &out) {
    out.clear();
    std::string str(s);
    size_t pos = 0;
    while (pos <= str.size()) {
        size_t e = str.find(',', pos);
        if (e == std::string::npos) e = str.size();
        std::string item = str.substr(pos, e - pos);
        int a, b;
        char tail;
        if (sscanf(item.c_str(), "%d..%d%c", &a, &b, &tail) == 2) {
        } else if (sscanf(item.c_str(), "%d%c", &a, &tail) == 1) {
            b = a;
        } else {
            return false;
        }
        if (a < lo || b > hi || a > b) return false;
        for (int v = a; v <= b; ++v) out.push_back(v);
        pos = e + 1;
    }
    return !out.empty();
}

static bool parse_args(int argc, char **argv, opts &o) {
    parse_list("2..20", 1, 20, o.orders);
    parse_list("3,4,5", 2, 7, o.depths);
    for (int v = 0; v < V_COUNT; ++v) o.variant[v] = true;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : nullptr;
        char *end = nullptr;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            exit(0);
        } else if (!strcmp(a, "--emulate")) {
            o.emulate = 1;
            continue;
        }
        if (!val) {
            fprintf(stderr, "m2l-bench: %s needs a value\n", a);
            return false;
        }
        ++i;
        if (!strcmp(a, "--orders")) {
            if (!parse_list(val, 1, M2L_GPU_PMAX, o.orders)) goto bad;
        } else if (!strcmp(a, "--depths")) {
            if (!parse_list(val, 2, 7, o.depths)) goto bad;
        } else if (!strcmp(a, "--variants")) {
            for (int v = 0; v < V_COUNT; ++v) o.variant[v] = false;
            std::string s(val);
            size_t pos = 0;
            while (pos <= s.size()) {
                size_t e = s.find(',', pos);
                if (e == std::string::npos) e = s.size();
                std::string item = s.substr(pos, e - pos);
                int found = -1;
                for (int v = 0; v < V_COUNT; ++v)
                    if (item == vname[v]) found = v;
                if (found < 0) goto bad;
                o.variant[found] = true;
                pos = e + 1;
            }
        } else if (!strcmp(a, "--reps")) {
            long r = strtol(val, &end, 10);
            if (*end || r < 1 || r > 10000) goto bad;
            o.reps = (int)r;
        } else if (!strcmp(a, "--budget")) {
            o.budget = strtod(val, &end);
            if (*end || !(o.budget > 0) || o.budget > 1e4) goto bad;
        } else if (!strcmp(a, "--cap")) {
            o.cap = strtod(val, &end);
            if (*end || !(o.cap > 0) || o.cap > 1e5) goto bad;
        } else if (!strcmp(a, "--periodic")) {
            if (strcmp(val, "0") && strcmp(val, "1")) goto bad;
            o.periodic = val[0] - '0';
        } else if (!strcmp(a, "--samples")) {
            long r = strtol(val, &end, 10);
            if (*end || r < 0 || r > 100000) goto bad;
            o.samples = (int)r;
        } else if (!strcmp(a, "--seed")) {
            o.seed = strtoull(val, &end, 10);
            if (*end) goto bad;
        } else if (!strcmp(a, "--csv")) {
            o.csv = val;
        } else {
            fprintf(stderr, "m2l-bench: unknown option %s (see --help)\n", a);
            return false;
        }
        continue;
    bad:
        fprintf(stderr, "m2l-bench: bad value for %s: %s (see --help)\n", a, val);
        return false;
    }
    return true;
}

/* ---- host reference ---- */

static uint64_t rng_next(uint64_t &s) { /* splitmix64 */
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static double rng_unit(uint64_t &s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

/* the V list of a box: offsets d = source - target, d_a in [-2-b_a, 3-b_a], not all |d_a| <= 1 */
static int vlist_of(long t, int level, int d[M2L_VLIST][3]) {
    const long s = 1L << level;
    const int b[3] = {(int)(t % s) & 1, (int)(t / s % s) & 1, (int)(t / (s * s)) & 1};
    int n = 0;
    for (int dz = -2 - b[2]; dz <= 3 - b[2]; ++dz)
        for (int dy = -2 - b[1]; dy <= 3 - b[1]; ++dy)
            for (int dx = -2 - b[0]; dx <= 3 - b[0]; ++dx)
                if (abs(dx) > 1 || abs(dy) > 1 || abs(dz) > 1) d[n][0] = dx, d[n][1] = dy, d[n++][2] = dz;
    return n;
}
static long source_of(long t, int level, const int d[3], int periodic) {
    const long s = 1L << level;
    long x[3] = {t % s + d[0], t / s % s + d[1], t / (s * s) + d[2]};
    for (int a = 0; a < 3; ++a) {
        if (periodic) x[a] = (x[a] + 4 * s) % s;
        else if (x[a] < 0 || x[a] >= s) return -1;
    }
    return x[0] + s * (x[1] + s * x[2]);
}

/* U_ref of the sample boxes: the dense M2L matrix of each signed offset, built directly
 * (harm_m2l_matrix, no reflection tables), times the source multipole */
static void reference(int p, int level, int periodic, const double *W, const std::vector<long> &tg,
                      std::vector<double> &Uref) {
    const int nc = (p + 1) * (p + 1);
    Uref.assign(tg.size() * nc, 0.0);
    std::vector<double> T((size_t)nc * nc);
    static int d[M2L_VLIST][3];
    /* offset index -> sample boxes needing it */
    for (int o = 0; o < 343; ++o) {
        const int od[3] = {o % 7 - 3, o / 7 % 7 - 3, o / 49 - 3};
        bool built = false;
        for (size_t i = 0; i < tg.size(); ++i) {
            const int n = vlist_of(tg[i], level, d);
            for (int e = 0; e < n; ++e) {
                if (d[e][0] != od[0] || d[e][1] != od[1] || d[e][2] != od[2]) continue;
                const long sb = source_of(tg[i], level, d[e], periodic);
                if (sb < 0) continue;
                if (!built) {
                    const double dd[3] = {(double)od[0], (double)od[1], (double)od[2]};
                    harm_m2l_matrix(p, dd, T.data());
                    built = true;
                }
                for (int k = 0; k < nc; ++k) {
                    double acc = 0.0;
                    for (int j = 0; j < nc; ++j) acc += T[(size_t)k * nc + j] * W[sb * nc + j];
                    Uref[i * nc + k] += acc;
                }
            }
        }
    }
}

static long translations(int level, int periodic) {
    const long s = 1L << level, nbox = s * s * s;
    if (periodic) return nbox * M2L_VLIST;
    static int d[M2L_VLIST][3];
    long n = 0;
    for (long t = 0; t < nbox; ++t) {
        int m = vlist_of(t, level, d);
        for (int e = 0; e < m; ++e) n += source_of(t, level, d[e], 0) >= 0;
    }
    return n;
}

/* max over the sample boxes of max|U - Uref| / max|Uref|; NaN where U has one */
static double check_error(const double *U, const std::vector<long> &tg, const std::vector<double> &Uref, int nc) {
    double worst = 0.0;
    for (size_t i = 0; i < tg.size(); ++i) {
        double e = 0.0, m = 0.0;
        for (int k = 0; k < nc; ++k) {
            const double u = U[tg[i] * nc + k], r = Uref[i * nc + k];
            if (!(u == u)) return NAN;
            e = fmax(e, fabs(u - r)), m = fmax(m, fabs(r));
        }
        const double rel = m > 0 ? e / m : e;
        worst = fmax(worst, rel);
    }
    return worst;
}

/* ---- microkernels ---- */

__global__ void k_copy(const double2 *__restrict__ a, double2 *__restrict__ b, long n) {
    for (long i = (long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) b[i] = a[i];
}

#define FMA_CHAINS 8
__global__ void k_fma(double *out, double a, double b, int iters) {
    double x[FMA_CHAINS];
#pragma unroll
    for (int i = 0; i < FMA_CHAINS; ++i) x[i] = 1e-3 * threadIdx.x + i;
    for (int it = 0; it < iters; ++it)
#pragma unroll
        for (int i = 0; i < FMA_CHAINS; ++i) x[i] = fma(x[i], a, b);
    double s = 0.0;
#pragma unroll
    for (int i = 0; i < FMA_CHAINS; ++i) s += x[i];
    if (s == -1.2345) out[blockIdx.x] = s; /* never true: keeps the chains alive */
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "m2l-bench: %s failed: %s (%s:%d)\n", #call, cudaGetErrorString(e_), __FILE__, \
                    __LINE__);                                                                     \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

static int time_events(cudaEvent_t a, cudaEvent_t b, double *ms) {
    float f = 0;
    CK(cudaEventSynchronize(b));
    CK(cudaEventElapsedTime(&f, a, b));
    *ms = f;
    return 0;
}

/* bytes read + written per second of a large device copy; FP64 FLOP/s of FMA chains */
static int microkernels(double *membw, double *fmarate, int nsm) {
    const long n4 = (1L << 30) / sizeof(double2); /* 1 GiB each way */
    double2 *a = nullptr, *b = nullptr;
    double *o = nullptr;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaMalloc((void **)&a, n4 * sizeof(double2)));
    CK(cudaMalloc((void **)&b, n4 * sizeof(double2)));
    CK(cudaMalloc((void **)&o, sizeof(double) * 65536));
    CK(cudaMemset(a, 0, n4 * sizeof(double2)));
    std::vector<double> t;
    for (int r = 0; r < 8; ++r) {
        double ms;
        CK(cudaEventRecord(e0));
        k_copy<<<nsm * 16, 256>>>(a, b, n4);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1));
        if (time_events(e0, e1, &ms)) return -1;
        if (r >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    *membw = 2.0 * n4 * sizeof(double2) / (t[t.size() / 2] * 1e-3);
    t.clear();
    const int iters = 1 << 15, blocks = nsm * 16, threads = 256;
    for (int r = 0; r < 6; ++r) {
        double ms;
        CK(cudaEventRecord(e0));
        k_fma<<<blocks, threads>>>(o, 0.9999999, 1e-7, iters);
        CK(cudaGetLastError());
        CK(cudaEventRecord(e1));
        if (time_events(e0, e1, &ms)) return -1;
        if (r >= 2) t.push_back(ms);
    }
    std::sort(t.begin(), t.end());
    *fmarate = 2.0 * FMA_CHAINS * (double)iters * blocks * threads / (t[t.size() / 2] * 1e-3);
    cudaFree(a), cudaFree(b), cudaFree(o);
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    return 0;
}

/* ---- one variant ---- */

struct result {
    int status = 0; /* 0 ok, 1 check failed, 2 error, 3 skipped */
    double ms = NAN, err = NAN, plan_ms = NAN;
    int reps = 0, nan_free = 0;
    std::string note;
};

struct level_data {
    int p, nc, level, periodic;
    long nbox;
    double *W = nullptr, *U = nullptr; /* device */
    std::vector<double> hU;
};

/* the plans of the variants that have one */
struct plans {
    m2l_sym_plan *sym = nullptr;
    m2l_halo_plan *halo = nullptr;
    ~plans() { m2l_gpu_symmetric_free(sym), m2l_gpu_halo_free(halo); }
};

static int run_variant(int v, const m2l_gpu_ops *g, const plans &sp, const level_data &L,
                       cudaStream_t st) {
    switch (v) {
    case V_NAIVE: return m2l_gpu_naive(g, L.level, L.periodic, L.W, L.U, st);
#ifdef FMM_M2L_DYNAMIC
    case V_DYNAMIC: return m2l_gpu_dynamic(g, L.level, L.periodic, L.W, L.U, st);
#endif
    case V_SYMMETRIC:
    case V_SYMFLOAT:
        return m2l_gpu_symmetric_run(sp.sym, L.W, L.U, st);
    case V_HALO:
        return m2l_gpu_halo_run(sp.halo, L.W, L.U, st);
    case V_TILED: return m2l_gpu_tiled(g, L.level, L.periodic, L.W, L.U, st);
    case V_TENSOR: return m2l_gpu_tensor(g, L.level, L.periodic, L.W, L.U, st);
    default: return FMM_ERR_ARG;
    }
}

static double now_s() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* check once into a NaN-poisoned U, then time; fills r; returns -1 when the device is unusable */
static int measure(int v, const m2l_gpu_ops *g, level_data &L, const opts &o, const std::vector<long> &tg,
                   const std::vector<double> &Uref, cudaStream_t st, cudaEvent_t e0, cudaEvent_t e1, result &r) {
    plans sp;
    if (v == V_SYMMETRIC || v == V_SYMFLOAT || v == V_HALO) {
        double t0 = now_s();
        int rc = v == V_HALO ? m2l_gpu_halo_plan(g, L.level, L.periodic, &sp.halo)
                             : m2l_gpu_symmetric_plan(g, L.level, L.periodic, v == V_SYMFLOAT, 0, 0,
                                                      &sp.sym);
        r.plan_ms = 1e3 * (now_s() - t0);
        if (rc) {
            r.status = rc == FMM_ERR_NOMEM ? 3 : 2;
            r.note = std::string(rc == FMM_ERR_NOMEM ? "skipped: " : "plan: ") + fmm_strerror(rc);
            return cudaGetLastError() == cudaSuccess || rc == FMM_ERR_NOMEM ? 0 : -1;
        }
    }
    const size_t ubytes = sizeof(double) * L.nbox * L.nc;
    int rc = 0;
    double ms = 0;
    if (cudaMemsetAsync(L.U, 0xff, ubytes, st) != cudaSuccess) return -1; /* all-ones: NaN */
    if (cudaEventRecord(e0, st) != cudaSuccess) return -1;
    rc = run_variant(v, g, sp, L, st);
    if (cudaEventRecord(e1, st) != cudaSuccess) return -1;
    cudaError_t ce = cudaStreamSynchronize(st);
    if (rc || ce != cudaSuccess) {
        r.status = 2;
        r.note = std::string("error: ") + (rc ? fmm_strerror(rc) : cudaGetErrorString(ce));
        return ce == cudaSuccess ? 0 : -1;
    }
    if (time_events(e0, e1, &ms)) return -1;
    if (cudaMemcpy(L.hU.data(), L.U, ubytes, cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
    r.nan_free = 1;
    for (size_t i = 0; i < L.hU.size(); ++i)
        if (!(L.hU[i] == L.hU[i])) {
            r.nan_free = 0;
            break;
        }
    r.err = check_error(L.hU.data(), tg, Uref, L.nc);
    const bool ok = r.nan_free && r.err <= check_bound(v);
    if (!ok) {
        r.status = 1;
        r.note = r.nan_free ? "CHECK FAILED: error above its bound" : "CHECK FAILED: NaN left in U";
    }
    /* timing: up to 3 warm-ups and reps runs, within the time budget */
    const double one = ms * 1e-3;
    int warm = 3, reps = o.reps;
    if (one * (warm + reps) > o.budget) {
        reps = (int)(o.budget / one) - 1;
        warm = reps >= 3 ? 1 : 0;
        reps = reps < 1 ? 1 : (reps > o.reps ? o.reps : reps);
    }
    for (int i = 0; i < warm; ++i)
        if (run_variant(v, g, sp, L, st)) break;
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        if (cudaEventRecord(e0, st) != cudaSuccess) return -1;
        if ((rc = run_variant(v, g, sp, L, st))) break;
        if (cudaEventRecord(e1, st) != cudaSuccess) return -1;
        if (time_events(e0, e1, &ms)) return -1;
        t.push_back(ms);
    }
    if (rc || t.empty()) {
        r.status = 2;
        r.note = std::string("error: ") + fmm_strerror(rc ? rc : FMM_ERR_CUDA);
        return 0;
    }
    std::sort(t.begin(), t.end());
    r.ms = t[t.size() / 2];
    r.reps = (int)t.size();
    if (r.reps < o.reps && r.note.empty()) r.note = "fewer reps (time budget)";
    return 0;
}

/* ---- CPU emulation mode ---- */

static int emulate(const opts &o) {
    int fails = 0;
    printf("%4s %2s %-9s %12s %s\n", "p", "D", "variant", "err", "status");
    for (int p : o.orders) {
        m2l_operators ops;
        if (m2l_operators_init(&ops, p)) {
            printf("%4d    operators: out of memory\n", p);
            return 1;
        }
        const int nc = ops.ncoef;
        for (int D : o.depths) {
            const long nbox = 1L << (3 * D);
            std::vector<double> W((size_t)nbox * nc), U((size_t)nbox * nc, NAN), Uref;
            uint64_t s = o.seed + 1000003ULL * p + D;
            for (auto &w : W) w = 2 * rng_unit(s) - 1;
            std::vector<long> tg = {0, nbox - 1};
            for (int i = 0; i < o.samples; ++i) tg.push_back((long)(rng_next(s) % (uint64_t)nbox));
            reference(p, D, o.periodic, W.data(), tg, Uref);
            int rc = m2l_symmetric_emulate(&ops, D, o.periodic, W.data(), U.data());
            double err = rc ? NAN : check_error(U.data(), tg, Uref, nc);
            bool nan_free = true;
            for (double u : U) nan_free = nan_free && u == u;
            const bool ok = !rc && nan_free && err <= check_bound(V_SYMMETRIC);
            fails += !ok;
            printf("%4d %2d %-9s %12.3e %s\n", p, D, "emulate", err,
                   rc ? fmm_strerror(rc) : (ok ? "ok" : "CHECK FAILED"));
            fflush(stdout);
        }
        m2l_operators_free(&ops);
    }
    return fails ? 1 : 0;
}

int main(int argc, char **argv) {
    opts o;
    if (!parse_args(argc, argv, o)) return 2;
    if (o.emulate) return emulate(o);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        fprintf(stderr, "m2l-bench: no CUDA device (use --emulate to check the symmetric tables on the CPU)\n");
        return 2;
    }
    cudaDeviceProp prop;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&prop, dev) != cudaSuccess) {
        fprintf(stderr, "m2l-bench: cannot query the device\n");
        return 2;
    }
    FILE *csv = nullptr;
    if (o.csv && !(csv = fopen(o.csv, "w"))) {
        fprintf(stderr, "m2l-bench: cannot write %s\n", o.csv);
        return 2;
    }
    double membw = 0, fmarate = 0;
    if (microkernels(&membw, &fmarate, prop.multiProcessorCount)) return 2;
    printf("device %s, %d SMs, %.1f GiB\n", prop.name, prop.multiProcessorCount,
           prop.totalGlobalMem / 1073741824.0);
    printf("microkernels: memory-bound copy %.1f GB/s (read + write), compute-bound FP64 FMA %.2f TFLOP/s\n",
           membw * 1e-9, fmarate * 1e-12);
    if (csv) {
        fprintf(csv, "# m2l-bench on %s (%d SMs), periodic %d, seed %llu\n", prop.name, prop.multiProcessorCount,
                o.periodic, o.seed);
        fprintf(csv, "p,depth,periodic,variant,status,time_ms,reps,translations,translations_per_s,gflops_dense,"
                     "frac_compute,max_rel_err,nan_free,plan_ms,note\n");
        fprintf(csv, ",,,membw,ok,,,,,%.6g,,,,,GB/s read+write\n", membw * 1e-9);
        fprintf(csv, ",,,fma,ok,,,,,%.6g,1,,,,FP64 FMA chains\n", fmarate * 1e-9);
    }
    printf("%3s %2s %-9s %10s %5s %12s %10s %6s %10s  %s\n", "p", "D", "variant", "time_ms", "reps", "transl/s",
           "GFLOP/s", "frac", "err", "note");
    cudaStream_t st;
    cudaEvent_t e0, e1;
    if (cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) != cudaSuccess || cudaEventCreate(&e0) != cudaSuccess ||
        cudaEventCreate(&e1) != cudaSuccess) {
        fprintf(stderr, "m2l-bench: cannot create a stream\n");
        return 2;
    }
    int fails = 0, dead = 0;
    double last_ms[V_COUNT][8];
    const double t_start = now_s();
    for (int p : o.orders) {
        if (dead) break;
        m2l_operators ops;
        if (m2l_operators_init(&ops, p)) {
            printf("%3d    operators: out of memory\n", p);
            fails++;
            continue;
        }
        const int nc = ops.ncoef;
        for (int v = 0; v < V_COUNT; ++v)
            for (int d = 0; d < 8; ++d) last_ms[v][d] = NAN;
        /* the dense operator table of the naive variant: 343 nc^2 doubles */
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        const size_t dense_bytes = sizeof(double) * 343 * (size_t)nc * nc;
        const int want_dense = o.variant[V_NAIVE] && dense_bytes < fr / 4;
        m2l_gpu_ops g;
        const char *step = "m2l_gpu_ops_init";
        int rc = m2l_gpu_ops_init(&g, &ops);
        if (rc == FMM_OK && want_dense) step = "m2l_gpu_naive_init", rc = m2l_gpu_naive_init(&g, &ops);
        if (rc == FMM_OK) step = "m2l_gpu_variants_prepare", rc = m2l_gpu_variants_prepare(&g);
        if (rc) {
            m2l_gpu_ops_free(&g);
            printf("%3d    %s: %s\n", p, step, fmm_strerror(rc));
            fails++;
            m2l_operators_free(&ops);
            if (rc == FMM_ERR_CUDA) dead = 1;
            continue;
        }
        for (int D : o.depths) {
            if (dead) break;
            level_data L;
            L.p = p, L.nc = nc, L.level = D, L.periodic = o.periodic, L.nbox = 1L << (3 * D);
            const size_t bytes = sizeof(double) * L.nbox * nc;
            cudaMemGetInfo(&fr, &tot);
            if (2 * bytes > fr * 0.8 ||
                cudaMalloc((void **)&L.W, bytes) != cudaSuccess || cudaMalloc((void **)&L.U, bytes) != cudaSuccess) {
                cudaGetLastError();
                cudaFree(L.W);
                printf("%3d %2d skipped: W and U (%.1f GiB) do not fit\n", p, D, 2.0 * bytes / 1073741824.0);
                if (csv) fprintf(csv, "%d,%d,%d,all,skipped,,,,,,,,,,W and U do not fit\n", p, D, o.periodic);
                continue;
            }
            std::vector<double> W((size_t)L.nbox * nc), Uref;
            uint64_t s = o.seed + 1000003ULL * p + D;
            for (auto &w : W) w = 2 * rng_unit(s) - 1;
            std::vector<long> tg = {0, L.nbox - 1};
            for (int i = 0; i < o.samples; ++i) tg.push_back((long)(rng_next(s) % (uint64_t)L.nbox));
            reference(p, D, o.periodic, W.data(), tg, Uref);
            L.hU.resize((size_t)L.nbox * nc);
            if (cudaMemcpy(L.W, W.data(), bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
                printf("%3d %2d cannot upload W\n", p, D);
                dead = 1;
                break;
            }
            const long ntr = translations(D, o.periodic);
            const double flop = 2.0 * nc * nc * (double)ntr;
            for (int v = 0; v < V_COUNT; ++v) {
                if (!o.variant[v]) continue;
                result r;
                const double proj = D > 0 && last_ms[v][D - 1] == last_ms[v][D - 1] ? 8 * last_ms[v][D - 1] : 0;
                if (v == V_NAIVE && !g.dense) {
                    r.status = 3, r.note = "skipped: dense operators do not fit";
                } else if (v == V_DYNAMIC) {
#ifndef FMM_M2L_DYNAMIC
                    r.status = 3, r.note = "skipped: not in this build (FMM_CUDA_DYNAMIC=OFF)";
#endif
                } else if (v == V_TENSOR) {
                    if (p > M2L_TENSOR_PMAX || g.cc < 80) r.status = 3, r.note = "skipped: p > 10 or no FP64 MMA";
                }
                if (v == V_SYMFLOAT && p > M2L_SYM_FLOAT_PMAX) r.status = 3, r.note = "skipped: p > 16 (float range)";
                if (v == V_HALO && !m2l_gpu_halo_supported(p, D, g.cc))
                    r.status = 3,
                    r.note = "skipped: needs p <= 10, D >= 4, compute capability >= 8.0";
                if (r.status == 0 && proj * 1e-3 > o.cap) {
                    r.status = 3;
                    char buf[96];
                    snprintf(buf, sizeof buf, "skipped: projected %.1f s per run (8 x depth %d)", proj * 1e-3, D - 1);
                    r.note = buf;
                }
                if (r.status == 0 && measure(v, &g, L, o, tg, Uref, st, e0, e1, r)) {
                    printf("%3d %2d %-9s device error: %s; stopping\n", p, D, vname[v],
                           cudaGetErrorString(cudaGetLastError()));
                    r.status = 2, r.note = "device error";
                    dead = 1;
                }
                if (r.status == 0 || r.status == 1) last_ms[v][D] = r.ms;
                else if (r.status == 3) last_ms[v][D] = proj > 0 ? proj : NAN;
                if (r.status == 1 || r.status == 2) fails++;
                const bool timed = r.status <= 1 && r.ms == r.ms;
                const double tps = timed ? ntr / (r.ms * 1e-3) : NAN, gf = timed ? flop / (r.ms * 1e-3) * 1e-9 : NAN;
                const char *stname[4] = {"ok", "FAILED", "error", "skipped"};
                if (r.status == 3)
                    printf("%3d %2d %-9s %10s %5s %12s %10s %6s %10s  %s\n", p, D, vname[v], "-", "-", "-", "-", "-",
                           "-", r.note.c_str());
                else
                    printf("%3d %2d %-9s %10.4f %5d %12.4g %10.1f %6.3f %10.2e  %s%s\n", p, D, vname[v], r.ms, r.reps,
                           tps, gf, gf * 1e9 / fmarate, r.err, r.status == 0 ? "" : "", r.note.c_str());
                if (csv)
                    fprintf(csv, "%d,%d,%d,%s,%s,%.6g,%d,%ld,%.6g,%.6g,%.6g,%.3e,%d,%.3g,%s\n", p, D, o.periodic,
                            vname[v], stname[r.status], r.ms, r.reps, ntr, tps, gf, gf * 1e9 / fmarate, r.err,
                            r.nan_free, r.plan_ms, r.note.c_str());
                fflush(stdout);
                if (dead) break;
            }
            cudaFree(L.W), cudaFree(L.U);
        }
        m2l_gpu_ops_free(&g);
        m2l_operators_free(&ops);
    }
    printf("total %.1f s; %d failed or errored measurements\n", now_s() - t_start, fails);
    if (csv) fclose(csv);
    return dead ? 2 : (fails ? 1 : 0);
}
