"""Constrained generation: the model writes one statement at a time, and nothing the checker or TVM
rejects survives.

For each statement:
1. the grammar of the next statement is generated from the instruction table and the state of
   the schedule replayed so far (`decoder_grammar.py`, `replay_state.py`) in two phases, the
   statement's head and then the rest that head allows (`statement_phases`), each compiled by
   xgrammar;
2. the model's logits are masked by it at every token (only live names of the right kind,
   decision lists of the right length made of divisors of the loop's extent, the canonical
   result names and counts, legal scopes and thread axes for the target), and text the grammar
   forces is read with the token before it in one forward pass (`Generator._forced`);
3. the finished statement is checked with the checker and replayed with TVM on the workload
   together with everything before it; a statement that fails is rolled back (the KV cache is
   cropped) and sampled again, up to `retries` times, after which the script ends there.

The end of the script may be chosen at any statement boundary. Every prefix that was kept
checks and replays, so the returned script always checks and replays (possibly empty: the
unscheduled workload).
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dragon_model.data import CALL
from dragon_model.decoder_grammar import statement_grammar, statement_phases

# module globals, so that benchmarks/bench_kv_cache.py can swap `_growing` to time transformers' own cache
from dragon_model.kv_cache import crop as _crop
from dragon_model.kv_cache import growing as _growing
from dragon_model.prompts import plain_prompt
from dragon_model.renaming import canonical_template
from dragon_model.render import target_kind
from dragon_model.replay_state import replay_prefix


@dataclass
class Generation:
    body: str  # the script without header
    statements: int = 0
    rejected: int = 0  # statements the checker or TVM refused (rolled back)
    tokens: int = 0
    forward_passes: int = 0  # forward passes after the prompt's (forced tokens share one: `Generator._forced`)
    stop: str = "eos"  # eos | retries | max_statements | max_tokens | context | time
    seconds: float = 0.0
    rejections: list = field(default_factory=list)  # (statement, why), the first few
    compile_problem: str | None = None  # GPU targets: why the compiler rejected the finished script
    completed_from: str | None = None  # GPU targets: the model's own body, when `body` adds AutoBind's statements
    from_scratch: bool = False  # an improvement's answer written for the construction prompt (`api.candidates`)
    compiled: bool = False  # GPU targets: `body` passed the compile check as it stands (the tensor-core candidate)
    sample: int | None = None  # `generate(template=...)`: the index of the design-space candidate chosen


def load_model(path):
    """A trained model folder -> (model, tokenizer) on the CPU or the first GPU, in eval mode."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from dragon_model.tokenizer import load_tokenizer

    hf_logging.disable_progress_bar()  # the commands show their own stages; a weight-loading bar is noise
    path = Path(path)
    tokenizer = load_tokenizer(path)
    if (path / "adapter_config.json").exists():
        from peft import AutoPeftModelForCausalLM

        model = AutoPeftModelForCausalLM.from_pretrained(str(path))
    else:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    return model.to(device).eval(), tokenizer


DEFAULT_MAX_STATEMENTS = 96
#: compiled statement grammars kept for reuse, bounded by their size (a CUDA statement's grammar
#: is 0.5-5 MB): xgrammar's GrammarCompiler caches every grammar it compiles, without a limit by
#: default; two --generate-only processes grew by ~0.4 GB a minute each to 8-12 GB until it had one
GRAMMAR_CACHE_BYTES = 256 * 2**20


class Generator:
    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_statements: int = DEFAULT_MAX_STATEMENTS,
        retries: int = 4,
        max_statement_tokens: int = 160,
        max_seconds: float = 0.0,
        allowed: frozenset | None = None,
        literals: dict | None = None,
        cpu_threads: int | None = None,
        jump_forward: bool = True,
        phases: bool = True,
        canonical_names: bool | str = False,
    ):
        import torch
        import xgrammar as xgr

        from dragon_model.tokenizer import is_dragon_tokenizer, token_strings

        self.torch = torch
        self.xgr = xgr
        self.model = model
        self.tokenizer = tokenizer
        # without a model (`without_model`), the generator only judges given scripts (`reachable`)
        self.device = next(model.parameters()).device if model is not None else torch.device("cpu")
        vocab_size = int(model.get_output_embeddings().weight.shape[0]) if model is not None else len(tokenizer)
        self.vocab_size = vocab_size
        self._strings = self._extendable = None  # token texts, and the texts a longer token extends (`_forced`)
        if is_dragon_tokenizer(tokenizer):
            strings = token_strings(tokenizer) + [""] * max(0, vocab_size - len(tokenizer))
            self._strings = strings
            self._extendable = {w[:k] for w in strings for k in range(1, len(w))}
            info = xgr.TokenizerInfo(
                strings[:vocab_size], xgr.VocabType.RAW, vocab_size=vocab_size, stop_token_ids=[tokenizer.eos_token_id]
            )
        else:
            info = xgr.TokenizerInfo.from_huggingface(
                tokenizer, vocab_size=vocab_size, stop_token_ids=[tokenizer.eos_token_id]
            )
        self.compiler = xgr.GrammarCompiler(
            info, max_threads=1, cache_enabled=True, cache_limit_bytes=GRAMMAR_CACHE_BYTES
        )  # least recently used out
        self.bitmask = xgr.allocate_token_bitmask(1, vocab_size)
        self.max_statements = max_statements
        self.retries = retries
        self.max_statement_tokens = max_statement_tokens
        self.max_seconds = float(max_seconds)  # 0: no limit; else the script ends at the next statement boundary
        self.allowed = frozenset(allowed) if allowed else None  # the instructions the model was trained on
        self.literals = literals  # the constants it has seen (data.literals_of), or None: any
        # how often in a row one query may be asked: as often as the training scripts do (dlight's
        # scripts ask get_consumers three times), once for models whose corpus did not record it
        self.query_repeats = int((literals or {}).get("query_repeats", 1))
        self.max_positions = int(getattr(getattr(model, "config", None), "max_position_embeddings", 4096) or 4096)
        # torch's threads while generating (None: torch's own setting). Processes that share the
        # cores must divide them: beside two other generating processes on two cores, one of two threads
        # spent 46 ms per token, one of one thread 7.4 ms (benchmarks/bench_generation.py compares)
        self.cpu_threads = cpu_threads
        self.jump_forward = jump_forward  # forced tokens read in one forward pass (`_forced`)
        self.phases = phases  # a statement's grammar in two phases (`_phases`)
        # a model trained on canonical names (`renaming.canonical_mapping`: True for blocks and allocated
        # buffers, "all" for every name the workload's author chose) reads every workload under them;
        # its answer is renamed back to the workload's own names
        self.canonical_names = canonical_names
        import inspect

        forward = getattr(model, "forward", model)
        try:
            params = inspect.signature(forward).parameters
        except (TypeError, ValueError):
            params = {}
        self._cache_kw = "cache" if "cache" in params else "past_key_values"

    @classmethod
    def from_path(cls, path, **kw) -> Generator:
        """A trained model folder; its grammar offers the instructions of its training corpus
        (`instructions` in dragon_model.json), when the folder lists them, and its statement limit
        is a margin over the corpus' longest script (`longest_script`)."""
        model, tokenizer = load_model(path)
        info_path = Path(path) / "dragon_model.json"
        info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.exists() else {}
        if "allowed" not in kw:
            kw["allowed"] = info.get("instructions")
        if "literals" not in kw:
            kw["literals"] = info.get("literals")
        if "canonical_names" not in kw:
            kw["canonical_names"] = info.get("canonical_names") or False
        if "max_statements" not in kw and info.get("longest_script"):
            # tensor-core CUDA schedules run to ~155 statements: the limit follows the training scripts
            kw["max_statements"] = max(DEFAULT_MAX_STATEMENTS, int(1.25 * info["longest_script"]) + 1)
        return cls(model, tokenizer, **kw)

    @classmethod
    def without_model(cls, tokenizer, **kw) -> Generator:
        """A generator that only judges scripts (`reachable`): the grammar, replay and limits of
        decoding, for a model trained on rows whose instructions and constants are `allowed` and
        `literals` (`data.grammar_facts`)."""
        return cls(None, tokenizer, **kw)

    # ---- one script ----------------------------------------------------------------------------
    def generate(
        self,
        workload,
        target: Any = "llvm",
        slower_body: str | None = None,
        *,
        temperature: float = 0.0,
        seed: int = 0,
        template: tuple | None = None,
    ) -> Generation:
        """One script body for a workload (TVMScript text or path); temperature 0 is greedy.
        TEMPLATE: a design space's sampled candidates (`_fill`): the model chooses among their
        decisions, and writes nothing else (`api.tensor_core_candidate`)."""
        torch = self.torch
        mapping = {}
        if self.canonical_names:
            workload, slower_body, mapping = self._canonical(workload, target, slower_body)
            if template:  # written in the workload's names: the model reads and writes canonical ones
                template = canonical_template(template, mapping)
        before = torch.get_num_threads()
        if self.cpu_threads is not None:
            torch.set_num_threads(self.cpu_threads)
        try:
            out = self._generate(workload, target, slower_body, temperature, seed, template)
        finally:
            torch.set_num_threads(before)
        if mapping:  # the answer in the workload's own names
            from dragon_model.renaming import renamed_words

            back = mapping.back() if hasattr(mapping, "back") else {new: old for old, new in mapping.items()}
            out.body = renamed_words(out.body, back)
            if out.completed_from is not None:
                out.completed_from = renamed_words(out.completed_from, back)
            out.rejections = [(renamed_words(st, back), why) for st, why in out.rejections]
        return out

    def _canonical(self, workload, target, slower_body):
        """The workload (text or path) and the script an improvement starts from under canonical
        names, and the mapping (`renaming.canonical_workload`)."""
        from dragon_model.renaming import canonical_workload

        text = (
            workload if isinstance(workload, str) and "\n" in workload else Path(workload).read_text(encoding="utf-8")
        )
        return canonical_workload(text, target, slower_body, scope=self.canonical_names)

    def _generate(self, workload, target, slower_body, temperature, seed, template=None) -> Generation:
        from dragon_dsl.tvm.workload import load_workload
        from dragon_model.data import prompt_text

        torch = self.torch
        t0 = time.time()
        text = (
            workload if isinstance(workload, str) and "\n" in workload else Path(workload).read_text(encoding="utf-8")
        )
        mod = load_workload(text)
        kind = target_kind(target)
        gen = torch.Generator().manual_seed(seed)
        prompt = plain_prompt(self.tokenizer, prompt_text(text, target, slower_body))
        ids = self.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"].to(self.device)
        out = Generation(body="")
        if ids.shape[1] >= self.max_positions - 16:
            out.stop = "context"
            return out
        logits, cache = self._forward(ids, None)
        kept_len = ids.shape[1]
        env, why = replay_prefix("", mod, kind)
        if env is None:  # the empty script always replays on a loadable workload
            raise ValueError(f"the workload cannot be scheduled: {why}")
        if template is not None:
            return self._fill(template, logits, cache, kept_len, temperature, gen, out, t0)
        asked: Counter = Counter()  # the queries (getters) written since the last statement that changed the schedule
        failures = 0
        banned: set = set()  # instructions TVM rejected at this point: not offered again until one passes
        while True:
            if out.statements >= self.max_statements:
                out.stop = "max_statements"
                break
            if kept_len >= self.max_positions - 8:
                out.stop = "max_tokens"
                break
            if self.max_seconds and time.time() - t0 > self.max_seconds:
                out.stop = "time"
                break
            phases = self.grammars(env, frozenset(banned))
            temp = temperature if failures == 0 else max(temperature, 1.0)
            tokens, step_logits, step_cache, ended, ok = self._write(phases, logits, cache, kept_len, temp, gen, out)
            if ended:
                out.stop = "eos"
                break
            stmt = self.tokenizer.decode(tokens, skip_special_tokens=False)
            new_env, why = self.judge(out.body, stmt, asked, mod, kind) if ok else (None, "statement too long")
            if new_env is None:
                out.rejected += 1
                if len(out.rejections) < 8:
                    out.rejections.append((stmt.strip(), why))
                failures += 1
                called = CALL.search(stmt)
                if called and failures >= 2:  # the same kind failed again here: offer the others
                    banned.add(called.group(1))
                _crop(step_cache, kept_len)
                cache = step_cache
                if failures > self.retries:
                    out.stop = "retries"
                    break
                continue
            failures = 0
            banned.clear()
            _remember(asked, stmt)
            out.body += stmt
            out.statements += 1
            kept_len += len(tokens)
            cache, logits, env = step_cache, step_logits, new_env
        out.seconds = time.time() - t0
        return out

    def _fill(self, template, logits, cache, kept_len, temperature, gen, out, t0) -> Generation:
        """TEMPLATE = (statements, decisions): the main part of a design space's sampled candidates
        (the first one's statements) and each candidate's decisions (texts, one per statement with
        a `decision=`, in order). The statements are written in order under `template_grammar`: the
        model chooses each decision among those of the candidates that agree with its choices so
        far, the rest is forced, read as if the model had written it. Each candidate passed TVM
        already, so nothing is replayed here; `out.sample` is the index of the candidate chosen."""
        from dragon_model.decoder_grammar import template_grammar

        statements, decisions = template
        live, j = list(range(len(decisions))), 0
        for want in statements:
            if kept_len >= self.max_positions - 8:
                out.stop = "max_tokens"
                break
            choices = [decisions[i][j] for i in live] if DECISION.search(want) else None
            phases = WholeStatement(template_grammar(want, choices))
            tokens, step_logits, step_cache, _ended, ok = self._write(
                phases, logits, cache, kept_len, temperature, gen, out, may_end=False
            )
            if not ok:
                out.stop = "max_tokens"
                break
            stmt = self.tokenizer.decode(tokens, skip_special_tokens=False)
            if choices:
                chosen = DECISION.search(stmt).group(1)
                live, j = [i for i in live if decisions[i][j] == chosen], j + 1
            out.body += stmt
            out.statements += 1
            kept_len += len(tokens)
            cache, logits = step_cache, step_logits
        else:
            out.stop, out.sample = "eos", live[0]
        out.seconds = time.time() - t0
        return out

    def _write(self, phases, logits, cache, kept_len: int, temp: float, gen, out: Generation, may_end: bool = True):
        """One statement under PHASES' grammars from the state after LOGITS and CACHE: (its tokens,
        the logits and cache after them, whether the model ended the script instead (only where
        MAY_END), whether the statement was finished within the limits)."""
        torch = self.torch
        matcher, in_head = self.matcher(phases.head), True
        tokens, step_logits, step_cache, ended = [], logits, cache, False
        ok = True
        while True:
            masked = step_logits.clone()
            self.xgr.reset_token_bitmask(self.bitmask)
            matcher.fill_next_token_bitmask(self.bitmask)
            self.xgr.apply_token_bitmask_inplace(masked.unsqueeze(0), self.bitmask.to(masked.device))
            if not tokens and may_end:  # the script may end at a statement boundary
                masked[self.tokenizer.eos_token_id] = step_logits[self.tokenizer.eos_token_id]
            tok = self._pick(masked, temp, gen)
            if tok == self.tokenizer.eos_token_id and not tokens:
                ended = True
                break
            if not matcher.accept_token(tok):  # cannot happen with a correct mask; be safe
                ok = False
                break
            fed = [tok]  # the tokens the next forward pass reads: this one and those the grammar forces
            while True:
                if matcher.is_terminated():
                    head = self.tokenizer.decode(tokens + fed, skip_special_tokens=False) if in_head else None
                    if head in phases.heads:  # the statement's head is written: its rest
                        matcher, in_head = self.matcher(phases.rest(head)), False
                        continue
                    break
                forced = self._forced(matcher)
                if not forced:
                    break
                fed += forced
            tokens += fed
            if kept_len + len(tokens) >= self.max_positions - 2 or len(tokens) > self.max_statement_tokens:
                ok = False
                break
            step_logits, step_cache = self._forward(torch.tensor([fed], device=self.device), step_cache)
            out.forward_passes += 1
            if matcher.is_terminated():
                break
        out.tokens += len(tokens)
        return tokens, step_logits, step_cache, ended, ok

    def judge(self, body: str, stmt: str, asked: Counter, mod, kind: str):
        """(state after it, None) when a finished statement may follow `body`; (None, why) when it
        is refused: a query asked more often in a row than the training scripts ever do (its answer
        cannot have changed: a derailing model repeats get_loops(b0) until the statement limit), or
        a script that does not check or replay."""
        query = _query(stmt)
        if query is not None and asked[query] >= self.query_repeats:
            return None, "repeats a query whose answer has not changed"
        return replay_prefix(body + stmt, mod, kind, last_is_new=True)

    def _forward(self, ids, cache):
        """Logits of the last position and the KV cache (transformers 5 calls it `cache`; older
        models and remote code `past_key_values`)."""
        with self.torch.no_grad():
            if self._cache_kw == "cache":
                res = self.model(input_ids=ids, cache=cache, use_cache=True)
                return res.logits[0, -1].float(), _growing(res.cache)
            res = self.model(input_ids=ids, past_key_values=cache, use_cache=True)
            return res.logits[0, -1].float(), _growing(res.past_key_values)

    def _pick(self, logits, temperature: float, gen) -> int:
        torch = self.torch
        if temperature <= 0:
            return int(torch.argmax(logits).item())
        probs = torch.softmax(logits / temperature, dim=-1).cpu()
        return int(torch.multinomial(probs, 1, generator=gen).item())

    def grammars(self, env, banned: frozenset):
        """The next statement's grammars: its head, then its rest (`statement_phases`), or, with
        `phases` off, the whole statement's at once (one grammar a statement, for comparison)."""
        if self.phases:
            return statement_phases(env, banned, self.allowed, self.literals)
        return WholeStatement(statement_grammar(env, banned, self.allowed, self.literals))

    def matcher(self, grammar: str):
        return self.xgr.GrammarMatcher(self._compile(grammar), terminate_without_stop_token=True)

    def _forced(self, matcher) -> list:
        """The tokens the grammar forces next, accepted by MATCHER: the tokenizer's own spelling of
        the text only it allows (`find_jump_forward_string`), up to the first token whose text to
        the end of the forced text a longer token extends (the text after it may change the
        spelling: `l4` before `3` is spelled `l43`, `sample_` before `categorical(` one token).
        The model reads them in one forward pass with the token before them instead of one pass
        each: a pass over a few tokens costs less than a pass per token (on the CPU, each pass
        reads every weight once; on a GPU a pass is mostly launch overhead). Only with Dragon's
        tokenizer, whose spelling is the longest word first."""
        if not self.jump_forward or self._extendable is None:
            return []
        text = matcher.find_jump_forward_string()
        if not text:
            return []
        out, pos = [], 0
        for tok in self.tokenizer(text, add_special_tokens=False)["input_ids"]:
            if text[pos:] in self._extendable or not matcher.accept_token(tok):
                break
            out.append(tok)
            pos += len(self._strings[tok])
        return out

    def _compile(self, grammar: str):
        return self.compiler.compile_grammar(grammar)  # from the compiler's bounded cache when it was compiled before


#: a statement's decision, as the printer writes it last in the call
DECISION = re.compile(r"decision=(.*)\)\n?$")


def _remember(asked: Counter, stmt: str) -> None:
    """A kept statement: a query is counted, anything else may change the answers (forget them)."""
    query = _query(stmt)
    if query is None:
        asked.clear()
    else:
        asked[query] += 1


def statements_of(body: str):
    """A script body as the decoder writes it, a statement (with its newline) at a time; the
    section header comes as one piece with the blank line before it."""
    for line in body.splitlines(keepends=True):
        if line.strip() == "":
            continue
        yield "\npostproc:\n" if line.strip() == "postproc:" else line if line.endswith("\n") else line + "\n"


@dataclass
class WholeStatement:
    """A statement's grammar in one piece: `StatementPhases`' interface with no heads."""

    head: str
    heads: tuple = ()


def _query(stmt: str) -> str | None:
    """The call text of a statement that only asks (a pure instruction without a decision: get_loops,
    get_sblock, get_producers...), or None for one that samples or changes the schedule."""
    from dragon_dsl.language import table

    called = CALL.search(stmt)
    inst = table.BY_NAME.get(called.group(1)) if called else None
    if inst is None or not inst.pure or inst.decision or inst.section:
        return None
    return stmt[called.start(1) :].strip()


def header(workload, target) -> str:
    """The script header: the workload's file name (when it is a file) and the target."""
    lines = []
    if not (isinstance(workload, str) and "\n" in workload):
        lines.append(f"workload {json.dumps(Path(workload).name)}")
    if target is not None:
        lines.append(f"target {json.dumps(target)}")
    return "\n".join(lines) + ("\n\n" if lines else "")
