#!/usr/bin/python3
"""torch.matmul throughput on the shapes and layouts of gemm_bench.c, in bf16
and fp32, with torch.set_num_threads(N): median GFLOP/s over repeats.

    torch_matmul.py [-t threads] [-r repeats] [-s MxNxK]...

Layouts (C[M,N] = op(A) op(B)): NN a[M,K] @ b[K,N]; NT a @ w.t() with w
stored [N,K] (what F.linear does); TN a.t() @ b with a stored [K,M].
torch.matmul of bf16 operands returns bf16 (oneDNN's dst_bf16, what
autocast's linear gives): it writes half the bytes of C that gemm_bench's
products write (fp32 C, what the library's layers take).
Each product runs twice: on PyTorch's own allocation (C allocated by the
call) and with every operand and C (out=) on transparent huge pages, as
gemm_bench.c gives the library's products; compare_gemm.sh keeps the
better of the two.
Output: "torch <layout> <M> <N> <K> torch <dtype> <GFLOP/s> <ms> <pages>",
pages "own" or "huge"."""
import argparse
import mmap
import statistics
import time

import torch

_HUGE = 2 << 20


def on_huge_pages(t):
    """A copy of t in a private anonymous mapping advised for huge pages,
    starting on a 2 MiB boundary (a shared mapping would be shmem, whose
    huge pages the kernel gives only by another setting)."""
    size = t.numel() * t.element_size()
    mm = mmap.mmap(-1, size + _HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    mm.madvise(mmap.MADV_HUGEPAGE)
    raw = torch.frombuffer(mm, dtype=torch.uint8)  # holds mm while it lives
    start = -raw.data_ptr() % _HUGE
    out = raw[start:start + size].view(t.dtype).view(t.shape)
    out.copy_(t)
    return out


def bench(fn, repeats):
    # two runs and at least 0.2 s, as gemm_bench.c warms up
    warm_until = time.perf_counter() + 0.2
    fn()
    while True:
        fn()
        if time.perf_counter() >= warm_until:
            break
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-r", type=int, default=21)
    ap.add_argument("-s", action="append", default=[])
    args = ap.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.s] or [
        (1024, 768, 768), (1024, 3072, 768), (1024, 768, 3072)]
    torch.set_num_threads(args.t)
    print(f"# torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"median of {args.r}")
    print("# torch's bf16 products write C in bf16, ours in fp32 (twice the bytes)")
    g = torch.Generator().manual_seed(0)
    for M, N, K in shapes:
        for layout in ("NN", "NT", "TN"):
            for dtype, name in ((torch.bfloat16, "bf16"), (torch.float32, "fp32")):
                a = torch.rand(K, M, generator=g) if layout == "TN" else torch.rand(M, K, generator=g)
                b = torch.rand(N, K, generator=g) if layout == "NT" else torch.rand(K, N, generator=g)
                a, b = a.to(dtype), b.to(dtype)
                for pages in ("own", "huge"):
                    out = None
                    if pages == "huge":
                        a, b = on_huge_pages(a), on_huge_pages(b)
                        out = on_huge_pages(torch.empty(M, N, dtype=dtype))
                    x = a.t() if layout == "TN" else a
                    y = b.t() if layout == "NT" else b
                    fn = (lambda: torch.matmul(x, y)) if out is None else \
                        (lambda: torch.matmul(x, y, out=out))
                    t = bench(fn, args.r)
                    print(f"torch {layout} {M} {N} {K} torch {name} "
                          f"{2.0 * M * N * K / t * 1e-9:.1f} {t * 1e3:.3f} {pages}", flush=True)


if __name__ == "__main__":
    main()
