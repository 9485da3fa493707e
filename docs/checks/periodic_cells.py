#!/usr/bin/env python3
"""Periodic far field of the spherical-harmonic FMM for general (triclinic) cells: a standalone check
of the formulas in docs/periodic-cells.md.   python3 docs/checks/periodic_cells.py   (numpy, scipy;
exit status 1 if a check fails; about a minute).

Conventions (the library's, core/harmonics.h):
  obar_lm(x) = |x|^l/(l+m)! P_lm(cos t) e^{-i m phi}      regular   (R_lm in the C code)
  mu_lm(x)   = (l-m)!/|x|^{l+1} P_lm(cos t) e^{+i m phi}  irregular (I_lm in the C code)
  1/|x-y| = sum_lm obar_lm(x) mu_lm(y) (|x|<|y|);  P2M w_lm = sum q obar_lm(x-c);
  M2L u_lm += sum_jk (-1)^j w_jk mu_{l+j,m+k}(source centre - target centre);  L2P phi = sum u_lm obar_lm(x-c).
  Full index s = l*l + l + m.  Gaussian units (phi = q/r).
Cells: H has the lattice vectors as ROWS, a = (ax,0,0), b = (bx,by,0), c = (cx,cy,cz) (GROMACS's form);
lattice vectors R = n @ H for integer triples n.  Strain: x -> (I+e) x, H -> H (I+e)^T.
"""
import math
import sys
import time

import numpy as np
from scipy.special import erfc, factorial, gammainc, gammaincc, gammaln, lpmv

T0 = time.time()
FAIL = []


def check(name, ok, msg=""):
    print(("  [ok]   " if ok else "  [FAIL] ") + name + ("  " + msg if msg else ""))
    if not ok:
        FAIL.append(name)


def relerr(a, b):
    return np.linalg.norm(np.ravel(a - b)) / np.linalg.norm(np.ravel(b))


# ================================================================== solid harmonics (library conventions)
def lm_of(P):
    l = np.concatenate([np.full(2 * k + 1, k) for k in range(P + 1)])
    m = np.concatenate([np.arange(-k, k + 1) for k in range(P + 1)])
    return l, m


def sidx(l, m):
    return l * l + l + m


def obar(P, X):
    """regular harmonics obar_lm(X), l <= P, X (n,3) -> (n,(P+1)^2) complex"""
    X = np.atleast_2d(np.asarray(X, float))
    n = len(X)
    x, y, z = X[:, 0], X[:, 1], X[:, 2]
    r2 = x * x + y * y + z * z
    wb = x - 1j * y
    out = np.zeros((n, (P + 1) ** 2), complex)
    diag = np.ones(n, complex)
    for m in range(P + 1):
        if m > 0:
            diag = -wb / (2 * m) * diag
        prev, cur = np.zeros(n, complex), diag
        out[:, sidx(m, m)] = cur
        for l in range(m, P):
            nxt = ((2 * l + 1) * z * cur - r2 * prev) / ((l + 1) ** 2 - m * m)
            out[:, sidx(l + 1, m)] = nxt
            prev, cur = cur, nxt
    for l in range(1, P + 1):
        for m in range(1, l + 1):
            out[:, sidx(l, -m)] = (-1) ** m * np.conj(out[:, sidx(l, m)])
    return out


def irreg(P, X):
    """irregular harmonics mu_lm(X), l <= P"""
    X = np.atleast_2d(np.asarray(X, float))
    n = len(X)
    x, y, z = X[:, 0], X[:, 1], X[:, 2]
    r2 = x * x + y * y + z * z
    w = x + 1j * y
    out = np.zeros((n, (P + 1) ** 2), complex)
    diag = 1 / np.sqrt(r2) + 0j
    for m in range(P + 1):
        if m > 0:
            diag = -(2 * m - 1) * w / r2 * diag
        prev, cur = np.zeros(n, complex), diag
        out[:, sidx(m, m)] = cur
        for l in range(m, P):
            nxt = ((2 * l + 1) * z * cur - (l * l - m * m) * prev) / r2
            out[:, sidx(l + 1, m)] = nxt
            prev, cur = cur, nxt
    for l in range(1, P + 1):
        for m in range(1, l + 1):
            out[:, sidx(l, -m)] = (-1) ** m * np.conj(out[:, sidx(l, m)])
    return out


def m2l_matrix(P, G):
    """T[(lm),(jk)] = (-1)^j G_{l+j,m+k}: one M2L with a table G (e.g. lattice sums), G of order >= 2P"""
    l, m = lm_of(P)
    return ((-1.0) ** l)[None, :] * G[sidx(l[:, None] + l[None, :], m[:, None] + m[None, :])]


def m2m_from_B(P, B):
    """S[(lm),(jk)] = B_{l-j,m-k}: M2M with B = sum over copies of obar(copy offset)"""
    l, m = lm_of(P)
    Ld = l[:, None] - l[None, :]
    Md = m[:, None] - m[None, :]
    ok = (Ld >= 0) & (np.abs(Md) <= Ld)
    S = np.zeros((len(l), len(l)), complex)
    S[ok] = B[sidx(Ld[ok], Md[ok])]
    return S


def l2p(mu, P, Y):
    """potential and field E = -grad phi of the local expansion mu (about 0) at the points Y"""
    O = obar(P, Y)
    phi = (O @ mu).real
    l, m = lm_of(P)
    d = {}
    for mm in (0, 1):
        sel = (l >= 1) & (np.abs(m - mm) <= l - 1)
        d[mm] = O[:, sidx(l[sel] - 1, m[sel] - mm)] @ mu[sel]
    return phi, np.stack([d[1].real, d[1].imag, -d[0].real], 1)


def conv_ww(w, p):
    """C_LM = sum_{(lm)+(jk)=(LM)} (-1)^j w_lm w_jk = sum_ij q_i q_j obar_LM(Y_i - Y_j)  (L <= 2p)"""
    l, m = lm_of(p)
    C = np.zeros((2 * p + 1) ** 2, complex)
    np.add.at(C, sidx(l[:, None] + l[None, :], m[:, None] + m[None, :]).ravel(),
              (w[:, None] * w[None, :] * ((-1.0) ** l)[None, :]).ravel())
    return C


def hess_to_a2(Hs):
    """A_2M (M = -2..2) of the harmonic quadratic 1/2 r.Hs.r = sum_M obar_2M(r) A_2M (Hs traceless)"""
    return np.array([Hs[0, 0] - Hs[1, 1] - 2j * Hs[0, 1], Hs[0, 2] - 1j * Hs[1, 2], Hs[2, 2] + 0j,
                     -Hs[0, 2] - 1j * Hs[1, 2], Hs[0, 0] - Hs[1, 1] + 2j * Hs[0, 1]])


def a2_to_hess(A2):
    """inverse of hess_to_a2 (traceless symmetric 3x3 from the five A_2M)"""
    zz = A2[2].real
    xz, yz = -A2[3].real, -A2[3].imag
    xy = A2[4].imag / 2
    xxmyy = A2[4].real
    xx = (xxmyy - zz) / 2
    yy = -xx - zz
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


# ================================================================== cells, wrapping, domains
def cell_rect(lx, ly, lz):
    return np.diag([lx, ly, lz]).astype(float)


def cell_dodecahedron(d):        # GROMACS editconf -bt dodecahedron (xy-square)
    return np.array([[d, 0, 0], [0, d, 0], [d / 2, d / 2, d * math.sqrt(2) / 2]])


def cell_octahedron(d):          # GROMACS editconf -bt octahedron
    return np.array([[d, 0, 0], [d / 3, 2 * math.sqrt(2) * d / 3, 0],
                     [-d / 3, math.sqrt(2) * d / 3, math.sqrt(6) * d / 3]])


def cell_random(rng, scale=1.0):
    """a random cell within GROMACS's limits (diagonals 0.75..1.3, |bx|,|cx| <= ax/2, |cy| <= by/2)"""
    ax, by, cz = rng.uniform(0.75, 1.3, 3) * scale
    return np.array([[ax, 0, 0], [rng.uniform(-.5, .5) * ax, by, 0],
                     [rng.uniform(-.5, .5) * ax, rng.uniform(-.5, .5) * by, cz]])


def gromacs_ok(H, eps=1e-12):
    ax, by, cz = H[0, 0], H[1, 1], H[2, 2]
    return (abs(H[0, 1]) + abs(H[0, 2]) + abs(H[1, 2]) == 0 and min(ax, by, cz) > 0 and
            abs(H[1, 0]) <= ax / 2 * (1 + eps) and abs(H[2, 0]) <= ax / 2 * (1 + eps) and
            abs(H[2, 1]) <= by / 2 * (1 + eps))


def volume(H):
    return abs(np.linalg.det(H))


def wrap_brick(X, H):
    """into [0,ax) x [0,by) x [0,cz): z by c, then y by b, then x by a (lower-triangular H)"""
    X = np.array(X, float)
    for r in (2, 1, 0):
        k = np.floor(X[:, r] / H[r, r])
        X -= k[:, None] * H[r]
    return X


def wrap_ppd(X, H):
    """into the parallelepiped {f @ H, f in [0,1)^3}"""
    F = X @ np.linalg.inv(H)
    return (F - np.floor(F)) @ H


def domain(H, kind):
    """centre and radius (about the centre) of the root region: the brick or the parallelepiped"""
    if kind == "brick":
        e = np.diag(H)
        return 0.5 * e, 0.5 * np.linalg.norm(e)
    corners = np.array([(i, j, k) for i in (-.5, .5) for j in (-.5, .5) for k in (-.5, .5)]) @ H
    return 0.5 * H.sum(0), np.linalg.norm(corners, axis=1).max()


def lattice_points(H, rmax, strict=True):
    """integer triples n with |n @ H| < rmax (or <=), sorted by length"""
    Hi = np.linalg.inv(H)
    nm = [int(math.ceil(rmax * np.linalg.norm(Hi[:, i]))) + 1 for i in range(3)]
    g = np.array(np.meshgrid(*[np.arange(-k, k + 1) for k in nm], indexing='ij')).reshape(3, -1).T
    r = np.linalg.norm(g @ H, axis=1)
    g = g[(r < rmax) if strict else (r <= rmax * (1 + 1e-12))]
    return g[np.argsort(np.linalg.norm(g @ H, axis=1), kind='stable')]


THETA = math.sqrt(3) / 2     # the cube's level-0 separation ratio: 2 r_cube / (2L)


def near_set(H, r, theta=THETA):
    """the images the tree handles: all R with |R| < 2r/theta (so every far image has 2r/|R| <= theta)"""
    return lattice_points(H, 2 * r / theta)


# ================================================================== Ewald reference, general cell
def ewald(X, q, H, alpha=None, want_virial=True, s=6.2):
    """tin-foil Ewald sum with neutralising background: phi_i, E_i, U, W (W_ab = -dU/de_ab).
    alpha = s / r_c; real space over all images within r_c, reciprocal space |k| <= 2 alpha s."""
    X = np.asarray(X, float)
    q = np.asarray(q, float)
    N = len(q)
    V = volume(H)
    if alpha is None:
        alpha = 5.0 / V ** (1 / 3)
    rc = s / alpha
    # pairs x_i - x_j + R within rc: R up to rc + the spread of the positions
    spread = np.linalg.norm(X.max(0) - X.min(0))
    phi = np.zeros(N)
    E = np.zeros((N, 3))
    W = np.zeros((3, 3))
    for n in lattice_points(H, rc + spread, strict=False):
        R = X[:, None, :] - X[None, :, :] + n @ H
        r = np.sqrt((R * R).sum(-1))
        if not n.any():
            np.fill_diagonal(r, np.inf)
        m = r < rc
        if not m.any():
            continue
        rr = np.where(m, r, np.inf)
        ef = erfc(alpha * rr) / rr
        phi += ef @ q
        g = (ef + 2 * alpha / math.sqrt(math.pi) * np.exp(-alpha * alpha * rr * rr)) / (rr * rr)
        E += np.einsum('ij,ijc,j->ic', g, R, q)
        if want_virial:
            W += 0.5 * np.einsum('ij,ija,ijb->ab', g * q[:, None] * q[None, :], R, R)
    kc = 2 * alpha * s
    Hi = np.linalg.inv(H)
    B = 2 * math.pi * Hi.T                    # reciprocal vectors as rows: k = m @ B
    M = lattice_points(B, kc, strict=False)
    M = M[(M != 0).any(1)]
    K = M @ B
    k2 = (K * K).sum(1)
    f = np.exp(-k2 / (4 * alpha * alpha)) / k2
    Sk = np.zeros(len(K), complex)
    for i0 in range(0, N, 64):
        Sk += np.exp(1j * X[i0:i0 + 64] @ K.T).T @ q[i0:i0 + 64]
    for i0 in range(0, N, 64):
        t = np.exp(-1j * X[i0:i0 + 64] @ K.T) * Sk[None, :]
        phi[i0:i0 + 64] += 4 * math.pi / V * (t.real @ f)
        E[i0:i0 + 64] += -4 * math.pi / V * ((t.imag * f[None, :]) @ K)
    Q = q.sum()
    phi += -2 * alpha / math.sqrt(math.pi) * q - math.pi * Q / (V * alpha * alpha)
    U = 0.5 * q @ phi
    if want_virial:
        S2 = np.abs(Sk) ** 2
        W += 2 * math.pi / V * ((f @ S2) * np.eye(3)
                                - 2 * np.einsum('k,ka,kb->ab', f * S2 * (1 / k2 + 1 / (4 * alpha * alpha)), K, K))
        W -= math.pi * Q * Q / (2 * V * alpha * alpha) * np.eye(3)
    return phi, E, U, W


# ================================================================== the far operator of a general cell
def dfact(n):
    return 1.0 if n <= 0 else float(np.prod(np.arange(n, 0, -2, dtype=float)))


_CLM = {}


def c_lm(Lmax):
    """c_LM = (L-M)!(L+M)!/((-1)^L (2L-1)!!):  mu_LM(R) = c_LM Z_LM(grad) 1/r at R, Z_LM = conj(obar_LM)"""
    if Lmax not in _CLM:
        l, m = lm_of(Lmax)
        df = np.array([(-1.0) ** L * dfact(2 * L - 1) for L in range(Lmax + 1)])
        _CLM[Lmax] = factorial(l - m) * factorial(l + m) / df[l]
    return _CLM[Lmax]


def far_ewald(H, Nidx, Lmax, alpha=None):
    """Taylor coefficients at r = 0 of psi_far(r) = psi_Ewald(r) - sum_{n in N} 1/|r + nH| (psi_Ewald: zero-mean
    tin-foil Ewald potential of a unit charge and its images), as the table A (full index, L <= Lmax) of
    psi_far(r) = A_00 + (2pi/3V)|r|^2 + sum_{L>=1} A_LM obar_LM(r):
      A_LM = sum_{R not in N} mu_LM(R) Q_L(a^2R^2) - sum_{R in N, R != 0} mu_LM(R) P_L(a^2R^2)
             + c_LM (4pi/V) sum_{k != 0} i^L Z_LM(k) exp(-k^2/4a^2)/k^2   (+ the L = 0 constants below),
    Q_L, P_L the regularised upper/lower incomplete gamma functions of order L + 1/2 (Hobson's theorem).
    L = 0: A_00 = c0, the constant of the far pair potential; L = 2: the traceless part of the tin-foil far
    Hessian; odd L are returned as computed (zero up to rounding for an inversion-symmetric N)."""
    V = volume(H)
    if alpha is None:
        alpha = 1.7 / V ** (1 / 3)
    l, m = lm_of(Lmax)
    Lv = np.arange(Lmax + 1)
    Rc = math.sqrt(40.0 + Lmax) / alpha
    near = set(map(tuple, Nidx))
    pts = lattice_points(H, Rc)
    extra = [n for n in Nidx if np.linalg.norm(n @ H) >= Rc]
    if extra:
        pts = np.concatenate([pts, np.array(extra)])
    pts = pts[(pts != 0).any(1)]
    inN = np.array([tuple(n) in near for n in pts])
    R = pts @ H
    x = alpha * alpha * (R * R).sum(1)
    gq = gammaincc(Lv[None, :] + 0.5, x[:, None])
    gp = gammainc(Lv[None, :] + 0.5, x[:, None])
    wgt = np.where(inN[:, None], -gp, gq)[:, l]
    A = (irreg(Lmax, R) * wgt).sum(0)
    B = 2 * math.pi * np.linalg.inv(H).T
    kc = 2 * alpha * math.sqrt(50.0 + Lmax)
    M = lattice_points(B, kc)
    M = M[(M != 0).any(1)]
    K = M @ B
    k2 = (K * K).sum(1)
    h = np.exp(-k2 / (4 * alpha * alpha)) / k2
    A = A + c_lm(Lmax) * (4 * math.pi / V) * (1j ** l) * (h @ np.conj(obar(Lmax, K)))
    A[0] += -2 * alpha / math.sqrt(math.pi) - math.pi / (V * alpha * alpha)
    return A


def _shift_maps(Lmax):
    """index maps for derivatives of full-index tables: mu_{l+1,m+1}, mu_{l+1,m-1}, mu_{l+1,m} (always exist) and
    obar_{l-1,m-1}, obar_{l-1,m+1}, obar_{l-1,m} (-1 where they do not exist)"""
    l, m = lm_of(Lmax)
    up = [sidx(l + 1, m + 1), sidx(l + 1, m - 1), sidx(l + 1, m)]
    dn = [np.where(np.abs(m + dm) <= l - 1, sidx(l - 1, m + dm), -1) for dm in (-1, 1, 0)]
    return up, dn


def grad_mu(Mu, Lmax):
    """(d/dx, d/dy, d/dz) mu_LM from mu_{L+1}: d_z mu_lm = -mu_{l+1,m}, d_x = (mu_{l+1,m+1} - mu_{l+1,m-1})/2,
    d_y = -i (mu_{l+1,m+1} + mu_{l+1,m-1})/2   (Mu: table of order Lmax + 1)"""
    (pp, pm, p0), _ = _shift_maps(Lmax)
    return [0.5 * (Mu[:, pp] - Mu[:, pm]), -0.5j * (Mu[:, pp] + Mu[:, pm]), -Mu[:, p0]]


def grad_obar(O, Lmax):
    """(d/dx, d/dy, d/dz) obar_LM: d_z = obar_{l-1,m}, d_x = (obar_{l-1,m+1} - obar_{l-1,m-1})/2,
    d_y = i (obar_{l-1,m+1} + obar_{l-1,m-1})/2"""
    _, (mm, mp, m0) = _shift_maps(Lmax)
    Oz = np.concatenate([O, np.zeros((len(O), 1))], 1)     # index -1 -> 0
    return [0.5 * (Oz[:, mp] - Oz[:, mm]), 0.5j * (Oz[:, mp] + Oz[:, mm]), Oz[:, m0]]


def far_ewald_strain(H, Nidx, Lmax, alpha=None):
    """far_ewald's table A and its analytic strain derivatives Vt[a,b] = dA/de_(ab) (symmetric strain; the near
    set N fixed as integer triples): real space R -> (I+e)R, reciprocal k -> (I+e)^-T k, V -> V (1 + tr e)."""
    V = volume(H)
    if alpha is None:
        alpha = 1.7 / V ** (1 / 3)
    l, m = lm_of(Lmax)
    Lv = np.arange(Lmax + 1)
    Rc = math.sqrt(40.0 + Lmax) / alpha
    near = set(map(tuple, Nidx))
    pts = lattice_points(H, Rc)
    extra = [n for n in Nidx if np.linalg.norm(n @ H) >= Rc]
    if extra:
        pts = np.concatenate([pts, np.array(extra)])
    pts = pts[(pts != 0).any(1)]
    inN = np.array([tuple(n) in near for n in pts])
    R = pts @ H
    x = alpha * alpha * (R * R).sum(1)
    g = np.where(inN[:, None], -gammainc(Lv[None, :] + 0.5, x[:, None]), gammaincc(Lv[None, :] + 0.5, x[:, None]))
    dg = -np.exp((Lv[None, :] - 0.5) * np.log(x[:, None]) - x[:, None] - gammaln(Lv[None, :] + 0.5))  # dg/dx
    g, dg = g[:, l], dg[:, l]
    Mu1 = irreg(Lmax + 1, R)
    Mu = Mu1[:, :(Lmax + 1) ** 2]
    A = (Mu * g).sum(0)
    dMu = grad_mu(Mu1, Lmax)
    D = np.zeros((3, 3, len(l)), complex)
    for a in range(3):
        Ta = dMu[a] * g + Mu * dg * (2 * alpha * alpha * R[:, a:a + 1])      # d_a of mu g at R
        for b in range(3):
            D[a, b] = R[:, b] @ Ta
    B = 2 * math.pi * np.linalg.inv(H).T
    kc = 2 * alpha * math.sqrt(50.0 + Lmax)
    M = lattice_points(B, kc)
    M = M[(M != 0).any(1)]
    K = M @ B
    k2 = (K * K).sum(1)
    h = np.exp(-k2 / (4 * alpha * alpha)) / k2
    dh = -h * (1 / (4 * alpha * alpha) + 1 / k2)
    Z = np.conj(obar(Lmax, K))
    dZ = [np.conj(t) for t in grad_obar(obar(Lmax, K), Lmax)]
    cf = c_lm(Lmax) * (4 * math.pi / V) * (1j ** l)
    rec = cf * (h @ Z)
    A = A + rec
    for a in range(3):
        for b in range(3):
            D[a, b] += -cf * ((K[:, a] * 2 * dh * K[:, b]) @ Z + (K[:, a] * h) @ dZ[b]) - (a == b) * rec
    A[0] += -2 * alpha / math.sqrt(math.pi) - math.pi / (V * alpha * alpha)
    for a in range(3):
        D[a, a, 0] += math.pi / (V * alpha * alpha)
    return A, 0.5 * (D + D.transpose(1, 0, 2))


def far_hessian(H, Nidx, alpha=None):
    """Cartesian Hessian at r = 0 of psi_far (tin-foil Ewald minus the near images N); trace 4pi/V"""
    V = volume(H)
    if alpha is None:
        alpha = 5.0 / V ** (1 / 3)
    I3 = np.eye(3)
    Hs = 4 * alpha ** 3 / (3 * math.sqrt(math.pi)) * I3
    for n in lattice_points(H, 6.5 / alpha):
        if not n.any():
            continue
        R = n @ H
        r = np.linalg.norm(R)
        u = np.outer(R, R) / r ** 2
        e = erfc(alpha * r)
        ex = 2 * alpha / math.sqrt(math.pi) * math.exp(-alpha * alpha * r * r)
        g1 = -e / r ** 2 - ex / r
        g2 = 2 * e / r ** 3 + 2 * ex / r ** 2 + 2 * alpha * alpha * ex
        Hs += g2 * u + g1 / r * (I3 - u)
    for n in Nidx:
        if n.any():
            R = n @ H
            r = np.linalg.norm(R)
            Hs -= (3 * np.outer(R, R) / r ** 2 - I3) / r ** 3
    B = 2 * math.pi * np.linalg.inv(H).T
    M = lattice_points(B, 13.0 * alpha)
    M = M[(M != 0).any(1)]
    K = M @ B
    k2 = (K * K).sum(1)
    return Hs - 4 * math.pi / V * np.einsum('k,ka,kb->ab', np.exp(-k2 / (4 * alpha * alpha)) / k2, K, K)


OFF27 = np.array([(a, b, c) for a in (-1, 0, 1) for b in (-1, 0, 1) for c in (-1, 0, 1)])
OFF702 = np.array([(a, b, c) for a in range(-4, 5) for b in range(-4, 5) for c in range(-4, 5)
                   if max(abs(a), abs(b), abs(c)) >= 2])


def lattice_renorm(H, Lmax, P=40, K=20, sup=(1, 1, 1)):
    """sum over the lattice points nH outside the 27 central blocks, L <= Lmax, by renormalisation (the recipe's
    1.6 for a general cell): a block is a supercell diag(sup) of the cell (odd sup, the block's points centred on
    the origin; (1,1,1): the cell itself), level k adds the 702 blocks of side 3^k blocks with 2 <= |m|_inf <= 4
    through the M2M of 27 copies (internal order P), K levels.  Only inversion symmetry is used (odd L = 0).
    L = 2 comes out as the supercell-ordered (shape-dependent) sum.  Returns (A, the inner set as triples)."""
    Msup = np.diag(sup)
    Hb = Msup @ H
    basis = np.array([(i, j, k) for i in range(-(sup[0] // 2), sup[0] // 2 + 1)
                      for j in range(-(sup[1] // 2), sup[1] // 2 + 1) for k in range(-(sup[2] // 2), sup[2] // 2 + 1)])
    B = obar(P, OFF27 @ Hb).sum(0)
    G = irreg(Lmax + P, OFF702 @ Hb).sum(0)
    lB, mB = lm_of(P)
    lG, _ = lm_of(Lmax + P)
    B[lB % 2 == 1] = 0
    G[lG % 2 == 1] = 0
    B[0] = 27.0
    S = m2m_from_B(P, B)
    lo, mo = lm_of(Lmax)
    T = ((-1.0) ** lB)[None, :] * G[sidx(lo[:, None] + lB[None, :], mo[:, None] + mB[None, :])]
    v = obar(P, basis @ H).sum(0)
    v[lB % 2 == 1] = 0
    out = np.zeros((Lmax + 1) ** 2, complex)
    with np.errstate(under='ignore'):
        for k in range(K + 1):
            out += 3.0 ** (-k * (lo + 1.0)) * (T @ v)
            v = 3.0 ** (-lB) * (S @ v)
    out[0] = 0.0
    inner = (OFF27 @ Msup)[:, None, :] + basis[None, :, :]
    return out, inner.reshape(-1, 3)


def near_correction(H, Nidx, Lmax, inner=OFF27):
    """sum_{n in inner \\ N, n != 0} mu(nH) - sum_{n in N \\ inner} mu(nH): from the far set of `inner` (the
    renormalisation's) to the far set of N"""
    a = set(map(tuple, inner))
    b = set(map(tuple, Nidx))
    plus = np.array([n for n in a - b if any(n)], float).reshape(-1, 3)
    minus = np.array([n for n in b - a], float).reshape(-1, 3)
    out = np.zeros((Lmax + 1) ** 2, complex)
    if len(plus):
        out += irreg(Lmax, plus @ H).sum(0)
    if len(minus):
        out -= irreg(Lmax, minus @ H).sum(0)
    return out


def depol(A, ng=48):
    """depolarisation tensor N_cd = (1/4pi) oint n_c y_d/|y|^3 dS of the body A [-1/2,1/2]^3 at its centre"""
    t, wt = np.polynomial.legendre.leggauss(ng)
    t = 0.5 * t
    wt = 0.5 * wt
    s_, u_ = np.meshgrid(t, t, indexing='ij')
    ww = np.outer(wt, wt).ravel()
    detA = np.linalg.det(A)
    AiT = np.linalg.inv(A).T
    N = np.zeros((3, 3))
    for ax in range(3):
        for sg in (-0.5, 0.5):
            U = np.zeros((ng * ng, 3))
            o = [d for d in range(3) if d != ax]
            U[:, ax] = sg
            U[:, o[0]] = s_.ravel()
            U[:, o[1]] = u_.ravel()
            Yp = U @ A.T
            r3 = np.linalg.norm(Yp, axis=1) ** 3
            N += np.outer(detA * AiT[:, ax] * np.sign(sg), (ww / r3) @ Yp)
    return N / (4 * math.pi)


# ------------------------------------------------------------------ uniform brick: potential and multipole
def _F(x, y, z):
    r = np.sqrt(x * x + y * y + z * z)
    return (y * z * np.log(x + r) + x * z * np.log(y + r) + x * y * np.log(z + r)
            - 0.5 * x * x * np.arctan(y * z / (x * r)) - 0.5 * y * y * np.arctan(x * z / (y * r))
            - 0.5 * z * z * np.arctan(x * y / (z * r)))


def _Fx(x, y, z):
    r = np.sqrt(x * x + y * y + z * z)
    return y * np.log(z + r) + z * np.log(y + r) - x * np.arctan(y * z / (x * r))


def brick_potential(Y, h):
    """Phi(Y) = int over the brick [-h0,h0]x[-h1,h1]x[-h2,h2] of d^3u/|Y-u| (unit density) and its gradient"""
    Y = np.atleast_2d(Y)
    phi = 0.0
    g = np.zeros_like(Y)
    for sx in (0, 1):
        for sy in (0, 1):
            for sz in (0, 1):
                s = (-1.0) ** (3 - sx - sy - sz)
                u = [(h[0] if sx else -h[0]) - Y[:, 0], (h[1] if sy else -h[1]) - Y[:, 1],
                     (h[2] if sz else -h[2]) - Y[:, 2]]
                phi = phi + s * _F(u[0], u[1], u[2])
                g[:, 0] -= s * _Fx(u[0], u[1], u[2])
                g[:, 1] -= s * _Fx(u[1], u[2], u[0])
                g[:, 2] -= s * _Fx(u[2], u[0], u[1])
    return phi, g


def brick_multipole(P, h):
    """b_lm = (1/V) int_brick obar_lm(y) d^3y (unit charge spread over the brick), exact Gauss-Legendre"""
    t, wt = np.polynomial.legendre.leggauss(P // 2 + 2)
    G = np.array(np.meshgrid(t * h[0], t * h[1], t * h[2], indexing='ij')).reshape(3, -1).T
    Wg = np.einsum('i,j,k->ijk', wt, wt, wt).ravel() / 8
    return Wg @ obar(P, G)


# ================================================================== root-level periodic FMM of a general cell
class CellOps:
    """Everything per cell: root region (brick or parallelepiped), near set N (integer triples), far table A
    (L <= Lmax, A_00 = c0, A_2M the traceless far Hessian, odd L = 0) and, with virial, the strain tables
    Vt[a,b,LM] = dA_LM/de_(ab) (symmetric strain, the same integer set N): analytic, or (fd=True) by 4-point
    central differences of the table."""

    def __init__(self, H, kind="brick", Lmax=40, theta=THETA, virial=True, fd=False, d=1e-3):
        self.H, self.kind, self.Lmax = H, kind, Lmax
        self.V = volume(H)
        self.c, self.r = domain(H, kind)
        self.N = near_set(H, self.r, theta)
        self.Vt = None
        l, _ = lm_of(Lmax)
        if virial and not fd:
            self.A, self.Vt = far_ewald_strain(H, self.N, Lmax)
            self.A[l % 2 == 1] = 0.0
            self.Vt[:, :, l % 2 == 1] = 0.0
            return
        self.A = self.table(H)
        if virial:
            n = (Lmax + 1) ** 2
            Vt = np.zeros((3, 3, n), complex)
            for a in range(3):
                for b in range(a, 3):
                    acc = np.zeros(n, complex)
                    for s, cf in ((2 * d, -1), (d, 8), (-d, -8), (-2 * d, 1)):
                        e = np.zeros((3, 3))
                        e[a, b] += s / 2
                        e[b, a] += s / 2
                        acc += cf * self.table(H @ (np.eye(3) + e).T)
                    Vt[a, b] = Vt[b, a] = acc / (12 * d)
            self.Vt = Vt

    def table(self, H):
        A = far_ewald(H, self.N, self.Lmax)
        l, _ = lm_of(self.Lmax)
        A[l % 2 == 1] = 0.0
        return A


def wrap(X, H, kind):
    return wrap_brick(X, H) if kind == "brick" else wrap_ppd(X, H)


def near_direct(Y, q, H, Nidx, virial=True):
    """the near images N summed directly (what the octree does): phi, E and the pair virial"""
    n_ = len(q)
    phi = np.zeros(n_)
    E = np.zeros((n_, 3))
    W = np.zeros((3, 3))
    for n in Nidx:
        R = Y[:, None, :] - Y[None, :, :] + n @ H
        r = np.sqrt((R * R).sum(-1))
        if not n.any():
            np.fill_diagonal(r, np.inf)
        phi += (1 / r) @ q
        E += np.einsum('ij,ijc,j->ic', 1 / r ** 3, R, q)
        if virial:
            W += 0.5 * np.einsum('ij,ija,ijb->ab', q[:, None] * q[None, :] / r ** 3, R, R)
    return phi, E, W


def root_fmm(X, q, ops, p, want_virial=True, near=None):
    """near images directly + the far images through one M2L with A at the root + L2P + the isotropic quadratic
    (2pi/3V) sum_j q_j |Y_i - Y_j|^2; tin-foil Ewald conventions, any net charge (no background terms needed).
    Virial: W = sym[W_near + sum_i F_i^far (x) Y_i] - 1/2 Re sum_LM Vt_LM C_LM + (2pi/3V)(Q S2 - |D|^2) I."""
    H, V = ops.H, ops.V
    Xw = wrap(X, H, ops.kind)
    Y = Xw - ops.c
    Q = q.sum()
    D = q @ Y
    S2 = q @ (Y * Y).sum(1)
    w = q @ obar(p, Y)
    mu = m2l_matrix(p, ops.A[:(2 * p + 1) ** 2]) @ w
    phf, Ef = l2p(mu, p, Y)
    k = 2 * math.pi / (3 * V)
    phf = phf + k * (Q * (Y * Y).sum(1) - 2 * Y @ D + S2)
    Ef = Ef + 2 * k * (D[None, :] - Q * Y)
    if near is None:
        near = near_direct(Y, q, H, ops.N, want_virial)
    phn, En, Wn = near
    out = dict(phi=phn + phf, E=En + Ef, Y=Y, D=D, Q=Q, S2=S2, w=w, Ef=Ef)
    out['U'] = 0.5 * q @ out['phi']
    if want_virial:
        W = Wn + np.einsum('i,ia,ib->ab', q, Ef, Y)
        W = 0.5 * (W + W.T)
        W += -0.5 * np.einsum('abk,k->ab', ops.Vt[:, :, :(2 * p + 1) ** 2], conv_ww(w, p)).real
        W += k * (Q * S2 - D @ D) * np.eye(3)
        out['W'] = W
    return out


# ================================================================== test sets
def min_image_dist(d, H):
    F = d @ np.linalg.inv(H)
    d = (F - np.round(F)) @ H
    return np.linalg.norm(d[:, None, :] + (OFF27 @ H)[None, :, :], axis=2).min(1)


def water(H, nw, rng, ion=0.0):
    """nw SPC/E-like waters (O -0.8476, H +0.4238, OH 0.1 nm, HOH 109.47 deg) at random in the cell, O-O >= 0.24 nm
    (minimum image); ion != 0 adds one ion of that charge, >= 0.28 nm from every O.  Units nm."""
    O = []
    while len(O) < nw:
        x = rng.uniform(size=3) @ H
        if not O or min_image_dist(np.array(O) - x, H).min() >= 0.24:
            O.append(x)
    O = np.array(O)
    X, q = [], []
    th = math.radians(109.47) / 2
    for o in O:
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        v = np.cross(u, rng.normal(size=3))
        v /= np.linalg.norm(v)
        X += [o, o + 0.1 * (math.cos(th) * u + math.sin(th) * v), o + 0.1 * (math.cos(th) * u - math.sin(th) * v)]
        q += [-0.8476, 0.4238, 0.4238]
    if ion:
        while True:
            x = rng.uniform(size=3) @ H
            if min_image_dist(O - x, H).min() >= 0.28:
                break
        X.append(x)
        q.append(ion)
    return np.array(X), np.array(q)


def uniform(H, n, rng, Q=0.0):
    X = rng.uniform(size=(n, 3)) @ H
    q = rng.uniform(-1, 1, n)
    return X, q - q.mean() + Q / n


def rocksalt():
    """(cube of side 2 with 8 ions, nearest-neighbour distance 1) and (the primitive FCC cell with 2 ions, rotated
    into GROMACS's lower-triangular form by a Cholesky factor of its Gram matrix)"""
    base = np.array([(i, j, k) for i in (0, 1) for j in (0, 1) for k in (0, 1)], float)
    qc = np.array([1.0 if (i + j + k) % 2 == 0 else -1.0 for i, j, k in base])
    A = np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]], float)      # FCC primitive vectors of the Na sublattice
    Hp = np.linalg.cholesky(A @ A.T)                             # rows: same Gram matrix, lower-triangular
    frac = np.array([[0, 0, 0], [0.5, 0.5, 0.5]])                # Na at 0, Cl at (a1+a2+a3)/2 = (1,1,1)
    return (base + 0.5, qc, cell_rect(2, 2, 2)), (frac @ Hp + 0.1, np.array([1.0, -1.0]), Hp)


def errs(r, ref):
    phE, EE, UE, WE = ref
    e = [relerr(r['phi'], phE), relerr(r['E'], EE), abs(r['U'] / UE - 1)]
    if 'W' in r:
        e += [relerr(r['W'], WE), abs(r['W'] - WE).max() / np.linalg.norm(WE)]
    return e


def fmt(v):
    return " ".join("%8.1e" % x for x in v)


# ================================================================== checks
def section0():
    print("== 0. building blocks")
    rng = np.random.default_rng(1)
    v = rng.normal(size=(4, 3))
    P = 10
    l, m = lm_of(P)
    r = np.linalg.norm(v, axis=1)
    ct = v[:, 2] / r
    ph = np.arctan2(v[:, 1], v[:, 0])
    Pl = np.array([[lpmv(mm, ll, c) if mm >= 0 else
                    (-1.0) ** mm * factorial(ll + mm) / factorial(ll - mm) * lpmv(-mm, ll, c)
                    for ll, mm in zip(l, m)] for c in ct])
    ob = r[:, None] ** l / factorial(l + m) * Pl * np.exp(-1j * m * ph[:, None])
    mu_ = factorial(l - m) / r[:, None] ** (l + 1) * Pl * np.exp(1j * m * ph[:, None])
    x = np.array([[0.1, 0.2, -0.15]])
    y = np.array([[1.0, -0.7, 0.9]])
    check("harmonics: recurrences = closed form (scipy lpmv); 1/|x-y| = sum obar(x) mu(y)",
          abs(obar(P, v) - ob).max() < 1e-13 and abs(irreg(P, v) / mu_ - 1).max() < 1e-12 and
          abs((obar(40, x) * irreg(40, y)).sum() - 1 / np.linalg.norm(x - y)) < 1e-14)
    Hs = rng.normal(size=(3, 3))
    Hs = Hs + Hs.T
    Hs -= np.trace(Hs) / 3 * np.eye(3)
    rr = rng.normal(size=(10, 3))
    check("traceless quadratic <-> A_2M: 1/2 r.H.r = sum_M obar_2M(r) A_2M, and back",
          abs(0.5 * np.einsum('na,ab,nb->n', rr, Hs, rr) - obar(2, rr)[:, 4:9] @ hess_to_a2(Hs)).max() < 1e-13 and
          abs(a2_to_hess(hess_to_a2(Hs)) - Hs).max() < 1e-14)
    # mu_LM(R) Q_L(a^2 R^2) = c_LM Z(grad)[erfc(a r)/r] at R (Hobson), by finite differences for L = 2
    R = np.array([[0.7, -0.4, 1.1]])
    a_ = 1.3
    f = lambda X: erfc(a_ * np.linalg.norm(X, axis=-1)) / np.linalg.norm(X, axis=-1)
    def hess_fd(h):
        Hf = np.zeros((3, 3))
        for i in range(3):
            for j in range(3):
                ei, ej = np.eye(3)[i] * h, np.eye(3)[j] * h
                Hf[i, j] = (f(R + ei + ej) - f(R + ei - ej) - f(R - ei + ej) + f(R - ei - ej))[0] / (4 * h * h)
        return Hf
    Hf = (4 * hess_fd(5e-3) - hess_fd(1e-2)) / 3           # Richardson: O(h^4)
    lhs = irreg(2, R)[0, 4:9] * gammaincc(2.5, a_ * a_ * (R * R).sum())
    # conj(obar_2M)(g) as a quadratic form g.K_M.g: read off K_M from obar at the 6 monomials
    E3 = np.eye(3)
    K = np.zeros((5, 3, 3), complex)
    for i in range(3):
        for j in range(3):
            e = E3[i] + E3[j]
            K[:, i, j] = 0.5 * (np.conj(obar(2, e[None])[0, 4:9]) - np.conj(obar(2, E3[i][None])[0, 4:9])
                                - np.conj(obar(2, E3[j][None])[0, 4:9]))
    rhs = c_lm(2)[4:9] * np.einsum('mij,ij->m', K, Hf)
    check("Hobson: mu_2M(R) Q_2(a^2R^2) = c_2M Z_2M(grad) erfc(a r)/r  (finite differences)",
          abs(lhs - rhs).max() < 1e-7 * abs(lhs).max(), "%.1e" % (abs(lhs - rhs).max() / abs(lhs).max()))
    t, wt = np.polynomial.legendre.leggauss(40)
    hb = np.array([0.5, 0.35, 0.8])
    G = np.array(np.meshgrid(t * hb[0], t * hb[1], t * hb[2], indexing='ij')).reshape(3, -1).T
    Wg = np.einsum('i,j,k->ijk', wt, wt, wt).ravel() * hb.prod()
    Yo = np.array([[1.3, 0.4, -0.9]])
    quad = Wg @ (1 / np.linalg.norm(G - Yo, axis=1))
    Yp = np.array([[0.3, -0.2, 0.1]])
    p0, g0 = brick_potential(Yp, hb)
    lap = sum((brick_potential(Yp + e, hb)[0] - 2 * p0 + brick_potential(Yp - e, hb)[0]) / 1e-6
              for e in np.eye(3) * 1e-3)[0]
    fd = np.array([(brick_potential(Yp + e, hb)[0] - brick_potential(Yp - e, hb)[0])[0] / 2e-6
                   for e in np.eye(3) * 1e-6])
    check("uniform brick potential: quadrature outside, Laplacian -4pi inside, gradient by differences",
          abs(brick_potential(Yo, hb)[0][0] - quad) < 1e-11 and abs(lap + 4 * math.pi) < 1e-4 and
          abs(fd - g0[0]).max() < 1e-7)
    b = brick_multipole(8, np.array([0.5, 0.5, 0.5]))
    check("brick multipole: b00 = 1, b40 = -7/11520 for the unit cube",
          abs(b[0] - 1) < 1e-15 and abs(b[sidx(4, 0)] + 7 / 11520) < 1e-15)


def section1():
    print("== 1. Ewald reference for triclinic cells (tin-foil, neutralising background)")
    rng = np.random.default_rng(11)
    Hr = cell_random(rng)
    print("   random cell rows:", np.round(Hr, 4).tolist())
    sets = [("dodecahedron", cell_dodecahedron(1.1)), ("octahedron", cell_octahedron(1.1)), ("random", Hr)]
    worst = 0.0
    for name, H in sets:
        for Q in (0.0, 2.0):
            X, q = uniform(H, 60, rng, Q)
            a = ewald(X, q, H)
            b = ewald(X, q, H, alpha=3.2 / volume(H) ** (1 / 3))
            e = max(relerr(a[0], b[0]), relerr(a[1], b[1]), abs(a[2] / b[2] - 1), relerr(a[3], b[3]))
            worst = max(worst, e)
    check("alpha-independence (alpha V^1/3 = 5 and 3.2): phi, E, U, W; neutral and Q = 2; 3 cells", worst < 1e-11,
          "max rel diff %.1e" % worst)
    for Q in (0.0, 2.0):
        X, q = uniform(Hr, 40, rng, Q)
        phi, E, U, W = ewald(X, q, Hr)
        Wfd = np.zeros((3, 3))
        h = 1e-5
        for a in range(3):
            for b in range(3):
                e = np.zeros((3, 3))
                e[a, b] = h
                up = ewald(X @ (np.eye(3) + e).T, q, Hr @ (np.eye(3) + e).T, want_virial=False)[2]
                dn = ewald(X @ (np.eye(3) - e).T, q, Hr @ (np.eye(3) - e).T, want_virial=False)[2]
                Wfd[a, b] = -(up - dn) / (2 * h)
        check("virial W_ab = -dU/de_ab = finite-difference strain derivative, all 9 components (Q=%g)" % Q,
              relerr(W, Wfd) < 1e-8 and abs(np.trace(W) / U - 1) < 1e-12,
              "rel %.1e, off-diagonal |W_xy-W_yx| of the differences %.1e, tr W/U-1 %.1e" %
              (relerr(W, Wfd), abs(Wfd - Wfd.T).max() / np.linalg.norm(W), np.trace(W) / U - 1))
    (Xc, qc, Hc), (Xp, qp, Hp) = rocksalt()
    Mc = -ewald(Xc, qc, Hc)[2] / 4
    Mp = -ewald(Xp, qp, Hp)[2]
    check("rock salt: Madelung constant from the 8-ion cube = from the 2-ion rhombohedral primitive cell",
          abs(Mc - 1.747564594633) < 1e-12 and abs(Mp - Mc) < 1e-12,
          "cube %.13f, primitive %.13f (cell rows %s)" % (Mc, Mp, np.round(Hp, 6).tolist()))
    # one configuration, equivalent cells
    Hd = cell_dodecahedron(1.2)
    X, q = uniform(Hd, 60, rng, 1.0)
    twins = [Hd, Hd - np.array([[0, 0, 0], [0, 0, 0], Hd[0]]), Hd - np.array([[0, 0, 0], [0, 0, 0], Hd[0] + Hd[1]])]
    refs = [ewald(wrap_brick(X, T), q, T) for T in twins]
    Ht = Hr + np.array([[0, 0, 0], Hr[0], Hr[1] - Hr[0]])          # (a, b+a, c+b-a): outside GROMACS's limits
    r1, r2 = ewald(X @ np.linalg.inv(Hd) @ Hr, q, Hr), ewald(X @ np.linalg.inv(Hd) @ Hr, q, Ht)
    d = max([abs(r[2] / refs[0][2] - 1) for r in refs] + [relerr(r[1], refs[0][1]) for r in refs] +
            [relerr(r[3], refs[0][3]) for r in refs] + [abs(r2[2] / r1[2] - 1), relerr(r2[1], r1[1]),
                                                        relerr(r2[3], r1[3])])
    check("one configuration in equivalent cells (dodecahedron: c, c-a, c-a-b; random: (a, b+a, c+b-a)): U, F, W",
          d < 1e-12, "max rel diff %.1e" % d)
    # vacuum boundary = spherical order: U(s) = 1/2 sum_R exp(-s|R|^2) sum'_ij q_i q_j/|x_i - x_j + R|, s -> 0
    Ho = cell_octahedron(1.0)
    X, q = uniform(Ho, 6, rng)
    X = wrap_brick(X, Ho)
    D = q @ (X - domain(Ho, "brick")[0])
    Vo = volume(Ho)
    Ut = ewald(X, q, Ho, want_virial=False)[2]
    surf = 2 * math.pi / (3 * Vo) * (D @ D)

    def U_damped(s_):
        R = lattice_points(Ho, math.sqrt(36 / s_)) @ Ho
        w = np.exp(-s_ * (R * R).sum(1))
        U = 0.0
        for i in range(len(q)):
            for j in range(len(q)):
                d = np.linalg.norm(X[i] - X[j] + R, axis=1)
                U += 0.5 * q[i] * q[j] * (w @ (1 / np.where(d == 0, np.inf, d)))
        return U
    u1, u2, u3 = (U_damped(s_) for s_ in (0.04, 0.02, 0.01))
    Uvac = (8 * u3 - 6 * u2 + u1) / 3                   # Richardson, error O(s) and O(s^2) removed
    check("vacuum (spherical order, factor exp(-s|R|^2), s -> 0) = U_tinfoil + 2pi|D|^2/3V, octahedron, D of the "
          "brick-wrapped positions", abs(Uvac - Ut - surf) < 1e-3 * surf,
          "U(s=0.01) - U_tf = %.6f, extrapolated %.6f, 2pi|D|^2/3V = %.6f" % (u3 - Ut, Uvac - Ut, surf))
    return Hr


def section2(cells):
    print("== 2. far operator of a general cell: psi_far(r) = c0 + (2pi/3V)|r|^2 + sum_{L>=2 even} A_LM obar_LM(r)")
    print("   cell            |N|   c0 V^1/3   |H0| V/4pi  A_4 max   Ewald alpha-dep.  odd L / even   tr H V/4pi - 1")
    ok1 = True
    for name, H in cells:
        c, r = domain(H, "brick")
        N = near_set(H, r)
        V = volume(H)
        A1 = far_ewald(H, N, 32)
        A2 = far_ewald(H, N, 32, alpha=1.1 / V ** (1 / 3))
        l, _ = lm_of(32)
        dal = max(abs(A1[l == L] - A2[l == L]).max() / max(abs(A1[l == L]).max(), 1e-300)
                  for L in (0, 4, 8, 16, 24, 32))
        odd = max(abs(A1[l == L]).max() / abs(A1[l == L + 1]).max() for L in range(3, 32, 2))
        Hs = far_hessian(H, N)
        H0 = Hs - np.trace(Hs) / 3 * np.eye(3)
        a2d = abs(hess_to_a2(H0) - A1[4:9]).max() / max(abs(A1[4:9]).max(), 4 * math.pi / V * 1e-3)
        tr = np.trace(Hs) * V / (4 * math.pi) - 1
        print("   %-14s %4d  %9.5f   %9.2e  %9.3e  %9.1e        %9.1e       %9.1e" %
              (name, len(N), A1[0].real * V ** (1 / 3), np.linalg.norm(H0) * V / (4 * math.pi),
               abs(A1[l == 4]).max() * V ** (5 / 3), dal, odd, tr))
        ok1 &= dal < 1e-11 and odd < 1e-12 and abs(tr) < 1e-11 and a2d < 1e-10
    check("Ewald-type A_LM: alpha-independent, odd L = 0, L=2 = traceless Cartesian far Hessian, tr H = 4pi/V", ok1)
    # renormalisation vs Ewald formula
    print("   renormalisation (3x3x3 supercells, internal order P, K=20) + near-set corrections vs the Ewald formula:")
    print("   cell            block   rho    P    max_L>=4 |dA_L|/max|A_L|   shape: |H_E - H_S - (4pi/V) N_S| V/4pi")
    ok2 = True
    for name, H in cells:
        c, r = domain(H, "brick")
        N = near_set(H, r)
        V = volume(H)
        AE = far_ewald(H, N, 32)
        l, _ = lm_of(32)
        runs = [((1, 1, 1), 40)]
        if name.startswith("rect 1:1:3"):
            runs = [((1, 1, 1), 40), ((3, 3, 1), 40)]
        if name == "dodecahedron":
            runs = [((1, 1, 1), 32), ((1, 1, 1), 40), ((1, 1, 1), 48)]
        for sup, P in runs:
            Hb = np.diag(sup) @ H
            corners = np.array([(i, j, k) for i in (-.5, .5) for j in (-.5, .5) for k in (-.5, .5)]) @ Hb
            rho = np.linalg.norm(corners, axis=1).max() / np.linalg.norm(OFF702 @ Hb, axis=1).min()
            AR, inner = lattice_renorm(H, 32, P, sup=sup)
            AR = AR + near_correction(H, N, 32, inner)
            e = max(abs(AR[l == L] - AE[l == L]).max() / abs(AE[l == L]).max() for L in range(4, 33, 2))
            HS = a2_to_hess(AR[4:9])
            HE = far_hessian(H, N)
            sh = abs(HE - HS - 4 * math.pi / V * depol(Hb.T)).max() * V / (4 * math.pi)
            print("   %-14s %-7s %5.3f  %3d   %10.1e                  %10.1e   (|H_E - H_S| V/4pi = %.3f)" %
                  (name, "x".join(map(str, sup)), rho, P, e, sh, abs(HE - HS).max() * V / (4 * math.pi)))
            if rho < 0.65:
                ok2 &= e < 1e-8 and sh < 1e-8
    check("renormalised sums (L>=4) = Ewald formula where the block is compact (rho < 0.65: < 1e-8), and the "
          "supercell-ordered L=2 differs from tin-foil by exactly the block's depolarisation term", ok2)


def reference_values(cells):
    print("   reference values for unit tests (brick root, N = {|R| < 2 r_brick/theta}, cell as given, lengths 1):")
    print("   cell           |N|   c0              A_20            A_22 (re, im)                 A_40            "
          "A_44 (re)       dc0/de_xx       dc0/de_xy")
    for name, H in cells:
        N = near_set(H, domain(H, "brick")[1])
        A, Vt = far_ewald_strain(H, N, 4)
        print("   %-14s %3d  %15.10f %15.10f (%15.10f, %15.10f) %15.10f %15.10f %15.10f %15.10f" %
              (name, len(N), A[0].real, A[sidx(2, 0)].real, A[sidx(2, 2)].real, A[sidx(2, 2)].imag,
               A[sidx(4, 0)].real, A[sidx(4, 4)].real, Vt[0, 0, 0].real, Vt[0, 1, 0].real))


def section2b(cells):
    print("   uniform background: the psi form needs no background terms; identity (tin-foil potential of a uniform")
    print("   cell = 0):  L2P(M2L_A b) + (2pi/3V)(|Y|^2 + <y^2>) + (1/V) sum_{n in N} Phi_brick(Y - nH) = 0, Y in the brick")
    rng = np.random.default_rng(4)
    ok = True
    for name, H in cells:
        c, r = domain(H, "brick")
        N = near_set(H, r)
        V = volume(H)
        A = far_ewald(H, N, 32)
        l, _ = lm_of(32)
        A[l % 2 == 1] = 0
        hb = 0.5 * np.diag(H)
        Y = (rng.uniform(size=(50, 3)) - 0.5) * 2 * hb
        bg = sum(brick_potential(Y - n @ H, hb)[0] for n in N) / V
        res = []
        for p in (8, 12, 16):
            b = brick_multipole(p, hb)
            ph, _ = l2p(m2l_matrix(p, A[:(2 * p + 1) ** 2]) @ b, p, Y)
            res.append(abs(ph + 2 * math.pi / (3 * V) * ((Y * Y).sum(1) + (hb * hb).sum() / 3) + bg).max()
                       / abs(A[0].real))
        print("   %-14s |N| = %3d   max residual / |c0|, p = 8, 12, 16: %s" % (name, len(N), fmt(res)))
        ok &= res[-1] < 1e-6 and res[-1] < res[0]
    check("background identity holds (residual falls with p, < 1e-6 at p = 16): Q c0 + (2pi/3V) Q |Y|^2 in the "
          "psi form replaces the |N| brick potentials per particle", ok)
    # A_2 matters where the lattice is not cubic; the standard cells are cubic lattices (FCC, BCC)
    print("   traceless far Hessian |A_2| (what the cube's D, S2 corrections would miss):",
          ", ".join("%s %.1e" % (n, abs(far_ewald(H, near_set(H, domain(H, 'brick')[1]), 2)[4:9]).max())
                    for n, H in cells))
    # strain behaviour of the table: exact isotropic scaling, first-order update under shear/aspect changes
    name, H = cells[-1]
    ops = CellOps(H, Lmax=16)
    opf = CellOps(H, Lmax=16, fd=True)
    l, _ = lm_of(16)
    dv = max(abs(ops.Vt[:, :, l == L] - opf.Vt[:, :, l == L]).max() / abs(opf.Vt[:, :, l == L]).max()
             for L in range(0, 17, 2))
    check("strain tables: analytic derivative of the Ewald-type formula = 4-point differences (%s, L <= 16)" % name,
          dv < 1e-7, "max_L rel. diff %.1e" % dv)
    A_s = ops.table(1.01 * H)
    sc = abs(A_s - ops.A * 1.01 ** (-(l + 1.0))).max() / abs(ops.A).max()
    out = []
    rng2 = np.random.default_rng(9)
    e0 = rng2.normal(size=(3, 3))
    e0 = 0.5 * (e0 + e0.T)
    e0 /= np.linalg.norm(e0)
    for s in (1e-2, 1e-3, 1e-4):
        e = s * e0
        At = ops.table(H @ (np.eye(3) + e).T)
        lin = ops.A + np.einsum('abk,ab->k', ops.Vt, e)
        out.append(max(abs(At[l == L] - lin[l == L]).max() / abs(At[l == L]).max() for L in range(0, 17, 2)))
    check("A_LM(lambda H) = lambda^-(L+1) A_LM(H) (isotropic scaling: no recomputation)", sc < 1e-12, "%.1e" % sc)
    print("   first-order update A(H(I+e)) ~ A + Vt:e (%s, L <= 16), max_L rel. error for |e| = 1e-2, 1e-3, 1e-4: %s"
          % (name, fmt(out)))


def section3(Hr):
    print("== 3. root-level periodic FMM (near images N direct, far images by one M2L with A, L2P, isotropic "
          "quadratic) vs Ewald")
    rng = np.random.default_rng(21)
    Hr2 = cell_random(np.random.default_rng(12))
    rho_w = 33.4
    dd = (64 / rho_w * math.sqrt(2)) ** (1 / 3)
    do = (64 / rho_w / (2 * math.sqrt(12) / 9)) ** (1 / 3)
    cells = {"cube": cell_rect(1, 1, 1), "rect 1:1:2": cell_rect(1, 1, 2), "rect 1:1:3": cell_rect(1, 1, 3),
             "dodecahedron": cell_dodecahedron(dd), "octahedron": cell_octahedron(do), "random A": Hr,
             "random B": Hr2}
    systems = [("cube water 99", "cube", water(cells["cube"], 33, rng)),
               ("cube uniform 200", "cube", uniform(cells["cube"], 200, rng)),
               ("rect 1:1:2 water 201", "rect 1:1:2", water(cells["rect 1:1:2"], 67, rng)),
               ("rect 1:1:3 water 300", "rect 1:1:3", water(cells["rect 1:1:3"], 100, rng)),
               ("dodecahedron water 192", "dodecahedron", water(cells["dodecahedron"], 64, rng)),
               ("octahedron water 192", "octahedron", water(cells["octahedron"], 64, rng)),
               ("random A uniform 200", "random A", uniform(Hr, 200, rng)),
               ("random B uniform 200", "random B", uniform(Hr2, 200, rng)),
               ("dodecahedron water+Na Q=+1", "dodecahedron", water(cells["dodecahedron"], 64, rng, ion=1.0)),
               ("rect 1:1:3 water+Cl Q=-1", "rect 1:1:3", water(cells["rect 1:1:3"], 100, rng, ion=-1.0)),
               ("random A uniform Q=+3", "random A", uniform(Hr, 200, rng, 3.0))]
    ops = {k: CellOps(H) for k, H in cells.items()}
    orders = (4, 6, 8, 10, 12, 14, 16, 18, 20)
    tols = (1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8)
    print("   system                       |N|   p   phi      field    energy   virial   max|dW_ab|/|W|")
    ladder = []
    ok = True
    for name, ck, (X, q) in systems:
        o = ops[ck]
        ref = ewald(X, q, o.H)
        Y = wrap(X, o.H, o.kind) - o.c
        near = near_direct(Y, q, o.H, o.N)
        rows = []
        for p in orders:
            r = root_fmm(X, q, o, p, near=near)
            rows.append(errs(r, ref))
            if p in (4, 8, 12, 16, 20):
                print("   %-28s %3d  %2d   %s" % (name, len(o.N), p, fmt(rows[-1])))
        trw = abs(np.trace(r['W']) / r['U'] - 1)
        worst = [max(e) for e in rows]
        need = [next((p for p, w in zip(orders, worst) if w <= t), None) for t in tols]
        ladder.append((name, need))
        i16 = orders.index(16)
        ok_s = (max(rows[i16]) < 1e-5 and max(rows[-1]) < 1e-6 and
                all(rows[-1][i] < 1e-3 * rows[0][i] for i in range(4)) and trw < 1e-10)
        ok &= ok_s
        if not ok_s:
            print("   ^ failed (tr W/U - 1 = %.1e)" % trw)
    check("every system: errors fall with p (p=20 < 1e-3 x p=4) as for the cube; all four < 1e-5 at p = 16 and "
          "< 1e-6 at p = 20; tr W = U", ok)
    print("   smallest p (of 4, 6, ..., 20) with all four errors (phi, field, energy, virial) <= tolerance:")
    print("   system                         " + "  ".join("%6.0e" % t for t in tols))
    for name, need in ladder:
        print("   %-30s %s" % (name, "  ".join("%6s" % (n if n else ">20") for n in need)))
    return cells, systems, ops


def section3b(cells, systems, ops):
    print("   other checks with the root-level FMM:")
    # the cube's corrections assumed isotropic: dropping A_2 where it is not zero
    byname = {t[0]: t for t in systems}
    for key in ("rect 1:1:3 water 300", "random A uniform 200"):
        name, ck, (X, q) = byname[key]
        o = ops[ck]
        ref = ewald(X, q, o.H)
        r = root_fmm(X, q, o, 12, want_virial=False)
        A0 = o.A.copy()
        o.A[4:9] = 0
        r0 = root_fmm(X, q, o, 12, want_virial=False)
        o.A = A0
        print("   %-24s p=12 with A_2: phi %.1e U %.1e;  A_2 set to 0 (cube's isotropic corrections only): "
              "phi %.1e U %.1e" % (name, relerr(r['phi'], ref[0]), abs(r['U'] / ref[2] - 1),
                                   relerr(r0['phi'], ref[0]), abs(r0['U'] / ref[2] - 1)))
    # the near virial from image forces (how a tree gathers it): W_near = sum_i F_i (x) Y_i - 1/2 sum_n F_(0<-n) (x) nH
    name, ck, (X, q) = byname["random A uniform Q=+3"]
    o = ops[ck]
    Y = wrap(X, o.H, o.kind) - o.c
    _, En, Wn = near_direct(Y, q, o.H, o.N)
    Wsh = np.einsum('i,ia,ib->ab', q, En, Y)
    for n in o.N:
        R = Y[:, None, :] - Y[None, :, :] + n @ o.H
        r = np.sqrt((R * R).sum(-1))
        if not n.any():
            np.fill_diagonal(r, np.inf)
        Fn = q @ np.einsum('ij,ijc,j->ic', 1 / r ** 3, R, q)          # total force of image n on the cell
        Wsh -= 0.5 * np.outer(Fn, -(n @ o.H))                        # image n holds the sources shifted by -nH
    check("near virial of the %d images of %s = sum_i F_i (x) Y_i - 1/2 sum_n F_(0<-n) (x) R_n" % (len(o.N), name),
          relerr(Wsh, Wn) < 1e-12, "%.1e" % relerr(Wsh, Wn))
    # domain: parallelepiped instead of brick; equivalent cells with the parallelepiped domain
    name, ck, (X, q) = byname["dodecahedron water+Na Q=+1"]
    H = cells[ck]
    ref = ewald(X, q, H)
    opp = CellOps(H, "ppd")
    Ht = H - np.array([[0, 0, 0], [0, 0, 0], H[0]])
    opt = CellOps(Ht, "ppd", virial=False)
    rb = root_fmm(X, q, ops[ck], 16)
    rp = root_fmm(X, q, opp, 16)
    rt = root_fmm(X, q, opt, 16, want_virial=False)
    print("   %s, p=16: brick domain (|N|=%d, D=%s): %s" % (name, len(ops[ck].N), np.round(rb['D'], 3), fmt(errs(rb, ref))))
    print("   %s        parallelepiped (|N|=%d, D=%s): %s" % (" " * len(name), len(opp.N), np.round(rp['D'], 3), fmt(errs(rp, ref))))
    print("   %s        sheared twin c-a, parallelepiped (|N|=%d, D=%s): %s" %
          (" " * len(name), len(opt.N), np.round(rt['D'], 3), fmt(errs(rt, ref))))
    check("the same result from the brick, the parallelepiped and the sheared twin's parallelepiped (different "
          "wrapped images, D and N): p=16 errors < 1e-6",
          max(errs(rp, ref) + errs(rt, ref)) < 1e-6 and abs(rp['D'] - rb['D']).max() > 1e-3)
    # rock salt through the FMM
    (Xc, qc, Hc), (Xp, qp, Hp) = rocksalt()
    oc, op = CellOps(Hc, virial=False), CellOps(Hp, virial=False)
    Mex = 1.747564594633
    ec = [abs(-root_fmm(Xc, qc, oc, p, want_virial=False)['U'] / 4 / Mex - 1) for p in (8, 12, 16, 20)]
    ep = [abs(-root_fmm(Xp, qp, op, p, want_virial=False)['U'] / Mex - 1) for p in (8, 12, 16, 20)]
    check("rock salt through the root-level FMM: cube and primitive cell -> Madelung constant (rel. error < 1e-8 "
          "at p = 20)", max(ec[-1], ep[-1]) < 1e-8,
          "p = 8, 12, 16, 20: cube %s; primitive %s" % (fmt(ec), fmt(ep)))
    # separation ratio of the near set
    for key in ("dodecahedron water 192", "rect 1:1:3 water 300"):
        name, ck, (X, q) = byname[key]
        H = cells[ck]
        ref = ewald(X, q, H)
        line = []
        for th in (0.95, THETA, 0.7, 0.55):
            o = CellOps(H, theta=th, virial=False)
            line.append("theta %.2f |N| %3d: p=8 %.1e p=12 %.1e" %
                        (th, len(o.N), max(errs(root_fmm(X, q, o, 8, want_virial=False), ref)),
                         max(errs(root_fmm(X, q, o, 12, want_virial=False), ref))))
        print("   %s, near set N = {|R| < 2 r_brick / theta}, max of the phi, field, U errors:\n     %s" %
              (name, "\n     ".join(line)))


def near_boxes(n, sh):
    """mean number of boxes (own cell and images) that are NOT one box apart from a box of an n^3 grid of unit
    boxes (centre offset < 2 boxes in every direction), lattice shifts sh (rows a, b, c in box units):
    sum over images R of prod_d #{j : |i_d - j - R_d| < 2}"""
    i = np.arange(n)
    tot = np.zeros((n, n, n))
    for t in OFF27:
        R = t @ sh
        c = [((np.abs(i[:, None] - i[None, :] - R[d]) < 2 - 1e-9).sum(1)) for d in range(3)]
        tot += c[0][:, None, None] * c[1][None, :, None] * c[2][None, None, :]
    return tot.mean()


def aligned_m(H, mmax=12):
    """root grids m = (mx,my,mz) <= mmax whose boxes make every lattice shift a whole number of boxes"""
    ax, by, cz = np.diag(H)
    f = [H[1, 0] / ax, H[2, 0] / ax, H[2, 1] / by]
    isint = lambda v: abs(v - round(v)) < 1e-9
    out = []
    for mx in range(1, mmax + 1):
        if not (isint(mx * f[0]) and isint(mx * f[1])):
            continue
        for my in range(1, mmax + 1):
            if not isint(my * f[2]):
                continue
            for mz in range(1, mmax + 1):
                s = np.array([ax / mx, by / my, cz / mz])
                out.append((s.max() / s.min(), mx * my * mz, (mx, my, mz)))
    return sorted(out)


def dyadic(v, jmax=30):
    return any(abs(v * 2 ** j - round(v * 2 ** j)) < 1e-9 for j in range(jmax))


def section4():
    print("== 4. domain, near set and alignment")
    cells = [("cube", cell_rect(1, 1, 1)), ("rect 1:1:2", cell_rect(1, 1, 2)), ("rect 1:1:3", cell_rect(1, 1, 3)),
             ("rect 2:2:1", cell_rect(2, 2, 1)), ("dodecahedron", cell_dodecahedron(1.0)),
             ("octahedron", cell_octahedron(1.0)), ("random A", cell_random(np.random.default_rng(11))),
             ("random B", cell_random(np.random.default_rng(12)))]
    print("   root region and lattice operator: N = {R : |R| < 2r/theta}, theta = sqrt(3)/2 (the cube's level-0 ratio),"
          " r = radius of the root region about its centre, in units of V^1/3")
    print("   cell           brick edges / V^1/3      r_brick |N|   r_ppd  |N|   r_cube-around |N|")
    nb = {}
    for name, H in cells:
        u = volume(H) ** (1 / 3)
        rb, rp = domain(H, "brick")[1], domain(H, "ppd")[1]
        rc = math.sqrt(3) * np.diag(H).max() / 2
        nb[name] = (len(near_set(H, rb)), len(near_set(H, rp)), len(near_set(H, rc)))
        print("   %-14s (%5.3f, %5.3f, %5.3f)     %6.3f %4d   %6.3f %4d   %6.3f %6d" %
              ((name,) + tuple(np.diag(H) / u) + (rb / u, nb[name][0], rp / u, nb[name][1], rc / u, nb[name][2])))
    check("the brick never needs more images than the parallelepiped or the cube around it",
          all(v[0] <= min(v[1], v[2]) for v in nb.values()))
    print("   octree under the root: aligned iff mx*bx/ax, mx*cx/ax, my*cy/by are integers (root grid mx x my x mz of"
          " the brick, then dyadic splits keep it)")
    print("   cell           bx/ax    cx/ax    cy/by   cube around   aligned root grids m <= 12, fewest boxes for each aspect "
          "(Pareto): m (boxes, aspect, theta_adj)")
    summary = {}
    for name, H in cells:
        ax, by, cz = np.diag(H)
        al = aligned_m(H)
        sd = np.diag(H).max()
        cube_al = all(dyadic(v) for v in (ax / sd, by / sd, cz / sd, H[1, 0] / sd, H[2, 0] / sd, H[2, 1] / sd))
        front = []
        for asp, nbx, m in sorted(al, key=lambda t: (t[1], t[0])):
            if not front or asp < front[-1][0] - 1e-9:
                front.append((asp, nbx, m))
        txt = []
        th = None
        for asp, nbx, m in front[:5]:
            sb = np.diag(H) / np.array(m)
            th = np.linalg.norm(sb) / (2 * sb.min())      # 2 r_box / (2 min side): worst one-box-separated pair
            txt.append("%s (%d, %.3f, %.3f)" % (m, nbx, asp, th))
        summary[name] = (al, cube_al, th, front)
        print("   %-14s %7.4f  %7.4f  %7.4f   %-12s  %s" % (name, H[1, 0] / ax, H[2, 0] / ax, H[2, 1] / by,
                                                         "aligned" if cube_al else "misaligned",
                                                         "; ".join(txt) if txt else "none"))
    print("   a tree in fractional coordinates (parallelepiped boxes H/2^l, every shift aligned): one-box separation "
          "in index space gives theta_adj = 2 r_ppd / min_{|n|_inf=2} |nH|;")
    print("   the near boxes needed for theta <= sqrt(3)/2 (27 for the cube):")
    for name, H in cells:
        rp = domain(H, "ppd")[1]
        ring = np.array([n for n in OFF702 if max(abs(n)) == 2])
        th = 2 * rp / np.linalg.norm(ring @ H, axis=1).min()
        print("   %-14s theta_adj %.3f   near boxes for theta <= 0.866: %3d" % (name, th, len(near_set(H, rp))))
    print("   near boxes per box (centre offset < 2 boxes in each direction, own cell and images), n^3 grid, shifts in"
          " box units:")
    for n in (4, 8, 16, 32, 64):
        sh_al = np.array([[n, 0, 0], [n // 2, n, 0], [n // 2, n // 2, n]], float)   # aligned triclinic shifts
        sh_mis = np.array([[n, 0, 0], [n * 0.3137, n, 0], [-n * 0.2411, n * 0.1789, n]])
        a_, m_ = near_boxes(n, sh_al), near_boxes(n, sh_mis)
        print("   n = %2d: aligned %.2f   misaligned (bx, cx, cy off the grid) %.2f  (+%.1f%%)" %
              (n, a_, m_, 100 * (m_ / 27 - 1)))
    check("rectangular cells always align; the dodecahedron and the octahedron have aligned near-cubic grids "
          "(aspect <= 1.07, theta_adj <= 0.93); random cells do not align",
          all(summary[k][0] for k in ("rect 1:1:2", "rect 1:1:3", "rect 2:2:1", "dodecahedron", "octahedron")) and
          summary["dodecahedron"][2] <= 0.93 and summary["octahedron"][2] <= 0.93 and
          summary["octahedron"][3][-1][0] < 1.07 and not summary["random A"][0] and not summary["random B"][0])
    # diagonal pressure scaling (isotropic, semi-isotropic, anisotropic without off-diagonal terms) keeps the ratios
    H = cell_octahedron(1.0)
    H2 = H @ np.diag([1.003, 1.003, 0.996]).T
    r1 = [H[1, 0] / H[0, 0], H[2, 0] / H[0, 0], H[2, 1] / H[1, 1]]
    r2 = [H2[1, 0] / H2[0, 0], H2[2, 0] / H2[0, 0], H2[2, 1] / H2[1, 1]]
    check("diagonal box scaling (GROMACS isotropic/semi-isotropic/diagonal anisotropic coupling) keeps bx/ax, cx/ax, "
          "cy/by, so an aligned grid stays aligned", np.allclose(r1, r2, rtol=1e-14, atol=0))


if __name__ == "__main__":
    np.set_printoptions(precision=4, linewidth=140)
    section0()
    Hr = section1()
    rng = np.random.default_rng(12)
    cells2 = [("cube", cell_rect(1, 1, 1)), ("rect 1:1:3", cell_rect(1, 1, 3)),
              ("dodecahedron", cell_dodecahedron(1.0)), ("octahedron", cell_octahedron(1.0)), ("random A", Hr),
              ("random B", cell_random(rng))]
    section2(cells2)
    reference_values(cells2)
    section2b(cells2)
    cells, systems, ops = section3(Hr)
    section3b(cells, systems, ops)
    section4()
    print("time %.1f s (CPU %.1f s)" % (time.time() - T0, time.process_time()))
    if FAIL:
        print("FAILED:", FAIL)
        sys.exit(1)
    print("ALL CHECKS PASSED")
