/* The legacy VTK reader with a message (fmm_rbf.h declares fmm_vtk_read, which is this without
 * it, and the writer fmm_vtk_write, whose failures this header describes further). */
#ifndef FMM_RBF_VTK_IO_H
#define FMM_RBF_VTK_IO_H

#include <stddef.h>

#include "fmm_rbf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fmm_vtk_read, and on failure one line in msg (msglen bytes; nothing if msg is NULL or msglen
 * is 0) that names the file, the line and what is wrong: "mesh.vtk:7: a POINTS coordinate:
 * 'abc' is not a number", "mesh.vtk: cannot open: Is a directory", "mesh.vtk:3: NUL byte
 * (binary data, not a text file)". Numbers as text_parse_double (core/textio.h): NaN, Inf and
 * out-of-range numbers are FMM_ERR_FORMAT, as is a NUL byte; FMM_ERR_IO for a file that cannot
 * be opened or read (a directory). The reader keeps no state between calls. */
int fmm_vtk_read_msg(const char *path, fmm_vtk_mesh *mesh, char *msg, size_t msglen);

/* fmm_vtk_write writes the file beside path and renames it over path once complete and checked
 * (core/textio.h): on FMM_ERR_IO errno says why, and an existing file at path is unchanged. */

#ifdef __cplusplus
}
#endif

#endif
