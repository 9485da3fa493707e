/*
 * cuda_trace.c - a timeline of any CUDA program's GPU work and runtime calls, for machines
 * without Nsight Systems (the device machines have ncu, which times kernels one by one, but
 * no nsys). Built as a shared library and loaded by the CUDA driver through
 * CUDA_INJECTION64_PATH, so the program (mdrun, fmm-gpu-bench) is not changed:
 *
 *   gcc -O2 -shared -fPIC bench/trace/cuda_trace.c -I$CUDA/include -L$CUDA/lib64 -lcupti \
 *       -o libcuda_trace.so
 *   CUDA_INJECTION64_PATH=$PWD/libcuda_trace.so CUDA_TRACE_OUT=trace.csv gmx mdrun ...
 *
 * Writes one CSV row per kernel, memcpy, memset (GPU start/end, stream, graph) and runtime API
 * call (CPU start/end, thread), all in CUPTI's nanosecond clock:
 *   kind,name,start_ns,end_ns,stream,graph,correlation,thread
 * bench/trace/step_timeline.py turns it into per-step timelines. CUPTI's activity records cost
 * some time per launch (about a microsecond), so absolute times are a little longer than
 * untraced ones; the order and overlap of the work is what this is for.
 */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES (8u << 20)

static FILE *out;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void write_record(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
        fprintf(out, "kernel,%s,%llu,%llu,%u,%u,%u,\n", k->name, (unsigned long long)k->start,
                (unsigned long long)k->end, k->streamId, k->graphId, k->correlationId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
        fprintf(out, "memcpy,kind%u_%llub,%llu,%llu,%u,%u,%u,\n", (unsigned)m->copyKind,
                (unsigned long long)m->bytes, (unsigned long long)m->start,
                (unsigned long long)m->end, m->streamId, m->graphId, m->correlationId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
        fprintf(out, "memset,%llub,%llu,%llu,%u,%u,%u,\n", (unsigned long long)m->bytes,
                (unsigned long long)m->start, (unsigned long long)m->end, m->streamId, m->graphId,
                m->correlationId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
        const char *name = NULL;
        if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name) != CUPTI_SUCCESS)
            name = "?";
        fprintf(out, "api,%s,%llu,%llu,,,%u,%u\n", name, (unsigned long long)a->start,
                (unsigned long long)a->end, a->correlationId, a->threadId);
        break;
    }
    default:
        break;
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    if (out)
        while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) write_record(r);
    free(buffer);
}

static void finish(void) {
    cuptiActivityFlushAll(1);
    if (out) fclose(out), out = NULL;
}

/* called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH) */
int InitializeInjection(void) {
    const char *path = getenv("CUDA_TRACE_OUT");
    out = fopen(path && *path ? path : "cuda_trace.csv", "w");
    if (!out) return 0;
    fprintf(out, "kind,name,start_ns,end_ns,stream,graph,correlation,thread\n");
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
        return 0;
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                        CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_RUNTIME};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) cuptiActivityEnable(kinds[i]);
    atexit(finish);
    return 1;
}
