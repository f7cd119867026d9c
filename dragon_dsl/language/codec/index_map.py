"""Index maps: a small typed expression IR (`index_ir`), its lambda text and TVM's JSON graph.

TVM writes an IndexMap into a trace as an FFI JSON graph string. The graph
carries a TVM version and, for maps built from block iteration variables,
source spans with absolute paths; neither changes the map's meaning. This
module reads such graphs into `IndexMap` (dropping spans), writes them back in
the node order TVM uses (post-order, objects shared by identity, POD values
shared by value), and renders them as readable lambdas:

    lambda i, j: (i // 16, j // 16, i % 16, j % 16)
    lambda (i: int64, j: int64): (i, j * int64(2))

Nothing here imports TVM; the test suite checks the graphs against TVM's own
`load_json` and structural equality.
"""

from __future__ import annotations

import json
import math
import re

from dragon_dsl.language.codec.index_ir import (  # noqa: F401  (re-exported: the IR's home was here)
    BINARY,
    COMPARE,
    FLOAT_DTYPE,
    FUNC_OPS,
    FUNCS,
    INDEX_DTYPE,
    INFIX,
    INFIX_OPS,
    OP_FIELDS,
    FloatImm,
    IExpr,
    IndexMap,
    IndexMapError,
    IntImm,
    Op,
    Var,
)
from dragon_dsl.language.syntax.lexical import float_text
from dragon_dsl.language.table import TVM_VERSION

_PREC = {"+": 1, "-": 1, "*": 2, "//": 2, "%": 2}

# ---- JSON graph -> IR ---------------------------------------------------------------


def from_graph(text: str) -> IndexMap:
    """Read TVM's JSON graph of an IndexMap."""
    try:
        graph = json.loads(text)
        nodes = graph["nodes"]
        root = graph["root_index"]
    except (ValueError, KeyError, TypeError) as exc:
        raise IndexMapError(f"not a JSON graph: {exc}") from None
    if not isinstance(nodes, list) or not isinstance(root, int) or not 0 <= root < len(nodes):
        raise IndexMapError("not a JSON graph: bad root_index or nodes")
    memo: dict[int, object] = {}
    params: dict[int, Var] = {}

    def node(i):
        if not isinstance(i, int) or not 0 <= i < len(nodes):
            raise IndexMapError(f"dangling node reference {i!r}")
        if i in memo:
            return memo[i]
        n = nodes[i]
        t = n.get("type") if isinstance(n, dict) else None
        d = n.get("data") if isinstance(n, dict) else None
        if t == "None":
            val = None
        elif t in ("int", "float", "bool", "ffi.String"):
            val = d
        elif t == "ffi.Array":
            val = [node(j) for j in d]
        elif t == "ir.PrimType":
            val = ("dtype", d["dtype"])
        elif t == "ir.Var" or t == "tirx.Var":
            val = Var(str(node(d["name"])), _dtype(node(d["ty"])))
        elif t == "ir.IntImm":
            val = IntImm(int(node(d["value"])), _dtype(node(d["ty"])))
        elif t == "ir.FloatImm":
            v = d["value"]
            val = FloatImm(
                float(node(v)) if isinstance(v, int) and nodes[v].get("type") == "float" else float(v),
                _dtype(node(d["ty"])),
            )
        elif isinstance(t, str) and t.startswith("prim.") and t[5:] in OP_FIELDS:
            op = t[5:]
            val = Op(op, tuple(node(d[f]) for f in OP_FIELDS[op]), _dtype(node(d["ty"])))
        elif t == "tirx.IndexMap":
            if d.get("inverse_index_map", 0) not in (0, None) and node(d["inverse_index_map"]) is not None:
                raise IndexMapError("index maps with a stored inverse are not supported")
            ps = node(d["initial_indices"])
            val = IndexMap(tuple(ps), tuple(node(d["final_indices"])))
        elif isinstance(t, str) and t.startswith("ir.Span") or t == "ir.SourceName":
            val = None
        else:
            raise IndexMapError(f"unsupported node type {t!r} in index map")
        memo[i] = val
        return val

    try:
        result = node(root)
    except (KeyError, TypeError, AttributeError) as exc:
        raise IndexMapError(f"malformed index map graph: {exc!r}") from None
    if not isinstance(result, IndexMap):
        raise IndexMapError("the JSON graph is not an IndexMap")
    del params
    return result


def _dtype(x) -> str:
    if isinstance(x, tuple) and x and x[0] == "dtype":
        return x[1]
    raise IndexMapError(f"expected a type, got {x!r}")


# ---- IR -> JSON graph ----------------------------------------------------------------


def to_graph(im: IndexMap, indent: int | None = None) -> str:
    """Write an IndexMap as TVM's JSON graph (compact, or indented like MetaSchedule's attrs)."""
    nodes: list[dict] = []
    by_key: dict = {}

    def add(key, make):
        if key in by_key:
            return by_key[key]
        entry = make()
        nodes.append(entry)
        by_key[key] = len(nodes) - 1
        return by_key[key]

    def none():
        return add(("None",), lambda: {"type": "None"})

    def ptype(dtype):
        span = none()
        return add(("ptype", dtype), lambda: {"type": "ir.PrimType", "data": {"span": span, "dtype": dtype}})

    def string(s):
        return add(("str", s), lambda: {"type": "ffi.String", "data": s})

    def pod_int(v):
        return add(("int", v), lambda: {"type": "int", "data": v})

    counter = [0]

    def fresh():  # objects that are distinct even when equal (IntImm, ops)
        counter[0] += 1
        return ("obj", counter[0])

    def expr(e) -> int:
        if isinstance(e, Var):
            span = none()
            ty = ptype(e.dtype)
            name = string(e.name)
            return add(
                ("var", e.name, e.dtype), lambda: {"type": "ir.Var", "data": {"span": span, "ty": ty, "name": name}}
            )
        if isinstance(e, IntImm):
            span = none()
            ty = ptype(e.dtype)
            value = pod_int(e.value)
            return add(fresh(), lambda: {"type": "ir.IntImm", "data": {"span": span, "ty": ty, "value": value}})
        if isinstance(e, FloatImm):
            span = none()
            ty = ptype(e.dtype)
            return add(fresh(), lambda: {"type": "ir.FloatImm", "data": {"span": span, "ty": ty, "value": e.value}})
        span = none()
        ty = ptype(e.dtype)
        fields = {f: expr(a) for f, a in zip(OP_FIELDS[e.op], e.args)}
        return add(fresh(), lambda: {"type": "prim." + e.op, "data": {"span": span, "ty": ty, **fields}})

    def array(items) -> int:
        ids = [expr(x) for x in items]
        return add(fresh(), lambda: {"type": "ffi.Array", "data": ids})

    initial = array(im.params)
    final = array(im.results)
    inverse = none()
    root = add(
        fresh(),
        lambda: {
            "type": "tirx.IndexMap",
            "data": {"initial_indices": initial, "final_indices": final, "inverse_index_map": inverse},
        },
    )
    graph = {"root_index": root, "nodes": nodes, "metadata": {"tvm_version": TVM_VERSION}}
    if indent is None:
        return json.dumps(graph, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(graph, indent=indent, ensure_ascii=False)


# ---- IR -> lambda text -------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")


def normalize_params(im: IndexMap, reserved=frozenset()) -> IndexMap:
    """Give parameters unique identifier names that differ from free variables.

    Parameter names do not matter to TVM (structural equality maps bound
    variables by position), so renaming them keeps the map's meaning.
    """
    free = set(im.free_vars())
    taken = set(free) | set(reserved)
    mapping: dict[Var, Var] = {}
    new_params = []
    for p in im.params:
        base = p.name if _IDENT.match(p.name) else re.sub(r"\W", "_", p.name) or "i"
        if not _IDENT.match(base):
            base = "v_" + base
        name, k = base, 1
        while name in taken:
            name, k = f"{base}_{k}", k + 1
        taken.add(name)
        nv = Var(name, p.dtype)
        mapping[p] = nv
        new_params.append(nv)
    if all(a == b for a, b in mapping.items()) and len(set(p.name for p in im.params)) == len(im.params):
        return im

    def sub(e):
        if isinstance(e, Var):
            return mapping.get(e, e)
        if isinstance(e, Op):
            return Op(e.op, tuple(sub(a) for a in e.args), e.dtype)
        return e

    return IndexMap(tuple(new_params), tuple(sub(r) for r in im.results))


def render(im: IndexMap) -> str:
    if any(p.dtype != INDEX_DTYPE for p in im.params):
        params = "(" + ", ".join(f"{p.name}: {p.dtype}" for p in im.params) + ")"
        head = f"lambda {params}"
    elif im.params:
        head = "lambda " + ", ".join(p.name for p in im.params)
    else:
        head = "lambda"
    if len(im.results) == 1:
        body = render_expr(im.results[0])
        if body.startswith("("):  # keep a single result from reading as a tuple
            body = f"({body},)"
    else:
        body = "(" + ", ".join(render_expr(r) for r in im.results) + ")"
    return f"{head}: {body}"


def render_expr(e, prec: int = 0) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        if e.dtype == INDEX_DTYPE:
            return str(e.value)
        if e.dtype == "bool" and e.value in (0, 1):
            return "True" if e.value else "False"
        return f"{e.dtype}({e.value})"
    if isinstance(e, FloatImm):
        return f"{e.dtype}({float_text(float(e.value))})"
    if e.op == "Cast":
        (inner,) = e.args
        # `int64(16)` is a typed literal; a cast of a bare literal spells the literal's type.
        text = (
            f"{inner.dtype}({inner.value})"
            if isinstance(inner, IntImm) and inner.dtype == INDEX_DTYPE
            else render_expr(inner)
        )
        return f"{e.dtype}({text})"
    if e.op in INFIX:
        sym = INFIX[e.op]
        p = _PREC[sym]
        left = render_expr(e.args[0], p)
        right = render_expr(e.args[1], p + 1)
        text = f"{left} {sym} {right}"
        return f"({text})" if p < prec else text
    return f"{FUNCS[e.op]}(" + ", ".join(render_expr(a) for a in e.args) + ")"


# ---- lambda syntax -> IR -------------------------------------------------------------------

from dragon_dsl.language import diagnostics as dg  # noqa: E402
from dragon_dsl.language.syntax import ast  # noqa: E402
from dragon_dsl.language.table import DTYPES  # noqa: E402

_CONSTS = {"True": IntImm(1, "bool"), "False": IntImm(0, "bool")}
_FLOAT_NAMES = {"inf": math.inf, "nan": math.nan}


class _Weak:
    """A bare literal whose dtype is taken from the expression around it."""

    def __init__(self, value, span):
        self.value, self.span = value, span

    def typed(self, dtype: str):
        if isinstance(self.value, float) or dtype.startswith(("float", "bfloat")):
            if not dtype.startswith(("float", "bfloat")):
                raise _Fail(self.span, f"a float literal cannot have type {dtype}")
            return FloatImm(float(self.value), dtype)
        return IntImm(int(self.value), dtype)

    def default(self):
        return self.typed(FLOAT_DTYPE if isinstance(self.value, float) else INDEX_DTYPE)


class _Fail(Exception):
    def __init__(self, span, message):
        self.span, self.message = span, message


def _strong(x):
    return x.default() if isinstance(x, _Weak) else x


def _unify(a, b, span):
    if isinstance(a, _Weak) and isinstance(b, _Weak):
        a, b = a.default(), b.default()
        if isinstance(a, IntImm) and isinstance(b, FloatImm):
            a = FloatImm(float(a.value), b.dtype)
        elif isinstance(b, IntImm) and isinstance(a, FloatImm):
            b = FloatImm(float(b.value), a.dtype)
    elif isinstance(a, _Weak):
        a = a.typed(b.dtype)
    elif isinstance(b, _Weak):
        b = b.typed(a.dtype)
    if a.dtype != b.dtype:
        raise _Fail(
            span, f"operands have different types, {a.dtype} and {b.dtype}: write {a.dtype}(...) or {b.dtype}(...)"
        )
    return a, b


def from_lambda(lam: ast.Lambda, is_value=lambda name: False):
    """Type a lambda written in a script. Returns (IndexMap or None, diagnostics).

    `is_value(name)` says whether a free name is a sampled value of the script
    (a free variable of the map, bound by TVM to the value when it replays).
    """
    params = []
    names = set()
    for p in lam.params:
        if p.name in names:
            return None, [dg.make("DRG209", p.span, f"lambda parameter '{p.name}' is given twice")]
        if p.dtype is not None and p.dtype not in DTYPES:
            return None, [dg.make("DRG209", p.span, f"unknown dtype '{p.dtype}' for parameter '{p.name}'")]
        names.add(p.name)
        params.append(Var(p.name, p.dtype or INDEX_DTYPE))
    env = {v.name: v for v in params}

    def conv(e):
        if isinstance(e, ast.Int):
            return _Weak(e.value, e.span)
        if isinstance(e, ast.Float):
            return _Weak(e.value, e.span)
        if isinstance(e, ast.Neg):
            inner = conv(e.operand)
            if isinstance(inner, _Weak):
                return _Weak(-inner.value, e.span)
            if isinstance(inner, (IntImm, FloatImm)):
                return type(inner)(-inner.value, inner.dtype)
            raise _Fail(e.span, "negation applies to literals only; write 0 - x")
        if isinstance(e, ast.Name):
            if e.id in env:
                return env[e.id]
            if e.id in _CONSTS:
                return _CONSTS[e.id]
            if e.id in _FLOAT_NAMES:
                return _Weak(_FLOAT_NAMES[e.id], e.span)
            if is_value(e.id):
                return Var(e.id, INDEX_DTYPE)
            raise _Fail(e.span, f"'{e.id}' is neither a lambda parameter nor a sampled value")
        if isinstance(e, ast.BinOp):
            a, b = _unify(conv(e.left), conv(e.right), e.span)
            return Op(INFIX_OPS[e.op], (a, b), a.dtype)
        if isinstance(e, ast.Call):
            fname = e.func.id
            if any(a.name is not None for a in e.args):
                raise _Fail(e.span, f"{fname}(...) takes no keyword arguments in an index map")
            args = [a.value for a in e.args]
            if fname in DTYPES:
                if len(args) != 1:
                    raise _Fail(e.span, f"{fname}(...) takes one argument")
                inner = conv(args[0])
                if isinstance(inner, _Weak) and isinstance(args[0], (ast.Int, ast.Float, ast.Neg)):
                    return inner.typed(fname)  # a typed literal: int64(16)
                return Op("Cast", (_strong(inner),), fname)
            if fname in FUNC_OPS:
                op = FUNC_OPS[fname]
                arity = len(OP_FIELDS[op])
                if len(args) != arity:
                    raise _Fail(e.span, f"{fname}(...) takes {arity} argument(s)")
                vals = [conv(a) for a in args]
                if op == "Select":
                    c = _strong(vals[0])
                    t, f = _unify(vals[1], vals[2], e.span)
                    return Op(op, (c, t, f), t.dtype)
                if op == "Not":
                    return Op(op, (_strong(vals[0]),), "bool")
                a, b = _unify(vals[0], vals[1], e.span)
                return Op(op, (a, b), "bool" if op in COMPARE else a.dtype)
            raise _Fail(e.func.span, f"unknown function '{fname}' in an index map")
        raise _Fail(e.span, "this expression is not allowed in an index map")

    try:
        body = lam.body
        items = body.items if isinstance(body, ast.TupleExpr) else [body]
        results = tuple(_strong(conv(x)) for x in items)
    except _Fail as f:
        return None, [dg.make("DRG209", f.span, f.message)]
    return IndexMap(tuple(params), results), []
