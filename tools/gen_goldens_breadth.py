"""The op goldens of the API-breadth functions (tests/ops/golden_breadth.cpp), added by
tools/gen_goldens.py after its own cases, from the same random stream."""
import torch
import torch.nn.functional as F

from golden_cases_lib import FULL, NAME, Bo, I, In, R3, case  # noqa: F401


def add_cases(interp_case):
    """Appends the cases; interp_case is the interpolate helper of gen_goldens.py."""
    # ---- API breadth: activations, arithmetic options, statistics, norms (golden_breadth.cpp) ----
    interp_case(In(2, 3, 4, 5), [7, 9], "nearest-exact", "nearest_exact_up")
    interp_case(In(2, 3, 8, 7), [3, 5], "nearest-exact", "nearest_exact_down")
    interp_case(In(2, 3, 7), [12], "nearest-exact", "nearest_exact_1d")
    interp_case(In(1, 2, 3, 4, 5), [5, 2, 7], "nearest-exact", "nearest_exact_3d")
    interp_case(In(2, 3, 8, 7), [3, 5], "area", "area_down")
    interp_case(In(2, 3, 9), [4], "area", "area_1d")


    def pad_case(tag, x, pads, mode, value=0.0, **kw):
        case("pad_mode", lambda x, pads, mode, value: F.pad(x, pads, mode=mode, value=value) if mode == "constant"
             else F.pad(x, pads, mode=mode), [x], {"pads": list(pads), "mode": mode, "value": value}, tag=tag, **kw)


    pad_case("reflect_1d", In(2, 3, 5), (2, 1), "reflect")
    pad_case("reflect_2d", In(2, 3, 4, 5), (1, 2, 3, 0), "reflect")
    pad_case("reflect_noncontig", In(2, 4, 3, layout="transposed"), (2, 2), "reflect")
    pad_case("replicate_1d", In(2, 3, 4), (2, 3), "replicate")
    pad_case("replicate_2d", In(1, 2, 3, 4), (1, 1, 2, 2), "replicate")
    pad_case("replicate_3d", In(2, 3, 4, 2), (1, 0, 0, 2, 1, 1), "replicate")
    pad_case("circular_1d", In(2, 3, 4), (1, 2), "circular")
    pad_case("circular_2d", In(1, 2, 3, 4), (2, 1, 1, 3), "circular")
    pad_case("constant_negative", In(2, 3, 5), (-1, 2, 1, -1), "constant", 0.5)
    pad_case("constant_crop_only", In(3, 6), (-2, -1), "constant")
    pad_case("constant_i64", I(2, 3), (1, 2, 0, 1), "constant", 0.0)
    pad_case("constant_empty", In(0, 3), (1, 1), "constant", 2.0)

    A = lambda: In(3, 7, lo=-4, hi=4)
    case("hardtanh", lambda x, min, max: F.hardtanh(x, min, max), [A()], {"min": -0.5, "max": 1.5})
    case("relu6", F.relu6, [In(3, 7, lo=-3, hi=9)])
    case("threshold", lambda x, threshold, value: F.threshold(x, threshold, value), [A()],
         {"threshold": 0.5, "value": -2.0})
    case("tanhshrink", F.tanhshrink, [A()])
    case("softsign", F.softsign, [A()])
    case("softsign", F.softsign, [In(2, 3, 4, layout="transposed")], tag="noncontig")
    case("hardshrink", lambda x, **k: F.hardshrink(x, k["lambda"]), [A()], {"lambda": 0.5})
    case("softshrink", lambda x, **k: F.softshrink(x, k["lambda"]), [A()], {"lambda": 0.7})
    case("glu", lambda x, dim: F.glu(x, dim), [In(3, 8)], {"dim": -1})
    case("glu", lambda x, dim: F.glu(x, dim), [In(4, 3, 2)], {"dim": 0}, tag="dim0")
    case("add_alpha", lambda a, b, alpha: torch.add(a, b, alpha=alpha), [In(3, 4), In(1, 4)], {"alpha": 2.5})
    case("sub_alpha", lambda a, b, alpha: torch.sub(a, b, alpha=alpha), [In(3, 4), In(3, 4)], {"alpha": -0.5})
    case("pow_base", lambda x, base: torch.pow(base, x), [In(3, 4)], {"base": 2.5})
    case("pow_base", lambda x, base: torch.pow(base, x), [In(0, 4)], {"base": 2.5}, tag="empty")
    case("lerp", lambda a, b, weight: torch.lerp(a, b, weight), [In(3, 4), In(3, 4)], {"weight": 0.3})
    case("lerp_tensor", torch.lerp, [In(2, 3, 4), In(2, 3, 4), In(1, 3, 1, lo=0, hi=1)])
    case("addcmul", lambda x, a, b, value: torch.addcmul(x, a, b, value=value),
         [In(3, 4), In(3, 4), In(1, 4)], {"value": 0.5})
    case("addcdiv", lambda x, a, b, value: torch.addcdiv(x, a, b, value=value),
         [In(3, 4), In(3, 4), In(3, 4, lo=0.5, hi=2)], {"value": -1.5})
    case("logaddexp", torch.logaddexp, [In(3, 4, lo=-30, hi=30), In(3, 4, lo=-30, hi=30)])
    case("logaddexp", torch.logaddexp, [In(2, 3, 4), In(1, 3, 1)], tag="broadcast")
    # the edge cases check values only: at equal infinities PyTorch's gradient is NaN, ember's the
    # limit from either side
    case("logaddexp", lambda a, b: torch.logaddexp(a.detach(), b.detach()),
         [In(5, values=[float("-inf"), float("inf"), float("-inf"), 1.0, 800.0]),
          In(5, values=[float("-inf"), float("inf"), 2.0, float("inf"), 799.0])], tag="inf", fd=False)
    case("xlogy", torch.xlogy, [In(3, 4), In(3, 4, lo=0.1, hi=3)])
    case("xlogy", lambda a, b: torch.xlogy(a.detach(), b.detach()), [In(5, values=[0.0, 0.0, 0.0, 2.0, 1.5]),
                                In(5, values=[0.0, float("inf"), float("nan"), 0.5, 3.0])], tag="zeros", fd=False)
    case("clamp_tensor", torch.clamp, [In(3, 4, lo=-3, hi=3), In(3, 4, lo=-2, hi=-0.5), In(1, 4, lo=0.5, hi=2)])
    case("clamp_tensor", torch.clamp, [I(3, 4), I(3, 4, lo=-5, hi=-1), I(3, 4, lo=1, hi=5)], tag="i64")
    case("prod_dims", lambda x, dims: x.prod(dims[0], keepdim=True).prod(dims[1], keepdim=True),
         [R3(lo=0.5, hi=1.5)], {"dims": [0, 2]})
    case("max_dims", lambda x, dims: torch.amax(x, dims, keepdim=True), [R3()], {"dims": [0, 2]})
    case("max_dims", lambda x, dims: torch.amax(x, dims, keepdim=True), [I(3, 4, 5)], {"dims": [1, 2]}, tag="i64")
    case("min_dims", lambda x, dims: torch.amin(x, dims, keepdim=True), [R3(layout="transposed")], {"dims": [-1, 0]})
    case("logsumexp_dims", lambda x, dims: torch.logsumexp(x, dims, keepdim=True), [R3(lo=-20, hi=20)], {"dims": [0, 2]})
    case("logsumexp_dims", lambda x, dims: torch.logsumexp(x, dims, keepdim=True), [R3()], {"dims": [1]}, tag="one")
    for c_ in (0, 1, 2):
        case("var_dims", lambda x, dims, correction: torch.var(x, dims, correction=correction, keepdim=True),
             [R3()], {"dims": [0, 2], "correction": c_}, tag=f"c{c_}")
    case("std_dims", lambda x, dims, correction: torch.std(x, dims, correction=correction, keepdim=True),
         [R3(layout="transposed")], {"dims": [1, 2], "correction": 1})
    case("var_mean_dims", lambda x, dims, correction: torch.cat(
        torch.var_mean(x, dims, correction=correction, keepdim=True), dims[0]), [R3()],
         {"dims": [1, 2], "correction": 0})
    case("std", lambda x, dim: x.std(dim, keepdim=True), [R3()], {"dim": 1})
    case("median", lambda x, dim: x.median(dim, keepdim=True).values, [R3()], {"dim": 1})
    case("median", lambda x, dim: x.median(dim, keepdim=True).values, [In(3, 4)], {"dim": 1}, tag="even")
    case("median", lambda x, dim: x.median(dim, keepdim=True).values, [I(3, 5)], {"dim": 1}, tag="i64")
    case("median_indices", lambda x, dim: x.median(dim, keepdim=True).indices, [R3()], {"dim": 2})
    for q in (0.0, 0.3, 0.5, 1.0):
        case("quantile", lambda x, q, dim: torch.quantile(x, q, dim=dim, keepdim=True), [R3()],
             {"q": q, "dim": 1}, tag=f"q{q}")
    case("topk_smallest", lambda x, k, dim: x.topk(k, dim, largest=False).values, [R3()], {"k": 2, "dim": 2})
    for p_ in (1.0, 2.0, 3.0, 0.5):
        case("vector_norm", lambda x, p, dims: torch.linalg.vector_norm(x, p, dims, keepdim=True),
             [R3()], {"p": p_, "dims": [1]}, tag=f"p{p_}")
    case("vector_norm", lambda x, p, dims: torch.linalg.vector_norm(x, p, dims, keepdim=True),
         [R3()], {"p": 2.0, "dims": [0, 2]}, tag="two_dims")
    case("vector_norm", lambda x, p, dims: torch.linalg.vector_norm(x.detach(), p, dims, keepdim=True),
         [In(3, 4, values=[0.0, 1.0, -2.0, 0.0, 3.0, 0.0, 0.0, 0.0, 1.5, 2.0, -1.0, 4.0])],
         {"p": 0.0, "dims": [1]}, tag="p0")
    case("vector_norm_inf", lambda x, dims: torch.linalg.vector_norm(x, float("inf"), dims, keepdim=True),
         [R3()], {"dims": [1, 2]})
    case("vector_norm_neginf", lambda x, dims: torch.linalg.vector_norm(x, float("-inf"), dims, keepdim=True),
         [R3()], {"dims": [0]})
    for o in ("fro", "1", "-1", "inf", "-inf", "2", "-2", "nuc"):
        def mn(x, ord):
            return torch.linalg.matrix_norm(x, ord if ord in ("fro", "nuc") else float(ord), keepdim=True)
        case("matrix_norm", mn, [In(3, 4, 5)], {"ord": o}, tag=o)
    case("matrix_norm", mn, [In(4, 5)], {"ord": "fro"}, tag="rank2")
    case("normalize", lambda x, p, dim: F.normalize(x, p, dim), [R3()], {"p": 2.0, "dim": 1})
    case("normalize", lambda x, p, dim: F.normalize(x, p, dim), [R3()], {"p": 1.0, "dim": -1}, tag="p1")
    case("cosine_similarity", lambda a, b, dim: F.cosine_similarity(a, b, dim).unsqueeze(dim),
         [In(3, 4, 5), In(3, 4, 5)], {"dim": 1})
    case("cosine_similarity", lambda a, b, dim: F.cosine_similarity(a, b, dim).unsqueeze(dim),
         [In(4, 6), In(1, 6)], {"dim": 1}, tag="broadcast")
    case("pairwise_distance", lambda a, b, p: F.pairwise_distance(a, b, p, keepdim=True),
         [In(5, 4), In(5, 4)], {"p": 2.0})
    case("pairwise_distance", lambda a, b, p: F.pairwise_distance(a, b, p, keepdim=True),
         [In(5, 4), In(5, 4)], {"p": 1.0}, tag="p1")
    case("cdist", lambda a, b, p: torch.cdist(a, b, p), [In(5, 3), In(4, 3)], {"p": 2.0})
    case("cdist", lambda a, b, p: torch.cdist(a, b, p), [In(2, 5, 3), In(2, 4, 3)], {"p": 1.0}, tag="batched_p1")

    # ---- small linear algebra, einsum, meshgrid, windows (golden_breadth.cpp) ----------------
    case("outer", torch.outer, [In(4), In(3)])
    case("diagonal", torch.diagonal, [In(4, 4)])
    case("diagonal", torch.diagonal, [In(3, 5)], tag="wide")
    case("diag", torch.diag, [In(4)])
    case("trace", lambda x: torch.trace(x).reshape(1), [In(4, 4)])
    case("kron", torch.kron, [In(2, 3), In(3, 2)])
    for eq, ins in [("ik,kj->ij", [In(3, 4), In(4, 5)]), ("bhd,bkd->bhk", [In(2, 3, 4), In(2, 5, 4)]),
                    ("ij,ij->i", [In(3, 4), In(3, 4)]), ("i,i->", [In(5), In(5)]),
                    ("i,j->ij", [In(3), In(4)]), ("ij->ji", [In(3, 4)]), ("ijk->j", [In(2, 3, 4)]),
                    ("ij,j->i", [In(3, 4), In(4)]), ("bi,bj->bij", [In(2, 3), In(2, 4)]),
                    ("bij,bjk,bkl->bil", [In(2, 3, 4), In(2, 4, 5), In(2, 5, 2)]),
                    ("abc,cd->dba", [In(2, 3, 4), In(4, 5)])]:
        case("einsum", lambda *xs, equation, eq=eq: torch.einsum(eq, *xs), ins, {"equation": eq},
             tag=eq.replace(",", "_").replace("->", "_to_") or "x")
    case("einsum", lambda a, b, equation: torch.einsum("ik,kj->ij", a, b), [I(3, 4), I(4, 2)],
         {"equation": "ik,kj->ij/i64"}, tag="i64")
    for indexing in ("ij", "xy"):
        case("meshgrid", lambda x, y, indexing: torch.stack(torch.meshgrid(x, y, indexing=indexing)),
             [In(3), In(3)], {"indexing": indexing}, tag=indexing)
    for w, fn in [("hann", torch.hann_window), ("hamming", torch.hamming_window),
                  ("blackman", torch.blackman_window), ("bartlett", torch.bartlett_window)]:
        for n, periodic in [(8, True), (7, False), (1, True), (0, True)]:
            case("window", lambda window, n, periodic, fn=fn: fn(n, periodic=periodic), [],
                 {"window": w, "n": n, "periodic": periodic}, tag=f"{w}_{n}_{'p' if periodic else 's'}",
                 atol=1e-6)

    # ---- pooling with indices, unpooling, adaptive max pooling (golden_breadth.cpp) ------------
    def mp(x, kernel, stride, padding, dilation, ceil_mode):
        f = {3: F.max_pool1d, 4: F.max_pool2d, 5: F.max_pool3d}[x.dim()]
        return f(x, kernel, stride, padding, dilation, ceil_mode, return_indices=True)


    for tag, x, a in [("1d", In(2, 3, 9), dict(kernel=[3], stride=[2], padding=[1], dilation=[1], ceil_mode=False)),
                      ("2d", In(2, 3, 7, 6), dict(kernel=[2, 2], stride=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False)),
                      ("2d_pad_dil", In(1, 2, 8, 7), dict(kernel=[3, 2], stride=[2, 1], padding=[1, 1], dilation=[2, 1], ceil_mode=False)),
                      ("2d_ceil", In(2, 2, 7, 7), dict(kernel=[2, 3], stride=[2, 2], padding=[0, 1], dilation=[1, 1], ceil_mode=True)),
                      ("3d", In(1, 2, 5, 4, 6), dict(kernel=[2, 2, 3], stride=[2, 2, 2], padding=[0, 1, 1], dilation=[1, 1, 1], ceil_mode=False))]:
        case("max_pool_indices", lambda x, **k: mp(x, **k)[1], [x], a, tag=tag)
    case("max_pool_indices", lambda x, kernel, padding, dilation, ceil_mode: F.max_pool2d(
        x, kernel, None, padding, dilation, ceil_mode, return_indices=True)[1], [In(2, 3, 6, 5)],
         dict(kernel=[2, 2], padding=[0, 0], dilation=[1, 1], ceil_mode=False), tag="default_stride")
    for tag, shape, kernel in [("1d", (2, 3, 8), 2), ("2d", (2, 3, 6, 4), 2), ("3d", (1, 2, 4, 4, 6), 2)]:
        x0 = In(*shape).make()
        f = {3: F.max_pool1d, 4: F.max_pool2d, 5: F.max_pool3d}[len(shape)]
        y, idx = f(x0, kernel, return_indices=True)
        un = {3: F.max_unpool1d, 4: F.max_unpool2d, 5: F.max_unpool3d}[len(shape)]
        case("max_unpool", lambda y, i, size, un=un, kernel=kernel: un(y, i, kernel, output_size=size),
             [In(*y.shape, values=y.flatten().tolist()), I(*idx.shape, values=idx.flatten().tolist())],
             {"size": list(shape[2:])}, tag=tag)
    for tag, x, size in [("1d", In(2, 3, 10), [4]), ("2d", In(2, 3, 7, 5), [3, 2]), ("2d_up", In(1, 2, 3, 4), [5, 6]),
                         ("3d", In(1, 2, 5, 4, 6), [2, 3, 4]), ("global", In(2, 3, 4, 5), [1, 1])]:
        fn = {3: F.adaptive_max_pool1d, 4: F.adaptive_max_pool2d, 5: F.adaptive_max_pool3d}[len(x.shape)]
        case("adaptive_max_pool", lambda x, size, fn=fn: fn(x, size), [x], {"size": size}, tag=tag)
        case("adaptive_max_pool_indices", lambda x, size, fn=fn: fn(x, size, return_indices=True)[1], [x],
             {"size": size}, tag=tag)

    # ---- searching, counting, data-dependent selection (golden_breadth.cpp) -------------------
    edges = sorted([-1.5, -0.2, 0.4, 1.0, 1.7])
    for right in (False, True):
        case("searchsorted", lambda s, v, right: torch.searchsorted(s, v, right=right),
             [In(5, values=edges), In(3, 4, values=[-2, -1.5, -0.2, 0, 0.4, 0.9, 1, 1.2, 1.7, 2, -0.3, 0.41])],
             {"right": right}, tag=f"1d_right{int(right)}")
        case("bucketize", lambda x, b, right: torch.bucketize(x, b, right=right),
             [In(2, 3, values=[-2, -0.2, 0.1, 1.0, 1.9, 0.4]), In(5, values=edges)], {"right": right},
             tag=f"right{int(right)}")
    case("searchsorted", lambda s, v, right: torch.searchsorted(s, v, right=right),
         [In(2, 4, values=[0, 1, 2, 3, -3, -1, 1, 3]), In(2, 3, values=[1.5, -1, 3, -3, 0, 4])],
         {"right": False}, tag="batched")
    case("bucketize", lambda x, b, right: torch.bucketize(x, b, right=right),
         [I(3, 4, lo=0, hi=9), I(4, values=[1, 3, 5, 7])], {"right": False}, tag="i64")
    case("bincount", lambda x, minlength: torch.bincount(x, minlength=minlength), [I(12, lo=0, hi=6)], {"minlength": 0})
    case("bincount", lambda x, minlength: torch.bincount(x, minlength=minlength), [I(5, lo=0, hi=3)],
         {"minlength": 8}, tag="minlength")
    case("bincount", lambda x, minlength: torch.bincount(x, minlength=minlength), [I(0)], {"minlength": 3}, tag="empty")
    case("bincount_weighted", lambda x, w, minlength: torch.bincount(x, w.detach(), minlength=minlength),
         [I(10, lo=0, hi=4), In(10)], {"minlength": 0}, fd=False)
    case("histc", lambda x, bins, min, max: torch.histc(x.detach(), bins, min, max), [In(4, 6)], {"bins": 7, "min": -1.0, "max": 1.5})
    case("histc", lambda x, bins, min, max: torch.histc(x.detach(), bins, min, max), [In(30)], {"bins": 5, "min": 0.0, "max": 0.0},
         tag="data_range")
    case("histc", lambda x, bins, min, max: torch.histc(x.detach(), bins, min, max),
         [In(5, values=[0.0, 1.0, 2.0, 2.0, 3.0])], {"bins": 3, "min": 0.0, "max": 2.0}, tag="edges")
    case("nonzero", torch.nonzero, [In(3, 4, values=[0, 1, 0, 2, 0, 0, 3, 0, 4, 0, 0, 5])])
    case("nonzero", torch.nonzero, [Bo(2, 3, 4)], tag="bool3d")
    case("nonzero", torch.nonzero, [I(6, lo=-1, hi=1)], tag="i64")
    case("nonzero", torch.nonzero, [In(2, 3, values=[0] * 6)], tag="none")
    for key, k in [("unique_values", 0), ("unique_inverse", 1), ("unique_counts", 2)]:
        case(key, lambda x, k=k: torch.unique(x.detach(), sorted=True, return_inverse=True, return_counts=True)[k],
             [I(3, 5, lo=-3, hi=3)])
        case(key, lambda x, k=k: torch.unique(x.detach(), sorted=True, return_inverse=True, return_counts=True)[k],
             [In(7, values=[2.5, -1.0, 2.5, 0.0, -1.0, 7.0, 2.5])], tag="f32")

    # ---- factorizations and solves (golden_breadth.cpp) -------------------------------------
    def values_of(t):
        return In(*t.shape, values=t.flatten().tolist(), dtype=NAME[t.dtype])


    def spd(*shape):
        m = torch.rand(shape, dtype=torch.float64) * 2 - 1
        return (m @ m.transpose(-1, -2) + shape[-1] * torch.eye(shape[-1], dtype=torch.float64)).float()


    def well_conditioned(*shape):
        m = torch.rand(shape, dtype=torch.float64) * 2 - 1
        return (m + 2 * torch.eye(shape[-1], dtype=torch.float64)).float()


    case("cholesky", torch.linalg.cholesky, [values_of(spd(4, 4))], rtol=1e-4, atol=1e-5)
    case("cholesky", torch.linalg.cholesky, [values_of(spd(2, 3, 3))], tag="batched", rtol=1e-4, atol=1e-5)
    case("solve", torch.linalg.solve, [values_of(well_conditioned(4, 4)), In(4, 2)], rtol=1e-4, atol=1e-5)
    case("solve", torch.linalg.solve, [values_of(well_conditioned(2, 3, 3)), In(2, 3, 1)], tag="batched",
         rtol=1e-4, atol=1e-5)
    piv = torch.tensor([[0.1, 2.0, 1.0], [3.0, -1.0, 0.5], [1.0, 1.0, 4.0]])  # needs row swaps
    case("solve", torch.linalg.solve, [values_of(piv), In(3, 2)], tag="pivoting", rtol=1e-4, atol=1e-5)
    case("inv", torch.linalg.inv, [values_of(well_conditioned(4, 4))], rtol=1e-4, atol=1e-5)
    case("inv", torch.linalg.inv, [values_of(piv)], tag="pivoting", rtol=1e-4, atol=1e-5)
    case("det", lambda a: torch.linalg.det(a)[..., None, None], [values_of(well_conditioned(4, 4))], rtol=1e-4, atol=1e-5)
    case("det", lambda a: torch.linalg.det(a)[..., None, None], [values_of(piv)], tag="pivoting", rtol=1e-4, atol=1e-5)
    case("det", lambda a: torch.linalg.det(a)[..., None, None], [values_of(well_conditioned(3, 2, 2))], tag="batched",
         rtol=1e-4, atol=1e-5)
    for upper in (True, False):
        t = well_conditioned(4, 4)
        t = t.triu() if upper else t.tril()
        case("solve_triangular", lambda a, b, upper: torch.linalg.solve_triangular(a, b, upper=upper),
             [values_of(t), In(4, 3)], {"upper": upper}, tag="upper" if upper else "lower", rtol=1e-4, atol=1e-5)

    # ---- Fourier transforms (golden_breadth.cpp): complex values as view_as_real [..., 2] -----
    for shape in [(64,), (2, 48)]:  # istft of an stft of real signals (a spectrum istft can invert)
        x0 = In(*shape).make()
        spec = torch.view_as_real(torch.stft(x0, 16, 4, window=torch.hann_window(16), center=True,
                                             pad_mode="reflect", return_complex=True))
        case("istft", lambda z, w, n_fft, hop: torch.istft(torch.view_as_complex(z), n_fft, hop, window=w,
                                                            center=True),
             [values_of(spec), values_of(torch.hann_window(16))], {"n_fft": 16, "hop": 4},
             tag=f"r{len(shape)}", rtol=1e-4, atol=1e-5)
    for n, periodic, beta in [(9, True, 12.0), (8, False, 5.0)]:
        case("window", lambda window, n, periodic, beta: torch.kaiser_window(n, periodic=periodic, beta=beta), [],
             {"window": "kaiser", "n": n, "periodic": periodic, "beta": beta}, tag=f"kaiser_{n}", atol=1e-6)
    for n, real in [(8, False), (7, False), (8, True), (7, True)]:
        f = torch.fft.rfftfreq if real else torch.fft.fftfreq
        case("fftfreq", lambda n, d, real, f=f: f(n, d), [], {"n": n, "d": 0.5, "real": real},
             tag=f"{'r' if real else ''}{n}")
    for inverse, shape in [(False, (3, 8)), (True, (3, 7)), (False, (2, 5))]:
        f = torch.fft.ifftshift if inverse else torch.fft.fftshift
        case("fftshift", lambda x, dim, inverse, f=f: f(x, dim=dim), [In(*shape)], {"dim": -1, "inverse": inverse},
             tag=f"{'i' if inverse else ''}{shape[-1]}")
    case("rfft", lambda x, dim: torch.view_as_real(torch.fft.rfft(x, dim=dim)), [In(3, 16)], {"dim": -1})
    case("rfft", lambda x, dim: torch.view_as_real(torch.fft.rfft(x, dim=dim)), [In(7)], {"dim": -1}, tag="odd")
    case("rfft", lambda x, dim: torch.view_as_real(torch.fft.rfft(x, dim=dim)), [In(2, 10, 3)], {"dim": 1}, tag="dim1")
    for n, bins in [(16, 9), (15, 8)]:
        case("irfft", lambda z, n: torch.fft.irfft(torch.view_as_complex(z), n=n), [In(3, bins, 2)], {"n": n},
             tag=f"n{n}")
    for inverse in (False, True):
        f = torch.fft.ifft if inverse else torch.fft.fft
        case("fft", lambda z, inverse, f=f: torch.view_as_real(f(torch.view_as_complex(z))), [In(2, 12, 2)],
             {"inverse": inverse}, tag="inverse" if inverse else "forward")
    for shape in [(64,), (2, 50)]:
        case("stft", lambda x, w, n_fft, hop: torch.view_as_real(
            torch.stft(x, n_fft, hop, window=w, center=True, pad_mode="reflect", return_complex=True)),
             [In(*shape), values_of(torch.hann_window(16))], {"n_fft": 16, "hop": 4}, tag=f"r{len(shape)}",
             rtol=1e-4, atol=1e-5)

    # ---- sampling grids (golden_breadth.cpp) --------------------------------------------------
    for ac in (False, True):
        case("affine_grid", lambda t, size, align_corners: F.affine_grid(t, size, align_corners=align_corners),
             [In(2, 2, 3)], {"size": [2, 3, 4, 5], "align_corners": ac}, tag=f"ac{int(ac)}")
    for mode, pm, ac in [("bilinear", "zeros", False), ("bilinear", "zeros", True), ("bilinear", "border", False),
                         ("nearest", "zeros", False), ("nearest", "border", True)]:
        case("grid_sample", lambda x, g, mode, padding_mode, align_corners: F.grid_sample(
            x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners),
             [In(2, 3, 5, 6), In(2, 4, 3, 2, lo=-1.2, hi=1.2)],
             {"mode": mode, "padding_mode": pm, "align_corners": ac}, tag=f"{mode}_{pm}_ac{int(ac)}",
             fd=mode == "bilinear", rtol=1e-4, atol=1e-5)

    # ---- QR, symmetric eigenproblems, singular values (golden_breadth.cpp) ---------------------
    def qr_positive(a):  # Q stacked over R, with R's diagonal made positive (ember's convention)
        q, r = torch.linalg.qr(a)
        s = torch.sign(torch.diagonal(r, dim1=-2, dim2=-1))
        return torch.cat([q * s.unsqueeze(-2), r * s.unsqueeze(-1)], -2)


    def signed_columns(v):
        at = v.abs().argmax(-2, keepdim=True)
        return v * torch.gather(v, -2, at).sign()


    def sym(*shape):
        m = torch.rand(shape, dtype=torch.float64) * 2 - 1
        return (m + m.transpose(-1, -2)).float()


    case("qr", qr_positive, [values_of(well_conditioned(4, 4))], rtol=1e-4, atol=1e-5)
    case("qr", qr_positive, [In(5, 3)], tag="tall", rtol=1e-4, atol=1e-5)
    case("qr", qr_positive, [values_of(well_conditioned(2, 3, 3))], tag="batched", rtol=1e-4, atol=1e-5)
    case("eigvalsh", lambda a: torch.linalg.eigvalsh(a).unsqueeze(-1), [values_of(sym(4, 4))], rtol=1e-4, atol=1e-5)
    case("eigvalsh", lambda a: torch.linalg.eigvalsh(a).unsqueeze(-1), [values_of(sym(2, 3, 3))], tag="batched",
         rtol=1e-4, atol=1e-5)
    case("eigh_vectors", lambda a: signed_columns(torch.linalg.eigh(a)[1]), [values_of(sym(4, 4))], rtol=1e-3,
         atol=1e-4, fd=False)
    case("svdvals", lambda a: torch.linalg.svdvals(a).unsqueeze(-1), [values_of(well_conditioned(4, 4))], rtol=1e-4,
         atol=1e-5)
    case("svdvals", lambda a: torch.linalg.svdvals(a).unsqueeze(-1), [In(3, 5)], tag="wide", rtol=1e-4, atol=1e-5)
    for shape, tag in [((5, 3), "tall"), ((3, 5), "wide"), ((2, 4, 3), "batched")]:
        case("svd_u", lambda a: signed_columns(torch.linalg.svd(a, full_matrices=False)[0]), [In(*shape)],
             tag=tag, rtol=1e-3, atol=1e-4, fd=False)
        case("svd_v", lambda a: signed_columns(torch.linalg.svd(a, full_matrices=False)[2].transpose(-1, -2)),
             [In(*shape)], tag=tag, rtol=1e-3, atol=1e-4, fd=False)
        case("pinv", torch.linalg.pinv, [In(*shape)], tag=tag, rtol=1e-3, atol=1e-4)
    case("lstsq", lambda a, b: torch.linalg.lstsq(a, b).solution, [In(6, 3), In(6, 2)], rtol=1e-3, atol=1e-4)
    case("lstsq", lambda a, b: torch.linalg.lstsq(a, b).solution, [In(2, 5, 4), In(2, 5, 1)], tag="batched",
         rtol=1e-3, atol=1e-4)

    # the fused optimizer updates (lerp, addcmul, adaptive_step), last: the cases above keep
    # their inputs
    case("lerp", lambda a, b, weight: torch.lerp(a, b, weight), [In(2, 3, 4), In(1, 3, 1)],
         {"weight": 0.8}, tag="far_broadcast")
    case("lerp", lambda a, b, weight: torch.lerp(a, b, weight),
         [In(2, 3, 4, layout="transposed"), In(2, 3, 4)], {"weight": 0.1}, tag="noncontig")
    case("lerp", lambda a, b, weight: torch.lerp(a, b, weight),
         [In(5, 7, dtype="f64"), In(5, 7, dtype="f64")], {"weight": 0.999}, tag="f64", rtol=1e-12)
    case("addcmul_scaled", lambda x, a, b, value, scale: x * scale + value * a * b,
         [In(4, 9), In(4, 9), In(4, 9)], {"value": 0.001, "scale": 0.999})
    case("addcmul_scaled", lambda x, a, b, value, scale: x * scale + value * a * b,
         [In(2, 3, 4), In(1, 3, 4), In(2, 1, 4)], {"value": -0.5, "scale": 2.0}, tag="broadcast")
    case("adaptive_step", lambda x, m, v, step, eps: torch.addcdiv(x, m, v.sqrt() + eps, value=-step),
         [In(4, 9), In(4, 9), In(4, 9, lo=0.01, hi=2)], {"step": 0.01, "eps": 1e-3})
    case("adaptive_step", lambda x, m, v, step, eps: torch.addcdiv(x, m, v.sqrt() + eps, value=-step),
         [In(2, 3, 4), In(2, 3, 4, layout="transposed"), In(1, 3, 1, lo=0.01, hi=2)],
         {"step": 0.5, "eps": 1e-8}, tag="broadcast_noncontig")
    case("adaptive_step", lambda x, m, v, step, eps: torch.addcdiv(x, m, v.sqrt() + eps, value=-step),
         [In(3, 5, dtype="bf16"), In(3, 5, dtype="bf16"), In(3, 5, dtype="bf16", lo=0.01, hi=2)],
         {"step": 0.1, "eps": 1e-8}, tag="bf16", rtol=1e-2, atol=1e-2)
