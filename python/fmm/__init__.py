"""Fast multipole methods on numpy arrays: the Coulomb FMM, BLDTT kernel sums, the fast Gauss
transform and multiquadric RBF interpolation of the fmm C library (docs/python.md).

    import numpy as np, fmm
    x, q = np.random.rand(100_000, 3), np.random.uniform(-1, 1, 100_000)
    r = fmm.coulomb(x, q, tolerance=1e-6)      # r.phi, r.field, r.energy

Arrays: float64 and C-contiguous are used as they are, anything else is copied (converted).
Points are (n, 3) arrays (or (n, dim) for the FGT; flat arrays of n*dim numbers work too).
Units: the sums carry no prefactor (Coulomb: phi_i = sum_j q_j / r_ij, Gaussian units; with nm
and e, multiply by 138.935458 for kJ/mol). Every failure of the library raises FMMError with
the library's message.
"""
import ctypes
from collections import namedtuple

import numpy as np

from . import _capi as _c

__all__ = ["FMMError", "version", "build_info", "cuda_device_count", "CoulombPlan", "coulomb",
           "coulomb_direct", "ewald", "BLDTTPlan", "bldtt_direct", "FGTPlan", "fgt_direct",
           "RBFPlan", "RBFFit", "CoulombResult"]

__version__ = _c.fmm_version().decode()


class FMMError(RuntimeError):
    """A status code of the library (enum fmm_status, include/fmm_common.h) and its message."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _check(rc, strerror=_c.fmm_strerror):
    if rc:
        raise FMMError(rc, strerror(rc).decode())


def version():
    """The library's version, e.g. '0.1.0'."""
    return _c.fmm_version().decode()


def build_info():
    """How the library was built, e.g. 'cuda off, native off, openmp 201511'."""
    return _c.fmm_build_info().decode()


def cuda_device_count():
    """Usable CUDA devices (0 without CUDA in the build or without a GPU)."""
    return _c.fmm_cuda_device_count()


_DEVICES = {"cpu": 0, "cuda": 1}


def _device(name):
    try:
        return _DEVICES[name]
    except KeyError:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {name!r}") from None


def _host(a, name):
    """a as a host array: GPU arrays (__cuda_array_interface__) of a solver that takes host
    memory only are copied to the host by their own library (CuPy .get(), PyTorch .cpu())."""
    if hasattr(a, "__cuda_array_interface__"):
        if hasattr(a, "get"):
            return a.get()
        if hasattr(a, "detach"):
            return a.detach().cpu().numpy()
        raise TypeError(f"{name}: a GPU array that is neither CuPy nor PyTorch")
    return a


def _f64(a, name):
    return np.ascontiguousarray(_host(a, name), dtype=np.float64)


def _points(a, name, dim=3):
    """(array, n) for n points of dim coordinates: shape (n, dim), or flat n*dim (dim 1: (n,))."""
    a = _f64(a, name)
    if a.ndim == 2 and a.shape[1] == dim:
        return a, a.shape[0]
    if a.ndim == 1 and a.size % dim == 0:
        return a, a.size // dim
    raise ValueError(f"{name}: expected points of shape (n, {dim}), got shape {a.shape}")


def _values(a, n, name):
    a = _f64(a, name).reshape(-1)
    if a.size != n:
        raise ValueError(f"{name}: expected {n} values, got {a.size}")
    return a


def _ptr(a):
    return None if a is None else a.ctypes.data


class _Plan:
    """A plan's handle and its destruction (close(), a with block, or garbage collection)."""

    _destroy = None

    def __init__(self):
        self._p = ctypes.c_void_p()

    def close(self):
        if self._p:
            type(self)._destroy(self._p)
            self._p = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _need(self):
        if not self._p:
            raise ValueError("the plan is closed")
        return self._p


# ---- Coulomb FMM ----------------------------------------------------------------------------

CoulombResult = namedtuple("CoulombResult", "phi field energy virial")
CoulombResult.__doc__ = """phi (n), field (n, 3) = -grad phi, energy U = 1/2 sum q phi, virial
(3, 3) W_ab = -dU/d eps_ab; None where not asked for."""


class CoulombPlan(_Plan):
    """The Coulomb FMM (include/fmm.h): phi_i = sum_{j != i} q_j / |x_i - x_j|, E = -grad phi.

    box: None for an open boundary, or the edges (L, or [Lx, Ly, Lz]) of [0, L)^3: periodic
    with periodic=True (Ewald conventions: tin-foil, or boundary='vacuum'), else the region the
    particles must lie in; or, periodic, a triclinic cell: 9 numbers (3 x 3), the rows a, b, c
    as GROMACS writes them (fmm_makeplan_cell). tolerance: relative L2 error of phi. device
    'cuda': the GPU FMM (cubes).
    """

    _destroy = _c.fmm_destroy

    def __init__(self, tolerance=1e-6, box=None, periodic=False, boundary="tinfoil", order=0,
                 depth=-1, leaf_size=0, threads=0, device="cpu", precision="double"):
        super().__init__()
        o = _c.CStruct("fmm_opts")
        _c.fmm_default_opts(o.ptr)
        o["tolerance"], o["order"], o["depth"] = tolerance, order, depth
        o["leaf_size"], o["threads"], o["periodic"] = leaf_size, threads, int(bool(periodic))
        o["boundary"] = {"tinfoil": 0, "vacuum": 1}[boundary]
        o["device"] = _device(device)
        o["precision"] = {"double": 0, "mixed": 1}[precision]
        self._box = None if box is None else _box(box)
        make = _c.fmm_makeplan_cell if self._box is not None and self._box.size == 9 else \
            _c.fmm_makeplan
        _check(make(o.ptr, _ptr(self._box), ctypes.byref(self._p)))
        self.n = 0

    def setpts(self, xyz):
        """Positions (n, 3): builds the tree. Returns the plan."""
        xyz, n = _points(xyz, "xyz")
        _check(_c.fmm_setpts(self._need(), n, xyz.ctypes.data))
        self.n = n
        return self

    def execute(self, q, phi=True, field=True, energy=True, virial=False):
        """Charges q (n) -> CoulombResult; each output only where asked for."""
        q = _values(q, self.n, "q")
        n = self.n
        ph = np.empty(n) if phi else None
        fl = np.empty((n, 3)) if field else None
        e = ctypes.c_double()
        w = np.empty((3, 3)) if virial else None
        _check(_c.fmm_execute(self._need(), q.ctypes.data, _ptr(ph), _ptr(fl),
                              ctypes.byref(e) if energy else None, _ptr(w)))
        return CoulombResult(ph, fl, e.value if energy else None, w)

    def set_exclusions(self, pairs):
        """Pairs (m, 2) of indices whose direct term is left out; an empty list clears them."""
        p = np.ascontiguousarray(np.asarray(pairs, dtype=np.intc).reshape(-1, 2))
        _check(_c.fmm_set_exclusions(self._need(), p.shape[0], p.ctypes.data))
        return self

    @property
    def info(self):
        """What the plan chose (order, depth, leaf_size, nboxes, ...), after setpts."""
        i = _c.CStruct("fmm_info")
        _check(_c.fmm_get_info(self._need(), i.ptr))
        return i.as_dict()

    def forces(self, xyz, q, out, scale=1.0, energy=False, virial=False, stream=None):
        """The device-resident route (CUDA plans, periodic): xyz and out are GPU arrays
        (CuPy, PyTorch: __cuda_array_interface__) of n x 3 float32, used in place, without
        copies; out[i] = scale q_i E_i. q: n charges on the host. stream: the caller's CUDA
        stream (a CuPy or PyTorch stream, or its handle; None: the default stream). Returns
        (energy, virial) where asked for, else None for each."""
        px, n = _device_array(xyz, "xyz", writable=False)
        pf, nf = _device_array(out, "out", writable=True)
        if nf != n:
            raise ValueError(f"out: expected {n} x 3 values, got {nf} x 3")
        qf = np.ascontiguousarray(_host(q, "q"), dtype=np.float32).reshape(-1)
        if qf.size != n:
            raise ValueError(f"q: expected {n} values, got {qf.size}")
        s = _stream(stream)
        _check(_c.fmm_cuda_setptsf(self._need(), n, px, s))
        self.n = n
        e = ctypes.c_double()
        w = np.empty((3, 3)) if virial else None
        _check(_c.fmm_cuda_forcesf(self._need(), qf.ctypes.data, pf, scale,
                                   ctypes.byref(e) if energy else None, _ptr(w), s))
        return (e.value if energy else None), w


def _box(box):
    """Box edges (1 or 3 numbers) as 3 doubles, or a cell's 9 (3 x 3, rows a, b, c)."""
    b = np.asarray(box, np.float64).reshape(-1)
    if b.size == 9:
        return np.ascontiguousarray(b)
    if b.size in (1, 3):
        return np.ascontiguousarray(np.broadcast_to(b, (3,)))
    raise ValueError(f"box: expected 1, 3 or 9 numbers, got {b.size}")


def _device_array(a, name, writable):
    """(device pointer, n) of a C-contiguous n x 3 float32 GPU array."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is None:
        raise TypeError(f"{name}: expected a GPU array (CuPy, PyTorch: __cuda_array_interface__)")
    shape, typestr, strides = tuple(cai["shape"]), cai["typestr"], cai.get("strides")
    if typestr not in ("<f4", "|f4"):
        raise TypeError(f"{name}: expected float32, got typestr {typestr!r}")
    size = int(np.prod(shape)) if shape else 1
    if size % 3 or (len(shape) == 2 and shape[1] != 3) or len(shape) > 2:
        raise ValueError(f"{name}: expected n x 3 values, got shape {shape}")
    if strides is not None and tuple(strides) != tuple(
            4 * int(np.prod(shape[k + 1:])) for k in range(len(shape))):
        raise ValueError(f"{name}: the GPU array must be C-contiguous")
    ptr, readonly = cai["data"]
    if writable and readonly:
        raise ValueError(f"{name}: the GPU array is read-only")
    return ptr, size // 3


def _stream(s):
    if s is None:
        return None
    for attr in ("ptr", "cuda_stream"):  # CuPy, PyTorch
        if hasattr(s, attr):
            return getattr(s, attr)
    return int(s)


def coulomb(xyz, q, tolerance=1e-6, box=None, periodic=False, virial=False, **opts):
    """One evaluation: CoulombPlan(tolerance, box, periodic, **opts).setpts(xyz).execute(q)."""
    with CoulombPlan(tolerance, box, periodic, **opts) as p:
        return p.setpts(xyz).execute(q, virial=virial)


def coulomb_direct(xyz, q, threads=0):
    """The O(n^2) direct sum (open boundary), the reference: CoulombResult with the virial."""
    xyz, n = _points(xyz, "xyz")
    q = _values(q, n, "q")
    ph, fl, w, e = np.empty(n), np.empty((n, 3)), np.empty((3, 3)), ctypes.c_double()
    _check(_c.fmm_direct(n, xyz.ctypes.data, q.ctypes.data, ph.ctypes.data, fl.ctypes.data,
                         ctypes.byref(e), w.ctypes.data, threads))
    return CoulombResult(ph, fl, e.value, w)


def ewald(xyz, q, box, tolerance=1e-10, threads=0):
    """The Ewald sum (tin-foil) in the periodic box [0, L)^3 (box: 1 or 3 edges) or cell (9
    numbers, rows a, b, c), the reference: CoulombResult."""
    xyz, n = _points(xyz, "xyz")
    q = _values(q, n, "q")
    b = _box(box)
    ph, fl, w, e = np.empty(n), np.empty((n, 3)), np.empty((3, 3)), ctypes.c_double()
    _check((_c.fmm_ewald_cell if b.size == 9 else _c.fmm_ewald)(n, xyz.ctypes.data, q.ctypes.data, b.ctypes.data, tolerance,
                        ph.ctypes.data, fl.ctypes.data, ctypes.byref(e), w.ctypes.data, threads))
    return CoulombResult(ph, fl, e.value, w)


# ---- BLDTT ----------------------------------------------------------------------------------

def _bldtt_opts(kernel, param, theta, degree, leaf_size, method, device, threads):
    o = _c.CStruct("bldtt_opts")
    _c.bldtt_default_opts(o.ptr)
    k = ctypes.c_int()
    _check(_c.bldtt_kernel_from_name(kernel.encode(), ctypes.byref(k)), _c.bldtt_strerror)
    o["kernel"] = k.value
    o["param"] = _c.bldtt_kernel_default_param(k.value) if param is None else param
    o["theta"], o["degree"], o["leaf_size"] = theta, degree, leaf_size
    o["method"] = {"dtt": 0, "bltc": 1}[method]
    o["device"], o["threads"] = _device(device), threads
    return o


class BLDTTPlan(_Plan):
    """Kernel sums phi(x_i) = sum_j G(|x_i - y_j|) q_j by BLDTT (include/fmm_bldtt.h). kernel:
    'coulomb' 1/r, 'yukawa' exp(-p r)/r, 'regularized' 1/sqrt(r^2+p^2), 'sinc' sin(p r)/r,
    'multiquadric' sqrt(r^2+p^2); param p (None: the paper's default). theta and degree set
    the accuracy (docs/bldtt.md). Targets None: targets = sources, the self term left out."""

    _destroy = _c.bldtt_destroy

    def __init__(self, kernel="coulomb", param=None, theta=0.7, degree=8, leaf_size=0,
                 method="dtt", device="cpu", threads=0):
        super().__init__()
        self._o = _bldtt_opts(kernel, param, theta, degree, leaf_size, method, device, threads)
        _check(_c.bldtt_makeplan(self._o.ptr, ctypes.byref(self._p)), _c.bldtt_strerror)
        self.ns = self.nt = 0

    def setpts(self, sources, targets=None):
        s, ns = _points(sources, "sources")
        t, nt = (None, ns) if targets is None else _points(targets, "targets")
        _check(_c.bldtt_setpts(self._need(), ns, s.ctypes.data, nt if t is not None else 0,
                               _ptr(t)), _c.bldtt_strerror)
        self.ns, self.nt = ns, nt
        return self

    def execute(self, q, grad=False):
        """Weights q (ns) -> phi (nt), or (phi, grad (nt, 3)) with grad=True."""
        q = _values(q, self.ns, "q")
        phi = np.empty(self.nt)
        g = np.empty((self.nt, 3)) if grad else None
        _check(_c.bldtt_execute(self._need(), q.ctypes.data, phi.ctypes.data, _ptr(g)),
               _c.bldtt_strerror)
        return (phi, g) if grad else phi

    @property
    def info(self):
        i = _c.CStruct("bldtt_info")
        _check(_c.bldtt_get_info(self._need(), i.ptr), _c.bldtt_strerror)
        return i.as_dict()


def bldtt_direct(sources, q, targets=None, kernel="coulomb", param=None, grad=False, threads=0,
                 device="cpu"):
    """The direct sum with BLDTTPlan's kernel and conventions, the reference."""
    o = _bldtt_opts(kernel, param, 0.7, 8, 0, "dtt", device, threads)
    s, ns = _points(sources, "sources")
    t, nt = (None, ns) if targets is None else _points(targets, "targets")
    q = _values(q, ns, "q")
    phi = np.empty(nt)
    g = np.empty((nt, 3)) if grad else None
    _check(_c.bldtt_direct(o.ptr, ns, s.ctypes.data, q.ctypes.data, nt if t is not None else 0,
                           _ptr(t), phi.ctypes.data, _ptr(g)), _c.bldtt_strerror)
    return (phi, g) if grad else phi


# ---- fast Gauss transform --------------------------------------------------------------------

class FGTPlan(_Plan):
    """G(y_j) = sum_i q_i exp(-|y_j - x_i|^2 / h^2) in dim = 1, 2 or 3 (include/fmm_fgt.h),
    with max |G - G_exact| <= tolerance * sum |q|. Targets None: targets = sources."""

    _destroy = _c.fgt_destroy

    def __init__(self, bandwidth, dim=3, tolerance=1e-6, threads=0, device="cpu", box_side=0.0,
                 force_mode="auto"):
        super().__init__()
        o = _c.CStruct("fgt_opts")
        _c.fgt_default_opts(o.ptr)
        o["tolerance"], o["threads"], o["device"] = tolerance, threads, _device(device)
        o["box_side"] = box_side
        o["force_mode"] = {"auto": 0, "direct": 1, "hermite": 2, "taylor": 3, "h2t": 4}[force_mode]
        self.dim = dim
        _check(_c.fgt_makeplan(dim, bandwidth, o.ptr, ctypes.byref(self._p)), _c.fgt_strerror)
        self.ns = self.nt = 0

    def setpts(self, sources, targets=None):
        s, ns = _points(sources, "sources", self.dim)
        t, nt = (None, ns) if targets is None else _points(targets, "targets", self.dim)
        _check(_c.fgt_setpts(self._need(), ns, s.ctypes.data, nt, _ptr(t)), _c.fgt_strerror)
        self.ns, self.nt = ns, nt
        return self

    def execute(self, q):
        """Weights q (ns) -> G (nt)."""
        q = _values(q, self.ns, "q")
        g = np.empty(self.nt)
        _check(_c.fgt_execute(self._need(), q.ctypes.data, g.ctypes.data), _c.fgt_strerror)
        return g

    @property
    def info(self):
        i = _c.CStruct("fgt_info")
        _check(_c.fgt_get_info(self._need(), i.ptr), _c.fgt_strerror)
        return i.as_dict()


def fgt_direct(sources, q, bandwidth, targets=None, dim=3, threads=0):
    """The direct Gauss sum, the reference."""
    s, ns = _points(sources, "sources", dim)
    t, nt = (None, ns) if targets is None else _points(targets, "targets", dim)
    q = _values(q, ns, "q")
    g = np.empty(nt)
    _check(_c.fgt_direct(dim, bandwidth, ns, s.ctypes.data, q.ctypes.data, nt, _ptr(t),
                         g.ctypes.data, threads), _c.fgt_strerror)
    return g


# ---- RBF interpolation -----------------------------------------------------------------------

RBFFit = namedtuple("RBFFit", "lam alpha result")
RBFFit.__doc__ = """The interpolant's coefficients lam (n) and constant alpha, and the fit's
fmm_rbf_result as a dict (iterations, max_residual, times, solver, ...)."""

_MATVECS = {"auto": 0, "direct": 1, "series": 2, "bldtt": 3}


class RBFPlan(_Plan):
    """Multiquadric RBF interpolation s(x) = sum_i lam_i sqrt(|x - x_i|^2 + c^2) + alpha
    (include/fmm_rbf.h): fit() to values at the centres, evaluate() anywhere. shape c in the
    coordinates' unit; the fit stops at max|residual| <= tolerance * max|f|."""

    _destroy = _c.fmm_rbf_destroy

    def __init__(self, shape=1.0, tolerance=1e-8, lset_size=0, max_iter=500, matvec="auto",
                 series_tol=0.0, device="cpu", threads=0, seed=1, mixed_precision=True,
                 dense_max=None):
        super().__init__()
        o = _c.CStruct("fmm_rbf_opts")
        _c.fmm_rbf_default_opts(o.ptr)
        o["shape"], o["tolerance"], o["lset_size"], o["max_iter"] = (shape, tolerance,
                                                                     lset_size, max_iter)
        o["matvec"], o["series_tol"] = _MATVECS[matvec], series_tol
        o["device"], o["threads"], o["seed"] = _device(device), threads, seed
        o["mixed_precision"] = int(bool(mixed_precision))
        if dense_max is not None:
            o["dense_max"] = dense_max
        _check(_c.fmm_rbf_makeplan(o.ptr, ctypes.byref(self._p)), _c.fmm_rbf_strerror)
        self.n = 0

    def setpts(self, xyz):
        """The centres (n, 3)."""
        xyz, n = _points(xyz, "xyz")
        _check(_c.fmm_rbf_setpts(self._need(), n, xyz.ctypes.data), _c.fmm_rbf_strerror)
        self.n = n
        return self

    def fit(self, f):
        """Values f (n) at the centres -> RBFFit(lam, alpha, result)."""
        f = _values(f, self.n, "f")
        lam, alpha, res = np.empty(self.n), ctypes.c_double(), _c.CStruct("fmm_rbf_result")
        _check(_c.fmm_rbf_execute(self._need(), f.ctypes.data, lam.ctypes.data,
                                  ctypes.byref(alpha), res.ptr), _c.fmm_rbf_strerror)
        return RBFFit(lam, alpha.value, res.as_dict())

    def evaluate(self, fit, points):
        """s at points (m, 3) for a fit (an RBFFit, or (lam, alpha))."""
        lam, alpha = fit[0], fit[1]
        lam = _values(lam, self.n, "lam")
        p, m = _points(points, "points")
        s = np.empty(m)
        _check(_c.fmm_rbf_eval(self._need(), lam.ctypes.data, alpha, m, p.ctypes.data,
                               s.ctypes.data), _c.fmm_rbf_strerror)
        return s

    def matvec(self, w):
        """out_i = sum_j w_j sqrt(|x_i - x_j|^2 + c^2) at the centres, by the plan's method."""
        w = _values(w, self.n, "w")
        out = np.empty(self.n)
        _check(_c.fmm_rbf_matvec(self._need(), w.ctypes.data, out.ctypes.data, None),
               _c.fmm_rbf_strerror)
        return out
