#!/usr/bin/python3
"""torch.matmul throughput on the shapes and layouts of gemm_bench.c, in bf16
and fp32, with torch.set_num_threads(N): median GFLOP/s over repeats.

    torch_matmul.py [-t threads] [-r repeats] [-s MxNxK]...

Layouts (C[M,N] = op(A) op(B)): NN a[M,K] @ b[K,N]; NT a @ w.t() with w
stored [N,K] (what F.linear does); TN a.t() @ b with a stored [K,M].
torch.matmul of bf16 operands returns bf16 (oneDNN's dst_bf16, what
autocast's linear gives): it writes half the bytes of C that gemm_bench's
products write (fp32 C, what the library's layers take).
Output: "torch <layout> <M> <N> <K> torch <dtype> <GFLOP/s> <ms>"."""
import argparse
import statistics
import time

import torch


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
                if layout == "NN":
                    fn = lambda: torch.matmul(a, b)
                elif layout == "NT":
                    fn = lambda: torch.matmul(a, b.t())
                else:
                    fn = lambda: torch.matmul(a.t(), b)
                t = bench(fn, args.r)
                print(f"torch {layout} {M} {N} {K} torch {name} "
                      f"{2.0 * M * N * K / t * 1e-9:.1f} {t * 1e3:.3f}", flush=True)


if __name__ == "__main__":
    main()
