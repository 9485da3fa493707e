/*
 * pointsets.h - test systems for the Coulomb FMM: point-set generators and a text reader/writer.
 *
 * Every generator is deterministic: the same (n, seed) gives bit-identical output on any
 * machine with the same libm, because it uses its own small PRNG (xoshiro256** seeded with
 * splitmix64) and never rand(). Positions and charges come from separate random streams, so
 * the positions of the first k particles do not depend on n.
 *
 * Layout everywhere: xyz holds n interleaved coordinates x0 y0 z0 x1 y1 z1 ..., q holds n
 * charges; the caller allocates both (3n and n doubles).
 *
 * Functions never print or exit: they return PTS_OK (0) or one of enum pts_status.
 * The readers and the writer use core/textio.h, as every reader and writer of the project.
 */
#ifndef FMM_POINTSETS_H
#define FMM_POINTSETS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pts_status {
    PTS_OK = 0,
    PTS_ERR_ARG,       /* NULL pointer, n < 1, or n too large for memory sizes */
    PTS_ERR_NOMEM,     /* out of memory */
    PTS_ERR_IO,        /* file cannot be opened, read or written */
    PTS_ERR_PARSE,     /* malformed line in a text file, or a NUL byte */
    PTS_ERR_NONFINITE, /* NaN, Inf or a number out of double's range in a file (NaN or Inf in
                          data to be written) */
    PTS_ERR_EMPTY,     /* file holds no particles */
    PTS_ERR_PLACE,     /* water: could not place a molecule without overlap (not expected) */
    PTS_STATUS_COUNT
};

/* A short English description of a pts_status code (never NULL). */
const char *pts_strerror(int status);

/* Uniform random points in the unit cube [0,1)^3: the easy, well-balanced case for an
 * octree. Charges are uniform in [-1,1], then shifted so that their sum is zero (to
 * rounding), so the system is neutral like a physical one. */
int pts_uniform(long n, uint64_t seed, double *xyz, double *q);

/* Plummer sphere centred at the origin, scale radius a = 1: a strongly clustered,
 * highly non-uniform distribution (density ~ (1 + r^2)^(-5/2)) that exercises an adaptive
 * tree. Radii beyond 100 a are redrawn so the bounding box stays bounded (the untruncated
 * distribution has a heavy tail). Charges as in pts_uniform. */
int pts_plummer(long n, uint64_t seed, double *xyz, double *q);

/* Uniform random points on the unit sphere surface centred at the origin: a 2-D manifold
 * in 3-D, so most octree boxes are empty (tests adaptive trees and empty-box handling).
 * Charges as in pts_uniform. */
int pts_sphere_surface(long n, uint64_t seed, double *xyz, double *q);

/* Uniform random points in the unit ball centred at the origin: a compact cluster (scaled
 * and placed in a large periodic box, a droplet in vacuum). Charges as in pts_uniform. */
int pts_ball(long n, uint64_t seed, double *xyz, double *q);

/* Water-like system: nmol rigid SPC/E molecules (O -0.8476 e, H +0.4238 e, O-H 0.1 nm,
 * H-O-H 109.47 deg), random orientations, oxygens on a jittered simple-cubic lattice at the
 * number density of liquid water (33.4 molecules / nm^3). Units: nm and e. Writes 3*nmol
 * atoms in the order O H H, O H H, ... into xyz[9*nmol] and q[3*nmol], and the cubic box
 * edge length (nm) into *box_edge (may be NULL). Clustered, exactly neutral per molecule up
 * to rounding, with dipoles: the charge pattern of biomolecular simulation. All atoms lie in
 * [0, box)^3 (wrapped periodically) and no two atoms are closer than 0.05 nm, including
 * across the periodic boundary. */
int pts_water(long nmol, uint64_t seed, double *xyz, double *q, double *box_edge);

/* Reads a text file of rows of numbers, the format of every number file of the project (the
 * CLI reads its inputs with this). Numbers are separated by white space, '#' starts a comment
 * (to the end of the line), blank lines are skipped. Each number is one of strtod's formats in
 * the C locale; NaN, Inf, a number too large for a double and a nonzero number below the
 * smallest one (it would become 0) are errors, as are NUL bytes. Every row holds the same
 * count c of numbers, min_cols <= c <= max_cols (max_cols 0: no upper limit), and there is at
 * least one row; *cols (may be NULL) receives c. *rows receives the n rows of c numbers, or,
 * with last != NULL, n rows of c - 1 numbers and *last the n values of the last column;
 * *lines (lines may be NULL) the line number of each row. layout names the columns in
 * messages ("x y z q"). The arrays are malloc'ed; the caller frees them.
 * On failure *n = 0 and the arrays are NULL, nothing is leaked, and err (if not NULL and
 * errlen > 0) holds one line that names the file and, for a bad line, its number and what is
 * wrong: "file.txt:12: 3 numbers, expected 4 (x y z q)", "file.txt:3: column 2: '1e999' is
 * out of range (too large)", "file.txt: cannot open: No such file or directory".
 * Errors: PTS_ERR_IO (cannot open or read; a directory), PTS_ERR_PARSE (text that is not a
 * number, a wrong count of numbers, a NUL byte), PTS_ERR_NONFINITE (nan, inf, overflow or
 * underflow to 0), PTS_ERR_EMPTY (no rows), PTS_ERR_NOMEM, PTS_ERR_ARG (NULL path, layout, n or
 * rows; min_cols < 1, or < 2 with last; 0 < max_cols < min_cols).
 * box (9 doubles) and nbox, which may both be NULL, receive the numbers of the file's first
 * comment line of the form '# box v1 v2 ...' (pts_box_comment), in the same pass: *nbox = 0 where
 * there is none. */
int pts_read_rows(const char *path, const char *layout, int min_cols, int max_cols, int *cols,
                  long *n, double **rows, double **last, long **lines, double *box, int *nbox,
                  char *err, size_t errlen);

/* A comment line '# box v1 v2 ...' (blanks before '#' and between the words allowed): returns the
 * count of numbers (3 or 9, written to box), -1 for a box line with another count or with text
 * after the numbers, 0 for any other line. */
int pts_box_comment(const char *line, double box[9]);

/* Reads a text file with one particle per line, "x y z q": pts_read_rows with 4 columns. On
 * success *n is the particle count and *xyz (3n) and *q (n) are malloc'ed arrays that the
 * caller frees. On failure *n = 0, *xyz = *q = NULL and err as pts_read_rows. */
int pts_read_xyzq(const char *path, long *n, double **xyz, double **q, char *err, size_t errlen);

/* Writes n particles as "x y z q" lines with %.17g, so pts_read_xyzq reads back exactly the
 * same doubles. Refuses (PTS_ERR_NONFINITE) data that the reader would reject. The file is
 * written beside path and renamed over it when complete (core/textio.h): on PTS_ERR_IO, errno
 * says why and an existing file at path is unchanged. */
int pts_write_xyzq(const char *path, long n, const double *xyz, const double *q);

#ifdef __cplusplus
}
#endif

#endif /* FMM_POINTSETS_H */
