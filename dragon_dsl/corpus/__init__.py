"""The corpus pipeline: workloads, search, verified examples, pretraining records.

Modules: families (operator families: how each workload is built and which shapes are drawn),
generator (distinct `.tvmscript` workloads from those families), manifest (a workload folder's
`manifest.jsonl`), search_run (MetaSchedule over a workload folder through one warm Engine,
resumable), build (search records -> verified examples, split by family and by shape), verify
(a built corpus measured again from scratch), card (DATA_CARD.md from a built corpus), pretrain
(resumable pretraining records sampled from MetaSchedule's design spaces), and the subpackage
networks (workloads from real networks: fused TensorIR functions cut out of compiled network
definitions). ARCHITECTURE.md, invariant 10, says what holds between them.
"""
