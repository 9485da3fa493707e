/* The layout of the C API's option, info and result structs, for the Python package's ctypes
 * bindings (python/fmm/_capi.py): size, and each field's name, offset, element type and byte
 * size, from the headers themselves, so that the bindings need no hand-written copy of a struct
 * and a field added to a header changes nothing in Python. */
#include <stddef.h>

#include "fmm.h"
#include "fmm_bldtt.h"
#include "fmm_fgt.h"
#include "fmm_rbf.h"

typedef struct {
    const char *name;
    long offset;
    char type; /* 'd' double, 'i' int, 'l' long, 'Q' unsigned long long (arrays: their element) */
    long bytes;
} fmm_py_field;

typedef struct {
    const char *name;
    long size;
    const fmm_py_field *fields; /* ends with name NULL */
} fmm_py_struct;

#define FMM_PY_TYPE(x)                                                                             \
    _Generic((x), double: 'd', double *: 'd', int: 'i', int *: 'i', long: 'l', long *: 'l',        \
        unsigned long long: 'Q')
#define FLD(S, f)                                                                                  \
    { #f, (long)offsetof(S, f), FMM_PY_TYPE(((S *)0)->f), (long)sizeof(((S *)0)->f) }

static const fmm_py_field fmm_opts_fields[] = {FLD(fmm_opts, tolerance), FLD(fmm_opts, order),
                                               FLD(fmm_opts, depth),     FLD(fmm_opts, leaf_size),
                                               FLD(fmm_opts, threads),   FLD(fmm_opts, periodic),
                                               FLD(fmm_opts, boundary),  FLD(fmm_opts, device),
                                               FLD(fmm_opts, precision), {0}};
static const fmm_py_field fmm_info_fields[] = {FLD(fmm_info, order),     FLD(fmm_info, depth),
                                               FLD(fmm_info, leaf_size), FLD(fmm_info, nboxes),
                                               FLD(fmm_info, nleaves),   FLD(fmm_info, side),
                                               FLD(fmm_info, center),    FLD(fmm_info, images),
                                               FLD(fmm_info, cell),      {0}};
static const fmm_py_field bldtt_opts_fields[] = {
    FLD(bldtt_opts, kernel), FLD(bldtt_opts, param),     FLD(bldtt_opts, theta),
    FLD(bldtt_opts, degree), FLD(bldtt_opts, leaf_size), FLD(bldtt_opts, method),
    FLD(bldtt_opts, device), FLD(bldtt_opts, threads),   {0}};
static const fmm_py_field bldtt_info_fields[] = {FLD(bldtt_info, nsources),
                                                 FLD(bldtt_info, ntargets),
                                                 FLD(bldtt_info, same),
                                                 FLD(bldtt_info, leaf_size),
                                                 FLD(bldtt_info, source_clusters),
                                                 FLD(bldtt_info, target_clusters),
                                                 FLD(bldtt_info, source_leaves),
                                                 FLD(bldtt_info, target_leaves),
                                                 FLD(bldtt_info, source_depth),
                                                 FLD(bldtt_info, target_depth),
                                                 FLD(bldtt_info, pairs),
                                                 FLD(bldtt_info, evals),
                                                 FLD(bldtt_info, time_setup_s),
                                                 FLD(bldtt_info, time_setup_device_s),
                                                 FLD(bldtt_info, time_execute_s),
                                                 {0}};
static const fmm_py_field fgt_opts_fields[] = {FLD(fgt_opts, tolerance),  FLD(fgt_opts, threads),
                                               FLD(fgt_opts, device),     FLD(fgt_opts, box_side),
                                               FLD(fgt_opts, force_mode), {0}};
static const fmm_py_field fgt_info_fields[] = {
    FLD(fgt_info, dim),          FLD(fgt_info, box_side),
    FLD(fgt_info, order),        FLD(fgt_info, radius),
    FLD(fgt_info, source_boxes), FLD(fgt_info, target_boxes),
    FLD(fgt_info, pairs),        {0}};
static const fmm_py_field rbf_opts_fields[] = {
    FLD(fmm_rbf_opts, shape),           FLD(fmm_rbf_opts, tolerance), FLD(fmm_rbf_opts, lset_size),
    FLD(fmm_rbf_opts, max_iter),        FLD(fmm_rbf_opts, matvec),    FLD(fmm_rbf_opts, series_tol),
    FLD(fmm_rbf_opts, device),          FLD(fmm_rbf_opts, threads),   FLD(fmm_rbf_opts, seed),
    FLD(fmm_rbf_opts, mixed_precision), FLD(fmm_rbf_opts, dense_max), {0}};
static const fmm_py_field rbf_result_fields[] = {
    FLD(fmm_rbf_result, iterations),    FLD(fmm_rbf_result, max_residual),
    FLD(fmm_rbf_result, time_setup_s),  FLD(fmm_rbf_result, time_fit_s),
    FLD(fmm_rbf_result, time_matvec_s), FLD(fmm_rbf_result, single_passes),
    FLD(fmm_rbf_result, matvec),        FLD(fmm_rbf_result, device),
    FLD(fmm_rbf_result, solver),        {0}};

static const fmm_py_struct structs[] = {
    {"fmm_opts", sizeof(fmm_opts), fmm_opts_fields},
    {"fmm_info", sizeof(fmm_info), fmm_info_fields},
    {"bldtt_opts", sizeof(bldtt_opts), bldtt_opts_fields},
    {"bldtt_info", sizeof(bldtt_info), bldtt_info_fields},
    {"fgt_opts", sizeof(fgt_opts), fgt_opts_fields},
    {"fgt_info", sizeof(fgt_info), fgt_info_fields},
    {"fmm_rbf_opts", sizeof(fmm_rbf_opts), rbf_opts_fields},
    {"fmm_rbf_result", sizeof(fmm_rbf_result), rbf_result_fields},
    {0}};

const fmm_py_struct *fmm_py_structs(void) {
    return structs;
}
