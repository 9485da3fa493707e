#!/usr/bin/env python3
"""The far-field table of pbc/cell_table.c evaluated with 32 digits (mpmath): the same Ewald-type
formula (docs/periodic-cells.md section 3), the same near set (|R| < 2 r_brick / (sqrt(3)/2)),
ranges with tails below 1e-18, to measure the rounding of the double-precision table.

  python3 docs/checks/cell_table_mp.py "1 0 0 0 1 0 0 0 3" 40 c.txt

c.txt: the output of docs/checks/cell_table_dump.c for the same cell and lmax. Prints, per even
degree, the largest error of the C table relative to the degree's largest entry (degree 2: at
least 1, where it vanishes for cubic lattices). About a minute for lmax 40."""
import math
import sys

import mpmath as mp
import numpy as np

mp.mp.dps = 32


def irreg(P, R):
    x, y, z = R
    r2 = x * x + y * y + z * z
    w = mp.mpc(x, y)
    out, diag = {}, 1 / mp.sqrt(r2)
    for m in range(P + 1):
        if m > 0:
            diag = -(2 * m - 1) * w / r2 * diag
        prev, cur = 0, diag
        out[(m, m)] = cur
        for l in range(m, P):
            prev, cur = cur, ((2 * l + 1) * z * cur - (l * l - m * m) * prev) / r2
            out[(l + 1, m)] = cur
    return out


def obar(P, K):
    x, y, z = K
    r2 = x * x + y * y + z * z
    wb = mp.mpc(x, -y)
    out, diag = {}, mp.mpf(1)
    for m in range(P + 1):
        if m > 0:
            diag = -wb / (2 * m) * diag
        prev, cur = 0, diag
        out[(m, m)] = cur
        for l in range(m, P):
            prev, cur = cur, ((2 * l + 1) * z * cur - r2 * prev) / ((l + 1) ** 2 - m * m)
            out[(l + 1, m)] = cur
    return out


def half_ball(B, r):
    """one of each pair +-n (first nonzero of n2, n1, n0 positive) with |n B| < r, B rows"""
    Bi = np.linalg.inv(B)
    lim = [int(math.ceil(r * np.linalg.norm(Bi[:, i]))) + 1 for i in range(3)]
    for c in range(0, lim[2] + 1):
        for b in range(-lim[1], lim[1] + 1):
            for a in range(-lim[0], lim[0] + 1):
                if c > 0 or (c == 0 and (b > 0 or (b == 0 and a > 0))):
                    yield (a, b, c)


def table(H, near, Lmax, av=1.7, nx=6.0):
    Hm = mp.matrix([[mp.mpf(v) for v in row] for row in H])
    V = Hm[0, 0] * Hm[1, 1] * Hm[2, 2]
    Hn = np.array(H, float)
    rn = max(np.linalg.norm(np.array(n) @ Hn) for n in near)
    al = min(mp.mpf(av) / mp.cbrt(V), mp.sqrt(nx) / rn)
    xc = 39 + Lmax + 7.6 * math.sqrt(Lmax)             # Q_L(x) < 1e-18 for every L <= Lmax
    Rc = mp.sqrt(xc) / al
    nearset = set(map(tuple, near))
    A = {(l, m): mp.mpc(0) for l in range(0, Lmax + 1, 2) for m in range(l + 1)}
    pos = lambda n: n[2] > 0 or (n[2] == 0 and (n[1] > 0 or (n[1] == 0 and n[0] > 0)))
    cand = set(half_ball(Hn, float(Rc) + 1)) | {tuple(t) for t in near if pos(t)}
    for n in sorted(cand):
        R = [sum(n[i] * Hm[i, d] for i in range(3)) for d in range(3)]
        r2 = sum(v * v for v in R)
        isnear = n in nearset
        if r2 >= Rc * Rc and not isnear:
            continue
        x = al * al * r2
        mu = irreg(Lmax, R)
        for L in range(0, Lmax + 1, 2):
            g = (-mp.gammainc(L + mp.mpf(1) / 2, 0, x, regularized=True) if isnear
                 else mp.gammainc(L + mp.mpf(1) / 2, x, mp.inf, regularized=True))
            for M in range(L + 1):
                A[(L, M)] += 2 * g * mu[(L, M)]
    Gm = (2 * mp.pi) * (Hm ** -1).T
    kc = 2 * al * mp.sqrt(xc)
    for n in half_ball(np.array(Gm.tolist(), float), float(kc) + 1):
        K = [sum(n[i] * Gm[i, d] for i in range(3)) for d in range(3)]
        k2 = sum(v * v for v in K)
        if k2 >= kc * kc:
            continue
        h = mp.exp(-k2 / (4 * al * al)) / k2
        ob = obar(Lmax, K)
        for L in range(0, Lmax + 1, 2):
            s = (-1) ** (L // 2) * 2 * 4 * mp.pi / V
            for M in range(L + 1):
                c = mp.factorial(L - M) * mp.factorial(L + M) / mp.fac2(2 * L - 1)
                A[(L, M)] += s * c * h * mp.conj(ob[(L, M)])
    A[(0, 0)] += -2 * al / mp.sqrt(mp.pi) - mp.pi / (V * al * al)
    return A


def main():
    H = np.array([float(v) for v in sys.argv[1].split()]).reshape(3, 3)
    Lmax = int(sys.argv[2])
    r = 0.5 * np.linalg.norm(np.diag(H))
    rad = 2 * r / (math.sqrt(3) / 2)
    Hi = np.linalg.inv(H)
    lim = [int(math.ceil(rad * np.linalg.norm(Hi[:, i]))) + 1 for i in range(3)]
    near = [(a, b, c) for a in range(-lim[0], lim[0] + 1) for b in range(-lim[1], lim[1] + 1)
            for c in range(-lim[2], lim[2] + 1) if np.linalg.norm(np.array([a, b, c]) @ H) < rad]
    A = table(H.tolist(), near, Lmax)
    C = {}
    for line in open(sys.argv[3]):
        l, m, re, im = line.split()
        C[(int(l), int(m))] = complex(float(re), float(im))
    worst = (0.0, 0)
    for L in range(0, Lmax + 1, 2):
        mx = max(max(abs(complex(A[(L, M)])) for M in range(L + 1)), 1.0 if L == 2 else 0.0)
        d = max(abs(C[(L, M)] - complex(A[(L, M)])) for M in range(L + 1)) / mx
        print("L %3d  %.1e" % (L, d))
        worst = max(worst, (d, L))
    print("|N| %d, worst %.2e at L = %d" % (len(near), worst[0], worst[1]))


if __name__ == "__main__":
    main()
