/*
 * Halo-tile M2L on the tensor cores, for the mixed-precision FMM's dense levels (m2l/m2l_gpu.h).
 *
 * Why: the symmetric variant's float kernel (m2l/m2l_symmetric.cu) spends its time gathering the
 * 189 source multipoles of every target from global memory and combining them, not multiplying
 * (bench/results/fmm_gpu_h100.md: tensor-core products with its staging were no faster). Here a
 * block holds a tile of 4 x 4 x 8 same-parity targets; the sources of all their V lists are the
 * (2*4+4) x (2*4+4) x (2*8+4) boxes around it, which the block stages in shared memory once per 8
 * input coefficients (22.5 boxes per target instead of 189 gathers). The algebra is the symmetric
 * variant's: per class, the members' sources signed by their reflection's column signs and
 * Walsh-Hadamard combined into beta planes, row group g of the output taking plane g
 * (m2l/m2l_symmetric.cu's header), so 56 operator applications per target instead of 189. The
 * products run as mma.m16n8k8 in TF32 with each operand split as hi + lo (three products:
 * hi*hi + hi*lo + lo*hi, products to about 2^-21; the tensor cores' accumulation truncates, see the
 * kernel): 16 targets (M) x 8 output rows (N) x 8 coefficients (K).
 * The output rows are ordered by their reflection pattern pi(k) and padded per pattern to 8, so
 * every 8-row tile has one row group in every sign group, and the plane it takes is known at
 * compile time. The operators, row signs of each parity's classes folded in, are pre-split and
 * stored in the fragment order of the B operand, and the block stages them in shared memory one
 * sign group ahead. Each warp keeps one z slice (16 targets) x all rows in registers over all 189
 * members and 8 input coefficients, then writes them to U in double (the first k step stores, the
 * later ones add by reductions; each entry has one writer: no clearing, and a fixed order of the
 * sums).
 *
 * Limits: levels >= 4 (the tile must divide the parity grid), p <= M2L_HALO_PMAX, compute
 * capability >= 8.0 (TF32 mma).
 */
#include <utility>

#include "m2l/m2l_sym_tables.cuh"

#define HALO_TX 4 /* same-parity targets per tile along x, y, z; one warp per z slice */
#define HALO_TY 4
#define HALO_TZ 8
/* classes per step of the class loop; one block per SM, registers uncapped (p 7: 182, no spills):
 * two blocks per SM were as fast alone but slowed the whole FMM, since the one block leaves room
 * for the P2P beside it (docs/tuning.md) */
static constexpr int halo_runroll = 2;
static constexpr int HX = 2 * HALO_TX + 4, HY = 2 * HALO_TY + 4, HZ = 2 * HALO_TZ + 4;
static constexpr int HBOX = HX * HY * HZ;
/* stride of one coefficient's row of halo boxes: a multiple of 32 words, so that the row offsets
 * 0, 16, 1, 17 (by column t of the fragment) keep the 32 lanes of a fragment load in 32 banks:
 * the 8 target rows of a fragment lie at halo offsets {0,2,4,6} + {0, 2 HX} */
static constexpr int HB = (HBOX + 17 + 31) / 32 * 32;
static constexpr int HALO_THREADS = 32 * HALO_TZ;
/* a k step's halo: HALO_NST float4 loads per thread, in batches of HALO_BATCH */
static constexpr int HALO_NST = (2 * HBOX + HALO_THREADS - 1) / HALO_THREADS, HALO_BATCH = 8;
static constexpr int HALO_TAB =
    M2L_VLIST; /* per parity and member: halo offset in bytes * 8 | its reflection f */
static_assert((2 * HX) % 16 == 8,
              "a fragment's target rows {0,2,4,6} + {0, 2 HX} and their + 16 must not meet");

/* rows of the operator with reflection pattern pi (halo_ntiles pads each pattern to whole 8-row
 * tiles) */
__host__ __device__ constexpr int halo_pi_rows(int P, int pi) {
    int n = 0;
    for (int l = 0; l <= P; ++l)
        for (int m = 0; m <= l; ++m)
            for (int im = 0; im <= (m > 0 ? 1 : 0); ++im) n += sym_pi(l, m, im) == pi;
    return n;
}
__host__ __device__ constexpr int halo_ntiles(int P) {
    int n = 0;
    for (int pi = 0; pi < 8; ++pi) n += (halo_pi_rows(P, pi) + 7) / 8;
    return n;
}
__host__ __device__ constexpr int halo_tile_pi(int P, int nt) {
    for (int pi = 0; pi < 8; ++pi) {
        const int k = (halo_pi_rows(P, pi) + 7) / 8;
        if (nt < k) return pi;
        nt -= k;
    }
    return -1;
}
__host__ __device__ constexpr int halo_expand(int gm, int A) { /* gamma's bits onto the axes of A */
    int r = 0, b = 0;
    for (int a = 0; a < 3; ++a)
        if (A >> a & 1) r |= (gm >> b++ & 1) << a;
    return r;
}
/* the reflection pattern of coefficient k (k = l^2 + 2m - 1 for the real part of m > 0, l^2 + 2m
 * for the imaginary part, l^2 for m = 0) */
__host__ __device__ inline int halo_coef_pi(int k) {
    int l = 0;
    while ((l + 1) * (l + 1) <= k) ++l;
    const int r = k - l * l, m = (r + 1) / 2, im = r > 0 && !(r & 1);
    return sym_pi(l, m, im);
}

template <int P> struct halo_shape {
    static constexpr int NC = (P + 1) * (P + 1);
    static constexpr int NK = (NC + 7) / 8; /* k steps of 8 coefficients */
    static constexpr int KP = NK * 8;       /* stride of the float sources */
    static constexpr int NT = halo_ntiles(P);
    /* B fragments of one sign group's classes at one k step, staged in shared memory */
    static constexpr int CH = SYM_NR * NT * 32;
    /* the halo's 8 coefficient rows, then two chunks of B fragments (p 7: 175 KB, p 10: 211) */
    static constexpr size_t SMEM = sizeof(float) * 8 * HB + sizeof(float4) * 2 * CH;
};

/* the block's copy of B fragment chunk src[0..CH) into shared memory, asynchronously (the copy
 * bypasses L1: it is read once per block, then from shared memory by all warps) */
template <int CH>
__device__ __forceinline__ void halo_stage(float4 *dst, const float4 *__restrict__ src) {
    for (int i = threadIdx.x; i < CH; i += HALO_THREADS)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(
                         (unsigned)__cvta_generic_to_shared(dst + i)),
                     "l"(src + i));
    asm volatile("cp.async.commit_group;");
}

__device__ __forceinline__ void halo_mma(float (&d)[4], const unsigned (&a)[4], float b0,
                                         float b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(__float_as_uint(b0)),
          "r"(__float_as_uint(b1)));
}

/* The products of plane H (split into TF32 hi + lo) with the 8-row tiles whose row group in sign
 * group A is H: decided at compile time (if constexpr), every tile and plane unrolled.
 * hi is x truncated to TF32, one AND (rounded, one more instruction per value); lo = x - hi is
 * exact but has up to 13 bits, and the tensor cores' truncation of lo leaves a relative error
 * below 2^-21 (rounded hi: 2^-22), under the accumulation's truncation bias (the kernel) */
template <int P, int A, int H, int NT>
__device__ __forceinline__ void halo_tile(float (&acc)[halo_shape<P>::NT][4],
                                          const unsigned (&hi)[4], const unsigned (&lo)[4],
                                          const float4 *opr) {
    if constexpr (sym_compress(halo_tile_pi(P, NT) & A, A) == H) {
        const float4 b = opr[NT * 32];
        halo_mma(acc[NT], lo, b.x, b.y);
        halo_mma(acc[NT], hi, b.z, b.w);
        halo_mma(acc[NT], hi, b.x, b.y);
    }
}
template <int P, int A, int H, int... NTs>
__device__ __forceinline__ void halo_plane(float (&acc)[halo_shape<P>::NT][4], const float (&x)[4],
                                           const float4 *opr, std::integer_sequence<int, NTs...>) {
    unsigned hi[4], lo[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        hi[e] = __float_as_uint(x[e]) & 0xffffe000u;
        lo[e] = __float_as_uint(x[e] - __uint_as_float(hi[e]));
    }
    (halo_tile<P, A, H, NTs>(acc, hi, lo, opr), ...);
}
template <int P, int A, int BETA, int... Hs>
__device__ __forceinline__ void halo_planes(float (&acc)[halo_shape<P>::NT][4],
                                            const float (&x)[BETA][4], const float4 *opr,
                                            std::integer_sequence<int, Hs...>) {
    (halo_plane<P, A, Hs>(acc, x[Hs], opr, std::make_integer_sequence<int, halo_shape<P>::NT>{}),
     ...);
}

/* p + d bytes: the tables hold byte offsets, so that a member's address is one shift-and-add */
__device__ __forceinline__ const float *halo_at(const float *p, int d) {
    return reinterpret_cast<const float *>(reinterpret_cast<const char *>(p) + d);
}

/* sign group A (beta = 2^|A| members per class): its 7 classes for this warp's 16 targets and
 * k step ks. ra, rb: the lane's two columns (t, t + 4) at its first target's halo box; sab: bit f
 * (column t) and 8 + f (column t + 4) = the column's sign under reflection f; me: the same signs
 * in bit 31, me[f] column t, me[8 + f] column t + 4; opf: the parity's
 * B fragments, [NK][8 A][7 r][NT][32]; ob: the two chunks in shared memory.
 * The group's chunk was staged during the group before; the next group's is staged during this
 * one: read from global memory by every warp they were most of the kernel's global loads
 * (docs/tuning.md). */
template <int P, int A>
__device__ __forceinline__ void halo_group(float (&acc)[halo_shape<P>::NT][4], const float *ra,
                                           const float *rb, const int *tab, unsigned sab,
                                           const unsigned (&me)[16], const float4 *__restrict__ opf,
                                           float4 *ob, int ks, int lane) {
    using S = halo_shape<P>;
    constexpr int BETA = 1 << sym_popc3(A), QB = sym_qbase(A);
    const int c = ks * 8 + A; /* this chunk */
    asm volatile("cp.async.wait_all;" ::: "memory");
    /* chunk c is in for all threads, and all are done with chunk c - 1, whose buffer is next */
    __syncthreads();
    if (c + 1 < S::NK * 8)
        halo_stage<S::CH>(ob + ((c + 1) & 1) * S::CH, opf + (size_t)(c + 1) * S::CH);
    const float4 *op = ob + (c & 1) * S::CH;
#pragma unroll halo_runroll
    for (int r = 0; r < SYM_NR; ++r) {
        /* member gm's reflection is the class's f0 (entry 0's, no bits on A's axes) XOR
         * e = halo_expand(gm, A), known here at compile time; so are its column signs */
        const unsigned cs = sab >> (tab[QB + r * BETA] & 7), ca = cs << 31, cb = (cs >> 8) << 31;
        float x[BETA][4];
#pragma unroll
        for (int gm = 0; gm < BETA; ++gm) {
            const int d = tab[QB + r * BETA + gm] >> 3, e = halo_expand(gm, A);
            const float *sa = halo_at(ra, d), *sb = halo_at(rb, d);
            const unsigned ma = ca ^ me[e], mb = cb ^ me[8 + e];
            x[gm][0] = __uint_as_float(__float_as_uint(sa[0]) ^ ma);
            x[gm][1] = __uint_as_float(__float_as_uint(sa[4 * HX]) ^ ma);
            x[gm][2] = __uint_as_float(__float_as_uint(sb[0]) ^ mb);
            x[gm][3] = __uint_as_float(__float_as_uint(sb[4 * HX]) ^ mb);
        }
#pragma unroll
        for (int len = 1; len < BETA; len <<= 1)
#pragma unroll
            for (int gm = 0; gm < BETA; ++gm)
                if (!(gm & len))
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const float a = x[gm][e], b = x[gm | len][e];
                        x[gm][e] = a + b, x[gm | len][e] = a - b;
                    }
        const float4 *opr = op + r * S::NT * 32 + lane;
        halo_planes<P, A>(acc, x, opr, std::make_integer_sequence<int, BETA>{});
    }
}

/* one k step's sum into U: the first k step stores, the later ones add by a reduction (RED), which
 * the warp does not wait for. The entry's one writer issues them in program order, so U sums the
 * k steps in that order (deterministic); a read-modify-write had the warps waiting for U to come
 * back (docs/tuning.md). */
__device__ __forceinline__ void halo_flush(double *u, float v, int ks) {
    if (ks)
        atomicAdd(u, (double)v);
    else
        *u = v;
}

template <int P>
__global__ void __launch_bounds__(HALO_THREADS, 1)
    k_m2l_halo(const float4 *__restrict__ opf, const int *__restrict__ tab,
               const int *__restrict__ rowmap, const float *__restrict__ Wf, double *__restrict__ U,
               int level, int periodic) {
    using S = halo_shape<P>;
    /* [8 coefficients][HB halo boxes], then 2 chunks of B fragments */
    extern __shared__ __align__(16) float hs[];
    float4 *ob = reinterpret_cast<float4 *>(hs + 8 * HB);
    __shared__ int st[HALO_TAB];
    const int par = blockIdx.y, lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int s = 1 << level, half = s >> 1, ntx = half / HALO_TX, nty = half / HALO_TY;
    const int tx = blockIdx.x % ntx * HALO_TX, ty = blockIdx.x / ntx % nty * HALO_TY,
              tz = blockIdx.x / (ntx * nty) * HALO_TZ;
    const int bx = par & 1, by = par >> 1 & 1, bz = par >> 2 & 1;
    for (int i = threadIdx.x; i < HALO_TAB; i += HALO_THREADS) st[i] = tab[par * HALO_TAB + i];
    /* fragment position: target rows g and g + 8 (tile x = g & 3, y = g >> 2 and + 2, z = warp),
       columns t and t + 4 */
    const int g = lane >> 2, t = lane & 3;
    const int h0 =
        (2 * (g & 3) + bx + 2) + HX * ((2 * (g >> 2) + by + 2) + HY * (2 * warp + bz + 2));
    const int pad = (t & 1) * 16 + (t >> 1);
    const float *ra = hs + t * HB + pad + h0, *rb = hs + (t + 4) * HB + pad + h0;
    const float4 *opp = opf + (size_t)par * S::NK * 8 * S::CH;
    halo_stage<S::CH>(ob, opp);
    const long x = 2 * (tx + (g & 3)) + bx, z = 2 * (tz + warp) + bz;
    const long y0 = 2 * (ty + (g >> 2)) + by, y1 = y0 + 4;
    double *u0 = U + (x + s * (y0 + s * z)) * S::NC, *u1 = U + (x + s * (y1 + s * z)) * S::NC;
    float acc[S::NT][4];
    /* The tensor cores' float accumulation truncates, so its bias grows with the products summed
     * into one accumulator: over all k steps it reached 1.8e-5 of max|U| (m2l-bench, p 4..10; float
     * FMAs: 2e-7..2e-6). So every k step's sums go to U in double (each entry has one writer),
     * which leaves 3e-6..1.4e-5. Flushing every half k step as well halves that but costs a
     * fifth of the kernel's time (docs/tuning.md). */
#pragma unroll
    for (int nt = 0; nt < S::NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
#pragma unroll 1
    for (int ks = 0; ks < S::NK; ++ks) {
        __syncthreads(); /* the previous k step's halo is consumed */
        /* the block's only work here: the loads of a batch are issued before its stores, so the
         * k step waits for ceil(NST / HALO_BATCH) round trips to L2, not one per load */
#pragma unroll 1
        for (int j0 = 0; j0 < HALO_NST; j0 += HALO_BATCH) {
            float4 v[HALO_BATCH];
#pragma unroll
            for (int j = 0; j < HALO_BATCH; ++j) {
                const int i = threadIdx.x + (j0 + j) * HALO_THREADS, box = i >> 1, q = i & 1;
                int ax = 2 * tx - 2 + box % HX, ay = 2 * ty - 2 + box / HX % HY,
                    az = 2 * tz - 2 + box / (HX * HY);
                bool in = i < 2 * HBOX;
                if (periodic)
                    ax &= s - 1, ay &= s - 1, az &= s - 1;
                else
                    in = in && ax >= 0 && ay >= 0 && az >= 0 && ax < s && ay < s && az < s;
                v[j] = make_float4(0.f, 0.f, 0.f, 0.f);
                if (in)
                    v[j] = __ldg(reinterpret_cast<const float4 *>(
                        Wf + ((size_t)ax + (size_t)s * (ay + (size_t)s * az)) * S::KP + ks * 8 +
                        4 * q));
            }
#pragma unroll
            for (int j = 0; j < HALO_BATCH; ++j) {
                const int i = threadIdx.x + (j0 + j) * HALO_THREADS, box = i >> 1, q = i & 1;
                float *d = hs + 4 * q * HB + box;
                if (i < 2 * HBOX)
                    d[0] = v[j].x, d[HB + 16] = v[j].y, d[2 * HB + 1] = v[j].z,
                    d[3 * HB + 17] = v[j].w;
            }
        }
        const int ca = ks * 8 + t, cb = ca + 4;
        const int pa = ca < S::NC ? halo_coef_pi(ca) : 0, pb = cb < S::NC ? halo_coef_pi(cb) : 0;
        unsigned sab = 0;
#pragma unroll
        for (int f = 0; f < 8; ++f)
            sab |= (unsigned)(__popc(pa & f) & 1) << f | (unsigned)(__popc(pb & f) & 1) << (8 + f);
        unsigned me[16];
#pragma unroll
        for (int f = 0; f < 16; ++f) me[f] = (sab >> f) << 31;
        halo_group<P, 0>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 1>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 2>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 3>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 4>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 5>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 6>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
        halo_group<P, 7>(acc, ra, rb, st, sab, me, opp, ob, ks, lane);
#pragma unroll
        for (int nt = 0; nt < S::NT; ++nt) {
            const int r0 = rowmap[nt * 8 + 2 * t], r1 = rowmap[nt * 8 + 2 * t + 1];
            if (r0 >= 0) halo_flush(u0 + r0, acc[nt][0], ks), halo_flush(u1 + r0, acc[nt][2], ks);
            if (r1 >= 0) halo_flush(u0 + r1, acc[nt][1], ks), halo_flush(u1 + r1, acc[nt][3], ks);
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[nt][e] = 0.0f;
        }
    }
}

struct m2l_halo_plan {
    int p, nc, level, periodic;
    float4 *opf; /* [8 parities][NK][8 A][7 r][NT][32 lanes]: hi b0, hi b1, lo b0, lo b1 */
    int *tab;    /* [8 parities][HALO_TAB] */
    int *rowmap; /* [NT * 8]: operator row of each tile slot, -1: padding */
    float *Wf;   /* the level's sources in float, rows of KP */
};

typedef int (*halo_fn)(const m2l_halo_plan *, const double *, double *, cudaStream_t);
typedef int (*halo_prep_fn)();

template <int P> static int halo_prepare() {
    CU(cudaFuncSetAttribute(k_m2l_halo<P>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            (int)halo_shape<P>::SMEM));
    return FMM_OK;
}

template <int P>
static int halo_launch(const m2l_halo_plan *pl, const double *W, double *U, cudaStream_t st) {
    using S = halo_shape<P>;
    const long nbox = 1L << (3 * pl->level), half = 1L << (pl->level - 1);
    const long n = nbox * S::KP;
    k_sym_tofloat<<<(unsigned)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096), 256, 0, st>>>(
        nbox, S::NC, S::KP, W, pl->Wf);
    CU(cudaGetLastError());
    const dim3 grid((unsigned)((half / HALO_TX) * (half / HALO_TY) * (half / HALO_TZ)), 8);
    k_m2l_halo<P><<<grid, HALO_THREADS, S::SMEM, st>>>(pl->opf, pl->tab, pl->rowmap, pl->Wf, U,
                                                       pl->level, pl->periodic);
    CU(cudaGetLastError());
    return FMM_OK;
}

template <int... Ps> struct halo_table {
    halo_fn run[sizeof...(Ps)] = {halo_launch<Ps>...};
    halo_prep_fn prepare[sizeof...(Ps)] = {halo_prepare<Ps>...};
    int ntiles[sizeof...(Ps)] = {halo_ntiles(Ps)...};
};
static const halo_table<1, 2, 3, 4, 5, 6, 7, 8, 9, 10> halo_fns;
static_assert(M2L_HALO_PMAX == 10, "halo_fns covers orders 1..M2L_HALO_PMAX");

extern "C" int m2l_gpu_halo_supported(int p, int level, int cc) {
    return p >= 1 && p <= M2L_HALO_PMAX && level >= 4 && level <= 10 && cc >= 80;
}

extern "C" void m2l_gpu_halo_free(m2l_halo_plan *pl) {
    if (!pl) return;
    cudaFree(pl->opf), cudaFree(pl->tab), cudaFree(pl->rowmap), cudaFree(pl->Wf);
    free(pl);
}

static float halo_tf32_host(float x) { /* cvt.rna.tf32: nearest, ties away from zero */
    unsigned u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
    memcpy(&x, &u, 4);
    return x;
}

/* the plan's tables on the host, then uploaded */
static int halo_plan_fill(m2l_halo_plan *pl, const m2l_gpu_ops *g) {
    const int p = g->p, nc = g->nc, nk = (nc + 7) / 8, nt = halo_fns.ntiles[p - 1];
    sym_tables t;
    int rc = sym_tables_from_device(g, &t);
    if (rc) return rc;
    const size_t nop = (size_t)8 * 8 * SYM_NR * nk * nt * 32;
    double *cls = (double *)malloc(sizeof(double) * M2L_NCLASS * nc * nc);
    float4 *opf = (float4 *)malloc(sizeof(float4) * nop);
    int *tab = (int *)malloc(sizeof(int) * 8 * HALO_TAB),
        *rowmap = (int *)malloc(sizeof(int) * nt * 8);
    int *pi = (int *)malloc(sizeof(int) * nc);
    rc = FMM_ERR_NOMEM;
    if (!cls || !opf || !tab || !rowmap || !pi) goto done;
    rc = FMM_ERR_CUDA;
    if (cudaMemcpy(cls, g->cls, sizeof(double) * M2L_NCLASS * nc * nc, cudaMemcpyDeviceToHost) !=
        cudaSuccess)
        goto done;
    for (int k = 0; k < nc; ++k) pi[k] = halo_coef_pi(k);
    { /* rows by pattern, each pattern padded to whole tiles */
        int at = 0;
        for (int q = 0; q < 8; ++q) {
            const int start = at;
            for (int k = 0; k < nc; ++k)
                if (pi[k] == q) rowmap[at++] = k;
            while ((at - start) % 8) rowmap[at++] = -1;
        }
        if (at != nt * 8) {
            rc = FMM_ERR_PARAM;
            goto done;
        }
    }
    for (int par = 0; par < 8; ++par) {
        int *tp = tab + par * HALO_TAB;
        for (int A = 0; A < SYM_NQ; ++A)
            for (int r = 0; r < SYM_NR; ++r) {
                const int info = t.info[par][A][r], c = info & 63, f0 = info >> 6;
                const double *T = cls + (size_t)c * nc * nc;
                for (int ks = 0; ks < nk; ++ks)
                    for (int tl = 0; tl < nt; ++tl)
                        for (int lane = 0; lane < 32; ++lane) {
                            const int row = rowmap[tl * 8 + (lane >> 2)];
                            float hi[2], lo[2];
                            for (int e = 0; e < 2; ++e) {
                                const int k = ks * 8 + (lane & 3) + 4 * e;
                                double v = 0.0;
                                if (row >= 0 && k < nc)
                                    v = (__builtin_popcount(pi[row] & f0) & 1 ? -1.0 : 1.0) *
                                        T[(size_t)row * nc + k];
                                hi[e] = halo_tf32_host((float)v);
                                lo[e] = (float)(v - (double)hi[e]);
                            }
                            opf[((((size_t)(par * nk + ks) * 8 + A) * SYM_NR + r) * nt + tl) * 32 +
                                lane] = make_float4(hi[0], hi[1], lo[0], lo[1]);
                        }
            }
        for (int A = 0; A < SYM_NQ; ++A)
            for (int r = 0; r < SYM_NR; ++r)
                for (int gm = 0; gm < 1 << sym_popc3(A); ++gm) {
                    const int e = sym_qbase(A) + (r << sym_popc3(A)) + gm, pk = t.memb[par][e];
                    const int dx = (pk & 7) - 3, dy = (pk >> 3 & 7) - 3, dz = (pk >> 6 & 7) - 3;
                    tp[e] = (dx + HX * (dy + HY * dz)) * (int)sizeof(float) * 8 |
                            (t.info[par][A][r] >> 6 | halo_expand(gm, A));
                }
    }
    {
        const size_t nbox = (size_t)1 << (3 * pl->level);
        cudaError_t e = cudaMalloc((void **)&pl->opf, sizeof(float4) * nop);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->tab, sizeof(int) * 8 * HALO_TAB);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->rowmap, sizeof(int) * nt * 8);
        if (e == cudaSuccess) e = cudaMalloc((void **)&pl->Wf, sizeof(float) * nbox * nk * 8);
        if (e == cudaSuccess)
            e = cudaMemcpy(pl->opf, opf, sizeof(float4) * nop, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(pl->tab, tab, sizeof(int) * 8 * HALO_TAB, cudaMemcpyHostToDevice);
        if (e == cudaSuccess)
            e = cudaMemcpy(pl->rowmap, rowmap, sizeof(int) * nt * 8, cudaMemcpyHostToDevice);
        rc = e == cudaSuccess ? halo_fns.prepare[p - 1]() : fmm_cuda_status(e);
    }
done:
    sym_tables_free(&t);
    free(cls), free(opf), free(tab), free(rowmap), free(pi);
    return rc;
}

extern "C" int m2l_gpu_halo_plan(const m2l_gpu_ops *g, int level, int periodic,
                                 m2l_halo_plan **plan) {
    if (!plan) return FMM_ERR_ARG;
    *plan = NULL;
    if (!g || !g->cls || !g->sign || !g->vlist || !m2l_gpu_halo_supported(g->p, level, g->cc))
        return FMM_ERR_ARG;
    m2l_halo_plan *pl = (m2l_halo_plan *)calloc(1, sizeof *pl);
    if (!pl) return FMM_ERR_NOMEM;
    pl->p = g->p, pl->nc = g->nc, pl->level = level, pl->periodic = periodic ? 1 : 0;
    const int rc = halo_plan_fill(pl, g);
    if (rc) {
        m2l_gpu_halo_free(pl);
        return rc;
    }
    *plan = pl;
    return FMM_OK;
}

extern "C" int m2l_gpu_halo_run(const m2l_halo_plan *pl, const double *W, double *U,
                                cudaStream_t stream) {
    if (!pl || !W || !U) return FMM_ERR_ARG;
    return halo_fns.run[pl->p - 1](pl, W, U, stream);
}
