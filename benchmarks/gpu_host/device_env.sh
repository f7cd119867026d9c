# Sourced on a GPU machine without network access before running the GPU benchmarks
# (docs/GPU-BENCHMARKS.md):
#     export PYTHONPATH=/opt/dragon-site; . benchmarks/gpu_host/device_env.sh
# TVM and the other dependencies were installed from wheels into /opt/dragon-site (or are on
# PYTHONPATH already); wheels found in .whl/ are installed into /tmp/site; the package names are
# linked (model/ is imported as dragon_model, lsp/ as dragon_lsp, grammar/ as dragon_grammar).
export PYTHONPATH=${PYTHONPATH:-/opt/dragon-site} PYTHONUNBUFFERED=1
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || return 1
fi
mkdir -p /tmp/pk
ln -sfn "$PWD/model" /tmp/pk/dragon_model
ln -sfn "$PWD/lsp" /tmp/pk/dragon_lsp
ln -sfn "$PWD/grammar" /tmp/pk/dragon_grammar
export PYTHONPATH=/tmp/site:$PWD:/tmp/pk:$PYTHONPATH
dragon() { python3 -m dragon_dsl.cli.main "$@"; }
python3 -c 'import tvm, dragon_dsl, dragon_model' || return 1
