#!/usr/bin/env python3
"""Mesh-deformation demo for `fmm rbf deform` (issue 8): a structured hexahedral O-grid around a
sphere (cubed-sphere shell: each of the six cube faces is a k x k block, nr layers graded
geometrically from the sphere of radius 0.5 out to the cube [-2, 2]^3) is deformed so that the
sphere is moved by (0.3, 0.15, 0) and rotated by 30 degrees about z while the outer cube stays
fixed. The boundary points are the mesh nodes on the sphere and on the cube; every node is moved
by the three multiquadric interpolants (FGP fit). Both meshes are written as legacy ASCII VTK.

Output: in VTKDIR sphere_before.vtk, sphere_after.vtk and sphere_disp.txt (the boundary
displacements given to fmm, 'x y z dx dy dz'); in OUTDIR rbf_sphere_demo.png (the mid-plane
z = 0 before and after, whole domain and a zoom on the sphere; mesh edges in the plane, the
sphere in red, its old position dashed) and rbf_sphere_demo.txt (summary: fmm's output, the
largest boundary error of the written mesh, the smallest new/old corner-tetrahedron volume ratio
recomputed here, inverted cells).

usage: python3 bench/rbf/sphere_demo.py [FMM_BINARY [OUTDIR [VTKDIR]]]
       (defaults: build/bin/fmm, bench/results, $TMPDIR/rbf_sphere_demo)"""
import os, subprocess, sys, tempfile, time
import numpy as np
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.collections import LineCollection

FMM = sys.argv[1] if len(sys.argv) > 1 else "build/bin/fmm"
OUT = sys.argv[2] if len(sys.argv) > 2 else "bench/results"
VTK = sys.argv[3] if len(sys.argv) > 3 else os.path.join(tempfile.gettempdir(), "rbf_sphere_demo")
K, NR, R0, R1, GROW = 24, 20, 0.5, 2.0, 1.12  # face cells, layers, radii, layer growth
SHIFT, ANGLE = np.array([0.3, 0.15, 0.0]), np.radians(30.0)


def cubed_sphere_shell():
    """Nodes (layer-major), hexahedra, and the node ids of the inner and outer layers."""
    dirs, index, quads = [], {}, []

    def node(a, b, face):
        p = [0.0, 0.0, 0.0]
        ax = face // 2
        p[ax], p[(ax + 1) % 3], p[(ax + 2) % 3] = (1.0 if face % 2 else -1.0), a, b
        key = tuple(round(v * 1e9) for v in p)  # nodes on cube edges are shared by two faces
        if key not in index:
            index[key] = len(dirs)
            dirs.append(p)
        return index[key]

    g = np.linspace(-1.0, 1.0, K + 1)
    for face in range(6):
        for i in range(K):
            for j in range(K):
                q = [node(g[i], g[j], face), node(g[i + 1], g[j], face),
                     node(g[i + 1], g[j + 1], face), node(g[i], g[j + 1], face)]
                if face % 2 == 0:  # outward orientation on both sides of each axis
                    q[1], q[3] = q[3], q[1]
                quads.append(q)
    d = np.array(dirs)
    ns = len(d)
    unit = d / np.linalg.norm(d, axis=1)[:, None]
    # layer l at fraction t_l from the sphere to the cube, thin layers at the sphere
    t = np.cumsum(np.r_[0.0, GROW ** np.arange(NR)])
    t /= t[-1]
    xyz = np.concatenate([(1 - tl) * R0 * unit + tl * R1 * d for tl in t])
    quads = np.array(quads)
    cells = np.concatenate([np.hstack([l * ns + quads, (l + 1) * ns + quads]) for l in range(NR)])
    return xyz, cells, np.arange(ns), NR * ns + np.arange(ns)


def write_vtk(path, xyz, cells, title):
    with open(path, "w") as f:
        f.write(f"# vtk DataFile Version 3.0\n{title}\nASCII\nDATASET UNSTRUCTURED_GRID\n")
        f.write(f"POINTS {len(xyz)} double\n")
        np.savetxt(f, xyz, fmt="%.17g")
        f.write(f"CELLS {len(cells)} {9 * len(cells)}\n")
        np.savetxt(f, np.hstack([np.full((len(cells), 1), 8), cells]), fmt="%d")
        f.write(f"CELL_TYPES {len(cells)}\n")
        np.savetxt(f, np.full(len(cells), 12), fmt="%d")


def read_vtk_points(path):
    with open(path) as f:
        toks = f.read().split()
    i = toks.index("POINTS")
    n = int(toks[i + 1])
    return np.array(toks[i + 3:i + 3 + 3 * n], dtype=float).reshape(n, 3)


def min_volume_ratio(before, after, cells):
    """Smallest V_new / V_old over the 8 corner tetrahedra of every hexahedron."""
    corners = [(0, 1, 3, 4), (1, 2, 0, 5), (2, 3, 1, 6), (3, 0, 2, 7),
               (4, 7, 5, 0), (5, 4, 6, 1), (6, 5, 7, 2), (7, 6, 4, 3)]
    worst = np.inf
    for a, b, c, d in corners:
        def vol(p):
            o = p[cells[:, a]]
            return np.einsum("ij,ij->i", p[cells[:, b]] - o, np.cross(p[cells[:, c]] - o, p[cells[:, d]] - o))
        worst = min(worst, np.min(vol(after) / vol(before)))
    return worst


def plane_edges(xyz, cells):
    """Mesh edges of the hexahedra that lie in the plane z = 0 of the undeformed mesh."""
    pairs = [(0, 1), (1, 2), (2, 3), (3, 0), (4, 5), (5, 6), (6, 7), (7, 4), (0, 4), (1, 5), (2, 6), (3, 7)]
    e = np.concatenate([cells[:, [a, b]] for a, b in pairs])
    e = np.unique(np.sort(e, axis=1), axis=0)
    on = np.abs(xyz[:, 2]) < 1e-12
    return e[on[e[:, 0]] & on[e[:, 1]]]


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(VTK, exist_ok=True)
    xyz, cells, inner, outer = cubed_sphere_shell()
    c, s = np.cos(ANGLE), np.sin(ANGLE)
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    b = np.concatenate([xyz[inner], xyz[outer]])
    target = np.concatenate([xyz[inner] @ rot.T + SHIFT, xyz[outer]])
    before, after, disp = (os.path.join(VTK, n) for n in ("sphere_before.vtk", "sphere_after.vtk", "sphere_disp.txt"))
    write_vtk(before, xyz, cells, "cubed-sphere shell around a sphere (bench/rbf/sphere_demo.py)")
    np.savetxt(disp, np.hstack([b, target - b]), fmt="%.17g")
    t0 = time.perf_counter()
    run = subprocess.run([FMM, "rbf", "deform", "--mesh", before, "--displacements", disp, "--out", after],
                         capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    kv = dict(l.split(None, 1) for l in run.stdout.strip().splitlines())
    moved = read_vtk_points(after)
    bnd = np.concatenate([inner, outer])
    bnd_err = np.max(np.abs(moved[bnd] - target))
    ratio = min_volume_ratio(xyz, moved, cells)
    interior = np.setdiff1d(np.arange(len(xyz)), bnd)
    summary = [
        f"mesh: cubed-sphere shell, {K}x{K} cells per cube face, {NR} layers (growth {GROW}), sphere r = {R0}, cube [-{R1}, {R1}]^3",
        f"nodes {len(xyz)}, hexahedra {len(cells)}, boundary points {len(bnd)} (sphere {len(inner)}, cube {len(outer)})",
        f"motion: sphere shifted by {tuple(float(v) for v in SHIFT)} and rotated {np.degrees(ANGLE):.0f} deg about z; cube fixed",
        "fmm rbf deform: " + ", ".join(f"{k} {v}" for k, v in kv.items()),
        f"wall time of the fmm call (file I/O included) {wall:.2f} s",
        f"largest boundary error of the written mesh |x - x_prescribed|_max = {bnd_err:.3e} "
        "(nodes on a boundary point take its displacement exactly; the fit residual is max_residual)",
        f"largest interior node displacement {np.max(np.linalg.norm(moved[interior] - xyz[interior], axis=1)):.3f}",
        f"smallest new/old corner-tetrahedron volume ratio (recomputed here) {ratio:.4f}: "
        + ("no inverted cell" if ratio > 0 else "INVERTED CELLS"),
        f"commit {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()}, "
        f"{time.strftime('%Y-%m-%d')}, loadavg {open('/proc/loadavg').read().split()[0]}",
    ]
    with open(os.path.join(OUT, "rbf_sphere_demo.txt"), "w") as f:
        f.write("\n".join(summary) + "\n")
    print("\n".join(summary))

    edges = plane_edges(xyz, cells)
    ring = np.abs(xyz[inner, 2]) < 1e-12
    sph = inner[ring]
    order = np.argsort(np.arctan2(xyz[sph, 1], xyz[sph, 0]))
    sph = np.r_[sph[order], sph[order][:1]]
    fig, axs = plt.subplots(2, 2, figsize=(12, 12))
    for col, (p, name) in enumerate([(xyz, "before"), (moved, "after")]):
        for row, lim in enumerate([R1 * 1.02, 1.25]):
            ax = axs[row, col]
            ax.add_collection(LineCollection(p[edges][:, :, :2], colors="0.25", linewidths=0.4))
            ax.plot(p[sph, 0], p[sph, 1], "r-", lw=2.0)
            if name == "after":
                ax.plot(xyz[sph, 0], xyz[sph, 1], "r--", lw=0.8)
            ax.set_xlim(-lim, lim), ax.set_ylim(-lim, lim), ax.set_aspect("equal")
            ax.set_title(f"{name}: mid-plane z = 0" + (" (zoom)" if row else ""))
    fig.suptitle(f"fmm rbf deform: sphere shifted by ({SHIFT[0]}, {SHIFT[1]}) and rotated "
                 f"{np.degrees(ANGLE):.0f} deg; {len(xyz)} nodes, {len(bnd)} boundary points, "
                 f"{kv['iterations']} FGP iterations\nboundary error {bnd_err:.1e}, smallest volume ratio "
                 f"{ratio:.3f} ({'no inverted cell' if ratio > 0 else 'INVERTED CELLS'})")
    fig.tight_layout()
    fig.savefig(os.path.join(OUT, "rbf_sphere_demo.png"), dpi=90)


if __name__ == "__main__":
    main()
