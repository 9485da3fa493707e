"""Tests of the Python package against independent references (direct and Ewald sums, numpy)
on fresh random inputs: each test prints its seed (pytest -s shows it; a failure shows it
anyway), and FMM_TEST_SEED=S repeats a run."""
import os

import numpy as np
import pytest

import fmm


@pytest.fixture
def rng(request):
    seed = int(os.environ.get("FMM_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: seed {seed}")
    return np.random.default_rng(seed)


def rel_l2(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def test_version():
    assert fmm.__version__ == fmm.version()
    assert fmm.version().count(".") == 2
    assert fmm.build_info().startswith("cuda ")


@pytest.mark.parametrize("tol", [1e-3, 1e-6, 1e-9])
def test_coulomb_open_against_direct(rng, tol):
    n = 3000
    x, q = rng.random((n, 3)), rng.uniform(-1, 1, n)
    r = fmm.coulomb(x, q, tolerance=tol)
    d = fmm.coulomb_direct(x, q)
    assert rel_l2(r.phi, d.phi) <= tol
    assert abs(r.energy - d.energy) <= tol * abs(d.energy)
    assert r.field.shape == (n, 3) and r.virial is None


def test_coulomb_periodic_against_ewald(rng):
    n, L, tol = 2000, 2.0, 1e-6
    x = rng.random((n, 3)) * L
    q = rng.uniform(-1, 1, n)
    q -= q.mean()  # neutral
    r = fmm.coulomb(x, q, tolerance=tol, box=L, periodic=True, virial=True)
    e = fmm.ewald(x, q, L, tolerance=1e-12)
    assert rel_l2(r.phi, e.phi) <= tol
    assert abs(r.energy - e.energy) <= tol * abs(e.energy)
    assert r.virial.shape == (3, 3)


def test_coulomb_triclinic_cell_against_ewald(rng):
    # a dodecahedron-like cell: rows a, b, c with b and c sheared (GROMACS's limits)
    cell = np.array([[2.0, 0, 0], [0.6, 1.9, 0], [-0.5, 0.7, 1.8]])
    n, tol = 400, 1e-5
    f = rng.random((n, 3))
    x = f @ cell  # inside the cell
    q = rng.uniform(-1, 1, n)
    q -= q.mean()
    with fmm.CoulombPlan(tolerance=tol, box=cell, periodic=True) as p:
        r = p.setpts(x).execute(q)
        info = p.info
    e = fmm.ewald(x, q, cell, tolerance=1e-12)
    assert np.allclose(np.reshape(info["cell"], (3, 3)), cell)
    assert rel_l2(r.phi, e.phi) <= tol
    assert abs(r.energy - e.energy) <= tol * abs(e.energy)


def test_plan_reuse_and_input_conversions(rng):
    n = 1500
    x, q1, q2 = rng.random((n, 3)), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    with fmm.CoulombPlan(tolerance=1e-6) as p:
        p.setpts(x)
        a1, a2 = p.execute(q1), p.execute(q2)
        info = p.info
    b2 = fmm.coulomb(x, q2)
    assert np.array_equal(a2.phi, b2.phi) and np.array_equal(a2.field, b2.field)
    assert info["order"] > 0 and info["nleaves"] >= 1 and len(info["center"]) == 3
    # Fortran order, a strided view, float32 and a flat list: converted, the same numbers
    xf = np.asfortranarray(x)
    xs = np.repeat(x, 2, axis=0)[::2]
    assert not xs.flags.c_contiguous
    for xv in (xf, xs, x.ravel().tolist()):
        assert np.array_equal(fmm.coulomb(xv, q1).phi, a1.phi)
    x32 = x.astype(np.float32)
    assert np.array_equal(fmm.coulomb(x32, q1).phi, fmm.coulomb(x32.astype(np.float64), q1).phi)
    with pytest.raises(ValueError, match="closed"):
        p.execute(q1)


def test_errors_carry_the_library_messages(rng):
    x = rng.random((10, 3))
    with pytest.raises(fmm.FMMError, match="tolerance") as e:
        fmm.CoulombPlan(tolerance=1.0)
    assert e.value.status != 0
    x[3] = x[7]
    with pytest.raises(fmm.FMMError, match="same position|coincident"):
        fmm.coulomb(x, np.ones(10))
    x[3, 0] = np.nan
    with pytest.raises(fmm.FMMError, match="NaN|finite"):
        fmm.coulomb(x, np.ones(10))
    with pytest.raises(ValueError, match="expected 10 values"):
        fmm.coulomb(rng.random((10, 3)), np.ones(9))
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        fmm.coulomb(rng.random((10, 4)), np.ones(10))
    with pytest.raises(fmm.FMMError):
        fmm.FGTPlan(bandwidth=-1.0)
    with pytest.raises(fmm.FMMError, match="kernel|parameter"):
        fmm.BLDTTPlan(kernel="gaussian")
    if fmm.cuda_device_count() == 0:
        with pytest.raises(fmm.FMMError, match="CUDA|device"):
            fmm.CoulombPlan(device="cuda")


def test_bldtt_against_direct(rng):
    n = 8000
    x, q = rng.random((n, 3)), rng.uniform(-1, 1, n)
    for kernel, param in (("coulomb", None), ("multiquadric", 0.2)):
        with fmm.BLDTTPlan(kernel, param, theta=0.7, degree=8, leaf_size=100) as p:
            phi, grad = p.setpts(x).execute(q, grad=True)
            assert sum(p.info["pairs"][1:]) > 0  # expansions were used, not only direct sums
        dphi, dgrad = fmm.bldtt_direct(x, q, None, kernel, param, grad=True)
        assert rel_l2(phi, dphi) <= 1e-6, kernel
        assert rel_l2(grad, dgrad) <= 1e-6, kernel


def test_bldtt_yukawa_against_numpy(rng):
    ns, nt, kappa = 1500, 400, 3.0
    s, t, q = rng.random((ns, 3)), rng.random((nt, 3)), rng.uniform(-1, 1, ns)
    r = np.sqrt(((t[:, None, :] - s[None, :, :]) ** 2).sum(-1))
    ref = (np.exp(-kappa * r) / r) @ q
    assert rel_l2(fmm.bldtt_direct(s, q, t, "yukawa", kappa), ref) <= 1e-13
    phi = fmm.BLDTTPlan("yukawa", kappa, leaf_size=50).setpts(s, t).execute(q)
    assert rel_l2(phi, ref) <= 1e-6


def test_fgt_against_direct(rng):
    for dim in (1, 2, 3):
        ns, nt, h, tol = 5000, 2000, 0.05, 1e-8
        s, t, q = rng.random((ns, dim)), rng.random((nt, dim)), rng.random(ns)
        with fmm.FGTPlan(h, dim=dim, tolerance=tol) as p:
            g = p.setpts(s, t).execute(q)
        ref = fmm.fgt_direct(s, q, h, t, dim=dim)
        # the independent check: numpy's direct sum
        ref_np = (np.exp(-((t[:, None, :] - s[None, :, :]) ** 2).sum(-1) / h**2) @ q)
        assert np.max(np.abs(ref - ref_np)) <= 1e-12 * q.sum()
        assert np.max(np.abs(g - ref)) <= tol * q.sum(), dim
    with fmm.FGTPlan(h, tolerance=tol, force_mode="hermite") as p:  # dim 3, every pair Hermite
        g = p.setpts(s, t).execute(q)
        assert p.info["pairs"][2] > 0
    assert np.max(np.abs(g - ref)) <= tol * q.sum()


def test_rbf_fit_and_evaluate(rng):
    n, c, tol = 800, 0.2, 1e-8
    x = rng.random((n, 3))

    def f(p):
        return np.sin(2 * p[:, 0]) * np.cos(p[:, 1]) + p[:, 2] ** 2

    with fmm.RBFPlan(shape=c, tolerance=tol) as p:
        fit = p.setpts(x).fit(f(x))
        y = 0.1 + 0.8 * rng.random((300, 3))
        s = p.evaluate(fit, y)
        mv = p.matvec(fit.lam)
    assert fit.result["max_residual"] <= tol
    # independent: numpy's dense multiquadric matrix
    A = np.sqrt(((x[:, None, :] - x[None, :, :]) ** 2).sum(-1) + c * c)
    assert np.max(np.abs(A @ fit.lam + fit.alpha - f(x))) <= 2 * tol * np.max(np.abs(f(x)))
    assert np.max(np.abs(mv - A @ fit.lam)) <= 1e-12 * np.abs(A @ np.abs(fit.lam)).max()
    B = np.sqrt(((y[:, None, :] - x[None, :, :]) ** 2).sum(-1) + c * c)
    assert np.max(np.abs(s - (B @ fit.lam + fit.alpha))) <= 1e-10 * np.max(np.abs(s))
    assert np.max(np.abs(s - f(y))) < 1e-2  # an interpolant of a smooth function


class FakeGPUArray:
    """An object with __cuda_array_interface__ (no GPU behind it) and CuPy's .get()."""

    def __init__(self, a):
        self.a = np.ascontiguousarray(a)
        self.__cuda_array_interface__ = {"shape": self.a.shape, "typestr": self.a.dtype.str,
                                         "data": (self.a.ctypes.data, False), "version": 3,
                                         "strides": None}

    def get(self):
        return self.a


def test_gpu_arrays_without_a_gpu(rng):
    n = 100
    x32 = (rng.random((n, 3)) * 2).astype(np.float32)
    q = rng.uniform(-1, 1, n)
    p = fmm.CoulombPlan(box=2.0, periodic=True)
    # the device route checks the arrays first, then a CPU plan refuses it
    with pytest.raises(TypeError, match="float32"):
        p.forces(FakeGPUArray(x32.astype(np.float64)), q, FakeGPUArray(x32))
    with pytest.raises(TypeError, match="GPU array"):
        p.forces(x32, q, FakeGPUArray(x32))
    with pytest.raises(fmm.FMMError, match="CUDA|device"):
        p.forces(FakeGPUArray(x32), q, FakeGPUArray(np.empty_like(x32)))
    # solvers without a device route take GPU arrays through a copy to the host
    s, t, w = rng.random((500, 3)), rng.random((50, 3)), rng.random(500)
    g = fmm.FGTPlan(0.1).setpts(FakeGPUArray(s), FakeGPUArray(t)).execute(FakeGPUArray(w))
    assert np.array_equal(g, fmm.FGTPlan(0.1).setpts(s, t).execute(w))


class CudartArray:
    """A GPU array without CuPy or PyTorch: device memory from the CUDA runtime that the
    package's libfmm.so loaded (found in /proc/self/maps), with __cuda_array_interface__."""

    def __init__(self, host):
        import ctypes
        path = next(line.split()[-1] for line in open("/proc/self/maps") if "libcudart" in line)
        self.rt = ctypes.CDLL(path)
        self.host = np.ascontiguousarray(host)
        self.ptr = ctypes.c_void_p()
        assert self.rt.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(self.host.nbytes)) == 0
        self._copy(self.ptr, self.host.ctypes.data, 1)  # cudaMemcpyHostToDevice
        self.__cuda_array_interface__ = {"shape": self.host.shape, "typestr": self.host.dtype.str,
                                         "data": (self.ptr.value, False), "version": 3,
                                         "strides": None}

    def _copy(self, dst, src, kind):
        import ctypes
        assert self.rt.cudaMemcpy(ctypes.c_void_p(dst if isinstance(dst, int) else dst.value),
                                  ctypes.c_void_p(src if isinstance(src, int) else src.value),
                                  ctypes.c_size_t(self.host.nbytes), kind) == 0

    def get(self):
        out = np.empty_like(self.host)
        self._copy(out.ctypes.data, self.ptr, 2)  # cudaMemcpyDeviceToHost
        return out

    def __del__(self):
        self.rt.cudaFree(self.ptr)


def _gpu_arrays():
    """(to_device, to_host) of CuPy, PyTorch, or else CudartArray."""
    try:
        import cupy
        return cupy.asarray, lambda a: a.get()
    except ImportError:
        pass
    try:
        import torch
        if torch.cuda.is_available():
            return (lambda a: torch.from_numpy(a).cuda()), (lambda a: a.cpu().numpy())
    except ImportError:
        pass
    return CudartArray, (lambda a: a.get())


@pytest.mark.skipif(fmm.cuda_device_count() == 0,
                    reason="needs a CUDA build of the package (FMM_CUDA=ON) and a GPU")
def test_gpu_device_route_no_copies(rng):
    to_device, to_host = _gpu_arrays()
    n, L = 5000, 3.0
    x = (rng.random((n, 3)) * L).astype(np.float32)
    q = rng.uniform(-1, 1, n)
    q -= q.mean()
    dx, dout = to_device(x), to_device(np.zeros((n, 3), np.float32))
    with fmm.CoulombPlan(tolerance=1e-6, box=L, periodic=True, device="cuda") as p:
        energy, _ = p.forces(dx, q, dout, scale=1.0, energy=True)
        forces = to_host(dout)
    q32 = q.astype(np.float32).astype(np.float64)
    ref = fmm.ewald(x.astype(np.float64), q32, L)
    assert abs(energy - ref.energy) <= 1e-4 * abs(ref.energy)
    assert rel_l2(forces, q32[:, None] * ref.field) <= 1e-4
