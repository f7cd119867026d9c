# Sourced at the start of every device call after the first (see GPU-RUNBOOK.md):
#     . benchmarks/device_env.sh
# The TVM site was unpacked by call 1 into /opt/dragon-site; this adds MetaSchedule's cost model
# (.devcache2, when carried), our pure-Python wheels (.whl, when carried) and the package links
# (model/ is imported as dragon_model, lsp/ as dragon_lsp, grammar/ as dragon_grammar).
export PYTHONPATH=/opt/dragon-site PYTHONUNBUFFERED=1
[ -f .devcache2/unpack.sh ] && . .devcache2/unpack.sh
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
