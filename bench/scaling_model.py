#!/usr/bin/python3
"""The scaling model of bench/scaling.sh: reads its results file, prints the
measured table, then predicts data-parallel efficiency for 8..256 ranks at
each link speed and checks the prediction against the measured 2- and
4-rank points.

Per step, every rank computes for T1 seconds (the 1-rank run's step time:
weak scaling, same per-rank batch) and allreduces the fp32 gradients,
S = 4 x parameters bytes (lib/train/ddp.c sends fp32, in buckets of
ddp_bucket_cap_mb = 25 MiB). A ring allreduce (the tcp backend's:
reduce-scatter then allgather) moves 2 (N-1)/N x S bytes in and out of
every rank and takes 2 (N-1) steps per bucket, so

    C(N) = 2 (N-1)/N x S / B  +  2 (N-1) x k x a

with B the bus bandwidth and a the per-step latency measured on the link
by allreduce_bench (2 ranks), k the number of buckets. Backward hides part
of C: the buckets sent while it still runs. What it can hide is bounded by
backward's own duration, which does not change with N (same per-rank
batch), so the hidden seconds H are taken from the 2-rank run and held:

    exposed W(N) = max(e C(N), C(N) - H),   efficiency E(N) = T1 / (T1 + W(N))

with e the embeddings' share of S: backward produces their gradients last,
so their bucket is always sent after it (e = 1 when all fits one bucket).
B comes three ways: the link alone (allreduce_bench), what the 2-rank
training run got (its comm time: the link while compute shares the core),
and the nominal rate times the framing loss measured at 1 Gbit/s (for a
host whose cores are not the bottleneck; H then at most backward's length,
2/3 T1).

usage: scaling_model.py RESULTS [DIR]  (DIR: where the runs' logs are)"""
import json
import math
import os
import sys

BUCKET = 25 << 20
SIZES = (2, 4, 8, 16, 32, 64, 128, 256)


other = {}  # the slower 1-rank step of a model, for the table
load = {}   # load average when each run ended
mean = {}   # mean step time (the reducer's figures are means)


def parse(path):
    host, links, runs = {}, {}, {}
    for line in open(path):
        kind, *fields = line.split(" ")
        if kind == "host":  # the cpu name has spaces: keep everything after cpu=
            text = line[len("host "):].strip()
            host["cpu"] = text.split("cpu=", 1)[1].split(" cores=")[0]
            for f in ("cores=" + text.split(" cores=", 1)[1]).split(" "):
                k, v = f.split("=", 1)
                host[k] = v
            continue
        d = dict(f.strip().split("=", 1) for f in fields)
        if kind == "link":
            links[(d["rate"], int(d["ranks"]))] = (float(d["busbw"]) * 1e9,
                                                   float(d["latency_us"]) * 1e-6)
        elif kind == "run":
            key = (d["model"], d["rate"], d["backend"], int(d["ranks"]))
            if key in runs:  # the 1-rank runs, first and last: the faster
                other.setdefault(key, []).append(runs[key][0])
                if runs[key][0] <= float(d["step"]):
                    other[key][-1] = float(d["step"])
                    continue
            runs[key] = (float(d["step"]), float(d["comm"]), float(d["exposed"]))
            mean[key] = float(d.get("mean", d["step"]))
            load[key] = d.get("load", "-")
    return host, links, runs


def params(config_path):
    """BertForQuestionAnswering's parameter count (no pooler), from config.json,
    and the embeddings' share of it."""
    c = json.load(open(config_path))
    h, i, l = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"]
    emb = (c["vocab_size"] + c["max_position_embeddings"] + c["type_vocab_size"]) * h + 2 * h
    layer = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    total = emb + l * layer + 2 * h + 2
    return total, emb / total


def nominal(rate):
    """tc's rate text (1gbit, 10gbit, 500mbit) in bytes per second."""
    units = {"gbit": 1e9, "mbit": 1e6, "kbit": 1e3}
    for u, f in units.items():
        if rate.endswith(u):
            return float(rate[:-len(u)]) * f / 8
    return float(rate.rstrip("bit")) / 8


def comm(n, s, bw, lat):
    k = max(1, round(s / BUCKET))
    return 2 * (n - 1) / n * s / bw + 2 * (n - 1) * k * lat


def main():
    results = sys.argv[1]
    d = sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(results)
    host, links, runs = parse(results)
    models = sorted({k[0] for k in runs}, key=lambda m: (m != "bert-tiny", m))
    rates = sorted({k[1] for k in runs if k[1] != "-"}, key=nominal)
    backends = sorted({k[2] for k in runs if k[2] != "-"}, key=lambda b: (b != "tcp", b))
    size = {m: 4 * params(f"{d}/{m}.json")[0] for m in models}
    # Backward finishes with the embeddings: their bucket (one of its own
    # when a layer fills a bucket, else everything) is always exposed.
    last = {m: params(f"{d}/{m}.json")[1] if round(size[m] / BUCKET) > 1 else 1.0
            for m in models}
    t1 = {m: runs[(m, "-", "-", 1)][0] for m in models if (m, "-", "-", 1) in runs}

    print(f"\n== measured: {host.get('cpu', '?')}, {host.get('cores', '?')} cores, kernel "
          f"{host.get('kernel', '?')}; per rank batch {host.get('batch', '?')}, 1 thread, "
          f"seq {host.get('seq', '?')}")
    print("   step: median s/step; comm: allreduce s/step (rank 0, mean); exposed: its part after "
          "backward;\n   overlap = 1 - exposed/comm; eff = T1/(T1+exposed) (a core per rank); "
          "eff_raw = T1/TN (4 ranks share 2 cores)")
    print(f"{'model':10} {'link':7} {'backend':7} {'ranks':>5} {'step_s':>8} {'comm_s':>8} "
          f"{'exposed_s':>9} {'overlap':>7} {'eff':>6} {'eff_raw':>7} {'load':>5}")
    for m in models:
        for key in sorted((k for k in runs if k[0] == m),
                          key=lambda k: (k[1] != "-", rates.index(k[1]) if k[1] in rates else 0,
                                         k[2], k[3])):
            step, c, w = runs[key]
            base = t1.get(m)
            ov = f"{100 * max(0.0, 1 - w / c):.0f}%" if c > 0 else "-"
            eff = f"{base / (base + w):.2f}" if base else "-"
            raw = f"{base / step:.2f}" if base else "-"
            extra = (f"  (the other 1-rank run: {other[key][0]:.3f})" if key in other else "")
            print(f"{m:10} {key[1]:7} {key[2]:7} {key[3]:5} {step:8.3f} {c:8.3f} {w:9.3f} "
                  f"{ov:>7} {eff:>6} {raw:>7} {load.get(key, '-'):>5}{extra}")

    print("\n== link, measured with allreduce_bench over tcp (largest size, 32 MiB)")
    print(f"{'link':7} {'ranks':>5} {'busbw_GB/s':>10} {'Gbit/s':>7} {'latency_us':>10}")
    for (rate, n), (bw, lat) in sorted(links.items(), key=lambda x: (nominal(x[0][0]), x[0][1])):
        print(f"{rate:7} {n:5} {bw * 1e-9:10.3f} {bw * 8e-9:7.2f} {lat * 1e6:10.1f}")

    print("\n== model: C(N) = 2(N-1)/N S/B + 2(N-1) k a;  W(N) = max(e C(N), C(N) - H);  "
          "E(N) = T1/(T1 + W(N))")
    print("   S = 4 x parameters (fp32 gradients), k = S / 25 MiB buckets, a the 2-rank link "
          "latency, T1 the 1-rank step,\n   H = hidden seconds of the backend's 2-rank run "
          "(comm - exposed), e the embeddings' share of S (their bucket is\n   the last, "
          "sent when backward has ended; 1 when everything fits one bucket). B, three ways:\n     link     the 2-rank allreduce_bench bus "
          "bandwidth\n     train    what the backend's 2-rank training run got, S / (its comm "
          "- latency term)\n     nominal  the link's rate x the 1gbit link row's measured/nominal "
          "(TCP over Ethernet framing),\n              for a host whose cores are not the "
          "bottleneck (shown where it differs from link),\n              and H at most backward's "
          "length, 2/3 T1")
    framing = None
    if ("1gbit", 2) in links:
        framing = links[("1gbit", 2)][0] / nominal("1gbit")

    def exposed(m, n, bw, lat, hidden):
        c = comm(n, size[m], bw, lat)
        return max(last[m] * c, c - hidden)

    def bandwidths(m, rate, be):
        """(label, B, a, H) for the rows of a model, link and backend."""
        if (rate, 2) not in links or (m, rate, be, 2) not in runs:
            return []
        bw, lat = links[(rate, 2)]
        _, c2, w2 = runs[(m, rate, be, 2)]
        hidden = max(0.0, c2 - w2)
        k = max(1, round(size[m] / BUCKET))
        rows = []
        if be == "tcp":
            rows.append(("link", bw, lat, hidden))
        rows.append(("train", size[m] / max(1e-9, c2 - 2 * k * lat), lat, hidden))
        if be == "tcp" and framing and abs(nominal(rate) * framing / bw - 1) > 0.1:
            # Here backward was stretched by communication sharing its core;
            # on a host with cores to spare it hides at most its own length.
            rows.append(("nominal", nominal(rate) * framing, lat, min(hidden, 2 / 3 * t1[m])))
        return rows

    for m in models:
        if m not in t1:
            continue
        s = size[m]
        print(f"\n{m}: {s // 4:,} parameters, S = {s / 2**20:.1f} MiB, "
              f"k = {max(1, round(s / BUCKET))}, T1 = {t1[m]:.3f} s; predicted efficiency")
        print(f"{'link':7} {'backend':7} {'B from':8} {'B_GB/s':>6} {'H_s':>6} " +
              " ".join(f"{'E(' + str(n) + ')':>7}" for n in SIZES))
        for rate in rates:
            for be in backends:
                for label, bw, lat, hidden in bandwidths(m, rate, be):
                    effs = [t1[m] / (t1[m] + exposed(m, n, bw, lat, hidden)) for n in SIZES]
                    print(f"{rate:7} {be:7} {label:8} {bw * 1e-9:6.3f} {hidden:6.3f} " +
                          " ".join(f"{e:7.2f}" for e in effs))

    print("\n== check: predicted (B from link / from the 2-rank training run) against measured;"
          "\n   eff measured = T1/(T1+exposed) (a core per rank), eff_raw = T1/TN (at 2 ranks each "
          "rank has its own core,\n   but shares it with its communication: slowdown = mean TN - T1 "
          "- exposed is what that cost)")
    print(f"{'model':10} {'link':7} {'backend':7} {'ranks':>5}  {'comm: link':>10} {'train':>6} "
          f"{'meas':>6}  {'exposed: link':>13} {'train':>6} {'meas':>6}  {'eff: link':>9} "
          f"{'train':>5} {'meas':>5} {'raw':>5}  {'slowdown_s':>10}")
    for m in models:
        if m not in t1:
            continue
        for rate in rates:
            for be in backends:
                rows = dict((r[0], r[1:]) for r in bandwidths(m, rate, be))
                if "train" not in rows:
                    continue
                for n in (2, 4):
                    if (m, rate, be, n) not in runs:
                        continue
                    step, c, w = runs[(m, rate, be, n)]
                    pred = {}
                    for label in ("link", "train"):
                        if label in rows:
                            bw, lat, hidden = rows[label]
                            cp = comm(n, size[m], bw, lat)
                            wp = exposed(m, n, bw, lat, hidden)
                            pred[label] = (f"{cp:.3f}", f"{wp:.3f}", f"{t1[m] / (t1[m] + wp):.2f}")
                        else:
                            pred[label] = ("-", "-", "-")
                    print(f"{m:10} {rate:7} {be:7} {n:5}  {pred['link'][0]:>10} {pred['train'][0]:>6} "
                          f"{c:6.3f}  {pred['link'][1]:>13} {pred['train'][1]:>6} {w:6.3f}  "
                          f"{pred['link'][2]:>9} {pred['train'][2]:>5} {t1[m] / (t1[m] + w):5.2f} "
                          f"{t1[m] / step:5.2f}  {mean[(m, rate, be, n)] - t1[m] - w:10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
