"""Workloads from real networks: a zoo of network definitions (transformers configs and torch conv nets,
random weights never allocated), exported with `torch.export`, compiled by TVM's Relax pipeline up to
fusion, and cut into the fused TensorIR functions a compiler schedules (`dragon_dsl.tvm.relax_tasks`).

    python -m dragon_dsl.corpus.networks --out DIR [--networks NAMES] [--list]

Modules: `registry` (records, lookup), `zoo` (the networks and their variants), `hf_models`,
`convnets`, `vision_blocks`, `quant` (model builders), `extract` (one network), `driver` (the resumable
run and the merge), `splits` (the train / validation / test manifest by network).
"""
