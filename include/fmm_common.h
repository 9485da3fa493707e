/*
 * fmm_common.h - what every solver of the library shares: the status codes (enum fmm_status) and
 * their messages (fmm_strerror), the limits the codes refer to, the devices, the CUDA device
 * count and page-locked host memory.
 *
 * The solvers' headers (fmm.h, fmm_bldtt.h, fmm_fgt.h, fmm_rbf.h) include this one; a caller
 * includes the header of the solver it uses. Inside the library, core/, m2l/ and pbc/ include
 * this header (and fmm_reference.h), never a solver's (docs/architecture.md).
 *
 * Library code never prints, exits or aborts: every failure is a return code of this enum.
 */
#ifndef FMM_COMMON_H
#define FMM_COMMON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum fmm_status {
    FMM_OK = 0,
    FMM_ERR_ARG,         /* NULL pointer or invalid argument */
    FMM_ERR_NPTS,        /* n < 1, or n does not match the plan */
    FMM_ERR_NONFINITE,   /* NaN or Inf in coordinates or charges */
    FMM_ERR_TOLERANCE,   /* tolerance outside [FMM_TOL_MIN, FMM_TOL_MAX] */
    FMM_ERR_ORDER,       /* order outside [FMM_ORDER_MIN, FMM_ORDER_MAX] */
    FMM_ERR_DEPTH,       /* depth outside [0, FMM_DEPTH_MAX] */
    FMM_ERR_LEAF,        /* leaf size out of range */
    FMM_ERR_BOX,         /* box not finite and positive, or unsupported shape */
    FMM_ERR_OUTSIDE,     /* open boundary: a particle lies outside the given box */
    FMM_ERR_COINCIDENT,  /* two particles at the same position: 1/r is infinite */
    FMM_ERR_NOMEM,       /* out of memory */
    FMM_ERR_NOPTS,       /* fmm_execute before a successful fmm_setpts */
    FMM_ERR_DEVICE,      /* CUDA requested but not built in, or no usable CUDA device */
    FMM_ERR_THREADS,     /* thread count outside [0, FMM_THREADS_MAX] */
    FMM_ERR_BOUNDARY,    /* boundary option invalid, or vacuum with net charge */
    FMM_ERR_UNSUPPORTED, /* not available in this configuration (the RBF series mat-vec on CUDA) */
    FMM_ERR_PARAM, /* solver parameter out of range (bandwidth, kernel parameter, shape, MAC...) */
    FMM_ERR_NOCONVERGE, /* an iterative solver did not reach its tolerance */
    FMM_ERR_IO,         /* a file could not be opened, read or written */
    FMM_ERR_FORMAT,     /* malformed input file */
    FMM_ERR_CUDA,       /* a CUDA runtime call failed (launch, copy, synchronisation) */
    FMM_ERR_RANGE,      /* a requested output overflows double precision or underflows as a whole */
    FMM_ERR_COMM,       /* distributed plans: a communication callback or another rank failed */
    FMM_STATUS_COUNT
};

#define FMM_TOL_MIN 1e-12
#define FMM_TOL_MAX 1e-3
#define FMM_ORDER_MIN 1
#define FMM_ORDER_MAX 50
#define FMM_DEPTH_MAX 20
#define FMM_LEAF_MAX 4096
/* OpenMP thread counts above this are refused (FMM_ERR_THREADS): libgomp crashes or exits the
 * process when asked for tens of thousands of threads, and no machine the library targets has
 * more hardware threads than this. */
#define FMM_THREADS_MAX 1024

enum fmm_device { FMM_DEVICE_CPU = 0, FMM_DEVICE_CUDA = 1 };

const char *fmm_strerror(int status);

/* Number of usable CUDA devices: 0 when the library was built without CUDA or the
 * machine has no GPU (GPU tests skip on 0). */
int fmm_cuda_device_count(void);

/* Host memory for a CUDA plan's inputs and outputs (positions, charges, phi, field): page-locked
 * where the library has CUDA and a device (the copies to and from the device run at full speed),
 * ordinary malloc otherwise. NULL for 0 bytes or on failure; free with fmm_host_free (NULL ok). */
void *fmm_host_alloc(size_t bytes);
void fmm_host_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* FMM_COMMON_H */
