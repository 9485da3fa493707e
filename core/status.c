#include "fmm_common.h"

const char *fmm_strerror(int status) {
    switch (status) {
    case FMM_OK:
        return "success";
    case FMM_ERR_ARG:
        return "invalid argument (NULL pointer or bad value)";
    case FMM_ERR_NPTS:
        return "number of points out of range (fewer than needed, more than supported, or not "
               "above every index given to fmm_set_exclusions)";
    case FMM_ERR_NONFINITE:
        return "non-finite (NaN or Inf) coordinate or charge";
    case FMM_ERR_TOLERANCE:
        return "tolerance out of range [1e-12, 1e-3]";
    case FMM_ERR_ORDER:
        return "expansion order out of range [1, 50]";
    case FMM_ERR_DEPTH:
        return "tree depth out of range [-1 (adaptive), 20]";
    case FMM_ERR_LEAF:
        return "leaf size out of range [0 (automatic), 4096]";
    case FMM_ERR_BOX:
        return "box or cell not finite and positive, outside GROMACS's limits (rows a, b, c with "
               "a_y = a_z = b_z = 0, |bx| and |cx| <= ax/2, |cy| <= by/2), missing where a "
               "periodic plan needs one, or not a cube for a CUDA plan (which takes cubes only "
               "for now)";
    case FMM_ERR_OUTSIDE:
        return "particle outside the box (open boundary)";
    case FMM_ERR_COINCIDENT:
        return "two particles at the same position (infinite potential)";
    case FMM_ERR_NOMEM:
        return "out of memory";
    case FMM_ERR_NOPTS:
        return "no particles set: call fmm_setpts first";
    case FMM_ERR_DEVICE:
        return "CUDA device requested, but the library was built without CUDA or no CUDA device is "
               "usable";
    case FMM_ERR_THREADS:
        return "thread count out of range [0 (OpenMP default), 1024]";
    case FMM_ERR_BOUNDARY:
        return "invalid boundary option, or vacuum boundary with a net charge";
    case FMM_ERR_UNSUPPORTED:
        return "not supported in this configuration";
    case FMM_ERR_PARAM:
        return "solver parameter out of range (see the solver's header)";
    case FMM_ERR_NOCONVERGE:
        return "iterative solver did not converge to the requested tolerance";
    case FMM_ERR_IO:
        return "file could not be opened, read or written";
    case FMM_ERR_FORMAT:
        return "malformed input file";
    case FMM_ERR_CUDA:
        return "CUDA runtime call failed";
    case FMM_ERR_RANGE:
        return "result beyond the range of double precision (an overflow, or an output that "
               "underflows as a whole): change the units of the input";
    case FMM_ERR_COMM:
        return "communication failed: a callback of the distributed plan's fmm_comm returned an "
               "error, or another rank of the plan failed (its own call returns the reason)";
    default:
        return "unknown status code";
    }
}
