"""The table in docs/measurements.md of the matrix's wall time on 1, 2, 4 and 8 runners, from the partitioner.

    .venv/bin/python benchmarks/shard_table.py [--costs FILE] [--repeat 5]

The matrix is what ``ci/workflows/trend*.yml`` measure: resnet15 and convnext_tiny over
every backend, each backend's default variant. Each case costs its seconds per cold
process times ``--repeat``; the wall time on N runners is the busiest shard of
``ttfg.measure.shard.partition`` (the runners' setup, installing the frameworks, is
not included). Without ``--costs`` the seconds are the built-in ones: the process-TTFG
medians measured on the 2-core VM and printed in docs/measurements.md's "Time to first gradient"
tables. With ``--costs`` they come from that results file or asv history.
"""

from __future__ import annotations

import argparse

from ttfg.history.shard_costs import load_costs
from ttfg.measure.cases import select
from ttfg.measure.shard import partition
from ttfg import fmt


def _case(cid: str) -> str:
    model, backend, _ = cid.split("/")
    return f"`{model}/{backend}`"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--costs")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    costs = load_costs(args.costs)
    matrices = {}
    for variants in ("default", "all"):
        cases, _ = select(["resnet15", "convnext_tiny"], ["all"], [variants], check_availability=False)
        matrices[variants] = [c.id for c in cases]
    print(f"cold processes per case: {args.repeat}; seconds per process: "
          + ("built-in (the medians of docs/measurements.md)" if not args.costs else args.costs) + "\n")
    print(f"| runners | default variants ({len(matrices['default'])} cases) | all variants "
          f"({len(matrices['all'])} cases) |")
    print("| --- | --- | --- |")
    one = {k: partition(ids, 1, costs).makespan_s * args.repeat for k, ids in matrices.items()}
    for n in args.runners:
        row = [str(n)]
        for key, ids in matrices.items():
            plan = partition(ids, n, costs)
            wall = plan.makespan_s * args.repeat
            busiest = max(plan.shards, key=lambda s: s.cost_s)
            bound = (f"; one case alone: {_case(busiest.cases[0])}" if len(busiest.cases) == 1
                     else f"; busiest shard {len(busiest.cases)} cases")
            row.append(f"{fmt.seconds(wall)} ({wall / 60:.1f} min), {fmt.factor(one[key] / wall)}{bound}")
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
