"""The TVM bridge: with the measurement engine, the only code that imports TVM.

Everything else (front ends, the language server, the model, the corpus tools, the evaluation,
the explainer) calls these modules: workloads (`workload`), trace conversion and replay
(`trace`, `replay`), the block walk (`blocks`), what TVM knows as plain records (`inspect`,
`facts`), the compile check (`compile`), TVM's error messages (`errors`), targets (`target`),
MetaSchedule (`tuning`, `database`, `design_space`, `autobind`, `dlight`), code generation
(`codegen`) and te operator builders (`operators`). Importing this package is cheap: each
function imports TVM on first use. ARCHITECTURE.md lists what each module owns.
"""
