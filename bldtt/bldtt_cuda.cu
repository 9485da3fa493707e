/* bldtt/bldtt_cuda.cu - a CUDA BLDTT plan's device memory: bldtt_setpts uploads the trees
 * and interaction lists built on the CPU (bldtt/setpts.c), the leaves and the target clusters
 * with far-field work, and allocates the buffers of the evaluation (bldtt/bldtt_cuda_passes.cu);
 * bldtt_destroy frees them. */
#include <stdlib.h>
#include <string.h>

#include "bldtt/bldtt_cuda_plan.cuh"

using namespace bt_gpu;

namespace {

void free_dev(bt_dev *d) {
    if (!d) return;
    for (int k = 0; k < d->nblocks; ++k) cudaFree(d->blocks[k]);
    if (d->qs) cudaFree(d->qs);
    if (d->qhat) cudaFree(d->qhat);
    if (d->tp) cudaFree(d->tp);
    if (d->out) cudaFree(d->out);
    if (d->st) cudaStreamDestroy(d->st);
    if (d->st_near) cudaStreamDestroy(d->st_near);
    if (d->near_done) cudaEventDestroy(d->near_done);
    free(d);
}

int upload_tree(bt_dev *d, const ct_tree *h, const double *cheb, int n1, dtree *o) {
    int nn = h->nnodes;
    int *ib = (int *)malloc(sizeof(int) * nn * 12);
    long long *perm = (long long *)malloc(sizeof(long long) * (h->n ? h->n : 1));
    if (!ib || !perm) {
        free(ib), free(perm);
        return FMM_ERR_NOMEM;
    }
    int *ie = ib + nn, *pa = ie + nn, *nc = pa + nn, *ch = nc + nn;
    for (int i = 0; i < nn; ++i) {
        const ct_node *b = &h->nodes[i];
        ib[i] = (int)b->ibeg, ie[i] = (int)b->iend, pa[i] = b->parent, nc[i] = b->nchild;
        for (int c = 0; c < 8; ++c) ch[8 * i + c] = c < b->nchild ? b->child[c] : -1;
    }
    for (long i = 0; i < h->n; ++i) perm[i] = h->perm[i];
    int *dib = NULL;
    double *dch = NULL, *dx = NULL, *dy = NULL, *dz = NULL;
    long long *dp = NULL;
    int rc = upload(d, &dib, ib, (size_t)nn * 12);
    if (!rc) rc = upload(d, &dch, cheb, (size_t)nn * 3 * n1);
    if (!rc) rc = upload(d, &dx, h->x, (size_t)h->n);
    if (!rc) rc = upload(d, &dy, h->y, (size_t)h->n);
    if (!rc) rc = upload(d, &dz, h->z, (size_t)h->n);
    if (!rc) rc = upload(d, &dp, perm, (size_t)h->n);
    free(ib), free(perm);
    if (rc) return rc;
    o->nn = nn;
    o->ibeg = dib, o->iend = dib + nn, o->parent = dib + 2 * nn, o->nchild = dib + 3 * nn,
    o->child = dib + 4 * nn;
    o->cheb = dch, o->x = dx, o->y = dy, o->z = dz, o->perm = dp;
    return FMM_OK;
}

} // namespace

extern "C" void bt_cuda_free(bldtt_plan *p) {
    free_dev((bt_dev *)p->cuda);
    p->cuda = NULL;
}

extern "C" int bt_cuda_setpts(bldtt_plan *p) {
    if (p->src.n > 2000000000L || p->trg->n > 2000000000L) return FMM_ERR_NPTS;
    bt_dev *d = (bt_dev *)calloc(1, sizeof(bt_dev));
    if (!d) return FMM_ERR_NOMEM;
    p->cuda = d;
    int rc = fmm_cuda_status(cudaStreamCreateWithFlags(&d->st, cudaStreamNonBlocking));
    if (!rc) rc = fmm_cuda_status(cudaStreamCreateWithFlags(&d->st_near, cudaStreamNonBlocking));
    if (!rc) rc = fmm_cuda_status(cudaEventCreateWithFlags(&d->near_done, cudaEventDisableTiming));
    if (!rc) rc = upload_tree(d, &p->src, p->src_cheb, p->n1, &d->S);
    d->same = p->same;
    if (!rc) {
        if (p->same)
            d->T = d->S;
        else
            rc = upload_tree(d, p->trg, p->trg_cheb, p->n1, &d->T);
    }
    int ntn = p->trg->nnodes;
    for (int k = 0; k < 4 && !rc; ++k) {
        rc = upload(d, &d->lstart[k], p->lists[k].start, (size_t)ntn + 1);
        if (!rc) rc = upload(d, &d->lsrc[k], p->lists[k].src, (size_t)p->lists[k].count);
    }
    if (!rc) rc = upload(d, &d->tneed, p->tneed, (size_t)ntn);
    if (!rc) {
        int *w = (int *)malloc(sizeof(int) * (ntn ? ntn : 1));
        if (!w)
            rc = FMM_ERR_NOMEM;
        else {
            int nw = 0;
            for (int t = 0; t < ntn; ++t)
                if (p->lists[BT_CC].start[t + 1] > p->lists[BT_CC].start[t] ||
                    p->lists[BT_CP].start[t + 1] > p->lists[BT_CP].start[t])
                    w[nw++] = t;
            d->nwork_cc = nw;
            rc = upload(d, &d->work_cc, w, (size_t)nw);
            free(w);
        }
    }
    if (!rc) rc = upload(d, &d->tleaves, p->trg->leaves, (size_t)p->trg->nleaves);
    if (!rc) rc = upload(d, &d->sleaves, p->src.leaves, (size_t)p->src.nleaves);
    d->ntleaves = p->trg->nleaves, d->nsleaves = p->src.nleaves;
    d->max_tleaf = 0;
    for (int k = 0; k < p->trg->nleaves; ++k) {
        const ct_node *b = &p->trg->nodes[p->trg->leaves[k]];
        if (b->iend - b->ibeg > d->max_tleaf) d->max_tleaf = (int)(b->iend - b->ibeg);
    }
    /* With few target leaves (N ~ 1e5 at the default leaf 2000: ~60 leaves, ~800 blocks) the
     * near sums leave SMs idle and the blocks' unequal lists set the time; spreading each leaf's
     * list over z blocks aims at >= 16 blocks per SM. */
    {
        int dev = 0, nsm = 0;
        if (!rc) rc = fmm_cuda_status(cudaGetDevice(&dev));
        if (!rc)
            rc = fmm_cuda_status(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev));
        long blocks = (long)d->ntleaves * ((d->max_tleaf + BT_TB - 1) / BT_TB);
        long want = 16L * nsm;
        d->near_split = blocks > 0 && blocks < want ? (int)((want + blocks - 1) / blocks) : 1;
        if (d->near_split > 8) d->near_split = 8;
    }
    if (!rc) rc = fmm_cuda_status(cudaMalloc((void **)&d->qs, sizeof(double) * p->src.n));
    if (!rc)
        rc = fmm_cuda_status(
            cudaMalloc((void **)&d->qhat, sizeof(double) * (size_t)p->np * p->src.nnodes));
    if (!rc)
        rc = fmm_cuda_status(cudaMalloc((void **)&d->out, sizeof(double) * 4 * (size_t)p->trg->n));
    if (!rc) rc = fmm_cuda_status(cudaDeviceSynchronize());
    if (rc) {
        free_dev(d);
        p->cuda = NULL;
    }
    return rc;
}
