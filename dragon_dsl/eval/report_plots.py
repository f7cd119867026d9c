"""The report's plots (matplotlib PNGs, Agg backend) from a results dict: the speed-up
distribution, time against quality, and the per-family breakdown over the last baseline."""

from __future__ import annotations

from pathlib import Path

PLOTS = ("speedup_distribution.png", "time_vs_quality.png", "per_family.png")


def plots(results: dict, out_dir) -> list:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    met = results["metrics"]
    base = met["baselines"][-1] if met["baselines"] else None
    names = [n for n in met["methods"] if n != base]
    written = []

    fig, ax = plt.subplots(figsize=(8, 4.5))
    data = [[s for s in met["methods"][n].get(f"over_{base}", {}).get("per_task", {}).values() if s] for n in names]
    shown = [(n, d) for n, d in zip(names, data) if d]
    if shown:
        ax.boxplot([d for _, d in shown], showfliers=True)
        ax.set_xticks(range(1, len(shown) + 1), [n for n, _ in shown], rotation=30, ha="right")
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel(f"speed-up over {base} (log)")
    ax.set_title("Speed-up distribution per method")
    fig.tight_layout()
    fig.savefig(out / PLOTS[0], dpi=120)
    plt.close(fig)
    written.append(out / PLOTS[0])

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for n in names:
        per = met["methods"][n].get(f"over_{base}", {}).get("per_task", {})
        pts = [
            (r["time_s"], per.get(r["workload"]))
            for r in results["measurements"]
            if r["method"] == n and r["task"] == "construction" and r.get("time_s") and per.get(r["workload"])
        ]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=n, s=18)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time to a verified kernel (s, log)")
    ax.set_ylabel(f"speed-up over {base} (log)")
    ax.set_title("Time to solution versus quality")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / PLOTS[1], dpi=120)
    plt.close(fig)
    written.append(out / PLOTS[1])

    fig, ax = plt.subplots(figsize=(9, 4.5))
    fams = sorted({f for n in names for f in met["methods"][n].get("families", {}).get(base, {})})
    width = 0.8 / max(1, len(names))
    for i, n in enumerate(names):
        per = met["methods"][n].get("families", {}).get(base, {})
        vals = [(per.get(f) or {}).get("geomean") or 0.0 for f in fams]
        ax.bar([j + i * width for j in range(len(fams))], vals, width, label=n)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(fams))], fams, rotation=30, ha="right")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_ylabel(f"geomean speed-up over {base}")
    ax.set_title("Per-family breakdown (0 = no verified answer)")
    if names:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / PLOTS[2], dpi=120)
    plt.close(fig)
    written.append(out / PLOTS[2])
    return written
