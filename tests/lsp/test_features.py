"""End-to-end tests: the real server over stdio (pytest-lsp), one feature at a time.

One server serves the whole module; each test opens its own document in its own folder.
"""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types as lsp

from tests.lsp.helpers import (
    GPU_SCRIPT,
    SCRIPT,
    actions_at,
    apply_edits,
    change_doc,
    command,
    diagnostics_for,
    find,
    open_doc,
    pos,
    status,
    workspace,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")


def ident(uri):
    return lsp.TextDocumentIdentifier(uri)


async def replayed(client, uri, version=1):
    """Run the replay now: Show scheduled TensorIR takes the path the debounced background replay takes."""
    return await command(client, "dragon.showTensorIR", uri, version)


# ---- diagnostics ---------------------------------------------------------------------------------


async def test_syntax_and_type_diagnostics_follow_edits(client, tmp_path):
    text = SCRIPT.replace("reorder(l6, l10, l7, l11, l3)", "reorder(l6, l10, l7, l11, l99)")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    diags = await diagnostics_for(client, uri, 1)
    assert [d.code for d in diags] == ["DRG101"]
    d = diags[0]
    assert d.severity == lsp.DiagnosticSeverity.Error and d.source == "dragon"
    assert d.range == lsp.Range(find(text, "l99"), find(text, "l99", offset=3))
    # a syntax error arrives with the next version, the type error of the broken line is gone
    change_doc(client, uri, 2, text.replace("vectorize(l11)", "vectorize(l11"))
    diags = await diagnostics_for(client, uri, 2, where=lambda ds: any(x.code.startswith("DRG00") for x in ds))
    assert {x.code for x in diags} >= {"DRG003"} or {x.code for x in diags} >= {"DRG002"}
    # fixed: no diagnostics
    change_doc(client, uri, 3, SCRIPT)
    assert list(await diagnostics_for(client, uri, 3, where=lambda ds: not ds)) == []


async def test_related_information_and_unused_tag(client, tmp_path):
    text = SCRIPT.replace("vectorize(l11)", "l6 = add_unit_loop(l11)\nget_consumers(b0)")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: len(ds) >= 2)
    dup = next(d for d in diags if d.code == "DRG103")
    assert dup.related_information[0].location.range.start == find(text, "l6")
    unused = next(d for d in diags if d.code == "DRG104")
    assert unused.severity == lsp.DiagnosticSeverity.Warning and list(unused.tags) == [lsp.DiagnosticTag.Unnecessary]


async def test_positions_are_utf16(client, tmp_path):
    text = (
        'workload "m.tvmscript"\nb0 = get_sblock("𝔸😀é")  # 😀😀\nbind(l9, "threadIdx.x")\n'
        'annotate(b0, "k", "😀"); vectorize(x)\n'
    )
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: len(ds) >= 2)
    undefined = next(d for d in diags if d.code == "DRG101")
    assert undefined.range.start == pos(2, 5)
    bad = next(d for d in diags if d.range.start.line == 3)
    # `;` follows `"😀")`: the emoji counts 2 UTF-16 units
    assert bad.range.start.character == text.split("\n")[3].index(";") + 1


async def test_replay_diagnostics_and_decision_fix(client, tmp_path):
    text = SCRIPT.replace("decision=[8, 8]", "decision=[8, 4]")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    assert list(await diagnostics_for(client, uri, 1)) == []  # types are fine; only TVM knows the extent
    await replayed(client, uri)
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: any(d.code == "DRG303" for d in ds))
    d = next(d for d in diags if d.code == "DRG303")
    assert "multiply to 32" in d.message
    acts = await actions_at(client, uri, d.range, [d])
    fix = next(a for a in acts if a.title.startswith("Use the decision TVM keeps"))
    fixed = apply_edits(text, fix.edit.changes[uri])
    kept = fix.title.split(": ", 1)[1]
    assert f"decision={kept}" in fixed and "decision=[8, 4]" not in fixed
    a, b = (int(x) for x in kept.strip("[]").split(","))
    assert a * b == 64


async def test_stale_replay_results_are_dropped(client, tmp_path):
    text = SCRIPT.replace("decision=[8, 8]", "decision=[8, 4]")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    change_doc(client, uri, 2, SCRIPT)  # fixed before the replay of version 1 could land
    await replayed(client, uri)
    diags = await diagnostics_for(client, uri, 2)
    assert all(d.code != "DRG303" for d in diags)


# ---- formatting -------------------------------------------------------------------------------------


async def test_format_document_and_range(client, tmp_path):
    messy = SCRIPT.replace(
        "l6, l7 = split(l1, [v4, v5])", "l6,l7=split( l1,[v4,v5] ,preserve_unit_iters=True)"
    ).replace("vectorize(l11)", "vectorize( l11 )")
    uri = workspace(tmp_path, messy)
    open_doc(client, uri, messy)
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(ident(uri), lsp.FormattingOptions(tab_size=4, insert_spaces=True))
    )
    formatted = apply_edits(messy, edits)
    assert "l6, l7 = split(l1, [v4, v5])" in formatted and "vectorize(l11)" in formatted
    assert len(edits) == 2  # only the changed lines
    line = find(messy, "vectorize").line
    edits = await client.text_document_range_formatting_async(
        lsp.DocumentRangeFormattingParams(
            ident(uri), lsp.Range(pos(line, 0), pos(line, 5)), lsp.FormattingOptions(tab_size=4, insert_spaces=True)
        )
    )
    ranged = apply_edits(messy, edits)
    assert "vectorize(l11)" in ranged and "l6,l7=split(" in ranged


async def test_format_refuses_broken_text(client, tmp_path):
    uri = workspace(tmp_path, "b0 = get_sblock(\n")
    open_doc(client, uri, "b0 = get_sblock(\n")
    edits = await client.text_document_formatting_async(
        lsp.DocumentFormattingParams(ident(uri), lsp.FormattingOptions(tab_size=4, insert_spaces=True))
    )
    assert not edits


# ---- hover ----------------------------------------------------------------------------------------------


async def test_hover_instruction_keyword_and_variable(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    h = await client.text_document_hover_async(lsp.HoverParams(ident(uri), find(SCRIPT, "split(")))
    assert "split(loop: loop, factors: list[factor]" in h.contents.value and "Split a loop" in h.contents.value
    h = await client.text_document_hover_async(lsp.HoverParams(ident(uri), find(SCRIPT, "max_innermost_factor")))
    assert "Upper bound of the innermost factor" in h.contents.value
    await replayed(client, uri)
    h = await client.text_document_hover_async(lsp.HoverParams(ident(uri), find(SCRIPT, "l7", 1)))
    assert "**l7**: loop" in h.contents.value and "line 8" in h.contents.value
    assert "extent **8**" in h.contents.value
    h = await client.text_document_hover_async(lsp.HoverParams(ident(uri), find(SCRIPT, "v4", 1)))
    assert "tile i by 8" in h.contents.value  # the explanation graph's rationale, through the label
    h = await client.text_document_hover_async(lsp.HoverParams(ident(uri), find(SCRIPT, "b0", 0)))
    assert 'the block **"C"**' in h.contents.value and "C is a 64x64x64 matmul" in h.contents.value


# ---- navigation -----------------------------------------------------------------------------------------


async def test_definition_references_rename(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    use = find(SCRIPT, "l10", 1)  # in reorder(...)
    loc = await client.text_document_definition_async(lsp.DefinitionParams(ident(uri), use))
    assert loc.range.start == find(SCRIPT, "l10")
    refs = await client.text_document_references_async(
        lsp.ReferenceParams(
            text_document=ident(uri), position=use, context=lsp.ReferenceContext(include_declaration=True)
        )
    )
    assert len(refs) == 2
    prep = await client.text_document_prepare_rename_async(lsp.PrepareRenameParams(ident(uri), use))
    assert prep.placeholder == "l10"
    edit = await client.text_document_rename_async(lsp.RenameParams(ident(uri), use, "j_outer"))
    renamed = apply_edits(SCRIPT, edit.changes[uri])
    assert "j_outer, l11 = split(" in renamed and "reorder(l6, j_outer, l7" in renamed
    # labels and explanation links rename together
    edit = await client.text_document_rename_async(lsp.RenameParams(ident(uri), find(SCRIPT, "tile_i"), "tiles"))
    assert apply_edits(SCRIPT, edit.changes[uri]).count("tiles") == 2
    with pytest.raises(Exception, match="reserved"):
        await client.text_document_rename_async(lsp.RenameParams(ident(uri), use, "split"))
    with pytest.raises(Exception, match="already used"):
        await client.text_document_rename_async(lsp.RenameParams(ident(uri), use, "l7"))


# ---- completion and signature help ------------------------------------------------------------------------


async def _complete(client, uri, text, needle, offset=None, nth=0):
    p = find(text, needle, nth, len(needle) if offset is None else offset)
    got = await client.text_document_completion_async(lsp.CompletionParams(ident(uri), p))
    return {i.label: i for i in got.items}


async def test_completion(client, tmp_path):
    text = SCRIPT.replace(
        "vectorize(l11)\n",
        'vectorize(l11)\nsp\nsplit(\nbind(l6, "thr")\nl20 = cache_read(b0, 0, "sh")\n'
        'fuse(l6, l10, pre\nsample_perfect_tile(l2, \nget_sblock("")\n',
    )
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    items = await _complete(client, uri, text, "\nsp\n", 3)
    assert "split" in items and items["split"].insert_text_format == lsp.InsertTextFormat.Snippet
    assert items["split"].text_edit.new_text == "split(${1:loop}, [${2:factors}])$0"
    assert items["sample_perfect_tile"].text_edit.new_text.startswith("sample_perfect_tile(${1:loop}, n=${2:n})")
    items = await _complete(client, uri, text, "\nsplit(")
    assert {"l1", "l6", "l11"} <= set(items) and "b0" not in items and "v4" not in items  # loops only
    assert "preserve_unit_iters=" in items
    items = await _complete(client, uri, text, '"thr')
    assert "threadIdx.x" in items and items["threadIdx.x"].text_edit.new_text == "threadIdx.x"
    items = await _complete(client, uri, text, '"sh')
    assert {"shared", "shared.dyn"} <= set(items)
    items = await _complete(client, uri, text, "pre")
    assert set(items) >= {"preserve_unit_iters="}
    items = await _complete(client, uri, text, "sample_perfect_tile(l2, ")
    assert {"n=", "max_innermost_factor=", "decision="} <= set(items)
    # block names come from the workload: a worker reads them after the first replay
    await replayed(client, uri)
    for _ in range(200):
        items = await _complete(client, uri, text, 'get_sblock("', nth=1)
        if "C" in items:
            break
        await asyncio.sleep(0.05)
    assert {"C", "root"} <= set(items)


async def test_signature_help(client, tmp_path):
    text = SCRIPT.replace("vectorize(l11)", "split(l11, [2, 4], disable_predication=True")
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    sig = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(ident(uri), find(text, "split(l11, [2", offset=len("split(l11, [2")))
    )
    s = sig.signatures[0]
    assert s.label.startswith("split(loop: loop, factors")
    start, end = s.parameters[sig.active_parameter].label
    assert s.label[start:end] == "factors: list[factor]"
    sig = await client.text_document_signature_help_async(
        lsp.SignatureHelpParams(
            ident(uri), find(text, "disable_predication=True", offset=len("disable_predication=Tr"))
        )
    )
    start, end = sig.signatures[0].parameters[sig.active_parameter].label
    assert sig.signatures[0].label[start:end].startswith("disable_predication")


# ---- tokens, symbols, inlay hints ------------------------------------------------------------------------------


async def test_semantic_tokens(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    caps = client.init_result.capabilities.semantic_tokens_provider
    types_, mods = caps.legend.token_types, caps.legend.token_modifiers
    toks = await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(ident(uri)))
    lines = SCRIPT.split("\n")
    decoded, line, col = {}, 0, 0
    data = toks.data
    for i in range(0, len(data), 5):
        dl, dc, length, t, m = data[i : i + 5]
        line, col = line + dl, (col + dc if dl == 0 else dc)
        word = lines[line][col : col + length]
        decoded.setdefault(word, (types_[t], {mods[b] for b in range(len(mods)) if m >> b & 1}))
    assert decoded["split"] == ("function", {"defaultLibrary"})
    assert decoded["l1"] == ("variable", {"declaration", "loop"})
    assert decoded["b0"][1] >= {"block"}
    assert decoded["n"][0] == "parameter"
    assert decoded["tile_i"][0] == "label"
    assert decoded["explain"][0] == "namespace"
    assert decoded["workload"][0] == "keyword"
    assert decoded['"C"'][0] == "string" and decoded["8"][0] == "number"
    assert decoded["# matmul 64: tile i and j"][0] == "comment"


async def test_document_symbols(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    syms = await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident(uri)))
    names = [s.name for s in syms]
    assert names[:4] == ["workload", "target", "b0", "l1, l2, l3"]
    assert "reorder" in names and "vectorize" in names
    explain = next(s for s in syms if s.name == "explain:")
    assert [c.name for c in explain.children or ()] == ["f1", "r1", "e1"]


async def test_inlay_hints_after_replay(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    rng = lsp.Range(pos(0, 0), pos(len(SCRIPT.split("\n")), 0))
    assert not await client.text_document_inlay_hint_async(lsp.InlayHintParams(ident(uri), rng))  # not replayed yet
    await replayed(client, uri)
    hints = await client.text_document_inlay_hint_async(lsp.InlayHintParams(ident(uri), rng))
    labels = {(h.position.line, h.label) for h in hints}
    line = find(SCRIPT, "l6, l7").line
    assert (line, ": 8") in labels
    sampled = [h for h in hints if h.label.startswith("decision=")]
    assert len(sampled) == 1 and sampled[0].position.line == find(SCRIPT, "v8, v9").line  # no decision written there


# ---- code actions -------------------------------------------------------------------------------------------------


async def test_quick_fixes(client, tmp_path):
    text = SCRIPT.replace("reorder(l6, l10, l7, l11, l3)", "reorder(l6, l10, l7, l11, l33)").replace(
        "vectorize(l11)",
        'vectorize(l11)\nbind(l6, "threadIdx.xx")\nfuse(l6, l10, preserve_unit_iter=True)\n'
        "l40 = reorder(l7, l11)\nv41, v42 = sample_perfect_tile(l3, n=3)\nget_producers(b0)",
    )
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    diags = await diagnostics_for(client, uri, 1, where=lambda ds: len(ds) >= 5)
    by_code = {}
    for d in diags:
        by_code.setdefault(d.code, d)
    assert set(by_code) >= {"DRG101", "DRG207", "DRG204", "DRG206", "DRG104"}

    async def fixed(code):
        acts = await actions_at(client, uri, by_code[code].range, [by_code[code]])
        fix = next(
            a for a in acts if a.kind == lsp.CodeActionKind.QuickFix and a.diagnostics and a.diagnostics[0].code == code
        )
        return fix.title, apply_edits(text, fix.edit.changes[uri])

    title, new = await fixed("DRG101")
    assert "reorder(l6, l10, l7, l11, l3)" in new
    title, new = await fixed("DRG207")
    assert 'bind(l6, "threadIdx.x")' in new
    title, new = await fixed("DRG204")
    assert "preserve_unit_iters=True" in new
    title, new = await fixed("DRG206")
    assert "\nreorder(l7, l11)" in new
    by_code["DRG104"] = next(
        d for d in diags if d.code == "DRG104" and d.range.start.line == find(text, "get_producers").line
    )
    title, new = await fixed("DRG104")
    assert "get_producers" not in new
    # a second DRG206: too few results for n=3
    d = next(d for d in diags if d.code == "DRG206" and d.range.start.line == find(text, "v41").line)
    acts = await actions_at(client, uri, d.range, [d])
    fix = next(a for a in acts if a.kind == lsp.CodeActionKind.QuickFix and a.diagnostics[0].code == "DRG206")
    new = apply_edits(text, fix.edit.changes[uri])
    assert "v41, v42, v43 = sample_perfect_tile(l3, n=3)" in new


async def test_schedule_actions_are_offered(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    acts = await actions_at(client, uri, lsp.Range(pos(0, 0), pos(0, 0)))
    commands = {a.title: a.command for a in acts if a.command}
    suggest = next(c for t, c in commands.items() if t.startswith("Suggest a schedule"))
    rewrite = next(c for t, c in commands.items() if t.startswith("Rewrite this schedule"))
    measure = next(c for t, c in commands.items() if t.startswith("Measure the latency"))
    assert (suggest.command, rewrite.command, measure.command) == (
        "dragon.suggestSchedule",
        "dragon.rewriteSchedule",
        "dragon.measureLatency",
    )
    for c in (suggest, rewrite, measure):
        assert list(c.arguments) == [{"uri": uri, "version": 1}]
    only = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            ident(uri),
            lsp.Range(pos(0, 0), pos(0, 0)),
            lsp.CodeActionContext(diagnostics=[], only=[lsp.CodeActionKind.QuickFix]),
        )
    )
    assert not only


async def test_suggest_without_workload_says_why(client, tmp_path):
    text = 'b0 = get_sblock("C")\n'
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.suggestSchedule", uri)
    assert set(r) == {"error"} and "workload" in r["error"]


# ---- commands -----------------------------------------------------------------------------------------------------


async def test_the_server_lists_the_clients_commands(client):
    offered = client.init_result.capabilities.execute_command_provider.commands
    assert list(offered) == [
        "dragon.suggestSchedule",
        "dragon.rewriteSchedule",
        "dragon.showTensorIR",
        "dragon.showCudaSource",
        "dragon.measureLatency",
        "dragon.listTargets",
    ]


async def test_show_tensorir(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.showTensorIR", uri)
    assert set(r) == {"content", "language"} and r["language"] == "python"
    assert r["content"].startswith("# Scheduled TensorIR of sched.dragon (version 1)\n")
    assert "@T.prim_func" in r["content"] and "T.vectorized(" in r["content"]  # the schedule was applied
    assert 'T.sblock("C")' in r["content"]


async def test_show_tensorir_says_why_not(client, tmp_path):
    texts = {
        "errors": SCRIPT.replace("reorder(l6, l10, l7, l11, l3)", "reorder(l6, l99)"),
        "workload": SCRIPT.replace('workload "matmul_64.tvmscript"\n', ""),
        "tvm": SCRIPT.replace("vectorize(l11)", "vectorize(l1)"),  # l1 was split: TVM rejects it
    }
    answers = {}
    for why, text in texts.items():
        uri = workspace(tmp_path / why, text)
        open_doc(client, uri, text)
        await diagnostics_for(client, uri, 1)
        answers[why] = await command(client, "dragon.showTensorIR", uri)
        assert set(answers[why]) == {"error"}, answers[why]
    assert answers["errors"]["error"].startswith("the script has errors: DRG101 (line 11): ")
    assert answers["workload"]["error"].startswith("no workload: add `workload")
    assert answers["tvm"]["error"].startswith("the replay failed: DRG601 (line 12): ")
    unknown = await command(client, "dragon.showTensorIR", (tmp_path / "never-opened.dragon").as_uri())
    assert unknown == {"error": "the document is not open"}


async def test_show_cuda_source_without_a_gpu(client, tmp_path):
    uri = workspace(tmp_path, GPU_SCRIPT, name="gpu.dragon")
    open_doc(client, uri, GPU_SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.showCudaSource", uri)
    assert set(r) == {"content", "language"} and r["language"] == "cuda-cpp", r
    assert r["content"].startswith("// CUDA source of gpu.dragon for nvidia/nvidia-h100, generated by TVM\n")
    assert "__global__ void __launch_bounds__(128) main_kernel(" in r["content"]
    # the target of the request wins over the script's
    r = await command(client, "dragon.showCudaSource", uri, target="nvidia/nvidia-a100")
    assert "for nvidia/nvidia-a100" in r["content"].splitlines()[0]
    r = await command(client, "dragon.showCudaSource", uri, target='{"kind": "cuda", "arch": "sm_80"}')
    assert '"arch": "sm_80"' in r["content"].splitlines()[0] and "__global__" in r["content"]


async def test_show_cuda_source_says_why_not(client, tmp_path):
    uri = workspace(tmp_path)  # target "llvm" in the header, no loop bound to a thread
    open_doc(client, uri, SCRIPT)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.showCudaSource", uri)
    assert set(r) == {"error"} and r["error"].startswith('target "llvm" (kind llvm) generates no CUDA'), r
    r = await command(client, "dragon.showCudaSource", uri, target="nvidia/nvidia-h100")
    assert set(r) == {"error"} and "binds no loop to blockIdx/threadIdx" in r["error"], r
    r = await command(client, "dragon.showCudaSource", uri, target="llvm -num-cores=2")
    assert set(r) == {"error"} and r["error"].startswith("dragon.target: 'llvm -num-cores=2': TVM 0.27 takes"), r
    # no target anywhere: nvidia/nvidia-h100
    text = GPU_SCRIPT.replace('target "nvidia/nvidia-h100"\n', "")
    uri = workspace(tmp_path / "default", text)
    open_doc(client, uri, text)
    await diagnostics_for(client, uri, 1)
    r = await command(client, "dragon.showCudaSource", uri)
    assert "for nvidia/nvidia-h100" in r["content"].splitlines()[0]


async def test_list_targets(client, tmp_path):
    text = SCRIPT.replace('target "llvm"', 'target "nvidia/geforce-rtx-3090"')
    uri = workspace(tmp_path, text)
    open_doc(client, uri, text)
    r = await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.listTargets", []))
    assert set(r) == {"targets", "devices"}
    at = r["targets"].index
    assert at("nvidia/geforce-rtx-3090") < at("nvidia/nvidia-a100") < at("arm/rasp4b")  # in use, common, all
    assert {"llvm", "cuda", "nvidia/nvidia-h100", "arm/rasp4b"} <= set(r["targets"]) and len(r["targets"]) > 100
    assert len(set(r["targets"])) == len(r["targets"])
    assert r["devices"] == ["local", "cpu", "rpc"]


async def test_malformed_command_arguments(client, tmp_path):
    uri = workspace(tmp_path)
    open_doc(client, uri, SCRIPT)
    for args in ([], [uri], [{"version": 1}], [{"uri": uri, "version": "1"}], [{"uri": uri, "range": {"x": 1}}]):
        with pytest.raises(Exception, match="argument|expects one argument"):
            await client.workspace_execute_command_async(lsp.ExecuteCommandParams("dragon.showTensorIR", args))
    r = await command(client, "dragon.measureLatency", uri, device="gpu0")
    assert r == {"error": 'dragon.device: expects "local", "cpu", "rpc" or "rpc://HOST:PORT/KEY"'}
    r = await command(client, "dragon.measureLatency", uri, device="rpc")
    assert set(r) == {"error"} and "dragon.trackerAddress is empty" in r["error"]
    assert (await status(client))["internal_errors"] == 0


# ---- robustness ----------------------------------------------------------------------------------------------------


async def test_any_text_any_position(client, tmp_path):
    texts = [
        "",
        "\n\n\n",
        "((((((((((((" * 200,
        '"\\',
        'b0 = get_sblock("C")\r\nl1 = x\r',
        "\x00\x01\ufeff\u2028",
        "explain:\nf1 = fact(about=[zz])\n",
        "postproc:\nexplain:\npostproc:\n",
        "lambda: lambda\n",
        "a: b: c = d(e=f, g)\n" * 50,
        "😀" * 1000,
    ]
    for i, text in enumerate(texts):
        uri = (tmp_path / f"t{i}.dragon").as_uri()
        open_doc(client, uri, text)
        for p in (pos(0, 0), pos(0, 3), pos(2, 1), pos(1000, 1000), pos(0, 10**6)):
            await client.text_document_hover_async(lsp.HoverParams(ident(uri), p))
            await client.text_document_completion_async(lsp.CompletionParams(ident(uri), p))
            await client.text_document_signature_help_async(lsp.SignatureHelpParams(ident(uri), p))
            await client.text_document_definition_async(lsp.DefinitionParams(ident(uri), p))
        await client.text_document_semantic_tokens_full_async(lsp.SemanticTokensParams(ident(uri)))
        await client.text_document_document_symbol_async(lsp.DocumentSymbolParams(ident(uri)))
        await actions_at(client, uri, lsp.Range(pos(0, 0), pos(10**6, 0)))
        await client.text_document_formatting_async(
            lsp.DocumentFormattingParams(ident(uri), lsp.FormattingOptions(tab_size=4, insert_spaces=True))
        )
        far = {"start": {"line": 10**6, "character": 0}, "end": {"line": 0, "character": 10**6}}
        for name in ("dragon.showTensorIR", "dragon.showCudaSource", "dragon.rewriteSchedule"):
            r = await command(client, name, uri, range=far, prompt="😀", target="")
            assert isinstance(r, dict) and ("error" in r or "content" in r), (name, text[:40], r)
        change_doc(client, uri, 2, "x", lsp.Range(pos(10**6, 10**6), pos(-0, 10**6)))
        client.text_document_did_close(lsp.DidCloseTextDocumentParams(ident(uri)))
    state = await status(client)
    assert state["internal_errors"] == 0
    assert state["analysis_worker"] is not None and not state["tvm_in_server"]  # TVM ran in the worker only
